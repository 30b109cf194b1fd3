package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/wire"
)

// acks remembers, per session, the last sequence this node acknowledged a
// write at, until its Store has applied it: a read of the session on this
// node waits for it (read your writes without minSeq, whichever transport
// the write and the read came by). Entries go once applied, so the map
// holds only the writes of the last moments.
type acks struct {
	mu  sync.Mutex
	m   map[string]uint64
	max []uint64 // by shard, the highest sequence ever acknowledged: lists wait for them
	// By shard, the highest sequence ever acknowledged through this node,
	// of a shard held here or not: what a search's index must reach.
	every []uint64
	prune int // size at which applied entries are swept out

	// Every write acknowledged here, by session, swept by age (on a
	// sharded store): what the reads this node forwards wait for.
	unheld      map[string]unheldAck
	unheldPrune int

	// By shard, the log's end as this process first asked it when
	// forwarding a read: the writes it acknowledged before a restart are
	// all at or below it.
	started map[int]uint64
}

const minAckPrune = 1024

// noteAck records that this node acknowledged a write of sid at seq.
func (s *Service) noteAck(sid string, seq uint64) {
	if s.Store == nil {
		return // a Service that only writes
	}
	store.NoteLogSeq(s.Store, seq)
	a := &s.acks
	a.mu.Lock()
	k := shard.OfSeq(seq)
	for len(a.every) <= k {
		a.every = append(a.every, 0)
	}
	a.every[k] = max(a.every[k], seq)
	a.mu.Unlock()
	// Every ack, of a shard held here or not: the reads this node forwards
	// to a shard's holders wait for it (OwnAck) until it is too old to
	// matter, also once this node has handed back a shard it held when it
	// acknowledged (the Jepsen suite over 4 shards found a read through
	// the node miss its own write, answered by a holder just back from a
	// partition). Not on a store of one shard: every node holds it.
	if len(s.Store.All()) > 1 {
		a.noteUnheld(sid, seq, s.now())
	}
	if st, err := store.At(s.Store, seq); err == nil && !st.Held() {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m, a.prune = make(map[string]uint64), minAckPrune
	}
	a.m[sid] = max(a.m[sid], seq)
	for len(a.max) <= k {
		a.max = append(a.max, 0)
	}
	a.max[k] = max(a.max[k], seq)
	if len(a.m) >= a.prune {
		for id, q := range a.m {
			if store.AppliedAt(s.Store, q) {
				delete(a.m, id)
			}
		}
		// A Store far behind keeps many: sweep again only once they doubled.
		a.prune = max(minAckPrune, 2*len(a.m))
	}
}

// AckedOn is the highest sequence of shard k this node ever acknowledged
// a write at (0: none): a search waits for its index to reach it, so that
// the node that acknowledged a write finds it.
func (s *Service) AckedOn(k int) uint64 {
	a := &s.acks
	a.mu.Lock()
	defer a.mu.Unlock()
	if k < len(a.every) {
		return a.every[k]
	}
	return 0
}

// NoteAck records that a write of sid at seq was acknowledged through this
// node (by a holder it forwarded the write to): its reads here wait for it.
func (s *Service) NoteAck(sid string, seq uint64) { s.noteAck(sid, seq) }

