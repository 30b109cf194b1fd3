package client

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
	"github.com/pifleet/sessionlog/internal/writer"
)

// Transport says how a Client reaches the session log. Make one with
// JetStream, JetStreamURL, HTTP or NodeNATS; New connects it.
type Transport struct {
	kind     transportKind
	nc       *nats.Conn
	url      string
	natsOpts []nats.Option
}

type transportKind int

const (
	kindJetStream transportKind = iota + 1
	kindHTTP
	kindNodeNATS
)

// JetStream writes and reads the log directly on JetStream over nc, the
// worker's own connection (it needs NATS credentials that may use the
// session stream and the cursor bucket): the lowest latency, no pi-node on
// the path. Close leaves nc open.
func JetStream(nc *nats.Conn) Transport { return Transport{kind: kindJetStream, nc: nc} }

// JetStreamURL is JetStream on a connection that New opens to url with opts
// (credentials, TLS, ...) and Close closes. With a user (nats.UserInfo,
// nats.Nkey) and no nats.CustomInboxPrefix among opts, the connection
// takes the user's InboxPrefix.
func JetStreamURL(url string, opts ...nats.Option) Transport {
	return Transport{kind: kindJetStream, url: url, natsOpts: opts}
}

// InboxPrefix is the inbox prefix pi-node's users file lets user
// subscribe to (the only one): a connection of your own as user, for
// JetStream or NodeNATS, needs nats.CustomInboxPrefix(InboxPrefix(user)),
// or no reply reaches it.
func InboxPrefix(user string) string { return wire.InboxPrefix(user) }

// withInboxPrefix adds the InboxPrefix of the user opts log in as, unless
// they set a prefix or name no user.
func withInboxPrefix(opts []nats.Option) []nats.Option {
	o := nats.GetDefaultOptions()
	for _, opt := range opts {
		if opt(&o) != nil {
			return opts // nats.Connect reports it
		}
	}
	user := o.User
	if user == "" {
		user = o.Nkey
	}
	if user == "" || o.InboxPrefix != "" {
		return opts
	}
	return append(slices.Clip(opts), nats.CustomInboxPrefix(InboxPrefix(user)))
}

// HTTP goes through pi-node's HTTP API at baseURL (e.g.
// http://127.0.0.1:8080), for workers that have a URL and a token
// (WithToken) but no NATS access.
func HTTP(baseURL string) Transport { return Transport{kind: kindHTTP, url: baseURL} }

// NodeNATS goes through pi-node's API served as the NATS micro service
// pi.v1.<op> on nc: the same operations as HTTP, for workers allowed to
// publish to pi.v1.> but not to read the stream. Close leaves nc open.
func NodeNATS(nc *nats.Conn) Transport { return Transport{kind: kindNodeNATS, nc: nc} }

// Option configures a Client. Options that do not apply to the transport
// are ignored.
type Option func(*options)

type options struct {
	token     string
	tlsConfig *tls.Config
	timeout   time.Duration
	provision bool
	replicas  int
	jsCfg     jetstream.Config
	writer    writer.Options
}

// WithToken sets the bearer token of the HTTP transport (pi-node's
// --http-token).
func WithToken(token string) Option { return func(o *options) { o.token = token } }

// WithTLSConfig sets the TLS configuration of the HTTP transport (https)
// and of the connection JetStreamURL opens (a pi-node with
// --nats-tls-cert; e.g. a tls.Config whose RootCAs hold the deployment's
// ca.pem). A connection handed to JetStream or NodeNATS brings its own.
func WithTLSConfig(c *tls.Config) Option { return func(o *options) { o.tlsConfig = c } }

// WithTimeout bounds one request of the HTTP and NodeNATS transports
// (default 30 s). Appends are bounded by the RetryPolicy as well.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithProvision makes New create the stream and the cursor bucket with this
// many replicas when they are missing (JetStream transport; for tests and
// development — in production pi-node provisions them). Without it, New
// fails when they do not exist.
func WithProvision(replicas int) Option {
	return func(o *options) { o.provision, o.replicas = true, replicas }
}

// WithNames names the stream, its subject prefix and the cursor bucket
// (JetStream transport), when pi-node runs with other names than
// PI_SESSIONS, pi.sess and PI_CURSORS.
func WithNames(stream, subjectPrefix, bucket string) Option {
	return func(o *options) {
		o.jsCfg.Stream, o.jsCfg.SubjectPrefix, o.jsCfg.Bucket = stream, subjectPrefix, bucket
	}
}

// WithRetry bounds the optimistic append loop: attempts, backoffs, the
// timeout of one attempt and how long to keep trying while the log is
// unavailable. The zero RetryPolicy is the default.
func WithRetry(p RetryPolicy) Option { return func(o *options) { o.writer.Retry = p } }

// WithClock sets the clock of entry and header timestamps (default
// time.Now); time is an input, so tests can fix it.
func WithClock(now func() time.Time) Option { return func(o *options) { o.writer.Now = now } }

// WithIDSource sets the random source of entry ids (default crypto/rand).
func WithIDSource(r io.Reader) Option { return func(o *options) { o.writer.Rand = r } }

