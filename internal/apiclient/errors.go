package apiclient

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/pifleet/sessionlog/internal/wire"
)

// Error is an error reply of pi-node: the HTTP status (over NATS the micro
// error code, which pi-node sets to the same number) and the JSON error
// object {"error":{"code","message","field","lastSeq","revision"}}.
//
// It unwraps to the sentinel of its status, as wire.ErrorOf maps them
// (docs/API.md, Errors): wire.ErrExists for a 409 of create or import, a
// *wire.ConflictError for another 409 with lastSeq or revision, and so on,
// inside a *wire.FieldError when the reply names a field. A 500 unwraps to
// nothing.
type Error struct {
	Op     string `json:"-"` // the operation that failed
	Status int    `json:"-"`
	// ErrorDetail is the error object: Code, Message, Field, LastSeq (the
	// session's last sequence on a conflict: read what you missed with
	// minSeq=LastSeq), Revision (a cursor's, on a cursor.set conflict).
	wire.ErrorDetail
	// Foreign is set when the reply was not pi-node's error object (a
	// proxy's page, a truncated reply); Message is then made from what
	// there was.
	Foreign bool `json:"-"`
	// Local is set when the client refused the request before sending it
	// (larger than the NATS server's max_payload).
	Local bool `json:"-"`
	// Hint says what the user can do; callers may replace it with advice
	// in their own terms (pi-ctl names its flags).
	Hint string `json:"-"`
}

func (e *Error) Error() string { return withHint(e.Message, e.Hint) }

// withHint is msg with the advice after it, if any.
func withHint(msg, hint string) string {
	if hint != "" {
		return msg + " (" + hint + ")"
	}
	return msg
}

// Unwrap returns the sentinel of the status (see Error).
func (e *Error) Unwrap() error { return wire.ErrorOf(e.Op, e.Status, e.ErrorDetail) }

// IsStatus reports whether err is an error reply with this HTTP status.
func IsStatus(err error, status int) bool {
	var ae *Error
	return errors.As(err, &ae) && ae.Status == status
}

// decodeError reads an error reply body of op. A body that is not pi-node's
// error object still yields a readable message, from fallback (NATS: the
// error header) or the body's start; Foreign is set then.
func decodeError(op string, status int, body []byte, fallback string) *Error {
	var eb struct {
		Error *Error `json:"error"`
	}
	if json.Unmarshal(body, &eb) == nil && eb.Error != nil && eb.Error.Message != "" {
		eb.Error.Op, eb.Error.Status = op, status
		return eb.Error
	}
	msg := fallback
	if msg == "" {
		msg = strings.TrimSpace(string(body))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return &Error{Op: op, Status: status, ErrorDetail: wire.ErrorDetail{Message: fmt.Sprintf("%s (status %d)", msg, status)}, Foreign: true}
}

// UnreachableError means no reply came: the node or the NATS server is not
// there, did not answer in time, or nobody serves the operation. The outcome
// of a write is then unknown. It unwraps to its cause and to
// wire.ErrUnavailable.
type UnreachableError struct {
	Where   string // the URL tried
	Err     error
	Timeout bool   // no reply within the client's timeout
	Hint    string // what the user can do (see Error.Hint)
}

func (e *UnreachableError) Error() string {
	return withHint(fmt.Sprintf("cannot reach pi-node at %s: %v", e.Where, e.Err), e.Hint)
}

// Unwrap returns the cause and wire.ErrUnavailable.
func (e *UnreachableError) Unwrap() []error { return []error{e.Err, wire.ErrUnavailable} }

// CertificateError means the server's TLS certificate was not trusted (a
// *tls.CertificateVerificationError: signed by an unknown authority, for
// another name, expired). Nothing reached pi-node, and no retry can
// change that: unlike an UnreachableError it is not wire.ErrUnavailable,
// so writers and followers give up at once. It unwraps to the cause.
type CertificateError struct {
	Where string // the URL tried
	Err   error
	Hint  string // what the user can do (see Error.Hint)
}

func (e *CertificateError) Error() string {
	return withHint(fmt.Sprintf("pi-node at %s: its TLS certificate is not trusted: %v", e.Where, e.Err), e.Hint)
}

func (e *CertificateError) Unwrap() error { return e.Err }

// certificateError returns err as a *CertificateError when a certificate
// check failed, else nil.
func certificateError(where string, err error) *CertificateError {
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	if errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci) {
		return &CertificateError{Where: where, Err: err, Hint: "give the CA that signed its certificate (TLSCA; pi-ctl's --tls-ca or $PI_CTL_TLS_CA)"}
	}
	return nil
}

// Temporary reports whether a retry may succeed: no reply, or a node that
// is unavailable or behind (502, 503, 504). Followers keep going through
// these.
func Temporary(err error) bool {
	return errors.Is(err, wire.ErrUnavailable) || errors.Is(err, wire.ErrTimeout)
}
