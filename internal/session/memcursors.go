package session

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/pifleet/sessionlog/internal/wire"
)

// Compile-time check.
var _ Cursors = (*MemCursors)(nil)

// MemCursors is an in-memory Cursors with the contract of the KV-backed one:
// revisions are store-wide and increasing, a delete leaves a tombstone with
// its own revision (so Update may target it, as a KV update after a delete
// does), and watchers see every change after they start, in order.
type MemCursors struct {
	mu       sync.Mutex
	rev      uint64
	cursors  map[string]map[string]memCursor // session -> client -> cursor or tombstone
	watchers map[string]map[*memWatcher]struct{}
}

type memCursor struct {
	CursorEntry
	deleted bool
}

// memWatcher queues the changes of one session for one Watch call. The queue
// is unbounded so that writers never block on a slow watcher.
type memWatcher struct {
	queue  []memCursor
	notify chan struct{} // capacity 1: "the queue is not empty"
}

// NewMemCursors returns an empty MemCursors.
func NewMemCursors() *MemCursors {
	return &MemCursors{
		cursors:  make(map[string]map[string]memCursor),
		watchers: make(map[string]map[*memWatcher]struct{}),
	}
}

func checkCursorKey(session, client string) error {
	if err := ValidSessionID(session); err != nil {
		return err
	}
	return ValidClientID(client)
}

// Get returns the client's cursor in session, or wire.ErrNotFound.
func (m *MemCursors) Get(ctx context.Context, session, client string) (CursorEntry, error) {
	if err := checkCursorKey(session, client); err != nil {
		return CursorEntry{}, err
	}
	if err := ctx.Err(); err != nil {
		return CursorEntry{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.cursors[session][client]
	if !ok || c.deleted {
		return CursorEntry{}, fmt.Errorf("cursor %s/%s: %w", session, client, wire.ErrNotFound)
	}
	return c.CursorEntry, nil
}

// Put stores c unconditionally and returns the new revision.
func (m *MemCursors) Put(ctx context.Context, session, client string, c Cursor) (uint64, error) {
	if err := checkCursorKey(session, client); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.storeLocked(session, client, c, false), nil
}

// Update stores c only if the current revision is expectRev (0: only if
// there is no cursor), else wire.ErrConflict.
func (m *MemCursors) Update(ctx context.Context, session, client string, c Cursor, expectRev uint64) (uint64, error) {
	if err := checkCursorKey(session, client); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.cursors[session][client]
	absent := !ok || cur.deleted
	if !(expectRev == 0 && absent || ok && cur.Revision == expectRev) {
		return 0, fmt.Errorf("%w: cursor %s/%s: expected revision %d, is %d", wire.ErrConflict, session, client, expectRev, cur.Revision)
	}
	return m.storeLocked(session, client, c, false), nil
}

// Delete removes the cursor; deleting a missing cursor is not an error (and,
// there being nothing to change, not a change that watchers see).
func (m *MemCursors) Delete(ctx context.Context, session, client string) error {
	if err := checkCursorKey(session, client); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.cursors[session][client]; ok && !cur.deleted {
		m.storeLocked(session, client, Cursor{}, true)
	}
	return nil
}

// List returns the session's cursors ordered by client id.
func (m *MemCursors) List(ctx context.Context, session string) ([]CursorEntry, error) {
	if err := ValidSessionID(session); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []CursorEntry{}
	for _, c := range m.cursors[session] {
		if !c.deleted {
			out = append(out, c.CursorEntry)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Client < out[j].Client })
	return out, nil
}

// Watch calls fn for every change of the session's cursors made after Watch
// registered, in order, until ctx is done; it then returns ctx.Err(). fn runs
// on the caller's goroutine, never under MemCursors' lock.
func (m *MemCursors) Watch(ctx context.Context, session string, fn func(e CursorEntry, deleted bool)) error {
	if err := ValidSessionID(session); err != nil {
		return err
	}
	w := &memWatcher{notify: make(chan struct{}, 1)}
	m.mu.Lock()
	if m.watchers[session] == nil {
		m.watchers[session] = make(map[*memWatcher]struct{})
	}
	m.watchers[session][w] = struct{}{}
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.watchers[session], w)
		if len(m.watchers[session]) == 0 {
			delete(m.watchers, session)
		}
		m.mu.Unlock()
	}()

	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w.notify:
		}
		m.mu.Lock()
		queue := w.queue
		w.queue = nil
		m.mu.Unlock()
		for _, c := range queue {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			fn(c.CursorEntry, c.deleted)
		}
	}
}

// storeLocked writes a cursor or a tombstone under a new revision and queues
// the change for the session's watchers. m.mu must be held.
func (m *MemCursors) storeLocked(session, client string, c Cursor, deleted bool) uint64 {
	m.rev++
	e := memCursor{CursorEntry: CursorEntry{Session: session, Client: client, Revision: m.rev, Cursor: c}, deleted: deleted}
	if m.cursors[session] == nil {
		m.cursors[session] = make(map[string]memCursor)
	}
	m.cursors[session][client] = e
	for w := range m.watchers[session] {
		w.queue = append(w.queue, e)
		select {
		case w.notify <- struct{}{}:
		default:
		}
	}
	return m.rev
}
