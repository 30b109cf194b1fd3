package session

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pifleet/sessionlog/internal/wire"
)

// Compile-time checks: MemLog is both sides of the log.
var (
	_ Log    = (*MemLog)(nil)
	_ Feed   = (*MemLog)(nil)
	_ Eraser = (*MemLog)(nil)
)

// MemLog is an in-memory Log and Feed with the same contract as the JetStream
// adapter, for tests of the engine and as the reference implementation that
// enginetest.TestLog is first run against. The zero value is not usable; call
// NewMemLog.
//
// Like JetStream, sequences are log-wide and never reused (a Purge does not
// move LastSeq back), and the entry ids of a session stay remembered after a
// Purge: JetStream's dedupe window outlives a purge too, so a fake that forgot
// them would let tests pass that fail against the real log. MemLog's dedupe
// window is infinite.
type MemLog struct {
	// Now stamps Stored.Time. Defaults to time.Now; tests may replace it before
	// the first Append (time is an input).
	Now func() time.Time

	maxBatch       int
	maxRecordBytes int

	mu       sync.Mutex
	recs     []memRecord                    // every unpurged record, in Seq order
	lastSeq  uint64                         // last sequence ever assigned
	nextCall uint64                         // numbers Append calls, to keep batches whole
	last     map[string]uint64              // session -> last Seq; absent when empty
	ids      map[string]map[string]struct{} // session -> stored message ids (dedupe)
	changed  chan struct{}                  // closed and replaced on every change
}

// memRecord is a stored record plus the Append call that stored it, so that
// Follow can deliver the records of one call together.
type memRecord struct {
	Stored
	call uint64
}

// NewMemLog returns an empty MemLog that accepts at most maxBatch records per
// Append and records of at most maxRecordBytes bytes of Data.
func NewMemLog(maxBatch, maxRecordBytes int) *MemLog {
	return &MemLog{
		Now:            time.Now,
		maxBatch:       maxBatch,
		maxRecordBytes: maxRecordBytes,
		last:           make(map[string]uint64),
		ids:            make(map[string]map[string]struct{}),
		changed:        make(chan struct{}),
	}
}

// MaxBatch returns the largest number of records one Append may carry.
func (l *MemLog) MaxBatch() int { return l.maxBatch }

// msgID is the dedupe key of a record within its session, the same as the
// JetStream adapter's Nats-Msg-Id suffix.
func msgID(r Record) string {
	if r.IsHeader() {
		return "header"
	}
	return r.ID
}

// CheckAppend validates an Append before anything is stored, the same way
// for every Log: the session id, the number of records (wire.ErrTooLarge past
// maxBatch), each record's size (wire.ErrTooLarge past maxRecordBytes of Data),
// entry ids, header-safe Type/ID/Parent (they travel as message headers), and
// ids repeated within the call (wire.ErrConflict: the batch could never be stored).
func CheckAppend(session string, recs []Record, maxBatch, maxRecordBytes int) error {
	if err := ValidSessionID(session); err != nil {
		return err
	}
	if len(recs) == 0 {
		return wire.Invalid("records", "an append needs at least one record")
	}
	if len(recs) > maxBatch {
		return fmt.Errorf("%w: %d records in one append, the limit is %d", wire.ErrTooLarge, len(recs), maxBatch)
	}
	seen := make(map[string]int, len(recs))
	for i, r := range recs {
		if len(r.Data) > maxRecordBytes {
			return &RecordError{Index: i, Err: fmt.Errorf("%w: %d bytes, the limit is %d", wire.ErrTooLarge, len(r.Data), maxRecordBytes)}
		}
		if r.Fork != nil {
			if !r.IsHeader() {
				return wire.Invalid(fmt.Sprintf("records[%d].forkOf", i), "only a header names a fork's parent")
			}
			if err := r.Fork.Valid(); err != nil {
				return err
			}
		}
		if !r.IsHeader() && r.ID == "" {
			return wire.Invalid(fmt.Sprintf("records[%d].id", i), "an entry needs an id")
		}
		for field, v := range map[string]string{"type": r.Type, "id": r.ID, "parentId": r.Parent} {
			if strings.ContainsAny(v, "\r\n") {
				return wire.Invalid(fmt.Sprintf("records[%d].%s", i, field), "line breaks are not allowed")
			}
		}
		id := msgID(r)
		if j, dup := seen[id]; dup {
			return fmt.Errorf("%w: records %d and %d have the same id %q", wire.ErrConflict, j, i, id)
		}
		seen[id] = i
	}
	return nil
}

