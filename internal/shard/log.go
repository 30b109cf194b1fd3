package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Log is one shard of a sharded log: session.Log and session.Feed with every
// sequence qualified by Shard (Seq). A sequence of another shard
// handed to it is refused (ErrInvalid), so a mix-up cannot read or write
// at a wrong position. Shard 0 changes nothing.
type Log struct {
	Log   session.Log
	Feed  session.Feed // nil for a write-only shard (a client's)
	Shard int
}

var (
	_ session.Log  = (*Log)(nil)
	_ session.Feed = (*Log)(nil)
)

func (s *Log) q(raw uint64) uint64 { return Seq(s.Shard, raw) }

// raw unqualifies seq, which must be 0 or of this shard.
func (s *Log) raw(what string, seq uint64) (uint64, error) {
	if seq != 0 && OfSeq(seq) != s.Shard {
		return 0, fmt.Errorf("%w: %s %d is a sequence of shard %d, not of shard %d", wire.ErrInvalid, what, seq, OfSeq(seq), s.Shard)
	}
	return Raw(seq), nil
}

func (s *Log) qualify(recs []session.Stored) {
	for i := range recs {
		recs[i].Seq = s.q(recs[i].Seq)
		if s.Shard != 0 && recs[i].Session == session.PurgeToken {
			recs[i].Record = s.qualifyNotice(recs[i].Record)
		}
	}
}

// qualifyNotice qualifies a purge notice's UpTo: the adapter writes its
// stream's own sequence there, and Stores compare it with qualified ones.
func (s *Log) qualifyNotice(r session.Record) session.Record {
	var n session.PurgeNotice
	if json.Unmarshal(r.Data, &n) != nil {
		return r // malformed: the Store reports it as it is
	}
	q := session.PurgeRecord(n.Session, s.q(n.UpTo))
	if n.Erase {
		q = session.EraseRecord(n.Session, s.q(n.UpTo))
	}
	q.Type, q.ID = r.Type, r.ID
	return q
}

// Append appends to the shard; see session.Log.
func (s *Log) Append(ctx context.Context, sid string, expectLast uint64, recs []session.Record) ([]uint64, error) {
	if expectLast != 0 && OfSeq(expectLast) != s.Shard {
		// Not a sequence of this session: the contract's conflict.
		return nil, fmt.Errorf("%w: expectLastSeq %d is a sequence of shard %d, not of shard %d", wire.ErrConflict, expectLast, OfSeq(expectLast), s.Shard)
	}
	seqs, err := s.Log.Append(ctx, sid, Raw(expectLast), recs)
	for i := range seqs {
		seqs[i] = s.q(seqs[i])
	}
	return seqs, err
}

// Read reads from the shard; see session.Log.
func (s *Log) Read(ctx context.Context, sid string, afterSeq uint64) ([]session.Stored, error) {
	raw, err := s.raw("afterSeq", afterSeq)
	if err != nil {
		return nil, err
	}
	recs, err := s.Log.Read(ctx, sid, raw)
	s.qualify(recs)
	return recs, err
}

// Purge purges from the shard; see session.Log.
func (s *Log) Purge(ctx context.Context, sid string) error { return s.Log.Purge(ctx, sid) }

// Erase erases from the shard, when its log can; see session.Eraser.
func (s *Log) Erase(ctx context.Context, sid string, expectLast uint64) (session.Erased, error) {
	e, ok := s.Log.(session.Eraser)
	if !ok {
		return session.Erased{}, fmt.Errorf("erase %s: %w: this log cannot erase", sid, errors.ErrUnsupported)
	}
	raw, err := s.raw("expectLastSeq", expectLast)
	if err != nil {
		return session.Erased{}, fmt.Errorf("%w: expectLastSeq %d is a sequence of shard %d, not of shard %d", wire.ErrConflict, expectLast, OfSeq(expectLast), s.Shard)
	}
	out, err := e.Erase(ctx, sid, raw)
	if ce, ok := err.(*wire.ConflictError); ok && ce.LastSeq != 0 {
		q := *ce
		q.LastSeq = s.q(ce.LastSeq)
		err = &q
	}
	if out.LastSeq != 0 {
		out.LastSeq = s.q(out.LastSeq)
	}
	return out, err
}

// MaxBatch is the shard's; see session.Log.
func (s *Log) MaxBatch() int { return s.Log.MaxBatch() }

// SessionLastSeq asks the shard; see session.Log.
func (s *Log) SessionLastSeq(ctx context.Context, sid string) (uint64, error) {
	seq, err := s.Log.SessionLastSeq(ctx, sid)
	return s.q(seq), err
}

// Follow follows the shard; see session.Feed.
// A from below the first qualified sequence of any shard other than 0 is
// taken as a position of this shard: a Store that applied nothing asks
// for 1.
func (s *Log) Follow(ctx context.Context, from uint64, apply func([]session.Stored) error) error {
	raw := from
	if OfSeq(from) != 0 {
		var err error
		if raw, err = s.raw("from", from); err != nil {
			return err
		}
	}
	return s.Feed.Follow(ctx, raw, func(recs []session.Stored) error {
		if s.Shard == 0 {
			return apply(recs)
		}
		// A copy: the feed goes on from its own (raw) last sequence, and
		// apply may keep what it is given.
		q := slices.Clone(recs)
		s.qualify(q)
		return apply(q)
	})
}

// LastSeq is the shard's last sequence, qualified; see session.Feed.
func (s *Log) LastSeq(ctx context.Context) (uint64, error) {
	seq, err := s.Feed.LastSeq(ctx)
	return s.q(seq), err
}

// Identity names the shard's log, so that a Store's snapshot of one shard
// is never taken for another's (see session.Identifier).
func (s *Log) Identity(ctx context.Context) (string, error) {
	idf, ok := s.Feed.(session.Identifier)
	if !ok {
		return "", nil
	}
	id, err := idf.Identity(ctx)
	if err != nil || s.Shard == 0 || id == "" {
		return id, err
	}
	return fmt.Sprintf("%s#shard%d", id, s.Shard), nil
}
