package store

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/wire"
)

// View calls fn with the session's Doc under the Store's read lock,
// reloading the session from the log first if it was evicted. fn must not
// keep d or anything in it past its return, and must not call the Store.
// ErrNotFound when the Store has no such session.
func (st *Store) View(ctx context.Context, id string, fn func(d *Doc) error) error {
	_, err := st.view(ctx, id, fn)
	return err
}

// view is View, which also returns the freshness of what fn saw: taken
// under the same lock, so that a reply's freshness headers describe its
// body, not the Store's state when the reply is written.
func (st *Store) view(ctx context.Context, id string, fn func(d *Doc) error) (Freshness, error) {
	if err := session.ValidSessionID(id); err != nil {
		return Freshness{}, err
	}
	for range 3 {
		st.mu.RLock()
		d := st.docs[id]
		if d == nil {
			st.mu.RUnlock()
			return Freshness{}, fmt.Errorf("session %s: %w", id, wire.ErrNotFound)
		}
		if d.Tree != nil {
			st.touch(d)
			f := st.freshnessLocked()
			err := fn(d)
			st.mu.RUnlock()
			return f, err
		}
		st.mu.RUnlock()
		if err := st.reload(ctx, id); err != nil {
			return Freshness{}, err
		}
	}
	return Freshness{}, fmt.Errorf("session %s: evicted again while loading; raise the memory budget: %w", id, wire.ErrUnavailable)
}

// ViewOrRead runs fn with the Store's copy of the session, or — when this node's
// Store has not seen the session yet (created through another node a moment
// ago) — with the log's authoritative copy. Either way fn sees a complete
// session, never a missing one that exists. It returns the freshness of
// what fn saw (see view).
func (st *Store) ViewOrRead(ctx context.Context, log session.Log, sid string, fn func(d *Doc) error) (Freshness, error) {
	f, err := st.view(ctx, sid, fn)
	if !errors.Is(err, wire.ErrNotFound) {
		return f, err
	}
	if !st.lacks(sid) {
		// Either fn's own not-found (an unknown entry), or the Store
		// applied the session between the two looks (it was created a
		// moment ago): look once more, which settles both.
		if f, err = st.view(ctx, sid, fn); !errors.Is(err, wire.ErrNotFound) || !st.lacks(sid) {
			return f, err
		}
	}
	if st.unheld {
		// The read is all this node has of the session: it must come from
		// a leader that can vouch for itself (LogLastSeq asks with the
		// leader's lease, jetstream.Leaderless), or a node cut off with a
		// deposed leader would serve what the majority has moved past,
		// with nothing to say so.
		if _, err := st.LogLastSeq(ctx); err != nil {
			return Freshness{}, fmt.Errorf("session %s: its shard is held elsewhere and the log's leader cannot vouch for it: %v: %w", sid, err, wire.ErrUnavailable)
		}
	}
	// What the body reflects, taken before the read: a sequence the node
	// learns while the read is on its way (its own acknowledgement of a
	// write, a leader's answer to another read, which an Unheld Store's
	// freshness is made of; a record a held Store applies) may be one the
	// read missed. Everything known before is in the leader's copy that
	// Read returns, so this is a true lower bound of what the body holds.
	st.mu.RLock()
	fresh := st.freshnessLocked()
	st.mu.RUnlock()
	recs, rerr := log.Read(ctx, sid, 0)
	if rerr != nil {
		if errors.Is(rerr, wire.ErrNotFound) {
			return Freshness{}, fmt.Errorf("session %s: %w", sid, wire.ErrNotFound)
		}
		return Freshness{}, rerr
	}
	t, seqs, berr := session.BuildFrom(ctx, log, recs)
	if berr != nil {
		return Freshness{}, berr
	}
	// The body is the log's copy, newer than anything applied before the
	// read: fresh is still a true lower bound of what it reflects.
	d := &Doc{ID: sid, Tree: t, Seqs: seqs, HeaderSeq: recs[0].Seq, LastSeq: recs[len(recs)-1].Seq, Entries: t.Len(),
		Created: parseCreated(t.Header.Timestamp, recs[0].Time), Modified: recs[len(recs)-1].Time}
	d.timesFromTree()
	return fresh, fn(d)
}

// lacks reports whether the Store has no session id (as opposed to fn
// having returned ErrNotFound about something inside it).
func (st *Store) lacks(id string) bool {
	st.mu.RLock()
	defer st.mu.RUnlock()
	return st.docs[id] == nil
}

// touch marks d as just used (for LRU eviction); safe under the read lock.
func (st *Store) touch(d *Doc) {
	d.lastUse.Store(st.clock.Add(1))
}

// ListFilter selects sessions for List. Empty fields match everything.
type ListFilter struct {
	Name      string // substring of the name, case-insensitive
	Cwd       string // exact working directory
	CwdPrefix string // the working directory is this path or under it (CwdUnder)
	Label     string // some entry carries exactly this label
	// ParentSession: the header's parentSession names this session: is
	// its id (forks made here), or a path holding it (pi's forks name
	// the parent's file).
	ParentSession string
	Since         time.Time // modified at or after
	After         string    // page cursor: only ids greater than this
	Limit         int       // at most this many (default 100, max 1000)
	Preview       bool      // fill each Info's FirstMessage where known
}