// ForwardWait is the sequence a holder of sid's shard must have applied
// before it answers a request about sid that this node forwards to it, or
// 0: the last write acknowledged through this node within unheldAckAge,
// and for a log read (read) also the log's end when this process first
// forwarded one of the shard's (what it acknowledged before a restart is
// at or below it). Whatever this node's own copy of the shard has
// applied: the holder's is another, which may lag (a Store still catching
// up on a shard it takes over, or one being handed back, answers nothing
// while requests are forwarded). The error is the log's, when the end
// cannot be learned.
func (s *Service) ForwardWait(ctx context.Context, sid string, read bool) (uint64, error) {
	if s.Store == nil {
		return 0, nil
	}
	wait := s.acked(sid)
	if !read {
		return wait, nil
	}
	k := 0
	if sh, ok := s.Store.(interface{ Shard(string) int }); ok {
		k = sh.Shard(sid)
	}
	a := &s.acks
	a.mu.Lock()
	first, ok := a.started[k]
	a.mu.Unlock()
	if !ok {
		var err error
		if first, err = s.Store.For(sid).LogLastSeq(ctx); err != nil {
			return 0, fmt.Errorf("this node has not learned the log's end since it started, so it cannot tell whether the holder it forwards to has the writes it acknowledged before: %w", err)
		}
		a.mu.Lock()
		if a.started == nil {
			a.started = map[int]uint64{}
		}
		if cur, ok := a.started[k]; ok {
			first = cur // a racing first ask: either is a valid bound
		} else {
			a.started[k] = first
		}
		a.mu.Unlock()
	}
	return max(wait, first), nil
}

// unheldAckAge is how long a write acknowledged through this node for a
// shard it does not hold is waited for by its reads here: the holders
// apply it within milliseconds, and minSeq waits at most seconds.
const unheldAckAge = time.Minute

type unheldAck struct {
	seq uint64
	at  time.Time
}

func (a *acks) noteUnheld(sid string, seq uint64, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.unheld == nil {
		a.unheld, a.unheldPrune = map[string]unheldAck{}, minAckPrune
	}
	if cur := a.unheld[sid]; cur.seq < seq {
		a.unheld[sid] = unheldAck{seq, now}
	}
	if len(a.unheld) >= a.unheldPrune {
		for id, u := range a.unheld {
			if now.Sub(u.at) > unheldAckAge {
				delete(a.unheld, id)
			}
		}
		a.unheldPrune = max(minAckPrune, 2*len(a.unheld))
	}
}

// acked is the last sequence this node acknowledged for sid that it still
// remembers, or 0: in the map of writes its Store had not applied, or in
// the time-bounded one.
func (s *Service) acked(sid string) uint64 {
	now := s.now()
	a := &s.acks
	a.mu.Lock()
	defer a.mu.Unlock()
	seq := a.m[sid]
	if u := a.unheld[sid]; now.Sub(u.at) <= unheldAckAge {
		seq = max(seq, u.seq)
	}
	return seq
}

// ownAck returns the last sequence this node acknowledged for sid that
// its Store has not applied yet, or 0. The time-bounded map counts too: a
// write acknowledged while the shard was held elsewhere is not in a.m,
// and the shard may have been taken over since.
func (s *Service) ownAck(sid string) uint64 {
	if s.Store == nil {
		return 0
	}
	seq := s.acked(sid)
	if seq == 0 || !store.AppliedAt(s.Store, seq) {
		return seq
	}
	a := &s.acks
	a.mu.Lock()
	if q, ok := a.m[sid]; ok && q <= seq {
		delete(a.m, sid)
	}
	a.mu.Unlock()
	return 0
}

// ownAcks returns, of each shard, the highest sequence this node
// acknowledged that its Store has not applied yet (what a catalog read
// waits for).
func (s *Service) ownAcks() []uint64 {
	if s.Store == nil {
		return nil
	}
	a := &s.acks
	a.mu.Lock()
	maxes := slices.Clone(a.max)
	a.mu.Unlock()
	var out []uint64
	for _, q := range maxes {
		if q != 0 && !store.AppliedAt(s.Store, q) {
			out = append(out, q)
		}
	}
	return out
}

// Barrier is what a read must have applied before it answers: at most one
// Wait per shard of the log (one in all, unsharded), each the highest
// sequence of that shard it must wait for, and why.
type Barrier struct {
	Waits []Wait
}

// Wait is one sequence a read waits for.
type Wait struct {
	Seq    uint64
	Reason string // for the timeout's message: "minSeq 7", ...
	Field  string // the input that asked for it (minSeq, consistency), or ""
}

// On is the sequence the barrier waits for on shard k (0: none).
func (b Barrier) On(k int) uint64 {
	for _, w := range b.Waits {
		if shard.OfSeq(w.Seq) == k {
			return w.Seq
		}
	}
	return 0
}

