package shard

import (
	"context"
	"errors"
	"fmt"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Sharded is a session.Log over shards: each session's calls go to the log of its
// shard (Map.Of), whose sequences must be qualified (Log). With one
// shard it is that shard's log. It grows when the store's shard count
// changes (Grow): sessions placed before stay where they are.
type Sharded struct {
	tab   *Table[session.Log]
	guard func(context.Context) error
}

// Guard makes every Append call g first, and fail with its error: a check
// that the map routed by is current (jetstream.MapWatch.Fresh). Set it
// before the log is used.
func (s *Sharded) Guard(g func(context.Context) error) { s.guard = g }

var _ session.Log = (*Sharded)(nil)

// NewSharded routes by m over logs, one per shard stream (m.Streams()).
func NewSharded(m Map, logs []session.Log) (*Sharded, error) {
	tab, err := NewTable(m, logs)
	if err != nil {
		return nil, err
	}
	return &Sharded{tab: tab}, nil
}

// Grow changes the map to m, which places every session of the current
// map as it did (it adds epochs), adding the logs of the streams it adds.
func (s *Sharded) Grow(m Map, more []session.Log) error { return s.tab.Grow(m, more) }

// Map is the map the log routes by now.
func (s *Sharded) Map() Map { return s.tab.Map() }

// Logs are the shards' logs, by shard; not to be written.
func (s *Sharded) Logs() []session.Log { return s.tab.All() }

// Shard is session sid's shard.
func (s *Sharded) Shard(sid string) int {
	_, k := s.tab.Route(sid)
	return k
}

// For is the log of session sid's shard.
func (s *Sharded) For(sid string) session.Log {
	l, _ := s.tab.Route(sid)
	return l
}

// Append appends to sid's shard; see session.Log.
func (s *Sharded) Append(ctx context.Context, sid string, expectLast uint64, recs []session.Record) ([]uint64, error) {
	if s.guard != nil {
		if err := s.guard(ctx); err != nil {
			return nil, err
		}
	}
	l, k := s.tab.Route(sid)
	if err := foreignExpect(sid, k, expectLast); err != nil {
		return nil, err
	}
	return l.Append(ctx, sid, expectLast, recs)
}

// CheckExpect is Append's refusal of expectLast, the expectation of an
// append to session sid, when l is Sharded and expectLast is a sequence
// of another shard; nil otherwise. A caller that reads at the expectation
// before it appends asks first: the Service waits for its Store to reach
// it, and the writer's CAS loop, on the conflict, would read after it and
// turn the conflict into Read's ErrInvalid.
func CheckExpect(l session.Log, sid string, expectLast uint64) error {
	s, ok := l.(*Sharded)
	if !ok {
		return nil
	}
	return foreignExpect(sid, s.Shard(sid), expectLast)
}

// foreignExpect refuses an expectation of a shard other than k, sid's: a
// sequence of another shard is never the session's last, so it gets the
// conflict any stale expectation gets.
func foreignExpect(sid string, k int, expectLast uint64) error {
	if expectLast == 0 || OfSeq(expectLast) == k {
		return nil
	}
	return wire.Field("expectLastSeq", fmt.Errorf("%w: %d is a sequence of shard %d; session %s is on shard %d",
		wire.ErrConflict, expectLast, OfSeq(expectLast), sid, k))
}

// Read reads sid's shard; see session.Log.
func (s *Sharded) Read(ctx context.Context, sid string, afterSeq uint64) ([]session.Stored, error) {
	l, k := s.tab.Route(sid)
	if afterSeq != 0 && OfSeq(afterSeq) != k {
		// Not a position of this session: everything of it comes after
		// another shard's sequences only by accident of numbering.
		return nil, wire.Field("afterSeq", fmt.Errorf("%w: %d is a sequence of shard %d; session %s is on shard %d",
			wire.ErrInvalid, afterSeq, OfSeq(afterSeq), sid, k))
	}
	return l.Read(ctx, sid, afterSeq)
}

// Purge purges sid from its shard; see session.Log.
func (s *Sharded) Purge(ctx context.Context, sid string) error { return s.For(sid).Purge(ctx, sid) }

// Erase erases sid from its shard; see session.Eraser.
func (s *Sharded) Erase(ctx context.Context, sid string, expectLast uint64) (session.Erased, error) {
	l, k := s.tab.Route(sid)
	if err := foreignExpect(sid, k, expectLast); err != nil {
		return session.Erased{}, err
	}
	e, ok := l.(session.Eraser)
	if !ok {
		return session.Erased{}, fmt.Errorf("erase %s: %w: this log cannot erase", sid, errors.ErrUnsupported)
	}
	return e.Erase(ctx, sid, expectLast)
}

// MaxBatch is the smallest of the shards'; see session.Log.
func (s *Sharded) MaxBatch() int {
	logs := s.Logs()
	n := logs[0].MaxBatch()
	for _, l := range logs[1:] {
		n = min(n, l.MaxBatch())
	}
	return n
}

// SessionLastSeq asks sid's shard; see session.Log.
func (s *Sharded) SessionLastSeq(ctx context.Context, sid string) (uint64, error) {
	return s.For(sid).SessionLastSeq(ctx, sid)
}