// Append stores recs atomically at the end of session; see Log.
func (l *MemLog) Append(ctx context.Context, session string, expectLast uint64, recs []Record) ([]uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := CheckAppend(session, recs, l.maxBatch, l.maxRecordBytes); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()

	if last := l.last[session]; last != expectLast {
		if expectLast == 0 {
			return nil, fmt.Errorf("%w: session %s (last sequence %d)", wire.ErrExists, session, last)
		}
		return nil, fmt.Errorf("%w: session %s: expected last sequence %d, is %d", wire.ErrConflict, session, expectLast, last)
	}
	stored := l.ids[session]
	for _, r := range recs {
		id := msgID(r)
		if _, dup := stored[id]; !dup {
			continue
		}
		if expectLast == 0 || r.IsHeader() {
			return nil, fmt.Errorf("%w: session %s: %s already stored", wire.ErrExists, session, id)
		}
		return nil, fmt.Errorf("%w: session %s: entry %s already stored", wire.ErrConflict, session, id)
	}

	if stored == nil {
		stored = make(map[string]struct{}, len(recs))
		l.ids[session] = stored
	}
	l.nextCall++
	now := l.Now()
	seqs := make([]uint64, len(recs))
	for i, r := range recs {
		l.lastSeq++
		r.Data = append([]byte(nil), r.Data...)
		l.recs = append(l.recs, memRecord{Stored: Stored{Session: session, Seq: l.lastSeq, Time: now, Record: r}, call: l.nextCall})
		stored[msgID(r)] = struct{}{}
		seqs[i] = l.lastSeq
	}
	l.last[session] = l.lastSeq
	l.notifyLocked()
	return seqs, nil
}

// Read returns the session's records with Seq > afterSeq; see Log.
func (l *MemLog) Read(ctx context.Context, session string, afterSeq uint64) ([]Stored, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ValidSessionID(session); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.last[session]; !ok {
		return nil, fmt.Errorf("session %s: %w", session, wire.ErrNotFound)
	}
	out := []Stored{}
	for _, r := range l.recs[l.indexLocked(afterSeq+1):] {
		if r.Session == session {
			out = append(out, copyStored(r.Stored))
		}
	}
	return out, nil
}

// SessionLastSeq returns the session's last sequence; see Log.
func (l *MemLog) SessionLastSeq(ctx context.Context, session string) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := ValidSessionID(session); err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	last, ok := l.last[session]
	if !ok {
		return 0, fmt.Errorf("session %s: %w", session, wire.ErrNotFound)
	}
	return last, nil
}

// Purge removes every record of the session and appends a purge notice
// (PurgeRecord on PurgeToken) in the same step; see Log.
func (l *MemLog) Purge(ctx context.Context, session string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ValidSessionID(session); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.last[session]; !ok {
		return nil
	}
	kept := l.recs[:0]
	for _, r := range l.recs {
		if r.Session != session {
			kept = append(kept, r)
		}
	}
	clear(l.recs[len(kept):])
	l.recs = kept
	delete(l.last, session)

	upTo := l.lastSeq
	l.lastSeq++
	l.nextCall++
	notice := Stored{Session: PurgeToken, Seq: l.lastSeq, Time: l.Now(), Record: PurgeRecord(session, upTo)}
	l.recs = append(l.recs, memRecord{Stored: notice, call: l.nextCall})
	l.notifyLocked()
	return nil
}

// Erase removes every record of the session and appends the erasure
// notice in the same step; see Eraser. Memory holds no bytes to overwrite.
func (l *MemLog) Erase(ctx context.Context, session string, expectLast uint64) (Erased, error) {
	if err := ctx.Err(); err != nil {
		return Erased{}, err
	}
	if err := ValidSessionID(session); err != nil {
		return Erased{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	last, ok := l.last[session]
	if !ok {
		return Erased{}, fmt.Errorf("session %s: %w", session, wire.ErrNotFound)
	}
	if expectLast != 0 && expectLast != last {
		return Erased{}, &wire.ConflictError{LastSeq: last, Reason: fmt.Sprintf("session %s is at %d, not %d", session, last, expectLast)}
	}
	kept := l.recs[:0]
	n := 0
	for _, r := range l.recs {
		if r.Session != session {
			kept = append(kept, r)
		} else {
			n++
		}
	}
	clear(l.recs[len(kept):])
	l.recs = kept
	delete(l.last, session)
	l.lastSeq++
	l.nextCall++
	notice := Stored{Session: PurgeToken, Seq: l.lastSeq, Time: l.Now(), Record: EraseRecord(session, last)}
	l.recs = append(l.recs, memRecord{Stored: notice, call: l.nextCall})
	l.notifyLocked()
	return Erased{Records: n, LastSeq: last}, nil
}

// LastSeq returns the last sequence ever stored (0 when nothing was); see Feed.
func (l *MemLog) LastSeq(ctx context.Context) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastSeq, nil
}

// Follow delivers every record with Seq >= from, the records of one Append in
// one call, then waits for more until ctx is done; see Feed. It waits on a
// channel that every change closes, so an idle Follow costs nothing.
func (l *MemLog) Follow(ctx context.Context, from uint64, apply func([]Stored) error) error {
	next := max(from, 1)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		l.mu.Lock()
		var group []Stored
		i := l.indexLocked(next)
		if i < len(l.recs) {
			call := l.recs[i].call
			for ; i < len(l.recs) && l.recs[i].call == call; i++ {
				group = append(group, copyStored(l.recs[i].Stored))
			}
		}
		changed := l.changed
		l.mu.Unlock()

		if len(group) > 0 {
			if err := apply(group); err != nil {
				return err
			}
			next = group[len(group)-1].Seq + 1
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// indexLocked returns the position in l.recs of the first record with
// Seq >= seq. l.mu must be held.
func (l *MemLog) indexLocked(seq uint64) int {
	return sort.Search(len(l.recs), func(i int) bool { return l.recs[i].Seq >= seq })
}

// notifyLocked wakes every Follow waiting for a change. l.mu must be held.
func (l *MemLog) notifyLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

func copyStored(s Stored) Stored {
	s.Data = append([]byte(nil), s.Data...)
	return s
}
