package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Shards. A sharded log spreads its sessions over several logs (streams),
// each with its own sequence. So that a sequence still names one point of
// one log — minSeq, lastSeq, a cursor's seq and a Store's applied position
// mean what they meant — every sequence above the adapter is qualified:
// the shard number in the bits from Bits up, the stream's own
// sequence below. Shard 0's sequences are the stream's own, so an
// unsharded log and shard 0 of a sharded one are the same bytes and the
// same numbers. Qualified sequences stay below 2^53 (Max shards of
// 2^44 records each): JavaScript clients read them exactly.
const (
	Bits    = 44
	Max     = 256
	rawMask = 1<<Bits - 1
)

// Function names Of in the shard map a deployment records, so
// that a node or client with another function refuses the store instead of
// looking for sessions where they are not.
const Function = "fnv1a32"

// Of is the shard of session sid in a log of n shards: FNV-1a (32
// bits) of the id's bytes, modulo n. It is the whole of the shard map a
// third-party client needs (docs/PROTOCOL.md).
func Of(sid string, n int) int {
	if n <= 1 {
		return 0
	}
	h := uint32(2166136261)
	for i := 0; i < len(sid); i++ {
		h ^= uint32(sid[i])
		h *= 16777619
	}
	return int(h % uint32(n))
}

// Seq qualifies raw, a sequence of shard's stream.
func Seq(shard int, raw uint64) uint64 {
	if raw == 0 {
		return 0 // "none": the same on every shard
	}
	return uint64(shard)<<Bits | raw&rawMask
}

// OfSeq is the shard a qualified sequence belongs to.
func OfSeq(seq uint64) int { return int(seq >> Bits) }

// Raw is a qualified sequence's position in its shard's stream.
func Raw(seq uint64) uint64 { return seq & rawMask }

// ValidCount checks a shard count.
func ValidCount(n int) error {
	if n < 1 || n > Max {
		return fmt.Errorf("%w: %d shards, want 1 to %d", wire.ErrInvalid, n, Max)
	}
	return nil
}

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

// Extends checks that next keeps every epoch of cur (so every session of
// cur is where it was) and only adds later ones.
func Extends(cur, next Map) error {
	ce, ne := cur.epochs(), next.epochs()
	if len(ne) < len(ce) || !slices.EqualFunc(ce, ne[:len(ce)], func(a, b Epoch) bool { return a.Shards == b.Shards && a.From.Equal(b.From) }) {
		return fmt.Errorf("%w: shard map %s does not extend %s: sessions placed by it would move", wire.ErrConflict, next, cur)
	}
	return nil
}

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

// Archive is a session.Archive whose log is sharded: what concerns one
// session's records (LastSeq, PurgeUpTo, Notify) goes to the archive bound
// to its shard's stream, with sequences unqualified on the way in and
// qualified on the way out; the copies, their listing and the lease are
// one archive, shard 0's.
type Archive struct {
	tab *Table[session.Archive] // shard k's purges and notifies on shard k's stream
}

var _ session.Archive = (*Archive)(nil)

// NewArchive places sessions by m over shards, one per stream.
func NewArchive(m Map, shards []session.Archive) (*Archive, error) {
	tab, err := NewTable(m, shards)
	if err != nil {
		return nil, err
	}
	return &Archive{tab: tab}, nil
}

// Grow changes the map to m, adding the archives bound to the streams it
// adds; see Sharded.Grow.
func (a *Archive) Grow(m Map, more []session.Archive) error { return a.tab.Grow(m, more) }

func (a *Archive) of(sid string) (session.Archive, int) { return a.tab.Route(sid) }

// first is shard 0's archive, which holds the copies and the lease.
func (a *Archive) first() session.Archive { return a.tab.All()[0] }

func (a *Archive) raw(sid string, seq uint64) (session.Archive, uint64, error) {
	b, k := a.of(sid)
	if seq != 0 && OfSeq(seq) != k {
		return nil, 0, fmt.Errorf("%w: %d is a sequence of shard %d; session %s is on shard %d", wire.ErrInvalid, seq, OfSeq(seq), sid, k)
	}
	return b, Raw(seq), nil
}

// Provision provisions the archive; see session.Archive.
func (a *Archive) Provision(ctx context.Context) error { return a.first().Provision(ctx) }

// Put stores a copy; see session.Archive.
func (a *Archive) Put(ctx context.Context, c wire.ArchiveCopy, data []byte) error {
	return a.first().Put(ctx, c, data)
}

// Find finds copies; see session.Archive.
func (a *Archive) Find(ctx context.Context, sid string) ([]wire.ArchiveCopy, error) {
	return a.first().Find(ctx, sid)
}

// Fetch fetches a copy; see session.Archive.
func (a *Archive) Fetch(ctx context.Context, c wire.ArchiveCopy) ([]byte, error) {
	return a.first().Fetch(ctx, c)
}

// Delete deletes copies; see session.Archive.
func (a *Archive) Delete(ctx context.Context, cs []wire.ArchiveCopy) error {
	return a.first().Delete(ctx, cs)
}

// List lists copies; see session.Archive.
func (a *Archive) List(ctx context.Context, month string, from uint64, limit int) ([]wire.ArchiveCopy, uint64, error) {
	return a.first().List(ctx, month, from, limit)
}

// LastSeq asks sid's shard, qualified; see session.Archive.
func (a *Archive) LastSeq(ctx context.Context, sid string) (uint64, error) {
	b, k := a.of(sid)
	seq, err := b.LastSeq(ctx, sid)
	return Seq(k, seq), err
}

// PurgeUpTo purges sid from its shard; see session.Archive.
func (a *Archive) PurgeUpTo(ctx context.Context, sid string, upTo uint64) (uint64, error) {
	b, raw, err := a.raw(sid, upTo)
	if err != nil {
		return 0, err
	}
	_, k := a.of(sid)
	rem, err := b.PurgeUpTo(ctx, sid, raw)
	if ce, ok := err.(*wire.ConflictError); ok && ce.LastSeq != 0 {
		q := *ce
		q.LastSeq = Seq(k, ce.LastSeq)
		err = &q
	}
	return Seq(k, rem), err
}

// Notify publishes the purge notice on sid's shard; see session.Archive.
func (a *Archive) Notify(ctx context.Context, sid string, upTo uint64) error {
	b, raw, err := a.raw(sid, upTo)
	if err != nil {
		return err
	}
	return b.Notify(ctx, sid, raw)
}

// DuplicateWindow is the log's; see session.Archive.
func (a *Archive) DuplicateWindow() time.Duration { return a.first().DuplicateWindow() }

// Shard is shard k's archive (an Archiver of a node that holds a share of
// the shards leases each of its shards on its own).
func (a *Archive) Shard(k int) session.Archive { return a.tab.All()[k] }

// Lease takes the archiver's one lease; see session.Archive.
func (a *Archive) Lease(ctx context.Context, holder string, ttl time.Duration) (session.Lease, error) {
	return a.first().Lease(ctx, holder, ttl)
}

// Unlease gives the lease up; see session.Archive.
func (a *Archive) Unlease(ctx context.Context, holder string) error {
	return a.first().Unlease(ctx, holder)
}