// CwdUnder reports whether the working directory cwd is prefix or under it,
// path by path: /work/team-a is under /work, not under /work/team; cwd is
// cleaned first, so /work/team-a/../team-b is not under /work/team-a.
func CwdUnder(cwd, prefix string) bool {
	if cwd == "" || !strings.HasPrefix(cwd, "/") {
		return false
	}
	cwd, prefix = path.Clean(cwd), path.Clean(prefix)
	return prefix == "/" || cwd == prefix || strings.HasPrefix(cwd, prefix+"/")
}

// List returns sessions in id order (UUIDv7 ids sort by creation time) and
// the cursor for the next page ("" on the last page).
func (st *Store) List(_ context.Context, f ListFilter) ([]wire.Info, string) {
	infos, next, _ := st.list(f)
	return infos, next
}

// list is List, which also returns the freshness of the page (see view).
func (st *Store) list(f ListFilter) ([]wire.Info, string, Freshness) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	f.Limit = min(f.Limit, 1000)
	st.mu.RLock()
	defer st.mu.RUnlock()
	fresh := st.freshnessLocked()
	ids := make([]string, 0, len(st.docs))
	for id := range st.docs {
		if id > f.After {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	var out []wire.Info
	for k, id := range ids {
		d := st.docs[id]
		in := d.Info()
		if !f.Since.IsZero() && in.Modified.Before(f.Since) ||
			f.Cwd != "" && in.Cwd != f.Cwd ||
			f.CwdPrefix != "" && !CwdUnder(in.Cwd, f.CwdPrefix) ||
			f.Name != "" && (in.Name == nil || !strings.Contains(strings.ToLower(*in.Name), strings.ToLower(f.Name))) ||
			f.Label != "" && !d.HasLabel(f.Label) ||
			f.ParentSession != "" && (in.ParentSession == nil || !strings.Contains(*in.ParentSession, f.ParentSession)) {
			continue
		}
		if f.Preview {
			in.FirstMessage = d.firstMessage()
		}
		out = append(out, in)
		if len(out) == f.Limit {
			if k < len(ids)-1 {
				return out, id, fresh
			}
			break
		}
	}
	return out, "", fresh
}

// Stats are the Store's counters, for metrics and status.
type Stats struct {
	Applied       uint64 // last log sequence applied
	LogLastSeq    uint64 // the highest sequence known in the log: its end when last polled, or a later one this node acknowledged
	Lag           uint64 // LogLastSeq - Applied (0 when caught up)
	CaughtUpAt    time.Time
	Sessions      int   // sessions known
	Loaded        int   // sessions whose trees are in memory
	BytesHeld     int64 // JSON bytes of loaded trees
	MemoryBudget  int64 // the cap on BytesHeld now (0: none)
	Records       uint64
	SkippedRecs   uint64
	Evictions     uint64
	Reloads       uint64
	LastFollowErr string
	// Unheld: a shard this node does not hold (Unheld); its reads go to
	// the log and it counts nothing.
	Unheld bool

	// Multi-batch sessions still being written: hidden, not in Sessions.
	Pending int
	// AbandonedPurged counts the abandoned multi-batch sessions (writer
	// died between two batches) this Store claimed and purged.
	AbandonedPurged uint64
}

// Stats returns a snapshot of the counters.
func (st *Store) Stats() Stats {
	st.mu.RLock()
	s := Stats{Applied: st.applied, Sessions: len(st.docs), Pending: len(st.pending), BytesHeld: st.held, MemoryBudget: st.budget.Load()}
	for _, d := range st.docs {
		if d.Tree != nil {
			s.Loaded++
		}
	}
	st.mu.RUnlock()
	s.LogLastSeq = st.known()
	if s.LogLastSeq > s.Applied {
		// In the shard's own numbering: a shard's Store that applied
		// nothing yet is at 0, not at the shard's base (shard.Seq).
		s.Lag = shard.Raw(s.LogLastSeq) - shard.Raw(s.Applied)
	}
	if ns := st.stats.caughtUpAt.Load(); ns != 0 {
		s.CaughtUpAt = time.Unix(0, ns)
	}
	s.Records = st.stats.applied.Load()
	s.SkippedRecs = st.stats.skipped.Load()
	s.Evictions = st.stats.evictions.Load()
	s.Reloads = st.stats.reloads.Load()
	s.AbandonedPurged = st.stats.abandoned.Load()
	if e, ok := st.stats.followError.Load().(string); ok {
		s.LastFollowErr = e
	}
	if st.unheld {
		// Held elsewhere: nothing here lags, reads are the log's.
		s.Unheld, s.Applied, s.Lag, s.CaughtUpAt = true, s.LogLastSeq, 0, st.opts.Now()
	}
	return s
}

// Changed returns a channel that is closed the next time the Store applies
// records (for watchers: read, then wait on Changed, then read again).
func (st *Store) Changed() <-chan struct{} {
	if st.unheld {
		return unheldChanged()
	}
	st.mu.RLock()
	defer st.mu.RUnlock()
	return st.progress
}