// WithPi11 writes every session of the client as pi 1.1.0's
// SessionManager does: a new session (or fork) is stored at its first user
// or assistant message (pi 1.1 keeps the prompt of a turn that never
// completes) instead of at its first assistant message, this store's
// default and pi 0.73.1's rule; a branch summary's fromId is the leaf left
// behind; a session name's CR/LF runs become one space; a fork re-chains
// its path over the label entries it drops instead of leaving their
// children as roots; the header's cwd is resolved ("/a//b/" is "/a/b").
// docs/PI.md says which pi version does which.
func WithPi11() Option { return func(o *options) { o.writer.Pi11 = true } }

// Client is a connection to the session log. It is safe for concurrent
// use; Sessions made from it share it. Close it when done.
type Client struct {
	log     session.Log
	cursors session.Cursors
	observe func(sid string, seq uint64) // API transports: raise minSeq of reads
	api     apiclient.Client             // API transports: pi-node's operations (Search)
	writer  writer.Options
	closers []func()
}

// New connects t. For the JetStream transport it binds to the stream and
// the cursor bucket (creating them only WithProvision); the API transports
// connect lazily, on the first request.
func New(ctx context.Context, t Transport, opts ...Option) (*Client, error) {
	o := options{jsCfg: jetstream.NewConfig()}
	for _, opt := range opts {
		opt(&o)
	}
	if o.writer.Now == nil {
		o.writer.Now = time.Now // cursors are stamped with the entries' clock
	}
	c := &Client{writer: o.writer}
	switch t.kind {
	case kindJetStream:
		if err := c.connectJetStream(ctx, t, o); err != nil {
			c.Close()
			return nil, err
		}
	case kindHTTP:
		h, err := apiclient.NewHTTP(apiclient.HTTPOptions{URL: t.url, Token: o.token, TLSConfig: o.tlsConfig, Timeout: o.timeout})
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		c.useAPI(h)
	case kindNodeNATS:
		if t.nc == nil {
			return nil, fmt.Errorf("%w: NodeNATS needs a connection", ErrInvalid)
		}
		c.useAPI(apiclient.NewNATS(t.nc, apiclient.NATSOptions{Timeout: o.timeout}))
	default:
		return nil, fmt.Errorf("%w: no transport: use JetStream, JetStreamURL, HTTP or NodeNATS", ErrInvalid)
	}
	return c, nil
}

func (c *Client) connectJetStream(ctx context.Context, t Transport, o options) error {
	nc := t.nc
	if nc == nil && t.url == "" {
		return fmt.Errorf("%w: JetStream needs a connection, JetStreamURL a URL", ErrInvalid)
	}
	if nc == nil {
		var err error
		opts := withInboxPrefix(t.natsOpts)
		if o.tlsConfig != nil {
			opts = append([]nats.Option{nats.Secure(o.tlsConfig)}, opts...)
		}
		if nc, err = nats.Connect(t.url, opts...); err != nil {
			return fmt.Errorf("connect to %s: %w (%w)", t.url, err, ErrUnavailable)
		}
		c.closers = append(c.closers, nc.Close)
	}
	js, err := natsjs.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	if o.provision {
		o.jsCfg.Replicas = max(o.replicas, 1)
		if err := jetstream.Provision(ctx, js, o.jsCfg); err != nil {
			return fmt.Errorf("provision: %w", err)
		}
	}
	cur, err := jetstream.NewCursors(ctx, js, o.jsCfg)
	if err != nil {
		return fmt.Errorf("cursor bucket %s (is the log provisioned? pi-node does it; WithProvision for development): %w", o.jsCfg.Bucket, err)
	}
	// A sharded store spreads sessions over streams: the shard map on the
	// first stream says how (docs/PROTOCOL.md). It is read again every few
	// seconds: pi-ctl shards migrate adds shards to a running store, for
	// sessions made from a moment on that every writer learns of first.
	m, err := jetstream.ReadMap(ctx, js, o.jsCfg)
	if err != nil {
		return fmt.Errorf("stream %s (is the log provisioned? pi-node does it; WithProvision for development): %w", o.jsCfg.Stream, err)
	}
	_, all := jetstream.NewShards(js, o.jsCfg, m)
	c.log, c.cursors = all, cur
	watch := jetstream.WatchShards(js, o.jsCfg, all, nil) // a client suspended past a migration's start reads the map before it writes
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		watch.Run(wctx)
	}()
	c.closers = append(c.closers, func() { stop(); <-done })
	return nil
}

func (c *Client) useAPI(ac apiclient.Client) {
	l := apiclient.NewLog(ac)
	c.log, c.cursors, c.observe, c.api = l, apiclient.NewCursors(ac), l.Observe, ac
	c.closers = append(c.closers, ac.Close)
}

// Close releases what New opened. Sessions of the Client are unusable
// afterwards; what they had stored stays stored, and what was pending (a
// session before its first assistant message) is gone, as in pi.
func (c *Client) Close() error {
	for i := len(c.closers) - 1; i >= 0; i-- {
		c.closers[i]()
	}
	c.closers = nil
	return nil
}

// seen raises the minimum sequence of the API transports' reads of sid.
func (c *Client) seen(sid string, seq uint64) {
	if c.observe != nil && seq > 0 {
		c.observe(sid, seq)
	}
}
