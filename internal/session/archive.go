package session

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/pifleet/sessionlog/internal/wire"
)

// Archive stores copies of idle sessions and purges them from the log: the
// contract internal/archive's Archiver works over. internal/jetstream.Archive
// implements it; every method is safe for
// concurrent use and idempotent, because two archivers may overlap (a lease
// that expired during a slow pass).
type Archive interface {
	// Provision creates the archive's assets if they are missing.
	Provision(ctx context.Context) error
	// Put stores data (the session's pi JSONL, every record up to
	// c.LastSeq) as a copy and returns once the archive acknowledged all of
	// it. Putting the same session and LastSeq again stores nothing new.
	Put(ctx context.Context, c wire.ArchiveCopy, data []byte) error
	// Find returns every complete copy of the session, oldest first
	// (ErrNotFound-free: none is an empty slice).
	Find(ctx context.Context, sid string) ([]wire.ArchiveCopy, error)
	// Fetch returns the JSONL of a copy Find or List returned.
	Fetch(ctx context.Context, c wire.ArchiveCopy) ([]byte, error)
	// Delete removes copies (after a restore made them redundant).
	Delete(ctx context.Context, cs []wire.ArchiveCopy) error
	// List returns up to limit copies of month ("" for all) from archive
	// sequence from on, and the sequence to continue from (0 at the end).
	List(ctx context.Context, month string, from uint64, limit int) ([]wire.ArchiveCopy, uint64, error)

	// LastSeq returns the session's last sequence in the log, from the
	// stream leader; wire.ErrNotFound when its subject is empty.
	LastSeq(ctx context.Context, sid string) (uint64, error)
	// PurgeUpTo removes the session's records up to upTo from the log, if
	// it has none after upTo, and then its cursors, and publishes the purge
	// notice (PurgeRecord(sid, upTo)) so that every Store drops it.
	//   - records after upTo before the purge: a *wire.ConflictError
	//     (unwraps to ErrConflict) with their last sequence; nothing done.
	//   - records after upTo that a writer appended between that check and
	//     the purge: remaining is their last sequence; the records up to
	//     upTo are gone, and no notice is published.
	//   - an empty subject (a pass that died after its purge): cursors and
	//     notice only.
	PurgeUpTo(ctx context.Context, sid string, upTo uint64) (remaining uint64, err error)
	// Notify publishes the purge notice alone.
	Notify(ctx context.Context, sid string, upTo uint64) error
	// DuplicateWindow is the log's dedupe window: a restore re-publishes
	// the session's records with their message ids, which the log refuses
	// as duplicates until the window has passed since they were written.
	DuplicateWindow() time.Duration

	// Lease takes or renews the archiver's lease for holder until ttl from
	// now, if it is free, expired or holder's already; it returns the
	// lease as it stands (another holder's when not taken).
	Lease(ctx context.Context, holder string, ttl time.Duration) (Lease, error)
	// Unlease gives the lease up if holder has it.
	Unlease(ctx context.Context, holder string) error
}

// Lease is the archiver's lease: who runs passes, and until when.
type Lease struct {
	Holder string    `json:"holder"`
	Until  time.Time `json:"until"`
}

// ArchiveMonth is the archive month of a session: the creation time a UUIDv7 id
// carries in its first 48 bits, else created (the header's timestamp; pi's
// own ids are v4). Only the id is known when restoring: a v7 id names its
// month, any other id is looked up in every month.
func ArchiveMonth(sid string, created time.Time) string {
	if t, ok := V7Time(sid); ok {
		return t.UTC().Format("200601")
	}
	if created.IsZero() {
		return "000000"
	}
	return created.UTC().Format("200601")
}

// V7Time returns the timestamp of a UUIDv7 in canonical form.
func V7Time(sid string) (time.Time, bool) {
	if ValidSessionID(sid) != nil || sid[14] != '7' {
		return time.Time{}, false
	}
	ms, err := strconv.ParseUint(sid[0:8]+sid[9:13], 16, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(ms)), true
}

// ValidArchiveMonth checks a YYYYMM filter.
func ValidArchiveMonth(m string) error {
	if _, err := time.Parse("200601", m); err != nil || len(m) != 6 {
		return wire.Invalid("month", fmt.Sprintf("%q is not a month like 202611 (YYYYMM)", m))
	}
	return nil
}
