package client

import (
	"fmt"

	"github.com/pifleet/sessionlog/internal/wire"
	"github.com/pifleet/sessionlog/internal/writer"
)

// The errors of every method, on every transport. Test them with errors.Is;
// messages are for people.
var (
	// ErrNotFound: no such session, entry or cursor.
	ErrNotFound = wire.ErrNotFound
	// ErrExists: a session with this id is already stored (Create with
	// WithSessionID, two workers creating the same session).
	ErrExists = wire.ErrExists
	// ErrConflict: an optimistic write lost a race it could not reconcile by
	// itself — a cursor another writer moved (ErrCursorMoved), an entry id
	// stored with other content, or appends that kept conflicting until the
	// RetryPolicy gave up.
	ErrConflict = wire.ErrConflict
	// ErrInvalid: bad input — malformed JSON, a bad id, an unknown parent.
	// Errors about one input are a *FieldError naming it.
	ErrInvalid = wire.ErrInvalid
	// ErrTooLarge: an entry over the log's record limit (8 MiB), or a
	// creation needing more records than one atomic batch (1000: header and
	// 999 entries before the first assistant message). Nothing was stored.
	ErrTooLarge = wire.ErrTooLarge
	// ErrUnavailable: the log or pi-node cannot be reached or has no quorum
	// (a write returns it once its RetryPolicy is spent). A write's outcome
	// is then unknown: Sync and look before writing the same content again.
	ErrUnavailable = wire.ErrUnavailable
	// ErrTimeout: pi-node did not reach the sequence a read waited for.
	ErrTimeout = wire.ErrTimeout
	// ErrUnauthorized: the HTTP transport's token is missing or wrong.
	ErrUnauthorized = wire.ErrUnauthorized
	// ErrCursorMoved: another writer moved (or deleted) this client's
	// cursor since this Session last wrote or read it; see CursorMovedError.
	// It wraps ErrConflict.
	ErrCursorMoved = fmt.Errorf("cursor moved by another writer: %w", wire.ErrConflict)
)

// ConflictError is an ErrConflict that knows the session's last sequence
// (its field LastSeq) when the conflict happened.
type ConflictError = wire.ConflictError

// FieldError is an ErrInvalid that names the offending input (its fields
// Field and Reason), e.g. "entries[0].parentId".
type FieldError = wire.FieldError

// RetryPolicy bounds a Session's optimistic append loop: Attempts (default
// 100), Backoff and MaxBackoff after ErrUnavailable (50 ms doubling to
// 500 ms), AttemptTimeout of one publish (500 ms, plus 1 ms per record and
// 500 ms per MiB; doubled after each attempt that timed out, up to 4×),
// UnavailableFor (give up with ErrUnavailable after 10 s of unavailability) and ConflictBackoff between
// conflicts (2 ms doubling, with jitter). The zero value is the default.
type RetryPolicy = writer.RetryPolicy

// CursorMovedError says that the entries or the move were done, but this
// client's cursor was not moved along: another writer moved it (or deleted
// it) since this Session last wrote or read it. Cursor is where it is now
// (nil: deleted). The Session keeps its own leaf; call AdoptCursor to go
// where the other writer went, or OverwriteCursor to take the cursor back.
// Until then every move reports the same. It matches ErrCursorMoved and
// ErrConflict.
type CursorMovedError struct {
	Session, Client string
	Cursor          *Cursor
}

func (e *CursorMovedError) Error() string {
	where := "deleted it"
	if e.Cursor != nil {
		leaf := e.Cursor.LeafID
		if leaf == "" {
			leaf = "null"
		}
		where = fmt.Sprintf("moved it to %s (seq %d, revision %d)", leaf, e.Cursor.Seq, e.Cursor.Revision)
	}
	return fmt.Sprintf("cursor %s of session %s not moved: another writer %s", e.Client, e.Session, where)
}

// Unwrap returns ErrCursorMoved.
func (e *CursorMovedError) Unwrap() error { return ErrCursorMoved }
