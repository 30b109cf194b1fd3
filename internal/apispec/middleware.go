package apispec

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pb33f/libopenapi-validator/errors"
)

// maxBuffered is the most of a request or response body Middleware keeps to
// validate: beyond it (the tests' bodies over the server's limits) the body
// streams through unchecked, and only status and headers are validated.
const maxBuffered = 32 << 20

// Middleware serves h, validating every request and its response against
// the spec and reporting each mismatch with t.Errorf. A request the spec
// accepts must get a response the spec declares for it (status, headers,
// body), with no header the spec does not declare for that response beyond
// HTTP's framing (framingHeaders). A request the spec rejects — the tests send malformed ones on
// purpose — must get a 4xx whose body is an ErrorBody: the server must
// refuse what the contract does not allow, in the contract's error shape.
// Streams (watch's text/event-stream) and JSONL bodies are checked for
// status, headers and content type only.
func Middleware(t testing.TB, h http.Handler) http.Handler {
	s := Load(t)
	report := reporter(t)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, whole := readUpTo(r)
		r.Body = rebody(r.Body, body, whole)
		ex := &exchange{s: s, report: report, method: r.Method, path: r.URL.RequestURI()}
		if whole {
			ex.reqErrs = s.validateRequest(r, body)
		}
		rec := &recorder{ResponseWriter: w, ex: ex, req: r}
		h.ServeHTTP(rec, r)
		rec.finish()
	})
}

// reporter is t.Errorf until t's cleanups run. Handlers that outlive the
// test (a stream cut at cleanup) must not report: testing panics on an
// Errorf after the test has ended. The servers close in cleanups
// registered after this one, which run first.
func reporter(t testing.TB) func(string, ...any) {
	var done atomic.Bool
	t.Cleanup(func() { done.Store(true) })
	return func(format string, args ...any) {
		if !done.Load() {
			t.Errorf(format, args...)
		}
	}
}

// Transport is Middleware on the client's side, for tests whose server is
// not theirs to wrap (an in-process pi-node): it validates each request
// before sending it through next (http.DefaultTransport when nil) and each
// response as it comes, reporting mismatches with t.Errorf.
func Transport(t testing.TB, next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &transport{s: Load(t), report: reporter(t), next: next}
}

type transport struct {
	s      *Spec
	report func(string, ...any)
	next   http.RoundTripper
}

func (tr *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	body, whole := readUpTo(r)
	r = r.Clone(r.Context())
	r.Body = rebody(r.Body, body, whole)
	ex := &exchange{s: tr.s, report: tr.report, method: r.Method, path: r.URL.RequestURI()}
	if whole {
		ex.reqErrs = tr.s.validateRequest(r, body)
	}
	resp, err := tr.next.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "text/event-stream" {
		ex.checkResponse(r, resp.StatusCode, resp.Header, nil, true)
		return resp, nil
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return resp, nil // the caller reads what came and sees the cut itself
	}
	ex.checkResponse(r, resp.StatusCode, resp.Header, b, false)
	return resp, nil
}

// readUpTo reads at most maxBuffered bytes of r's body; whole reports that
// it is all of it.
func readUpTo(r *http.Request) (b []byte, whole bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBuffered+1))
	if err != nil {
		return b, false
	}
	return b, len(b) <= maxBuffered
}

// rebody is the body to pass on after readUpTo read head of rest: the same
// kind of body as before (none stays none, so a client does not turn an
// empty body into a chunked one), with what was read put back in front.
func rebody(rest io.ReadCloser, head []byte, whole bool) io.ReadCloser {
	switch {
	case rest == nil || rest == http.NoBody:
		return rest
	case whole:
		_ = rest.Close()
		return io.NopCloser(bytes.NewReader(head))
	}
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), rest), rest}
}

