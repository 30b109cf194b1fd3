package apispec

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/pb33f/libopenapi-validator/paths"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

// framingHeaders may be on any response without the spec declaring them:
// net/http's framing of every reply (Content-Length, Transfer-Encoding,
// Connection, Date), and Content-Type, which the spec gives as each
// response's content instead of as a header.
var framingHeaders = map[string]bool{
	"Content-Length":    true,
	"Transfer-Encoding": true,
	"Connection":        true,
	"Date":              true,
	"Content-Type":      true,
}

// undeclaredHeaders returns the headers of a response with status to r
// that the spec does not declare for it. A request on no operation of the
// spec (an unknown route) may get what any of the shared error responses
// declares.
func (s *Spec) undeclaredHeaders(r *http.Request, status int, h http.Header) []string {
	declared := s.declaredHeaders(r, status)
	var out []string
	for k := range h {
		if !framingHeaders[http.CanonicalHeaderKey(k)] && !declared[strings.ToLower(k)] {
			out = append(out, k)
		}
	}
	return out
}

// declaredHeaders are the (lower-case) header names the spec declares for
// a response with status to r.
func (s *Spec) declaredHeaders(r *http.Request, status int) map[string]bool {
	out := map[string]bool{}
	if resp := s.response(r, status); resp != nil {
		for name := range resp.Headers.KeysFromOldest() {
			out[strings.ToLower(name)] = true
		}
		return out
	}
	for _, resp := range s.Model.Components.Responses.FromOldest() {
		for name := range resp.Headers.KeysFromOldest() {
			out[strings.ToLower(name)] = true
		}
	}
	return out
}

// response is the spec's response with status to r's operation, nil when
// the spec has no such operation or status.
func (s *Spec) response(r *http.Request, status int) *v3.Response {
	s.mu.Lock()
	pi, _, _ := paths.FindPath(r, s.Model, nil)
	s.mu.Unlock()
	if pi == nil {
		return nil
	}
	op := pi.GetOperations().GetOrZero(strings.ToLower(r.Method))
	if op == nil || op.Responses == nil {
		return nil
	}
	if resp := op.Responses.Codes.GetOrZero(strconv.Itoa(status)); resp != nil {
		return resp
	}
	return op.Responses.Default
}
