package wire

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/pifleet/sessionlog/internal/tree"
)

// The error vocabulary of the engine and of the API. Adapters
// (internal/jetstream, the HTTP transport) translate their backend's
// failures into these once, at their edge; the API maps them to HTTP
// statuses and error codes with StatusOf, and the clients map an error
// reply back with ErrorOf, so a caller tests errors.Is on either side of
// the wire. Wrap with fmt.Errorf("...: %w", err) to add context.
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
	// ErrUnauthorized: the HTTP API wants a bearer token (pi-node's
	// --http-token) and got none or another one. It belongs to the
	// transport; the engine never returns it.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: the HTTP API knows the bearer token, but its scopes
	// (pi-node's --http-tokens) do not cover the operation; the message
	// names the scope that is missing. It belongs to the transport.
	ErrForbidden = errors.New("forbidden")
)

// FieldError is an error about one input field or line, which it names so
// that callers can point the user at it. Err is what it unwraps to: nil
// means ErrInvalid (Invalid's errors); Field sets another (an unknown leaf
// is ErrNotFound, an id stored with other content a *ConflictError).
type FieldError struct {
	Field  string // JSON path-ish name ("entries[2].parentId") or "line 7"
	Reason string
	Err    error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// Unwrap makes errors.Is(err, ErrInvalid) true, or errors.Is(err, e.Err).
func (e *FieldError) Unwrap() error {
	if e.Err != nil {
		return e.Err
	}
	return ErrInvalid
}

// Invalid returns an ErrInvalid FieldError for field.
func Invalid(field, reason string) error { return &FieldError{Field: field, Reason: reason} }

// InvalidShape is the ErrInvalid of an entry under field that fails pi's
// shapes (a *tree.ShapeError from tree.CheckEntry or tree.CheckLine),
// naming the member: "entries[2]" and "message.role" give
// "entries[2].message.role".
func InvalidShape(field string, err error) error {
	var se *tree.ShapeError
	if !errors.As(err, &se) {
		return Invalid(field, err.Error())
	}
	if se.Path != "" {
		field += "." + se.Path
	}
	return Invalid(field, se.Reason)
}

// Field names the input field err is about, keeping what err unwraps to
// (a *FieldError already naming one keeps its own).
func Field(field string, err error) error {
	var fe *FieldError
	if err == nil || errors.As(err, &fe) {
		return err
	}
	return &FieldError{Field: field, Reason: err.Error(), Err: err}
}

// ConflictError is an ErrConflict that knows where the thing in conflict
// stands: the session's last sequence (read what you missed with minSeq =
// LastSeq from any node), or for a cursor its current revision (0: the
// client has none), to retry expectRevision with. Unwraps to ErrConflict.
type ConflictError struct {
	LastSeq  uint64
	Revision *uint64
	Reason   string
}

func (e *ConflictError) Error() string { return "conflict: " + e.Reason }

// Unwrap makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// Error codes of the JSON error object.
const (
	CodeNotFound     = "not_found"
	CodeConflict     = "conflict"
	CodeInvalid      = "invalid"
	CodeTooLarge     = "too_large"
	CodeUnavailable  = "unavailable"
	CodeUnauthorized = "unauthorized"
	CodeForbidden    = "forbidden"
	CodeTimeout      = "timeout"
	CodeInternal     = "internal"
)

// ErrorBody is the JSON body of every error reply, on both transports:
// {"error":{"code","message","field"?,"lastSeq"?,"revision"?}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the error object. Field names the offending input (a body
// field such as "entries[2].parentId", a query parameter, or "body") when
// the error is about one.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	// LastSeq is the session's last sequence on a conflict (a stale
	// expectLastSeq, an id stored with other content): read what you
	// missed with minSeq=lastSeq.
	LastSeq uint64 `json:"lastSeq,omitempty"`
	// Revision is the cursor's current revision on a cursor.set conflict
	// (0: the client has no cursor): expectRevision to retry with.
	Revision *uint64 `json:"revision,omitempty"`
}

