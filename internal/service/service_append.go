package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
	"github.com/pifleet/sessionlog/internal/writer"
)

// Append stores req's entries atomically as children of their parents. An
// entry may leave out id (assigned), parentId (the client's cursor, else the
// default leaf; later entries default to the previous one, forming a chain;
// null explicitly makes a root) and timestamp (now). Re-sending entries that
// are already stored with the same ids and content returns the original
// result, so a client may retry after a timeout; the same id with other
// content is ErrConflict. With req.Orphans a parent or label target the
// session lacks is kept as written (an orphan root, as pi reads it).
func (s *Service) Append(ctx context.Context, sid string, req wire.AppendRequest) (wire.WriteResult, error) {
	if req.ExpectLastSeq != nil {
		// Before anything is read at the expectation: another shard's
		// sequence is no position of this session.
		if err := shard.CheckExpect(s.Log, sid, *req.ExpectLastSeq); err != nil {
			return wire.WriteResult{}, err
		}
	}
	drafts, err := s.checkAppend(sid, req)
	if err != nil {
		return wire.WriteResult{}, err
	}
	pl := &placement{drafts: drafts, ids: tree.IDGen{R: s.Rand}, orphans: req.Orphans}
	// The cursor is where an entry without parentId goes; when the first
	// names its parent (every later one defaults to the previous entry),
	// it is not read at all: one cursor-bucket round trip less.
	if !drafts[0].parentSet {
		if pl.cursorLeaf, pl.hasCursor, err = s.cursorLeaf(ctx, sid, req.Client); err != nil {
			return wire.WriteResult{}, err
		}
	}
	if s.Store != nil {
		// Where the session stands is usually the client's own previous
		// append, acknowledged a moment ago (by this node: its own ack; or
		// as the client says: expectLastSeq) and not applied here yet. The
		// Store applies it within a millisecond or so; waiting that long
		// is cheaper than a read from the stream leader for the parent it
		// lacks, or a CAS conflict on its stale last sequence.
		wait := s.ownAck(sid)
		if req.ExpectLastSeq != nil {
			wait = max(wait, *req.ExpectLastSeq)
		}
		if wait > 0 {
			wctx, cancel := context.WithTimeout(ctx, cmp.Or(s.OwnWait, expectWait))
			_ = store.WaitAt(wctx, s.Store, wait)
			cancel()
		}
		// A session this node has not seen at all, created through
		// another node a moment ago (writers move between nodes), is
		// waited for as a parent is (plan.Await below), rather than read
		// from the log whole.
		if d := drafts[0]; d.parentSet && d.parent != "" {
			if st := s.Store.For(sid); !st.Has(sid) {
				wctx, cancel := context.WithTimeout(ctx, cmp.Or(s.ParentWait, parentWait))
				st.WaitForEntry(wctx, sid, d.parent)
				cancel()
			}
		}
	}
	pl.ts = tree.FormatTimestamp(s.now()) // after the waits: entries are stamped when they are written
	plan := &writer.AppendPlan{Log: s.Log, ID: sid, Target: &storeTarget{s: s, sid: sid}, Placer: pl, Expect: req.ExpectLastSeq}
	if s.Store != nil {
		// A parent (or label target) written through another node a
		// moment ago — writers move between nodes: any worker picks any
		// session up — is here within a millisecond or so; else the log
		// is read as before.
		plan.Await = func(ctx context.Context, id string) bool {
			wctx, cancel := context.WithTimeout(ctx, cmp.Or(s.ParentWait, parentWait))
			defer cancel()
			return s.Store.For(sid).WaitForEntry(wctx, sid, id)
		}
	}
	if err := plan.Place(ctx); err != nil {
		return wire.WriteResult{}, err
	}
	seen := plan.Seen()
	if stored, done := plan.Done(); done {
		return s.finish(ctx, sid, req.Client, results(plan.Entries(), stored), seen)
	}
	expect := seen
	if req.ExpectLastSeq != nil {
		expect = *req.ExpectLastSeq
	}
	seqs, err := writer.Publish(ctx, s.Log, sid, expect, plan, s.Retry)
	var ce *wire.ConflictError
	switch {
	case errors.As(err, &ce) && req.ExpectLastSeq != nil:
		return wire.WriteResult{}, wire.Field("expectLastSeq", err)
	case err != nil:
		return wire.WriteResult{}, entryOf(err, 0)
	}
	last := seqs[len(seqs)-1]
	if _, done := plan.Done(); done {
		last = max(last, seen)
	}
	return s.finish(ctx, sid, req.Client, results(plan.Entries(), seqs), last)
}

