package apiclient

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Cursors is session.Cursors over pi-node's cursor operations (cursor.get,
// cursor.set with expectRevision, cursor.delete, cursor.list).
//
// Differences from the KV-backed cursors, all of them the API's:
//
//   - A cursor can only be set on a session the node knows, to one of its
//     entries (ErrInvalid otherwise), and List of an unknown session is
//     ErrNotFound. Put and Update send the cursor's Seq as minSeq, so a
//     leaf written a moment ago through another node is found.
//   - The node stamps the cursor itself: the stored Seq is the session's
//     last sequence on that node (at least the Seq given) and UpdatedAt is
//     the node's clock.
//   - Watch polls cursor.list every PollInterval (default one second) and
//     reports each cursor whose revision changed and each one that
//     disappeared. That meets the contract — watchers see where cursors
//     are, not every step — at the price of the interval's latency.
type Cursors struct {
	c Client
	// PollInterval is the pause between two polls of Watch.
	PollInterval time.Duration
}

var _ session.Cursors = (*Cursors)(nil)

// NewCursors returns the cursors of the node c talks to.
func NewCursors(c Client) *Cursors { return &Cursors{c: c, PollInterval: time.Second} }

// cursorEntry turns a cursor as the API shows it back into the engine's.
func cursorEntry(sid string, v wire.CursorView) session.CursorEntry {
	e := session.CursorEntry{Session: sid, Client: v.Client, Revision: v.Revision, Cursor: session.Cursor{Seq: v.Seq}}
	if v.LeafID != nil {
		e.LeafID = *v.LeafID
	}
	e.UpdatedAt, _ = time.Parse(time.RFC3339Nano, v.UpdatedAt)
	return e
}

func check(sid, client string) error {
	if err := session.ValidSessionID(sid); err != nil {
		return err
	}
	return session.ValidClientID(client)
}

// Get returns the client's cursor, or ErrNotFound.
func (c *Cursors) Get(ctx context.Context, sid, client string) (session.CursorEntry, error) {
	if err := check(sid, client); err != nil {
		return session.CursorEntry{}, err
	}
	var v wire.CursorView
	if err := Call(ctx, c.c, wire.CursorGetRequest{SessionID: sid, Client: client}, &v); err != nil {
		return session.CursorEntry{}, err
	}
	return cursorEntry(sid, v), nil
}

// Put stores the cursor unconditionally and returns its revision.
func (c *Cursors) Put(ctx context.Context, sid, client string, cur session.Cursor) (uint64, error) {
	return c.set(ctx, sid, client, cur, nil)
}

// Update stores the cursor if its revision is expectRev (0: if the client
// has none), else ErrConflict; it returns the new revision.
func (c *Cursors) Update(ctx context.Context, sid, client string, cur session.Cursor, expectRev uint64) (uint64, error) {
	return c.set(ctx, sid, client, cur, &expectRev)
}

func (c *Cursors) set(ctx context.Context, sid, client string, cur session.Cursor, expectRev *uint64) (uint64, error) {
	if err := check(sid, client); err != nil {
		return 0, err
	}
	req := wire.CursorSetRequest{SessionID: sid, Client: client, LeafID: wire.NullID(), MinSeq: cur.Seq, ExpectRevision: expectRev}
	if cur.LeafID != "" {
		req.LeafID = wire.EntryID(cur.LeafID)
	}
	var v wire.CursorView
	if err := Call(ctx, c.c, req, &v); err != nil {
		return 0, err
	}
	return v.Revision, nil
}

// Delete removes the cursor; a missing cursor is not an error.
func (c *Cursors) Delete(ctx context.Context, sid, client string) error {
	if err := check(sid, client); err != nil {
		return err
	}
	_, err := c.c.Do(ctx, wire.CursorDeleteRequest{SessionID: sid, Client: client})
	return err
}

// List returns the session's cursors ordered by client id.
func (c *Cursors) List(ctx context.Context, sid string) ([]session.CursorEntry, error) {
	if err := session.ValidSessionID(sid); err != nil {
		return nil, err
	}
	var resp wire.CursorsReply
	if err := Call(ctx, c.c, wire.CursorListRequest{SessionID: sid}, &resp); err != nil {
		return nil, err
	}
	out := make([]session.CursorEntry, len(resp.Cursors))
	for i, v := range resp.Cursors {
		out[i] = cursorEntry(sid, v)
	}
	return out, nil
}

// Watch polls the session's cursors until ctx is done (then it returns
// ctx.Err()) and calls fn for each change it sees; see Cursors. The first
// poll reports every cursor that exists then: a poll cannot tell what
// changed just before it, and a watcher wants to know where cursors are.
// A poll that fails for a temporary reason is retried at the next
// interval; any other failure ends the watch with that error.
func (c *Cursors) Watch(ctx context.Context, sid string, fn func(e session.CursorEntry, deleted bool)) error {
	last := map[string]session.CursorEntry{}
	for {
		es, err := c.List(ctx, sid)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && !Temporary(err):
			return err
		case err == nil:
			now := make(map[string]session.CursorEntry, len(es))
			for _, e := range es {
				now[e.Client] = e
				if old, ok := last[e.Client]; !ok || old.Revision != e.Revision {
					fn(e, false)
				}
			}
			for _, client := range slices.Sorted(maps.Keys(last)) {
				if _, ok := now[client]; !ok {
					fn(last[client], true)
				}
			}
			last = now
		}
		if !pauseFor(ctx, c.PollInterval) {
			return ctx.Err()
		}
	}
}
