package api

import (
	"errors"
	"strconv"

	"github.com/pifleet/sessionlog/internal/wire"
)

// errUnauthorized is what a request without the bearer token gets: the
// transport's wire.ErrUnauthorized, with a message that says what to send.
var errUnauthorized error = unauthorized{}

type unauthorized struct{}

func (unauthorized) Error() string {
	return "a valid bearer token is required (Authorization: Bearer <token>)"
}
func (unauthorized) Unwrap() error { return wire.ErrUnauthorized }

// apiError is an error mapped by wire.StatusOf.
type apiError struct {
	status int
	body   wire.ErrorBody
}

// mapError maps err for a response (wire.StatusOf: the one table both
// transports use) and logs it when it is not one of ours: its message is
// then replaced by a generic one.
func (s *Server) mapError(transport, op string, err error) apiError {
	var fe *forwardedError
	if errors.As(err, &fe) {
		return apiError{status: fe.status, body: fe.body} // the holder's, as it answered
	}
	status, d, known := wire.StatusOf(err)
	if !known {
		s.log.Error("request failed", keyTransport, transport, keyOp, op, keyErr, err)
	}
	return apiError{status: status, body: wire.ErrorBody{Error: d}}
}

// statusText is the micro error code: the HTTP status as a string.
func statusText(status int) string { return strconv.Itoa(status) }

// Attribute keys of log records (STYLE habit 12).
const (
	keyTransport = "transport"
	keyOp        = "op"
	keyErr       = "err"
	keySession   = "session"
	keyWho       = "who"
	keyOutcome   = "outcome"
	keyRemote    = "remote"
	keyStatus    = "status"
)