// checkAppend validates an append request and parses its entries.
func (s *Service) checkAppend(sid string, req wire.AppendRequest) ([]draft, error) {
	if err := session.ValidSessionID(sid); err != nil {
		return nil, err
	}
	if len(req.Entries) == 0 {
		return nil, wire.Invalid("entries", "at least one entry is required")
	}
	if len(req.Entries) > s.Log.MaxBatch() {
		return nil, wire.Field("entries", fmt.Errorf("%w: %d entries exceed the atomic batch limit of %d", wire.ErrTooLarge, len(req.Entries), s.Log.MaxBatch()))
	}
	drafts := make([]draft, len(req.Entries))
	for k, raw := range req.Entries {
		d, err := parseDraft(fmt.Sprintf("entries[%d]", k), raw)
		if err != nil {
			return nil, err
		}
		drafts[k] = d
	}
	if req.Client != "" {
		if err := session.ValidClientID(req.Client); err != nil {
			return nil, err
		}
	}
	return drafts, nil
}

// entryOf names the entry a record the log refused came from: record
// offset+k is entries[k], the ones before offset the header.
func entryOf(err error, offset int) error {
	var re *session.RecordError
	if !errors.As(err, &re) {
		return err
	}
	field := "header"
	if k := re.Index - offset; k >= 0 {
		field = fmt.Sprintf("entries[%d]", k)
	}
	return &wire.FieldError{Field: field, Reason: re.Err.Error(), Err: re.Err}
}

// cursorLeaf reads the leaf of client's cursor, if it has one.
func (s *Service) cursorLeaf(ctx context.Context, sid, client string) (string, bool, error) {
	if client == "" {
		return "", false, nil
	}
	c, err := s.Cursors.Get(ctx, sid, client)
	switch {
	case err == nil:
		return c.LeafID, true, nil
	case errors.Is(err, wire.ErrNotFound):
		return "", false, nil
	}
	return "", false, err
}

// expectWait and parentWait are the defaults of Service.OwnWait and
// Service.ParentWait.
const (
	expectWait = 20 * time.Millisecond
	parentWait = 5 * time.Millisecond
)

// finish moves the client's cursor to the last entry written (the null
// leaf when none was: a create without entries) and reports it.
func (s *Service) finish(ctx context.Context, sid, client string, res []wire.EntryResult, lastSeq uint64) (wire.WriteResult, error) {
	s.noteAck(sid, lastSeq)
	out := wire.WriteResult{LastSeq: lastSeq, Entries: res}
	if client == "" {
		return out, nil
	}
	c := session.Cursor{Seq: lastSeq, UpdatedAt: s.now()}
	if len(res) > 0 {
		c.LeafID = res[len(res)-1].ID
	}
	rev, err := s.putCursor(ctx, sid, client, c)
	if err != nil {
		return out, fmt.Errorf("entries stored (last seq %d) but moving cursor %s failed: %w", lastSeq, client, err)
	}
	v := cursorView(session.CursorEntry{Client: client, Cursor: c, Revision: rev})
	out.Cursor = &v
	return out, nil
}

// cursorRetry bounds how long finish asks again to move a cursor the
// bucket could not take: about a JetStream election (4 to 9 s), during
// which the bucket has no leader and a put gets no responders.
const cursorRetry = 10 * time.Second

// putCursor puts the cursor, asking again while the bucket is unavailable
// (within cursorRetry and ctx): the entries are stored already, and the
// client would otherwise retry the whole append to move its cursor.
func (s *Service) putCursor(ctx context.Context, sid, client string, c session.Cursor) (uint64, error) {
	deadline := time.Now().Add(cursorRetry)
	backoff := 50 * time.Millisecond
	for {
		rev, err := s.Cursors.Put(ctx, sid, client, c)
		if err == nil || !errors.Is(err, wire.ErrUnavailable) || time.Now().After(deadline) {
			return rev, err
		}
		if !session.Sleep(ctx, &backoff, time.Second) {
			return rev, err
		}
	}
}

// doc runs fn with the session: the Store's copy, or the read log's (see
// store.Store.ViewOrRead).
func (s *Service) doc(ctx context.Context, sid string, fn func(d *store.Doc) error) (store.Freshness, error) {
	return s.Store.For(sid).ViewOrRead(ctx, s.Reads(), sid, fn)
}

// Reads is the log reads fall back to: ReadLog, else Log.
func (s *Service) Reads() session.Log {
	if s.ReadLog != nil {
		return s.ReadLog
	}
	return s.Log
}
