package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/wire"
)

// ConnConfig says how to reach a NATS server: the embedded one or an external
// cluster. Start from NewConnConfig for the defaults.
type ConnConfig struct {
	// URLs of one or more servers of the cluster; the client learns the others.
	URLs []string
	// Name identifies the connection in the server's monitoring.
	Name string

	// Authentication: User and Password, Token, or a CredsFile (JWT + nkey).
	User      string
	Password  string
	Token     string
	CredsFile string

	// TLS: a client certificate (CertFile + KeyFile) and/or the CA that signed
	// the server's certificate. Any of them enables TLS.
	CertFile string
	KeyFile  string
	CAFile   string

	// Domain is the JetStream domain of a leafnode or supercluster setup ("": none).
	Domain string

	// DialTimeout bounds one connection attempt; APITimeout is the default
	// bound of JetStream requests made without a context deadline.
	DialTimeout time.Duration
	APITimeout  time.Duration
	// ReconnectWait is the pause between reconnection attempts; the client
	// retries forever. ReconnectBufSize is how many bytes of publishes are
	// buffered while reconnecting (more fail fast and surface as ErrUnavailable).
	ReconnectWait    time.Duration
	ReconnectBufSize int

	// Options are added last: pi-node's in-process connection to its
	// embedded server (embedded.Server.InProcess).
	Options []nats.Option
}

// NewConnConfig returns a ConnConfig for urls with the defaults.
func NewConnConfig(urls ...string) ConnConfig {
	return ConnConfig{
		URLs:             urls,
		Name:             "pi-node",
		DialTimeout:      5 * time.Second,
		APITimeout:       10 * time.Second,
		ReconnectWait:    time.Second,
		ReconnectBufSize: 32 << 20,
	}
}

// Conn is a connection to NATS with its JetStream context.
type Conn struct {
	NC *nats.Conn          // the connection, reconnecting by itself
	JS jetstream.JetStream // JetStream on NC, in the configured domain
}

func (c ConnConfig) options() []nats.Option {
	opts := []nats.Option{
		nats.Name(c.Name),
		nats.Timeout(c.DialTimeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(c.ReconnectWait),
		nats.ReconnectBufSize(c.ReconnectBufSize),
	}
	switch {
	case c.CredsFile != "":
		opts = append(opts, nats.UserCredentials(c.CredsFile))
	case c.Token != "":
		opts = append(opts, nats.Token(c.Token))
	case c.User != "":
		// The users file lets a user subscribe to its own inbox only.
		opts = append(opts, nats.UserInfo(c.User, c.Password), nats.CustomInboxPrefix(wire.InboxPrefix(c.User)))
	}
	if c.CertFile != "" || c.KeyFile != "" {
		opts = append(opts, nats.ClientCert(c.CertFile, c.KeyFile))
	}
	if c.CAFile != "" {
		opts = append(opts, nats.RootCAs(c.CAFile))
	}
	return append(opts, c.Options...)
}

// Connect connects to the servers in cfg, retrying with backoff until the
// first connection succeeds or ctx is done (a pi-node may start before the
// cluster it joins). Once connected, the client reconnects forever by itself.
// Authentication and TLS errors are not retried.
func Connect(ctx context.Context, cfg ConnConfig) (*Conn, error) {
	if len(cfg.URLs) == 0 {
		return nil, errors.New("connect: no server URL")
	}
	url := strings.Join(cfg.URLs, ",")
	wait := 100 * time.Millisecond
	for {
		nc, err := nats.Connect(url, cfg.options()...)
		if err == nil {
			js, err := newJetStream(nc, cfg)
			if err != nil {
				nc.Close()
				return nil, err
			}
			return &Conn{NC: nc, JS: js}, nil
		}
		if !errors.Is(err, nats.ErrNoServers) && !isTransport(err) {
			return nil, fmt.Errorf("connect to %s: %w", url, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to %s: %w (last: %w)", url, ctx.Err(), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

func newJetStream(nc *nats.Conn, cfg ConnConfig) (jetstream.JetStream, error) {
	var opts []jetstream.JetStreamOpt
	if cfg.APITimeout > 0 {
		opts = append(opts, withDefaultTimeout(cfg.APITimeout))
	}
	if cfg.Domain != "" {
		return jetstream.NewWithDomain(nc, cfg.Domain, opts...)
	}
	return jetstream.New(nc, opts...)
}

// withDefaultTimeout sets the timeout of JetStream calls whose context has no
// deadline.
func withDefaultTimeout(d time.Duration) jetstream.JetStreamOpt {
	return func(o *jetstream.JetStreamOptions) error {
		o.DefaultTimeout = d
		return nil
	}
}

// Close closes the connection.
func (c *Conn) Close() { c.NC.Close() }

// apiPrefix returns the subject prefix of js's JetStream API, for the
// requests this package makes itself (leader reads).
func apiPrefix(js jetstream.JetStream) string {
	o := js.Options()
	switch {
	case o.APIPrefix != "":
		return strings.TrimSuffix(o.APIPrefix, ".") + "."
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	}
	return jetstream.DefaultAPIPrefix
}
