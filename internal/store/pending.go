package store

import (
	"context"
	"errors"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// A session written in several atomic batches (an import or fork beyond
// the log's MaxBatch) announces its record count on its header
// (session.Record.Total). Until the Store has applied that many of its
// records it is pending: built in st.pending, outside st.docs, so no
// reader (View, List, Stats, watchers) can see it; the last batch moves
// it into st.docs at once. Pending sessions are never evicted (eviction
// walks st.docs) and never written to snapshots: a snapshot's applied
// sequence stops before the first pending header (snapshotApplied), so
// after a restore the pending session is read again from the log.

// pendingDoc is a multi-batch session not yet whole.
type pendingDoc struct {
	doc       *Doc // nil once claimed
	headerSeq uint64
	total     int       // records of the whole session, header included
	have      int       // records applied so far, header included
	lastSeq   uint64    // the session's last sequence applied (any record)
	last      time.Time // when the log stored that record
	// claimed: an abandonment marker arrived; a node is purging the
	// session. It stays here (hidden, without its tree) until the purge
	// notice, so that a purge its claimer died before is done again.
	claimed bool
	// counted: the claim is this Store's and was counted (countClaim).
	counted bool
}

// startPending applies the header of a multi-batch session.
func (st *Store) startPending(r *session.Stored, h tree.Header) {
	d := newDoc(r, h)
	st.held += int64(d.Tree.Bytes())
	st.pending[r.Session] = &pendingDoc{doc: d, headerSeq: r.Seq, total: r.Total, have: 1, lastSeq: r.Seq, last: r.Time}
}

// applyPending applies a record of a pending session; the last one makes
// the session visible.
func (st *Store) applyPending(p *pendingDoc, r *session.Stored) {
	p.lastSeq, p.last = max(p.lastSeq, r.Seq), r.Time
	switch {
	case p.claimed:
		return
	case r.IsAbandon():
		p.claimed = true
		st.held -= int64(p.doc.Tree.Bytes())
		p.doc = nil
		if session.AbandonedBy(r.Record) == st.claimID {
			// This Store's marker: its claim landed even if the append's
			// reply did not (see reapOne).
			st.countClaim(r.Session, p)
		}
		return
	}
	p.have++
	if !r.IsHeader() {
		st.applyEntry(p.doc, r)
	}
	if p.have >= p.total {
		delete(st.pending, r.Session)
		st.docs[r.Session] = p.doc
		st.touch(p.doc)
	}
}

// dropPending forgets a pending session a purge notice removed.
func (st *Store) dropPending(sid string, upTo uint64) {
	p := st.pending[sid]
	if p == nil {
		return
	}
	if p.headerSeq > upTo {
		return
	}
	if p.doc != nil {
		st.held -= int64(p.doc.Tree.Bytes())
	}
	delete(st.pending, sid)
}

// snapshotApplied is the applied sequence a snapshot may claim: before the
// first pending header, so that a restored Store reads pending sessions
// again from the log. Applying again what the snapshot already holds is
// harmless: repeated headers and records at or below a session's last
// sequence are ignored, and a purge notice drops only what it covers.
// st.mu must be held.
func (st *Store) snapshotApplied() uint64 {
	applied := st.applied
	for _, p := range st.pending {
		// Also a claimed one: read again, its records and marker bring
		// it back as claimed, or, purged meanwhile, the notice alone.
		applied = min(applied, p.headerSeq-1)
	}
	return applied
}

// abandonedAfter is how long a pending session may go without a record
// before the Store removes it (Options.AbandonedAfter).
func (st *Store) abandonedAfter() time.Duration {
	if st.opts.AbandonedAfter > 0 {
		return st.opts.AbandonedAfter
	}
	return 30 * time.Second
}

// reapLoop removes the leftovers of dead writers (see reap), until ctx
// ends.
func (st *Store) reapLoop(ctx context.Context) {
	t := time.NewTicker(min(max(st.abandonedAfter()/4, 50*time.Millisecond), 5*time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			st.reap(ctx)
		}
	}
}

// reapCandidate is a pending session as reap looks at it.
type reapCandidate struct {
	sid     string
	lastSeq uint64
	claimed bool
}

// reap removes every pending session whose last record is older than
// abandonedAfter: its writer died between two batches (an atomic batch
// left unfinished is abandoned by the server after 10 s idle, so a live
// writer's next batch is never that late). It claims the session first by
// appending an abandonment marker with a compare-and-swap on the session's
// last sequence: of all the nodes that notice, exactly one succeeds, and a
// writer that is only slow is fenced, as its next batch expects that same
// last sequence. The claimer counts the cleanup and purges the session; a
// claimed session whose purge notice does not come (the claimer died) is
// purged again by any node, as purging is idempotent.
//
// Only a Store that was caught up with the log recently judges: one
// catching up would find sessions whose later batches it has not applied
// yet (its claim would fail the CAS, but need not be sent at all).
func (st *Store) reap(ctx context.Context) {
	after := st.abandonedAfter()
	now := st.opts.Now()
	if ns := st.stats.caughtUpAt.Load(); ns == 0 || now.Sub(time.Unix(0, ns)) > after {
		return
	}
	var due []reapCandidate
	st.mu.RLock()
	for sid, p := range st.pending {
		if now.Sub(p.last) >= after {
			due = append(due, reapCandidate{sid, p.lastSeq, p.claimed})
		}
	}
	st.mu.RUnlock()
	for _, c := range due {
		if ctx.Err() != nil {
			return
		}
		st.reapOne(ctx, c)
	}
}

func (st *Store) reapOne(ctx context.Context, c reapCandidate) {
	w := st.opts.Writer
	if !c.claimed {
		// The marker names this Store: a claim whose reply is lost (a
		// stream leader stepping down as it is stored) is still known as
		// this Store's when the feed brings the marker, and counted then;
		// the next pass finds it claimed and purges. Counting only on the
		// reply lost such cleanups, and a retry of the claim is refused as
		// a duplicate, which reads like another node's.
		_, err := w.Append(ctx, c.sid, c.lastSeq, []session.Record{session.AbandonRecord(c.lastSeq, st.claimID)})
		switch {
		case errors.Is(err, wire.ErrConflict), errors.Is(err, wire.ErrExists):
			return // another node claimed it, or its writer lives after all (or this Store did; see above)
		case err != nil:
			st.log.Warn("claiming an abandoned multi-batch session failed; retrying", "session", c.sid, "err", err)
			return
		}
		// Counted now as well as when the marker is applied, whichever
		// comes first: the purge below may remove the marker before the
		// feed has brought it.
		st.mu.Lock()
		if p := st.pending[c.sid]; p != nil {
			st.countClaim(c.sid, p)
		}
		st.mu.Unlock()
	}
	if err := w.Purge(ctx, c.sid); err != nil {
		st.log.Warn("purging an abandoned multi-batch session failed; retrying", "session", c.sid, "err", err)
	}
}

// countClaim counts and logs this Store's claim of pending session sid,
// once. st.mu must be held (write).
func (st *Store) countClaim(sid string, p *pendingDoc) {
	if p.counted {
		return
	}
	p.counted = true
	st.stats.abandoned.Add(1)
	st.log.Warn("removing an abandoned multi-batch session (its writer stopped between two batches)",
		"session", sid, "lastSeq", p.lastSeq, "idleFor", st.abandonedAfter())
}
