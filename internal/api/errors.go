package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/pifleet/sessionlog/internal/wire"
)

// Error codes of the JSON error object.
const (
	CodeNotFound     = "not_found"
	CodeConflict     = "conflict"
	CodeInvalid      = "invalid"
	CodeTooLarge     = "too_large"
	CodeUnavailable  = "unavailable"
	CodeUnauthorized = "unauthorized"
	CodeTimeout      = "timeout"
	CodeInternal     = "internal"
)

// errUnauthorized is the transport's own sentinel for a missing or wrong
// bearer token; the engine never returns it.
var errUnauthorized = errors.New("a valid bearer token is required (Authorization: Bearer <token>)")

// errorTable maps the engine's sentinels to an HTTP status and an error
// code: the one place both transports take them from (NATS sends the status
// as its micro error code). The first match wins, so more specific entries
// come first. Anything unmatched is 500 internal.
var errorTable = []struct {
	err    error
	status int
	code   string
}{
	{errUnauthorized, http.StatusUnauthorized, CodeUnauthorized},
	{wire.ErrInvalid, http.StatusBadRequest, CodeInvalid},
	{wire.ErrNotFound, http.StatusNotFound, CodeNotFound},
	{wire.ErrExists, http.StatusConflict, CodeConflict},
	{wire.ErrConflict, http.StatusConflict, CodeConflict},
	{wire.ErrTooLarge, http.StatusRequestEntityTooLarge, CodeTooLarge},
	{wire.ErrTimeout, http.StatusGatewayTimeout, CodeTimeout},
	{context.DeadlineExceeded, http.StatusGatewayTimeout, CodeTimeout},
	{wire.ErrUnavailable, http.StatusServiceUnavailable, CodeUnavailable},
	// The caller went away or the server is stopping: not a server fault.
	{context.Canceled, http.StatusServiceUnavailable, CodeUnavailable},
}

// ErrorBody is the JSON body of every error response, on both transports:
// {"error":{"code","message","field"?}}.
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
	// LastSeq is the session's last sequence on a conflict with
	// expectLastSeq: read what you missed with minSeq=lastSeq.
	LastSeq uint64 `json:"lastSeq,omitempty"`
}

// apiError is an error mapped through errorTable.
type apiError struct {
	status int
	body   ErrorBody
}

// toAPIError maps err. Messages of known errors are passed on: the engine
// writes them for clients (ids, fields, sequences). Unknown errors are
// logged by the caller and replaced by a generic message.
func toAPIError(err error) (apiError, bool) {
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			d := ErrorDetail{Code: e.code, Message: err.Error()}
			var ce *wire.ConflictError
			if errors.As(err, &ce) {
				d.LastSeq = ce.LastSeq
			}
			var fe *wire.FieldError
			if errors.As(err, &fe) {
				d.Field = fe.Field
			}
			return apiError{status: e.status, body: ErrorBody{d}}, true
		}
	}
	return apiError{status: http.StatusInternalServerError, body: ErrorBody{ErrorDetail{
		Code:    CodeInternal,
		Message: "internal error; the server log has the details",
	}}}, false
}

// mapError maps err for a response and logs it when it is not one of ours.
func (s *Server) mapError(transport, op string, err error) apiError {
	ae, known := toAPIError(err)
	if !known {
		s.log.Error("request failed", keyTransport, transport, keyOp, op, keyErr, err)
	}
	return ae
}

// statusText is the micro error code: the HTTP status as a string.
func statusText(status int) string { return strconv.Itoa(status) }

// Attribute keys of log records (STYLE habit 12).
const (
	keyTransport = "transport"
	keyOp        = "op"
	keyErr       = "err"
	keySession   = "session"
)
