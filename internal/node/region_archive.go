package node

import (
	"context"
	"fmt"
	"time"

	"github.com/pifleet/sessionlog/internal/archive"
	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// regionArchive is the archive operations of cross-region mode. Delete
// works: the Archiver erases the session from the home's stream, whose
// notice makes every other region erase its copy (region.Node), with its
// line in the ledger of erasures in the tie-breaker's cluster. Archiving,
// restoring and retention are refused: the archive stream is not a
// region's asset yet, so an archived session would live in one region
// only, and the mirrors would keep it besides.
type regionArchive struct{ a *archive.Archiver }

// errRegionArchive answers the archive operations cross-region mode lacks.
var errRegionArchive = fmt.Errorf("%w: the archive is not supported in cross-region mode yet (an archived session would live in one region only); delete is", wire.ErrInvalid)

func (r regionArchive) List(context.Context, string, uint64, int) ([]wire.ArchivedSession, uint64, error) {
	return nil, 0, errRegionArchive
}

func (r regionArchive) Restore(context.Context, string) (wire.ImportResult, error) {
	return wire.ImportResult{}, errRegionArchive
}

func (r regionArchive) RunPass(context.Context, *time.Duration, bool) (wire.ArchivePass, error) {
	return wire.ArchivePass{}, errRegionArchive
}

func (r regionArchive) Erase(ctx context.Context, sid string, expectLast uint64, by string) (wire.DeleteReply, error) {
	return r.a.Erase(ctx, sid, expectLast, by)
}

// ledgerOnly is the session.Archive behind regionArchive's Archiver: the
// ledger of erasures, and no archive stream (no copies to find). Its
// Archiver runs no passes; what a delete does not use refuses.
type ledgerOnly struct{ *jetstream.Ledger }

var (
	_ session.Archive       = ledgerOnly{}
	_ session.ErasureLedger = ledgerOnly{}
)

func (ledgerOnly) Find(context.Context, string) ([]wire.ArchiveCopy, error) { return nil, nil }
func (ledgerOnly) Provision(context.Context) error                          { return errRegionArchive }
func (ledgerOnly) Put(context.Context, wire.ArchiveCopy, []byte) error      { return errRegionArchive }
func (ledgerOnly) Fetch(context.Context, wire.ArchiveCopy) ([]byte, error) {
	return nil, errRegionArchive
}
func (ledgerOnly) Delete(context.Context, []wire.ArchiveCopy) error { return errRegionArchive }
func (ledgerOnly) List(context.Context, string, uint64, int) ([]wire.ArchiveCopy, uint64, error) {
	return nil, 0, errRegionArchive
}
func (ledgerOnly) LastSeq(context.Context, string) (uint64, error) { return 0, errRegionArchive }
func (ledgerOnly) PurgeUpTo(context.Context, string, uint64) (uint64, error) {
	return 0, errRegionArchive
}
func (ledgerOnly) Notify(context.Context, string, uint64) error { return errRegionArchive }
func (ledgerOnly) DuplicateWindow() time.Duration               { return 0 }
func (ledgerOnly) Lease(context.Context, string, time.Duration) (session.Lease, error) {
	return session.Lease{}, errRegionArchive
}
func (ledgerOnly) Unlease(context.Context, string) error { return errRegionArchive }
