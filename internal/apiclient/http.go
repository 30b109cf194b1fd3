package apiclient

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
	"strings"
	"time"

	"github.com/pifleet/sessionlog/internal/wire"
)

// HTTPOptions say how to reach pi-node's HTTP API.
type HTTPOptions struct {
	// URL is the node's HTTP listener, e.g. http://127.0.0.1:8080 (the
	// scheme defaults to http).
	URL string
	// Token is the bearer token (pi-node's --http-token), if it has one.
	Token string
	// TLSConfig is used for https; TLSCert, TLSKey and TLSCA name PEM files
	// to build one from instead (a client certificate and the CA that
	// signed the server's).
	TLSConfig              *tls.Config
	TLSCert, TLSKey, TLSCA string
	// Timeout bounds connecting and each request (the watch stream only
	// while connecting). Default 30 s.
	Timeout time.Duration
	// MinSeq is sent with every request: read your writes from any node.
	MinSeq uint64
	// Consistency is sent with every log read that names none itself
	// (wire.ConsistencyStrong: linearizable reads).
	Consistency string
	// WatchSilence is how long a watch stream may say nothing, not even
	// pi-node's ping, before it counts as dead and is reopened. Default one
	// minute (four heartbeats).
	WatchSilence time.Duration
}

// HTTP calls pi-node's REST routes.
type HTTP struct {
	base    string // scheme://host[:port], no trailing slash
	token   string
	client  *http.Client // bounded by Timeout
	stream  *http.Client // no overall timeout: the watch stream is long-lived
	minSeq  uint64
	silence time.Duration

	consistency string // HTTPOptions.Consistency
}

var (
	_ Client   = (*HTTP)(nil)
	_ Follower = (*HTTP)(nil)
)

// NewHTTP checks the options and returns a client; it does not connect.
func NewHTTP(o HTTPOptions) (*HTTP, error) {
	base := strings.TrimRight(o.URL, "/")
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q: want a URL like http://127.0.0.1:8080", o.URL)
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.WatchSilence <= 0 {
		o.WatchSilence = time.Minute
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: o.Timeout}).DialContext
	tr.ResponseHeaderTimeout = o.Timeout
	switch {
	case o.TLSConfig != nil:
		tr.TLSClientConfig = o.TLSConfig
	case o.TLSCA != "" || o.TLSCert != "":
		if tr.TLSClientConfig, err = tlsConfig(o.TLSCert, o.TLSKey, o.TLSCA); err != nil {
			return nil, err
		}
	}
	return &HTTP{base: base, token: o.Token, minSeq: o.MinSeq, consistency: o.Consistency, silence: o.WatchSilence,
		client: &http.Client{Transport: tr, Timeout: o.Timeout},
		stream: &http.Client{Transport: tr}}, nil
}

// tlsConfig loads a client certificate and a CA for https.
func tlsConfig(cert, key, ca string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if cert != "" {
		kp, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("TLS certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{kp}
	}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("TLS CA: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("TLS CA %s: no PEM certificate in it", ca)
		}
	}
	return c, nil
}

// Close closes idle connections.
func (b *HTTP) Close() { b.client.CloseIdleConnections() }

// Do runs req's operation at its route in wire's table; see Client.
func (b *HTTP) Do(ctx context.Context, r wire.Request) ([]byte, error) {
	op := r.Op().Name
	if r.Op() == wire.OpWatch {
		return nil, errors.New("watch streams its reply: use Follow")
	}
	req, err := b.request(ctx, r)
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
		return nil, b.statusError(op, resp.StatusCode, data)
	}
	if len(data) == 0 {
		return nil, nil
	}
	return data, nil
}

// request builds the HTTP request of r as wire lays it out: path
// parameters in the path, the other fields in the query (GET, DELETE,
// import) or as the JSON body (POST, PUT).
func (b *HTTP) request(ctx context.Context, r wire.Request) (*http.Request, error) {
	hr, err := wire.EncodeHTTP(wire.WithConsistency(r, b.consistency), b.minSeq)
	if err != nil {
		return nil, err
	}
	target := b.base + hr.Path
	if len(hr.Query) > 0 {
		target += "?" + hr.Query.Encode()
	}
	var rd io.Reader
	if hr.Body != nil {
		rd = bytes.NewReader(hr.Body)
	}
	req, err := http.NewRequestWithContext(ctx, hr.Method, target, rd)
	if err != nil {
		return nil, err
	}
	if hr.ContentType != "" {
		req.Header.Set("Content-Type", hr.ContentType)
	}
	if b.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	return req, nil
}

// statusError decodes an error reply and adds what the user can do.
func (b *HTTP) statusError(op string, status int, body []byte) error {
	ae := decodeError(op, status, body, "")
	switch {
	case ae.Foreign:
		ae.Hint = "the reply is not pi-node's: is " + b.base + " pi-node's HTTP listener?"
	case status == http.StatusUnauthorized:
		ae.Hint = "send a token of pi-node's --http-token or --http-tokens as the bearer token"
	case status == http.StatusForbidden:
		ae.Hint = "the token lacks the operation's scope (pi-node's --http-tokens)"
	}
	return ae
}

// unreachable wraps a transport error; an interrupt stays an interrupt.
func (b *HTTP) unreachable(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return ctx.Err()
	}
	if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", ctx.Err(), &UnreachableError{Where: b.base, Err: errors.New("no reply in time"), Timeout: true})
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &UnreachableError{Where: b.base, Err: errors.New("no reply in time"), Timeout: true}
	}
	if ce := certificateError(b.base, unwrapURLError(err)); ce != nil {
		return ce // not "is pi-node running?": it is, and it answered
	}
	return &UnreachableError{Where: b.base, Err: unwrapURLError(err), Hint: "is pi-node running at this URL?"}
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
