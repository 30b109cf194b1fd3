package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
	"github.com/pifleet/sessionlog/internal/writer"
)

// sessionView is what planning an append needs to know about a session.
type sessionView struct {
	lastSeq uint64
	leaf    string // pi's default leaf: the last entry in log order
	lookup  func(id string) (*tree.Entry, uint64, bool)
}

// Append stores req's entries atomically as children of their parents. An
// entry may leave out id (assigned), parentId (the client's cursor, else the
// default leaf; later entries default to the previous one, forming a chain;
// null explicitly makes a root) and timestamp (now). Re-sending entries that
// are already stored with the same ids and content returns the original
// result, so a client may retry after a timeout; the same id with other
// content is ErrConflict.
func (s *Service) Append(ctx context.Context, sid string, req wire.AppendRequest) (wire.WriteResult, error) {
	if err := session.ValidSessionID(sid); err != nil {
		return wire.WriteResult{}, err
	}
	if len(req.Entries) == 0 {
		return wire.WriteResult{}, wire.Invalid("entries", "at least one entry is required")
	}
	if len(req.Entries) > s.Log.MaxBatch() {
		return wire.WriteResult{}, fmt.Errorf("%w: %d entries exceed the atomic batch limit of %d", wire.ErrTooLarge, len(req.Entries), s.Log.MaxBatch())
	}
	drafts := make([]draft, len(req.Entries))
	for k, raw := range req.Entries {
		d, err := parseDraft(fmt.Sprintf("entries[%d]", k), raw)
		if err != nil {
			return wire.WriteResult{}, err
		}
		drafts[k] = d
	}
	cursorLeaf, hasCursor := "", false
	if req.Client != "" {
		if err := session.ValidClientID(req.Client); err != nil {
			return wire.WriteResult{}, err
		}
		c, err := s.Cursors.Get(ctx, sid, req.Client)
		switch {
		case err == nil:
			cursorLeaf, hasCursor = c.LeafID, true
		case !errors.Is(err, wire.ErrNotFound):
			return wire.WriteResult{}, err
		}
	}
	if req.ExpectLastSeq != nil && s.Store != nil {
		// The client says where the session stands: usually its own
		// previous append, acknowledged a moment ago and not applied here
		// yet. The Store applies it within a millisecond or so; waiting
		// that long is cheaper than a read from the stream leader.
		wctx, cancel := context.WithTimeout(ctx, expectWait)
		_ = s.Store.WaitFor(wctx, *req.ExpectLastSeq)
		cancel()
	}
	ids := tree.IDGen{R: s.Rand}
	ts := tree.FormatTimestamp(s.now())
	missed := map[string]storedEntry{}
	var missedLeaf string
	var missedLast uint64

	// plan builds the entries against what is known of the session; done
	// means every entry is already stored as asked (an idempotent retry).
	plan := func(v sessionView) ([]tree.Entry, []wire.EntryResult, bool, error) {
		lookup := func(id string) (*tree.Entry, uint64, bool) {
			if m, ok := missed[id]; ok {
				return &m.e, m.seq, true
			}
			return v.lookup(id)
		}
		leaf := v.leaf
		if missedLeaf != "" {
			leaf = missedLeaf
		}
		if hasCursor {
			leaf = cursorLeaf
		}
		var out []tree.Entry
		var stored []wire.EntryResult
		inBatch := map[string]bool{}
		parent := leaf
		for k := range drafts {
			d := &drafts[k]
			field := fmt.Sprintf("entries[%d]", k)
			if d.parentSet {
				parent = d.parent
			}
			if d.id != "" {
				if e, seq, ok := lookup(d.id); ok {
					if !d.sameAs(e) {
						return nil, nil, false, fmt.Errorf("%s.id: %q is already stored with other content: %w", field, d.id, wire.ErrConflict)
					}
					stored = append(stored, wire.EntryResult{ID: d.id, Seq: seq})
					parent = d.id
					continue
				}
			}
			if parent != "" && !inBatch[parent] {
				if _, _, ok := lookup(parent); !ok {
					return nil, nil, false, &unknownParent{wire.Invalid(field+".parentId", fmt.Sprintf("unknown parent %q", parent))}
				}
			}
			if t := d.labelTarget; t != "" && !inBatch[t] {
				if _, _, ok := lookup(t); !ok {
					return nil, nil, false, &unknownParent{wire.Invalid(field+".targetId", fmt.Sprintf("unknown entry %q", t))}
				}
			}
			id := d.id
			if id == "" {
				id = ids.New(func(id string) bool { _, _, ok := lookup(id); return ok || inBatch[id] })
			} else if inBatch[id] {
				return nil, nil, false, wire.Invalid(field+".id", fmt.Sprintf("duplicate id %q in the request", id))
			}
			e, err := d.build(id, parent, ts)
			if err != nil {
				return nil, nil, false, wire.Invalid(field, err.Error())
			}
			out = append(out, e)
			inBatch[id] = true
			parent = id
		}
		if len(stored) == len(drafts) {
			return nil, stored, true, nil
		}
		if len(stored) > 0 {
			return nil, nil, false, fmt.Errorf("%w: %d of the %d entries are already stored (%s first); an append is atomic, so send the rest alone", wire.ErrConflict, len(stored), len(drafts), stored[0].ID)
		}
		return out, nil, false, nil
	}

	absorb := func(ms []session.Stored) {
		for _, r := range ms {
			missedLast = max(missedLast, r.Seq)
			if r.IsHeader() {
				continue
			}
			if e, err := tree.ParseEntry(r.Data); err == nil {
				missed[e.ID] = storedEntry{e, r.Seq}
				missedLeaf = e.ID
			}
		}
	}
	var entries []tree.Entry
	var lastSeq uint64
	var done []wire.EntryResult
	err := s.planWithRetry(ctx, sid, absorb, func(v sessionView) error {
		var err error
		var isDone bool
		entries, done, isDone, err = plan(v)
		if isDone {
			lastSeq = v.lastSeq
		}
		if !isDone {
			done = nil
		}
		if req.ExpectLastSeq == nil {
			lastSeq = max(v.lastSeq, missedLast)
		}
		return err
	})
	if err != nil {
		return wire.WriteResult{}, err
	}
	if done != nil {
		return s.finish(ctx, sid, req.Client, done, lastSeq)
	}
	expect := lastSeq
	if req.ExpectLastSeq != nil {
		expect = *req.ExpectLastSeq
	}
	seqs, err := writer.CASAppend(ctx, s.Log, sid, expect, records(entries), s.Retry, func(ms []session.Stored, _ []session.Record, _ bool) ([]session.Record, []uint64, bool, error) {
		absorb(ms)
		var next []tree.Entry
		var res []wire.EntryResult
		var isDone bool
		err := s.view(ctx, sid, func(v sessionView) error {
			var err error
			next, res, isDone, err = plan(v)
			return err
		})
		if err != nil {
			return nil, nil, false, err
		}
		if isDone {
			done = res
			seqs := make([]uint64, len(res))
			for k := range res {
				seqs[k] = res[k].Seq
			}
			return nil, seqs, true, nil
		}
		if req.ExpectLastSeq != nil {
			return nil, nil, false, &wire.ConflictError{LastSeq: missedLast,
				Reason: fmt.Sprintf("the session's last sequence is %d, not %d", missedLast, *req.ExpectLastSeq)}
		}
		entries = next
		return records(next), nil, false, nil
	})
	if err != nil {
		return wire.WriteResult{}, err
	}
	if done != nil {
		return s.finish(ctx, sid, req.Client, done, max(seqs[len(seqs)-1], lastSeq))
	}
	res := make([]wire.EntryResult, len(entries))
	for k := range entries {
		res[k] = wire.EntryResult{ID: entries[k].ID, Seq: seqs[k]}
	}
	return s.finish(ctx, sid, req.Client, res, seqs[len(seqs)-1])
}

