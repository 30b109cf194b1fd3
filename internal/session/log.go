package session

import (
	"context"
	"fmt"
	"time"
)

// Record is one line of a session as it travels on the log: the header or one
// entry, as the exact JSON bytes pi writes (no trailing newline), plus the few
// fields that the log puts in message headers so tools can route and inspect
// without decoding bodies.
type Record struct {
	Type   string // Pi-Type: the entry type; "session" for the header
	ID     string // Pi-Id: the entry id; "" for the header
	Parent string // Pi-Parent: the parent entry id; "" for a root (parentId null) and the header
	Data   []byte // the JSONL line
	// Total is, on the header of a session written in several atomic
	// batches (an import or fork beyond MaxBatch), how many records the
	// whole session has, header included (Pi-Records). Readers keep such a
	// session hidden until they hold that many of its records, so that it
	// appears whole or not at all. 0 elsewhere: one batch is atomic anyway.
	Total int
	// Fork, on the header of a fork by reference (Pi-Fork-Of), names the
	// parent and the entry it forked at; nil elsewhere.
	Fork *ForkOf
}

// IsHeader reports whether r is the session header line.
func (r Record) IsHeader() bool { return r.Type == "session" }

// Stored is a Record with its position in the log.
type Stored struct {
	Session string    // session id (the subject token)
	Seq     uint64    // stream-wide sequence; a session's records have increasing Seqs
	Time    time.Time // when the log stored it
	Record
}

// Log is the write side of the replicated session log: one ordered sequence of
// records per session. Implementations: internal/jetstream (the real one),
// internal/apiclient (through pi-node's API: the public client's HTTP and
// NATS-API transports) and MemLog (tests).
//
// Contract, checked for every implementation by enginetest.TestLog:
//   - Append stores all recs of one call at the end of the session, contiguous
//     and in order, or none of them (atomic). It returns each record's sequence.
//   - expectLast is the last sequence of this session the caller has seen; 0
//     means the session must not exist yet (exclusive creation). If the
//     session's real last sequence differs, nothing is stored and the error is
//     wire.ErrExists when expectLast was 0, else wire.ErrConflict.
//   - A record whose (session, ID) — or whose header, for a session — was
//     already stored within the dedupe window makes the whole call fail with
//     wire.ErrConflict (or wire.ErrExists for a header): the caller reads what it missed
//     and reconciles; it never gets a silent duplicate.
//   - A record larger than the log's limit, or more records than one atomic
//     batch can carry, fail with wire.ErrTooLarge and store nothing; for a
//     record over the limit the error is a *RecordError naming it.
//   - Transport failures are wire.ErrUnavailable; the outcome is then unknown and the
//     caller retries with the same records (ids make the retry detectable).
type Log interface {
	Append(ctx context.Context, session string, expectLast uint64, recs []Record) ([]uint64, error)

	// Read returns the session's records with Seq > afterSeq, in order. It is
	// authoritative: every Append acknowledged before the call is included.
	// wire.ErrNotFound when the session has no records at all.
	Read(ctx context.Context, session string, afterSeq uint64) ([]Stored, error)

	// Purge removes every record of the session, then appends a purge notice
	// (PurgeRecord(session, upTo), on the session token PurgeToken, with upTo
	// the log's last sequence at the purge) so that Stores which applied the
	// records drop them too. Purging a missing session is not an error and
	// appends no notice.
	Purge(ctx context.Context, session string) error

	// MaxBatch is the largest number of records one Append may carry.
	MaxBatch() int

	// SessionLastSeq returns the session's last sequence as the log's
	// authority (the stream leader) has it: every Append acknowledged before
	// the call is at or below it. Linearizable reads wait for it.
	// wire.ErrNotFound when the session has no records.
	SessionLastSeq(ctx context.Context, session string) (uint64, error)
}

// WholeCreator is a Log that stores a new session of any size in one call,
// all or nothing, hidden from readers until whole: apiclient's, whose node
// imports it and writes the batches itself. Writers hand it a session too
// large for one Append whole, since batches written through it one by one
// could not be hidden (the header's Total is the node's to set).
type WholeCreator interface {
	// CreateWhole stores recs (header first) as session sid and returns
	// each record's sequence; wire.ErrExists if the session exists.
	CreateWhole(ctx context.Context, sid string, recs []Record) ([]uint64, error)
}

// Feed is the read side: the whole log in sequence order, for Stores.
type Feed interface {
	// Follow calls apply with every record whose Seq >= from, in sequence
	// order, until ctx is done (returns ctx.Err()) or apply returns an error
	// (returned as is). The records of one atomic Append arrive together in a
	// single call and only once the whole batch is committed; other records
	// arrive one per call or grouped, in order. Follow reconnects by itself
	// after transient failures and never skips or repeats a sequence.
	Follow(ctx context.Context, from uint64, apply func([]Stored) error) error

	// LastSeq returns the last sequence stored in the log (0 when empty).
	LastSeq(ctx context.Context) (uint64, error)
}

// Cursor is one client's leaf in one session. LeafID "" means null: the client
// stands before the first entry (pi's resetLeaf).
type Cursor struct {
	LeafID    string    `json:"leafId"`
	Seq       uint64    `json:"seq"`       // the session's last sequence when the cursor was set
	UpdatedAt time.Time `json:"updatedAt"` // set by the caller (time is an input)
}

// CursorEntry is a stored cursor with its key parts and KV revision.
type CursorEntry struct {
	Session  string
	Client   string
	Revision uint64
	Cursor
}

// Cursors stores per-(session, client) leaves. Contract (enginetest.TestCursors):
//   - Get returns wire.ErrNotFound for a missing or deleted cursor.
//   - Put stores unconditionally; Update stores only if the current revision is
//     expectRev (0: only if absent), else wire.ErrConflict. Both return the new revision.
//   - Delete of a missing cursor is not an error.
//   - List returns the session's cursors ordered by client id.
//   - Watch calls fn with the latest state of each of the session's cursors as
//     it changes (deleted: the cursor was removed) until ctx is done. History
//     is 1, so a revision overwritten before the watcher reads it may be
//     skipped: watchers see where cursors are, not every step they took.
//
// Client ids must satisfy ValidClientID; implementations reject others with wire.ErrInvalid.
type Cursors interface {
	Get(ctx context.Context, session, client string) (CursorEntry, error)
	Put(ctx context.Context, session, client string, c Cursor) (uint64, error)
	Update(ctx context.Context, session, client string, c Cursor, expectRev uint64) (uint64, error)
	Delete(ctx context.Context, session, client string) error
	List(ctx context.Context, session string) ([]CursorEntry, error)
	Watch(ctx context.Context, session string, fn func(e CursorEntry, deleted bool)) error
}

// Identifier is implemented by Feeds that can name the log they read: a
// Store's snapshot records it and is only used again on the same log (a
// stream deleted and created again restarts its sequences, and a snapshot
// of the old one would be wrong about the new one).
type Identifier interface {
	Identity(ctx context.Context) (string, error)
}

// RecordError is the failure of one record of an Append, by its index in
// recs, so that a caller can name the input the record came from (an
// append's entries[k]). It unwraps to the failure (wire.ErrTooLarge).
type RecordError struct {
	Index int
	Err   error
}

func (e *RecordError) Error() string { return fmt.Sprintf("record %d: %v", e.Index, e.Err) }

// Unwrap returns the record's failure.
func (e *RecordError) Unwrap() error { return e.Err }