// Raise makes the barrier wait for seq too, for the reason why (its
// field: the input that asked for it).
func (b *Barrier) Raise(seq uint64, field, why string, args ...any) {
	if seq == 0 {
		return
	}
	k := shard.OfSeq(seq)
	for i := range b.Waits {
		if shard.OfSeq(b.Waits[i].Seq) == k {
			if seq > b.Waits[i].Seq {
				b.Waits[i] = Wait{Seq: seq, Reason: fmt.Sprintf(why, args...), Field: field}
			}
			return
		}
	}
	b.Waits = append(b.Waits, Wait{Seq: seq, Reason: fmt.Sprintf(why, args...), Field: field})
}

// ReadBarrier returns what a read of session sid ("": of the catalog) must
// have applied before it answers: the caller's minSeq; the last write this
// node acknowledged for it (read your writes); and, for consistency
// "strong", the session's last sequence as the log's leader has it (for
// the catalog: each shard's), so the read is linearizable — it reflects
// every write acknowledged anywhere before it began.
func (s *Service) ReadBarrier(ctx context.Context, sid string, minSeq uint64, consistency string) (Barrier, error) {
	if consistency != "" && consistency != wire.ConsistencyStrong {
		return Barrier{}, wire.Invalid("consistency", fmt.Sprintf(`must be "strong" or absent, not %q`, consistency))
	}
	var b Barrier
	b.Raise(minSeq, "minSeq", "minSeq %d", minSeq)
	shards := s.Store.All()
	if sid != "" {
		shards = []*store.Store{s.Store.For(sid)}
	}
	for _, st := range shards {
		// What this process acknowledged before a restart is forgotten, but
		// it is all at or below the log's end when the process started.
		first, ok := st.FirstEnd()
		if !ok {
			var err error
			if first, err = st.LogLastSeq(ctx); err != nil {
				return b, fmt.Errorf("this node has not learned the log's end since it started, so it cannot tell whether it holds the writes it acknowledged before: %w", err)
			}
		}
		b.Raise(first, "", "sequence %d, the log's end when this node started (it may have acknowledged writes up to there before a restart)", first)
	}
	if sid != "" {
		own := s.ownAck(sid)
		b.Raise(own, "", "sequence %d, which this node acknowledged", own)
	} else {
		for _, own := range s.ownAcks() {
			b.Raise(own, "", "sequence %d, which this node acknowledged", own)
		}
	}
	if consistency == wire.ConsistencyStrong {
		// The end of every shard read (a session's: its own shard's) as its
		// stream's leader has it, from the stream info, where a leader that
		// may have been deposed on the far side of a partition refuses to
		// vouch for it (jetstream.Leaderless); a message get from it could
		// not tell. For a session its own last sequence too: in a mirror
		// region the Store's end is the home's as the mirror estimates it,
		// and the session's is asked of the home.
		for _, st := range shards {
			last, err := st.LogLastSeq(ctx)
			if err != nil {
				return b, wire.Field("consistency", fmt.Errorf("consistency=strong: asking the log's leader: %w", err))
			}
			b.Raise(last, "consistency", "sequence %d, the log's last at the leader (consistency=strong)", last)
		}
		if sid != "" {
			last, err := s.leaderSeq(ctx, sid)
			if err != nil {
				return b, wire.Field("consistency", fmt.Errorf("consistency=strong: asking the log's leader: %w", err))
			}
			b.Raise(last, "consistency", "sequence %d, the session's last at the leader (consistency=strong)", last)
		}
	}
	return b, nil
}

// leaderSeq is the session's last sequence at the leader; 0 for a session
// the log does not hold.
func (s *Service) leaderSeq(ctx context.Context, sid string) (uint64, error) {
	last, err := s.Log.SessionLastSeq(ctx, sid)
	if errors.Is(err, wire.ErrNotFound) {
		return 0, nil
	}
	if err == nil {
		store.NoteLogSeq(s.Store, last) // Pi-Lag counts it until applied
	}
	return last, err
}
