package main

import (
	"context"
	"errors"
	"net/http"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/wire"
)

// backend is how the server commands reach pi-node. pi-node serves the same
// operations over NATS (request to pi.v1.<op>) and HTTP (/v1/...), with the
// same JSON bodies (docs/API.md), so each command is written once against
// this interface and runs over either transport. The transports themselves
// are internal/apiclient's; pi-ctl adds the advice in its errors, which
// names its own flags.
//
// do runs the operation of req (one of wire's typed requests), as
// apiclient.Client.Do does: an error reply of the node is an
// *apiclient.Error, no reply at all an *apiclient.UnreachableError; both
// carry a hint for the operator in their message.
//
// close releases the connection; the backend is unusable afterwards.
type backend interface {
	do(ctx context.Context, req wire.Request) ([]byte, error)
	close()
}

// seqEntry is one stored entry with its log sequence (the entries operation
// and the watch stream).
type seqEntry = apiclient.SeqEntry

// apiBackend is an apiclient transport with pi-ctl's hints.
type apiBackend struct {
	c        apiclient.Client
	nats     bool // the NATS micro service, not HTTP
	hasToken bool // --token or $PI_CTL_TOKEN was given
}

func (b *apiBackend) do(ctx context.Context, req wire.Request) ([]byte, error) {
	data, err := b.c.Do(ctx, req)
	return data, b.hint(err)
}

func (b *apiBackend) close() { b.c.Close() }

// caHint is pi-ctl's advice on an untrusted certificate.
const caHint = "pass the CA that signed pi-node's certificate with --tls-ca FILE or $PI_CTL_TLS_CA (gen-secrets wrote it as ca.pem)"

// hint replaces the transport's advice with pi-ctl's, in terms of its
// flags and environment. Errors without advice keep none.
func (b *apiBackend) hint(err error) error {
	var ue *apiclient.UnreachableError
	var ae *apiclient.Error
	var ce *apiclient.CertificateError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		c := *ce
		c.Hint = caHint
		return &c
	case errors.As(err, &ue):
		u := *ue
		switch {
		case u.Timeout:
			u.Hint = "raise --timeout if the node is busy"
		case !b.nats && u.Hint != "":
			u.Hint = "is pi-node running? point --http or $PI_CTL_HTTP at its HTTP listener"
		default:
			return err
		}
		return &u
	case errors.As(err, &ae):
		a := *ae
		switch {
		case a.Foreign:
			return err
		case a.Status == http.StatusUnauthorized && b.hasToken:
			a.Hint = "the token given with --token or $PI_CTL_TOKEN is not one the node knows"
		case a.Status == http.StatusUnauthorized:
			a.Hint = "pass a token of the node's --http-token or --http-tokens with --token or $PI_CTL_TOKEN"
		case a.Status == http.StatusForbidden:
			a.Hint = "use a token with that scope: see pi-node's --http-tokens file"
		case b.nats && a.Status == http.StatusRequestEntityTooLarge && a.Local:
			a.Hint = "use --http URL: pi-node takes imports of up to 16 MiB over HTTP"
		case b.nats && a.Status == http.StatusRequestEntityTooLarge:
			a.Hint = "pi-ctl: retry with --http URL"
		default:
			return err
		}
		return &a
	}
	return err
}

// client adapts a backend to apiclient.Client, for apiclient's helpers
// (paging, polling); errors keep pi-ctl's hints.
type client struct{ b backend }

func (c client) Do(ctx context.Context, req wire.Request) ([]byte, error) {
	return c.b.do(ctx, req)
}

func (c client) Close() { c.b.close() }

// call runs req's operation and decodes its JSON reply into resp (nil:
// ignore it).
func call(ctx context.Context, b backend, req wire.Request, resp any) error {
	return apiclient.Call(ctx, client{b}, req, resp)
}

// newEntryReader pages through a session's entries (see
// apiclient.EntryReader).
func newEntryReader(b backend, sid string) *apiclient.EntryReader {
	return apiclient.NewEntryReader(client{b}, sid)
}

// followEntries follows a session: with HTTP's Server-Sent Events watch
// when the transport has one, else by polling "entries"; see
// apiclient.Follower.
func followEntries(ctx context.Context, b backend, sid string, after uint64, fn func(seqEntry) error, retry func(error)) error {
	if ab, ok := b.(*apiBackend); ok {
		if f, ok := ab.c.(apiclient.Follower); ok {
			return ab.hint(f.Follow(ctx, sid, after, fn, func(err error) { retry(ab.hint(err)) }))
		}
	}
	return apiclient.PollEntries(ctx, client{b}, sid, after, fn, retry)
}

// isStatus reports whether err is an error reply with this HTTP status.
func isStatus(err error, status int) bool { return apiclient.IsStatus(err, status) }
