package session

import (
	"context"

	"github.com/pifleet/sessionlog/internal/wire"
)

// Eraser is a Log that erases sessions: their records removed so that no
// file of the log keeps their bytes (not only dropped from its index, as a
// purge may leave them), then an erasure notice (EraseRecord) appended so
// that every Store and index drops the session and rewrites its own files.
type Eraser interface {
	// Erase removes every record of the session, newest first (a crash
	// half-way leaves a shorter session, never entries without their
	// header), and appends the notice.
	//   - expectLast != 0 and the session's last sequence is another: a
	//     *wire.ConflictError with it; nothing erased.
	//   - no records: wire.ErrNotFound, and no notice.
	//   - records appended while it runs are erased too.
	Erase(ctx context.Context, session string, expectLast uint64) (Erased, error)
}

// Erased is what an Erase removed.
type Erased struct {
	// Records is how many records of the session were erased.
	Records int
	// LastSeq is the session's last sequence before the erasure; the
	// notice's UpTo.
	LastSeq uint64
}

// ErasureLedger keeps the ledger of erasures (internal/jetstream: a KV
// bucket beside the archive).
type ErasureLedger interface {
	// RecordErasure writes (or overwrites) the session's line.
	RecordErasure(ctx context.Context, e wire.Erasure) error
	// Erasures returns every line, in no particular order.
	Erasures(ctx context.Context) ([]wire.Erasure, error)
	// Erased reports whether the session has a line, as the ledger's
	// leader has it (a write acknowledged before the call is seen).
	Erased(ctx context.Context, session string) (bool, error)
	// ForgetErasure removes the session's line: an erasure refused
	// before it erased anything (its expectLastSeq was stale).
	ForgetErasure(ctx context.Context, session string) error
}
