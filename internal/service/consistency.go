package service

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/pifleet/sessionlog/internal/wire"
)

// acks remembers, per session, the last sequence this node acknowledged a
// write at, until its Store has applied it: a read of the session on this
// node waits for it (read your writes without minSeq, whichever transport
// the write and the read came by). Entries go once applied, so the map
// holds only the writes of the last moments.
type acks struct {
	mu    sync.Mutex
	m     map[string]uint64
	max   uint64 // the highest sequence ever acknowledged: lists wait for it
	prune int    // size at which applied entries are swept out
}

const minAckPrune = 1024

// noteAck records that this node acknowledged a write of sid at seq.
func (s *Service) noteAck(sid string, seq uint64) {
	if s.Store == nil {
		return // a Service that only writes
	}
	s.Store.NoteLogSeq(seq)
	a := &s.acks
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m, a.prune = make(map[string]uint64), minAckPrune
	}
	a.m[sid] = max(a.m[sid], seq)
	a.max = max(a.max, seq)
	if len(a.m) >= a.prune {
		applied := s.Store.Applied()
		for id, q := range a.m {
			if q <= applied {
				delete(a.m, id)
			}
		}
		// A Store far behind keeps many: sweep again only once they doubled.
		a.prune = max(minAckPrune, 2*len(a.m))
	}
}

// ownAck returns the last sequence this node acknowledged for sid ("":
// for any session) that its Store has not applied yet, or 0.
func (s *Service) ownAck(sid string) uint64 {
	if s.Store == nil {
		return 0
	}
	applied := s.Store.Applied()
	a := &s.acks
	a.mu.Lock()
	defer a.mu.Unlock()
	if sid == "" {
		if a.max <= applied {
			return 0
		}
		return a.max
	}
	seq, ok := a.m[sid]
	if ok && seq <= applied {
		delete(a.m, sid)
		return 0
	}
	return seq
}

// Barrier is the sequence a read must wait for before it answers, and why.
type Barrier struct {
	Seq    uint64
	Reason string // for the timeout's message: "minSeq 7", ...
	Field  string // the input that asked for it (minSeq, consistency), or ""
}

// ReadBarrier returns what a read of session sid ("": of the catalog) must
// have applied before it answers: the caller's minSeq; the last write this
// node acknowledged for it (read your writes); and, for consistency
// "strong", the session's last sequence as the log's leader has it (for
// the catalog: the log's), so the read is linearizable — it reflects every
// write acknowledged anywhere before it began.
func (s *Service) ReadBarrier(ctx context.Context, sid string, minSeq uint64, consistency string) (Barrier, error) {
	if consistency != "" && consistency != wire.ConsistencyStrong {
		return Barrier{}, wire.Invalid("consistency", fmt.Sprintf(`must be "strong" or absent, not %q`, consistency))
	}
	var b Barrier
	raise := func(seq uint64, field, why string, args ...any) {
		if seq > b.Seq {
			b = Barrier{Seq: seq, Reason: fmt.Sprintf(why, args...), Field: field}
		}
	}
	raise(minSeq, "minSeq", "minSeq %d", minSeq)
	// What this process acknowledged before a restart is forgotten, but it
	// is all at or below the log's end when the process started.
	first, ok := s.Store.FirstEnd()
	if !ok {
		var err error
		if first, err = s.Store.LogLastSeq(ctx); err != nil {
			return b, fmt.Errorf("this node has not learned the log's end since it started, so it cannot tell whether it holds the writes it acknowledged before: %w", err)
		}
	}
	raise(first, "", "sequence %d, the log's end when this node started (it may have acknowledged writes up to there before a restart)", first)
	own := s.ownAck(sid)
	raise(own, "", "sequence %d, which this node acknowledged", own)
	if consistency == wire.ConsistencyStrong {
		last, err := s.leaderSeq(ctx, sid)
		if err != nil {
			return b, wire.Field("consistency", fmt.Errorf("consistency=strong: asking the log's leader: %w", err))
		}
		raise(last, "consistency", "sequence %d, the log's last at the leader (consistency=strong)", last)
	}
	return b, nil
}

// leaderSeq is the session's (the log's, for "") last sequence at the
// leader; 0 for a session the log does not hold.
func (s *Service) leaderSeq(ctx context.Context, sid string) (uint64, error) {
	if sid == "" {
		return s.Store.LogLastSeq(ctx)
	}
	last, err := s.Log.SessionLastSeq(ctx, sid)
	if errors.Is(err, wire.ErrNotFound) {
		return 0, nil
	}
	if err == nil {
		s.Store.NoteLogSeq(last) // Pi-Lag counts it until applied
	}
	return last, err
}
