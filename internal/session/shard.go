package session

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/pifleet/sessionlog/internal/wire"
)

// Shards. A sharded log spreads its sessions over several logs (streams),
// each with its own sequence. So that a sequence still names one point of
// one log — minSeq, lastSeq, a cursor's seq and a Store's applied position
// mean what they meant — every sequence above the adapter is qualified:
// the shard number in the bits from ShardBits up, the stream's own
// sequence below. Shard 0's sequences are the stream's own, so an
// unsharded log and shard 0 of a sharded one are the same bytes and the
// same numbers. Qualified sequences stay below 2^53 (MaxShards shards of
// 2^44 records each): JavaScript clients read them exactly.
const (
	ShardBits = 44
	MaxShards = 256
	rawMask   = 1<<ShardBits - 1
)

// ShardFunction names ShardOf in the shard map a deployment records, so
// that a node or client with another function refuses the store instead of
// looking for sessions where they are not.
const ShardFunction = "fnv1a32"

// ShardOf is the shard of session sid in a log of n shards: FNV-1a (32
// bits) of the id's bytes, modulo n. It is the whole of the shard map a
// third-party client needs (docs/PROTOCOL.md).
func ShardOf(sid string, n int) int {
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

// ShardSeq qualifies raw, a sequence of shard's stream.
func ShardSeq(shard int, raw uint64) uint64 {
	if raw == 0 {
		return 0 // "none": the same on every shard
	}
	return uint64(shard)<<ShardBits | raw&rawMask
}

// SeqShard is the shard a qualified sequence belongs to.
func SeqShard(seq uint64) int { return int(seq >> ShardBits) }

// RawSeq is a qualified sequence's position in its shard's stream.
func RawSeq(seq uint64) uint64 { return seq & rawMask }

// ValidShards checks a shard count.
func ValidShards(n int) error {
	if n < 1 || n > MaxShards {
		return fmt.Errorf("%w: %d shards, want 1 to %d", wire.ErrInvalid, n, MaxShards)
	}
	return nil
}

// ShardLog is one shard of a sharded log: Log and Feed with every
// sequence qualified by Shard (ShardSeq). A sequence of another shard
// handed to it is refused (ErrInvalid), so a mix-up cannot read or write
// at a wrong position. Shard 0 changes nothing.
type ShardLog struct {
	Log   Log
	Feed  Feed // nil for a write-only shard (a client's)
	Shard int
}

var (
	_ Log  = (*ShardLog)(nil)
	_ Feed = (*ShardLog)(nil)
)

func (s *ShardLog) q(raw uint64) uint64 { return ShardSeq(s.Shard, raw) }

// raw unqualifies seq, which must be 0 or of this shard.
func (s *ShardLog) raw(what string, seq uint64) (uint64, error) {
	if seq != 0 && SeqShard(seq) != s.Shard {
		return 0, fmt.Errorf("%w: %s %d is a sequence of shard %d, not of shard %d", wire.ErrInvalid, what, seq, SeqShard(seq), s.Shard)
	}
	return RawSeq(seq), nil
}

func (s *ShardLog) qualify(recs []Stored) {
	for i := range recs {
		recs[i].Seq = s.q(recs[i].Seq)
		if s.Shard != 0 && recs[i].Session == PurgeToken {
			recs[i].Record = s.qualifyNotice(recs[i].Record)
		}
	}
}

// qualifyNotice qualifies a purge notice's UpTo: the adapter writes its
// stream's own sequence there, and Stores compare it with qualified ones.
func (s *ShardLog) qualifyNotice(r Record) Record {
	var n PurgeNotice
	if json.Unmarshal(r.Data, &n) != nil {
		return r // malformed: the Store reports it as it is
	}
	q := PurgeRecord(n.Session, s.q(n.UpTo))
	q.Type, q.ID = r.Type, r.ID
	return q
}

// Append appends to the shard; see Log.
func (s *ShardLog) Append(ctx context.Context, sid string, expectLast uint64, recs []Record) ([]uint64, error) {
	if expectLast != 0 && SeqShard(expectLast) != s.Shard {
		// Not a sequence of this session: the contract's conflict.
		return nil, fmt.Errorf("%w: expectLastSeq %d is a sequence of shard %d, not of shard %d", wire.ErrConflict, expectLast, SeqShard(expectLast), s.Shard)
	}
	seqs, err := s.Log.Append(ctx, sid, RawSeq(expectLast), recs)
	for i := range seqs {
		seqs[i] = s.q(seqs[i])
	}
	return seqs, err
}

// Read reads from the shard; see Log.
func (s *ShardLog) Read(ctx context.Context, sid string, afterSeq uint64) ([]Stored, error) {
	raw, err := s.raw("afterSeq", afterSeq)
	if err != nil {
		return nil, err
	}
	recs, err := s.Log.Read(ctx, sid, raw)
	s.qualify(recs)
	return recs, err
}

// Purge purges from the shard; see Log.
func (s *ShardLog) Purge(ctx context.Context, sid string) error { return s.Log.Purge(ctx, sid) }

// MaxBatch is the shard's; see Log.
func (s *ShardLog) MaxBatch() int { return s.Log.MaxBatch() }

// SessionLastSeq asks the shard; see Log.
func (s *ShardLog) SessionLastSeq(ctx context.Context, sid string) (uint64, error) {
	seq, err := s.Log.SessionLastSeq(ctx, sid)
	return s.q(seq), err
}

// Follow follows the shard; see Feed.
// A from below the first qualified sequence of any shard other than 0 is
// taken as a position of this shard: a Store that applied nothing asks
// for 1.
func (s *ShardLog) Follow(ctx context.Context, from uint64, apply func([]Stored) error) error {
	raw := from
	if SeqShard(from) != 0 {
		var err error
		if raw, err = s.raw("from", from); err != nil {
			return err
		}
	}
	return s.Feed.Follow(ctx, raw, func(recs []Stored) error {
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

// LastSeq is the shard's last sequence, qualified; see Feed.
func (s *ShardLog) LastSeq(ctx context.Context) (uint64, error) {
	seq, err := s.Feed.LastSeq(ctx)
	return s.q(seq), err
}

// Identity names the shard's log, so that a Store's snapshot of one shard
// is never taken for another's (see Identifier).
func (s *ShardLog) Identity(ctx context.Context) (string, error) {
	idf, ok := s.Feed.(Identifier)
	if !ok {
		return "", nil
	}
	id, err := idf.Identity(ctx)
	if err != nil || s.Shard == 0 || id == "" {
		return id, err
	}
	return fmt.Sprintf("%s#shard%d", id, s.Shard), nil
}

// Sharded is a Log over shards: each session's calls go to the log of its
// shard (Map.Of), whose sequences must be qualified (ShardLog). With one
// shard it is that shard's log. It grows when the store's shard count
// changes (Grow): sessions placed before stay where they are.
type Sharded struct {
	tab   *ShardTable[Log]
	guard func(context.Context) error
}

// Guard makes every Append call g first, and fail with its error: a check
// that the map routed by is current (jetstream.MapWatch.Fresh). Set it
// before the log is used.
func (s *Sharded) Guard(g func(context.Context) error) { s.guard = g }

var _ Log = (*Sharded)(nil)

// NewSharded routes by m over logs, one per shard stream (m.Streams()).
func NewSharded(m Map, logs []Log) (*Sharded, error) {
	tab, err := NewShardTable(m, logs)
	if err != nil {
		return nil, err
	}
	return &Sharded{tab: tab}, nil
}

// Grow changes the map to m, which places every session of the current
// map as it did (it adds epochs), adding the logs of the streams it adds.
func (s *Sharded) Grow(m Map, more []Log) error { return s.tab.Grow(m, more) }

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
func (s *Sharded) Logs() []Log { return s.tab.All() }

// Shard is session sid's shard.
func (s *Sharded) Shard(sid string) int {
	_, k := s.tab.Route(sid)
	return k
}

// For is the log of session sid's shard.
func (s *Sharded) For(sid string) Log {
	l, _ := s.tab.Route(sid)
	return l
}

// Append appends to sid's shard; see Log.
func (s *Sharded) Append(ctx context.Context, sid string, expectLast uint64, recs []Record) ([]uint64, error) {
	if s.guard != nil {
		if err := s.guard(ctx); err != nil {
			return nil, err
		}
	}
	l, k := s.tab.Route(sid)
	if expectLast != 0 && SeqShard(expectLast) != k {
		return nil, wire.Field("expectLastSeq", fmt.Errorf("%w: %d is a sequence of shard %d; session %s is on shard %d",
			wire.ErrConflict, expectLast, SeqShard(expectLast), sid, k))
	}
	return l.Append(ctx, sid, expectLast, recs)
}

// Read reads sid's shard; see Log.
func (s *Sharded) Read(ctx context.Context, sid string, afterSeq uint64) ([]Stored, error) {
	l, k := s.tab.Route(sid)
	if afterSeq != 0 && SeqShard(afterSeq) != k {
		// Not a position of this session: everything of it comes after
		// another shard's sequences only by accident of numbering.
		return nil, wire.Field("afterSeq", fmt.Errorf("%w: %d is a sequence of shard %d; session %s is on shard %d",
			wire.ErrInvalid, afterSeq, SeqShard(afterSeq), sid, k))
	}
	return l.Read(ctx, sid, afterSeq)
}

// Purge purges sid from its shard; see Log.
func (s *Sharded) Purge(ctx context.Context, sid string) error { return s.For(sid).Purge(ctx, sid) }

// MaxBatch is the smallest of the shards'; see Log.
func (s *Sharded) MaxBatch() int {
	logs := s.Logs()
	n := logs[0].MaxBatch()
	for _, l := range logs[1:] {
		n = min(n, l.MaxBatch())
	}
	return n
}

// SessionLastSeq asks sid's shard; see Log.
func (s *Sharded) SessionLastSeq(ctx context.Context, sid string) (uint64, error) {
	return s.For(sid).SessionLastSeq(ctx, sid)
}

// ShardedArchive is an Archive whose log is sharded: what concerns one
// session's records (LastSeq, PurgeUpTo, Notify) goes to the archive bound
// to its shard's stream, with sequences unqualified on the way in and
// qualified on the way out; the copies, their listing and the lease are
// one archive, shard 0's.
type ShardedArchive struct {
	tab *ShardTable[Archive] // shard k's purges and notifies on shard k's stream
}

var _ Archive = (*ShardedArchive)(nil)

// NewShardedArchive places sessions by m over shards, one per stream.
func NewShardedArchive(m Map, shards []Archive) (*ShardedArchive, error) {
	tab, err := NewShardTable(m, shards)
	if err != nil {
		return nil, err
	}
	return &ShardedArchive{tab: tab}, nil
}

// Grow changes the map to m, adding the archives bound to the streams it
// adds; see Sharded.Grow.
func (a *ShardedArchive) Grow(m Map, more []Archive) error { return a.tab.Grow(m, more) }

func (a *ShardedArchive) of(sid string) (Archive, int) { return a.tab.Route(sid) }

// first is shard 0's archive, which holds the copies and the lease.
func (a *ShardedArchive) first() Archive { return a.tab.All()[0] }

func (a *ShardedArchive) raw(sid string, seq uint64) (Archive, uint64, error) {
	b, k := a.of(sid)
	if seq != 0 && SeqShard(seq) != k {
		return nil, 0, fmt.Errorf("%w: %d is a sequence of shard %d; session %s is on shard %d", wire.ErrInvalid, seq, SeqShard(seq), sid, k)
	}
	return b, RawSeq(seq), nil
}

// Provision provisions the archive; see Archive.
func (a *ShardedArchive) Provision(ctx context.Context) error { return a.first().Provision(ctx) }

// Put stores a copy; see Archive.
func (a *ShardedArchive) Put(ctx context.Context, c wire.ArchiveCopy, data []byte) error {
	return a.first().Put(ctx, c, data)
}

// Find finds copies; see Archive.
func (a *ShardedArchive) Find(ctx context.Context, sid string) ([]wire.ArchiveCopy, error) {
	return a.first().Find(ctx, sid)
}

// Fetch fetches a copy; see Archive.
func (a *ShardedArchive) Fetch(ctx context.Context, c wire.ArchiveCopy) ([]byte, error) {
	return a.first().Fetch(ctx, c)
}

// Delete deletes copies; see Archive.
func (a *ShardedArchive) Delete(ctx context.Context, cs []wire.ArchiveCopy) error {
	return a.first().Delete(ctx, cs)
}

// List lists copies; see Archive.
func (a *ShardedArchive) List(ctx context.Context, month string, from uint64, limit int) ([]wire.ArchiveCopy, uint64, error) {
	return a.first().List(ctx, month, from, limit)
}

// LastSeq asks sid's shard, qualified; see Archive.
func (a *ShardedArchive) LastSeq(ctx context.Context, sid string) (uint64, error) {
	b, k := a.of(sid)
	seq, err := b.LastSeq(ctx, sid)
	return ShardSeq(k, seq), err
}

// PurgeUpTo purges sid from its shard; see Archive.
func (a *ShardedArchive) PurgeUpTo(ctx context.Context, sid string, upTo uint64) (uint64, error) {
	b, raw, err := a.raw(sid, upTo)
	if err != nil {
		return 0, err
	}
	_, k := a.of(sid)
	rem, err := b.PurgeUpTo(ctx, sid, raw)
	if ce, ok := err.(*wire.ConflictError); ok && ce.LastSeq != 0 {
		q := *ce
		q.LastSeq = ShardSeq(k, ce.LastSeq)
		err = &q
	}
	return ShardSeq(k, rem), err
}

// Notify publishes the purge notice on sid's shard; see Archive.
func (a *ShardedArchive) Notify(ctx context.Context, sid string, upTo uint64) error {
	b, raw, err := a.raw(sid, upTo)
	if err != nil {
		return err
	}
	return b.Notify(ctx, sid, raw)
}

// DuplicateWindow is the log's; see Archive.
func (a *ShardedArchive) DuplicateWindow() time.Duration { return a.first().DuplicateWindow() }

// Shard is shard k's archive (an Archiver of a node that holds a share of
// the shards leases each of its shards on its own).
func (a *ShardedArchive) Shard(k int) Archive { return a.tab.All()[k] }

// Lease takes the archiver's one lease; see Archive.
func (a *ShardedArchive) Lease(ctx context.Context, holder string, ttl time.Duration) (Lease, error) {
	return a.first().Lease(ctx, holder, ttl)
}

// Unlease gives the lease up; see Archive.
func (a *ShardedArchive) Unlease(ctx context.Context, holder string) error {
	return a.first().Unlease(ctx, holder)
}