// validateRequest validates a copy of r with body. The server does not read
// Content-Type, and the tests mostly send none: the copy gets the type the
// spec declares for the operation's body.
func (s *Spec) validateRequest(r *http.Request, body []byte) []*errors.ValidationError {
	c := r.Clone(r.Context())
	c.Body = io.NopCloser(bytes.NewReader(body))
	c.ContentLength = int64(len(body))
	if len(body) > 0 && c.Header.Get("Content-Type") == "" {
		ct := "application/json"
		if strings.HasSuffix(r.URL.Path, "/v1/import") {
			ct = "application/x-ndjson"
		}
		c.Header.Set("Content-Type", ct)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, errs := s.val.ValidateHttpRequest(c)
	return errs
}

// exchange is one request and what is known of its validation.
type exchange struct {
	s            *Spec
	report       func(string, ...any)
	method, path string
	reqErrs      []*errors.ValidationError
}

// checkResponse validates the response: against the operation when the
// request was valid, as a 4xx ErrorBody when it was not.
func (ex *exchange) checkResponse(req *http.Request, status int, header http.Header, body []byte, streamed bool) {
	what := ex.method + " " + ex.path
	ctype, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	if extra := ex.s.undeclaredHeaders(req, status, header); len(extra) > 0 {
		slices.Sort(extra)
		ex.report("apispec: %s → %d: headers the spec does not declare for this response: %s", what, status, strings.Join(extra, ", "))
	}
	if len(ex.reqErrs) > 0 {
		if status < 400 || status > 499 {
			ex.report("apispec: %s → %d: the spec rejects the request, so the server must answer 4xx:%s", what, status, describe(ex.reqErrs))
			return
		}
		ex.checkErrorBody(what, status, ctype, body)
		return
	}
	resp := &http.Response{StatusCode: status, Header: header.Clone(), Request: req, Body: io.NopCloser(bytes.NewReader(body))}
	if streamed {
		// Status, headers and content type: a stream has no end to wait for.
		resp.Body = http.NoBody
	}
	ex.s.mu.Lock()
	_, errs := ex.s.val.ValidateHttpResponse(req, resp)
	ex.s.mu.Unlock()
	if len(errs) > 0 {
		ex.report("apispec: %s → %d: the response does not match the spec:%s\n\tbody: %.400s", what, status, describe(errs), body)
	} else if !streamed {
		ex.s.observe(req, status, body)
	}
	if status >= 400 && !streamed {
		ex.checkErrorBody(what, status, ctype, body)
	}
}

// checkErrorBody checks an error reply: JSON, an ErrorBody, and a message
// that starts with the field it names (docs/API.md, Errors).
func (ex *exchange) checkErrorBody(what string, status int, ctype string, body []byte) {
	if ctype != "application/json" {
		ex.report("apispec: %s → %d: an error must be application/json, not %q: %.200s", what, status, ctype, body)
		return
	}
	if err := ex.s.ValidateJSON("ErrorBody", body); err != nil {
		ex.report("apispec: %s → %d: the error body is no ErrorBody: %v\n\tbody: %.400s", what, status, err, body)
		return
	}
	var eb struct {
		Error struct{ Field, Message string }
	}
	if json.Unmarshal(body, &eb) == nil && eb.Error.Field != "" && !strings.HasPrefix(eb.Error.Message, eb.Error.Field+": ") {
		ex.report("apispec: %s → %d: the message of an error naming field %q must start with %q: %q", what, status, eb.Error.Field, eb.Error.Field+": ", eb.Error.Message)
	}
}

// recorder passes a response through while keeping what validation needs:
// the status and headers as sent, and a non-streamed body.
type recorder struct {
	http.ResponseWriter
	ex       *exchange
	req      *http.Request
	status   int
	header   http.Header
	body     bytes.Buffer
	streamed bool // validated at WriteHeader: its body is not kept
	overflow bool // the body was too long to keep
	hijacked bool
}

func (r *recorder) WriteHeader(code int) {
	if r.status != 0 {
		r.ResponseWriter.WriteHeader(code) // let net/http complain as it would
		return
	}
	r.status = code
	r.header = r.ResponseWriter.Header().Clone()
	if ct, _, _ := mime.ParseMediaType(r.header.Get("Content-Type")); ct == "text/event-stream" {
		// Validated now, while the test surely still runs: the stream may
		// end only with the server.
		r.streamed = true
		r.ex.checkResponse(r.req, code, r.header, nil, true)
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	if !r.streamed && !r.overflow {
		if r.body.Len()+len(b) > maxBuffered {
			r.overflow = true
			r.body.Reset()
		} else {
			r.body.Write(b)
		}
	}
	return r.ResponseWriter.Write(b)
}

// Flush makes the recorder an http.Flusher for handlers that test for one.
func (r *recorder) Flush() {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(r.ResponseWriter).Flush() // http.Flusher has no error to return
}

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Hijack passes a hijack through; the exchange is then not validated.
func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	r.hijacked = true
	return http.NewResponseController(r.ResponseWriter).Hijack()
}

// finish validates a response that was not streamed, once the handler is
// done with it.
func (r *recorder) finish() {
	switch {
	case r.hijacked || r.streamed:
		return
	case r.status == 0:
		// Nothing written: net/http sends 200 with no body.
		r.status, r.header = http.StatusOK, r.ResponseWriter.Header().Clone()
	}
	if r.overflow {
		r.ex.checkResponse(r.req, r.status, r.header, nil, true)
		return
	}
	r.ex.checkResponse(r.req, r.status, r.header, r.body.Bytes(), false)
}