// unknownParent marks a plan that named a parent this node has not seen;
// the log may have it (written through another node a moment ago).
type unknownParent struct{ error }

func (u *unknownParent) Unwrap() error { return u.error }

// planWithRetry runs plan against the Store's view; if it names a parent
// the view lacks, it reads what the Store has not applied yet from the log
// (authoritative) and plans once more, so a client's own earlier write is
// always a valid parent on any node.
func (s *Service) planWithRetry(ctx context.Context, sid string, absorb func([]session.Stored), plan func(v sessionView) error) error {
	var seen uint64
	err := s.view(ctx, sid, func(v sessionView) error {
		seen = v.lastSeq
		return plan(v)
	})
	var up *unknownParent
	if !errors.As(err, &up) {
		return err
	}
	ms, rerr := writer.ReadMissed(ctx, s.Log, sid, seen)
	if rerr != nil {
		return rerr
	}
	absorb(ms)
	return s.view(ctx, sid, plan)
}

// expectWait bounds how long an append with expectLastSeq waits for this
// node's Store to apply that sequence before it reads from the leader.
const expectWait = 20 * time.Millisecond

type storedEntry struct {
	e   tree.Entry
	seq uint64
}

func records(entries []tree.Entry) []session.Record {
	recs := make([]session.Record, len(entries))
	for k := range entries {
		recs[k] = session.RecordOf(&entries[k])
	}
	return recs
}

// finish moves the client's cursor to the last entry written.
func (s *Service) finish(ctx context.Context, sid, client string, res []wire.EntryResult, lastSeq uint64) (wire.WriteResult, error) {
	out := wire.WriteResult{LastSeq: lastSeq, Entries: res}
	if client == "" {
		return out, nil
	}
	c := session.Cursor{LeafID: res[len(res)-1].ID, Seq: lastSeq, UpdatedAt: s.now()}
	if _, err := s.Cursors.Put(ctx, sid, client, c); err != nil {
		return out, fmt.Errorf("entries stored (last seq %d) but moving cursor %s failed: %w", lastSeq, client, err)
	}
	return out, nil
}

// view runs fn against the session as planning an append needs it.
func (s *Service) view(ctx context.Context, sid string, fn func(v sessionView) error) error {
	return s.Store.ViewOrRead(ctx, s.Log, sid, func(d *store.Doc) error { return fn(docView(d)) })
}

func docView(d *store.Doc) sessionView {
	return sessionView{
		lastSeq: d.LastSeq,
		leaf:    d.Tree.LeafID(),
		lookup: func(id string) (*tree.Entry, uint64, bool) {
			i, ok := d.Tree.Index(id)
			if !ok {
				return nil, 0, false
			}
			return d.Tree.Entry(i), d.Seqs[i], true
		},
	}
}

// doc runs fn with the session: the Store's copy, or the log's (see
// store.Store.ViewOrRead).
func (s *Service) doc(ctx context.Context, sid string, fn func(d *store.Doc) error) error {
	return s.Store.ViewOrRead(ctx, s.Log, sid, fn)
}
