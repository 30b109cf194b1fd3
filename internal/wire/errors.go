package wire

import "errors"

// The error vocabulary of the engine. Adapters (internal/jetstream, the HTTP
// transport) translate their backend's failures into these once, at their edge;
// the API layer maps them to HTTP statuses and micro error codes in one table.
// Wrap with fmt.Errorf("...: %w", err) to add context; test with errors.Is.
var (
	// ErrNotFound: the session, entry, cursor or message does not exist.
	ErrNotFound = errors.New("not found")
	// ErrExists: an exclusive create found the session (or key) already there.
	ErrExists = errors.New("already exists")
	// ErrConflict: an optimistic write lost a race: the expected last sequence
	// or revision was stale, or an entry id is already stored with other content.
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the input is malformed: bad JSON, unknown parent, bad id, ...
	ErrInvalid = errors.New("invalid")
	// ErrTooLarge: an entry or a batch exceeds what the log accepts.
	ErrTooLarge = errors.New("too large")
	// ErrUnavailable: the backend cannot be reached or has no quorum right now;
	// the operation may be retried (with the same entry ids: appends are idempotent).
	ErrUnavailable = errors.New("unavailable")
	// ErrTimeout: a bounded wait (read-your-writes minSeq) ran out.
	ErrTimeout = errors.New("timeout")
)

// FieldError is an ErrInvalid that names the offending input field or line,
// so callers can point the user at it. Unwraps to ErrInvalid.
type FieldError struct {
	Field  string // JSON path-ish name ("entries[2].parentId") or "line 7"
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *FieldError) Unwrap() error { return ErrInvalid }

// Invalid returns a FieldError for field.
func Invalid(field, reason string) error { return &FieldError{Field: field, Reason: reason} }

// ConflictError is an ErrConflict that knows the session's last sequence at
// the time of the conflict, so the caller can read what it missed with
// minSeq = LastSeq from any node. Unwraps to ErrConflict.
type ConflictError struct {
	LastSeq uint64
	Reason  string
}

func (e *ConflictError) Error() string { return "conflict: " + e.Reason }

// Unwrap makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Unwrap() error { return ErrConflict }
