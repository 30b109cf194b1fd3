package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// route is where an operation lives over HTTP (docs/API.md, Operations).
// {id} and {client} are filled from the sessionId and client fields; the
// other fields go in the query of a GET or DELETE and in the JSON body of
// a POST or PUT (pi-node reads minSeq and client from either).
type route struct{ method, path string }

var routes = map[string]route{
	"create":        {"POST", "/v1/sessions"},
	"append":        {"POST", "/v1/sessions/{id}/entries"},
	"list":          {"GET", "/v1/sessions"},
	"get":           {"GET", "/v1/sessions/{id}"},
	"entries":       {"GET", "/v1/sessions/{id}/entries"},
	"tree":          {"GET", "/v1/sessions/{id}/tree"},
	"context":       {"GET", "/v1/sessions/{id}/context"},
	"cursor.get":    {"GET", "/v1/sessions/{id}/cursors/{client}"},
	"cursor.set":    {"PUT", "/v1/sessions/{id}/cursors/{client}"},
	"cursor.delete": {"DELETE", "/v1/sessions/{id}/cursors/{client}"},
	"cursor.list":   {"GET", "/v1/sessions/{id}/cursors"},
	"fork":          {"POST", "/v1/sessions/{id}/fork"},
	"export":        {"GET", "/v1/sessions/{id}/export"},
	"import":        {"POST", "/v1/import"},
	"status":        {"GET", "/v1/status"},
}

// httpBackend calls pi-node's REST routes with a bearer token.
type httpBackend struct {
	base   string // scheme://host[:port], no trailing slash
	token  string
	client *http.Client // bounded by --timeout
	stream *http.Client // no overall timeout: the watch stream is long-lived
	minSeq uint64
	// silence is how long a watch stream may stay mute before it is
	// reopened (watchSilence; tests shorten it).
	silence time.Duration
}

var (
	_ backend  = (*httpBackend)(nil)
	_ follower = (*httpBackend)(nil)
)

// httpOptions is how to reach pi-node's HTTP API.
type httpOptions struct {
	url, token             string
	tlsCert, tlsKey, tlsCA string
	timeout                time.Duration
	minSeq                 uint64
}

func newHTTPBackend(o httpOptions) (*httpBackend, error) {
	base := strings.TrimRight(o.url, "/")
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--http %q: want a URL like http://127.0.0.1:8080", o.url)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: o.timeout}).DialContext
	tr.ResponseHeaderTimeout = o.timeout
	if o.tlsCA != "" || o.tlsCert != "" {
		if tr.TLSClientConfig, err = tlsConfig(o.tlsCert, o.tlsKey, o.tlsCA); err != nil {
			return nil, err
		}
	}
	return &httpBackend{base: base, token: o.token, minSeq: o.minSeq, silence: watchSilence,
		client: &http.Client{Transport: tr, Timeout: o.timeout},
		stream: &http.Client{Transport: tr}}, nil
}

// tlsConfig loads a client certificate and a CA for https.
func tlsConfig(cert, key, ca string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if cert != "" {
		kp, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		c.Certificates = []tls.Certificate{kp}
	}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", ca)
		}
	}
	return c, nil
}

func (b *httpBackend) close() { b.client.CloseIdleConnections() }

func (b *httpBackend) do(ctx context.Context, op string, p params, body []byte) ([]byte, error) {
	r, ok := routes[op]
	if !ok {
		return nil, fmt.Errorf("pi-ctl knows no HTTP route for %q", op)
	}
	req, err := b.request(ctx, r, withMinSeq(p, b.minSeq), body)
	if err != nil {
		return nil, err
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, b.unreachable(ctx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, b.unreachable(ctx, err)
	}
	if resp.StatusCode >= 300 {
		return nil, b.statusError(resp.StatusCode, data)
	}
	if len(data) == 0 {
		return nil, nil
	}
	return data, nil
}

// request builds the HTTP request of route r: path parameters from p, the
// rest as the query (GET, DELETE) or as a JSON body (POST, PUT); body, when
// given, is sent as it is.
func (b *httpBackend) request(ctx context.Context, r route, p params, body []byte) (*http.Request, error) {
	raw := body != nil
	path, rest := r.path, params{}
	for k, v := range p {
		switch {
		case k == "sessionId" && strings.Contains(path, "{id}"):
			path = strings.Replace(path, "{id}", url.PathEscape(fmt.Sprint(v)), 1)
		case k == "client" && strings.Contains(path, "{client}"):
			path = strings.Replace(path, "{client}", url.PathEscape(fmt.Sprint(v)), 1)
		default:
			rest[k] = v
		}
	}
	q := url.Values{}
	if r.method == "GET" || r.method == "DELETE" || raw {
		for k, v := range rest {
			q.Set(k, queryValue(v))
		}
	} else {
		var err error
		if body, err = encodeJSON(rest); err != nil {
			return nil, err
		}
	}
	target := b.base + path
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, rd)
	if err != nil {
		return nil, err
	}
	switch {
	case raw:
		req.Header.Set("Content-Type", "application/x-ndjson")
	case body != nil:
		req.Header.Set("Content-Type", "application/json")
	}
	if b.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	return req, nil
}

// queryValue writes a field as a query parameter: null is "null", as
// pi-node reads ?leaf=null.
func queryValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return v
	case uint64:
		return strconv.FormatUint(v, 10)
	}
	return fmt.Sprint(v)
}

// statusError decodes an error reply and adds what the operator can do.
func (b *httpBackend) statusError(status int, body []byte) error {
	ae, ok := decodeError(status, body, "")
	switch {
	case !ok:
		ae.hint = "the reply is not pi-node's: is " + b.base + " pi-node's HTTP listener?"
	case status == http.StatusUnauthorized:
		ae.hint = "pass the node's --http-token with --token or $PI_CTL_TOKEN"
		if b.token != "" {
			ae.hint = "the token given with --token or $PI_CTL_TOKEN is not the node's"
		}
	}
	return ae
}

// unreachable wraps a transport error; an interrupt stays an interrupt.
func (b *httpBackend) unreachable(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return ctx.Err()
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &unreachableError{where: b.base, err: errors.New("no reply in time"), hint: "raise --timeout if the node is busy"}
	}
	return &unreachableError{where: b.base, err: unwrapURLError(err),
		hint: "is pi-node running? point --http or $PI_CTL_HTTP at its HTTP listener"}
}

// unwrapURLError drops net/http's `Get "URL":` prefix: the message names
// the URL already.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
