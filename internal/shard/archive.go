package shard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Archive is a session.Archive whose log is sharded: what concerns one
// session's records (LastSeq, PurgeUpTo, Notify) goes to the archive bound
// to its shard's stream, with sequences unqualified on the way in and
// qualified on the way out; the copies, their listing and the lease are
// one archive, shard 0's.
type Archive struct {
	tab *Table[session.Archive] // shard k's purges and notifies on shard k's stream
}

var (
	_ session.Archive       = (*Archive)(nil)
	_ session.ErasureLedger = (*Archive)(nil)
	_ session.ForkRegistry  = (*Archive)(nil)
)

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

// RecordErasure writes to the ledger of the first shard's archive: there
// is one archive stream (and one ledger) for every shard.
func (a *Archive) RecordErasure(ctx context.Context, e wire.Erasure) error {
	l, ok := a.first().(session.ErasureLedger)
	if !ok {
		return fmt.Errorf("%w: this archive keeps no ledger of erasures", errors.ErrUnsupported)
	}
	return l.RecordErasure(ctx, e)
}

// Erasures reads the ledger; see RecordErasure.
func (a *Archive) Erasures(ctx context.Context) ([]wire.Erasure, error) {
	l, ok := a.first().(session.ErasureLedger)
	if !ok {
		return nil, fmt.Errorf("%w: this archive keeps no ledger of erasures", errors.ErrUnsupported)
	}
	return l.Erasures(ctx)
}

// Erased reads the ledger; see RecordErasure.
func (a *Archive) Erased(ctx context.Context, sid string) (bool, error) {
	l, ok := a.first().(session.ErasureLedger)
	if !ok {
		return false, nil
	}
	return l.Erased(ctx, sid)
}

// ForgetErasure removes a line of the ledger; see RecordErasure.
func (a *Archive) ForgetErasure(ctx context.Context, sid string) error {
	l, ok := a.first().(session.ErasureLedger)
	if !ok {
		return fmt.Errorf("%w: this archive keeps no ledger of erasures", errors.ErrUnsupported)
	}
	return l.ForgetErasure(ctx, sid)
}

// RecordFork writes to the first shard's registry of forks, beside its
// ledger of erasures: one for every shard (forks cross shards).
func (a *Archive) RecordFork(ctx context.Context, parent, fork string) error {
	r, ok := a.first().(session.ForkRegistry)
	if !ok {
		return fmt.Errorf("%w: this archive keeps no registry of forks", errors.ErrUnsupported)
	}
	return r.RecordFork(ctx, parent, fork)
}

// Forks reads the registry of forks; see RecordFork.
func (a *Archive) Forks(ctx context.Context, parent string) ([]string, error) {
	r, ok := a.first().(session.ForkRegistry)
	if !ok {
		return nil, nil
	}
	return r.Forks(ctx, parent)
}

// ForgetForks removes parent's forks from the registry; see RecordFork.
func (a *Archive) ForgetForks(ctx context.Context, parent string) error {
	r, ok := a.first().(session.ForkRegistry)
	if !ok {
		return nil
	}
	return r.ForgetForks(ctx, parent)
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