// errorTable maps sentinels to an HTTP status and an error code: the one
// place both transports take them from (NATS sends the status as its micro
// error code). The first match wins, so more specific entries come first.
var errorTable = []struct {
	err    error
	status int
	code   string
}{
	{ErrUnauthorized, http.StatusUnauthorized, CodeUnauthorized},
	{ErrForbidden, http.StatusForbidden, CodeForbidden},
	{ErrInvalid, http.StatusBadRequest, CodeInvalid},
	{ErrNotFound, http.StatusNotFound, CodeNotFound},
	{ErrExists, http.StatusConflict, CodeConflict},
	{ErrConflict, http.StatusConflict, CodeConflict},
	{ErrTooLarge, http.StatusRequestEntityTooLarge, CodeTooLarge},
	{ErrTimeout, http.StatusGatewayTimeout, CodeTimeout},
	{context.DeadlineExceeded, http.StatusGatewayTimeout, CodeTimeout},
	{ErrUnavailable, http.StatusServiceUnavailable, CodeUnavailable},
	// The caller went away or the server is stopping: not a server fault.
	{context.Canceled, http.StatusServiceUnavailable, CodeUnavailable},
}

// internalMessage replaces the message of an unknown error: its details are
// for the server log, not for clients.
const internalMessage = "internal error; the server log has the details"

// StatusOf maps err to the HTTP status and error object of its reply, and
// reports whether err is one of ours. Messages of known errors are passed
// on (the engine writes them for clients: ids, fields, sequences); an
// unknown error is 500 internal with a generic message, and the caller
// logs it.
func StatusOf(err error) (status int, d ErrorDetail, known bool) {
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			d := ErrorDetail{Code: e.code, Message: err.Error()}
			var ce *ConflictError
			if errors.As(err, &ce) {
				d.LastSeq, d.Revision = ce.LastSeq, ce.Revision
			}
			var fe *FieldError
			if errors.As(err, &fe) {
				d.Field = fe.Field
			}
			return e.status, d, true
		}
	}
	return http.StatusInternalServerError, ErrorDetail{Code: CodeInternal, Message: internalMessage}, false
}

// ErrorOf maps an error reply of operation op back to the sentinel of its
// status (nil for a status that has none, such as 500):
//
//	400 invalid      ErrInvalid
//	401 unauthorized ErrUnauthorized
//	403 forbidden    ErrForbidden (the token lacks the operation's scope)
//	404 not_found    ErrNotFound
//	409 conflict     ErrExists for create and import (the session id is
//	                 taken); otherwise a *ConflictError when d carries
//	                 lastSeq or revision, else ErrConflict
//	413 too_large    ErrTooLarge
//	502, 503         ErrUnavailable (retry; appends with the same ids are safe)
//	504 timeout      ErrTimeout (minSeq not applied in time)
//
// When d names a field the error is a *FieldError unwrapping to that.
func ErrorOf(op string, status int, d ErrorDetail) error {
	base := sentinelOf(op, status, d)
	if d.Field == "" || base == nil {
		return base
	}
	fe := &FieldError{Field: d.Field, Reason: strings.TrimPrefix(d.Message, d.Field+": ")}
	if base != ErrInvalid {
		fe.Err = base
	}
	return fe
}

func sentinelOf(op string, status int, d ErrorDetail) error {
	switch status {
	case http.StatusBadRequest:
		return ErrInvalid
	case http.StatusUnauthorized:
		return ErrUnauthorized
	case http.StatusForbidden:
		return ErrForbidden
	case http.StatusNotFound:
		return ErrNotFound
	case http.StatusConflict:
		switch {
		case op == OpCreate.Name || op == OpImport.Name:
			return ErrExists
		case d.LastSeq > 0 || d.Revision != nil:
			return &ConflictError{LastSeq: d.LastSeq, Revision: d.Revision, Reason: d.Message}
		}
		return ErrConflict
	case http.StatusRequestEntityTooLarge:
		return ErrTooLarge
	case http.StatusBadGateway, http.StatusServiceUnavailable:
		return ErrUnavailable
	case http.StatusGatewayTimeout:
		return ErrTimeout
	}
	return nil
}
