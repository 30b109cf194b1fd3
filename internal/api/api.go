package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/wire"
	"github.com/prometheus/client_golang/prometheus"
)

// Defaults for the zero fields of Config.
const (
	// DefaultMaxBody bounds JSON request bodies: one log record may be up to
	// 8 MiB, and a create or append body carries it plus some envelope.
	DefaultMaxBody = 9 << 20
	// DefaultMaxImportBody bounds a pi JSONL file sent to import.
	DefaultMaxImportBody = 16 << 20
	// DefaultMinSeqTimeout bounds the read-your-writes wait of minSeq.
	DefaultMinSeqTimeout = 5 * time.Second
	// DefaultHeartbeat is the interval of ": ping" comments on a watch stream,
	// short enough for proxies that close idle connections after 30 s or more.
	DefaultHeartbeat = 15 * time.Second
)

// ServiceName and ServiceVersion identify the NATS micro service.
const (
	ServiceName    = "pi-sessions"
	ServiceVersion = "1.0.0"
)

// Config configures a Server. Service is required; every other field has a
// default.
type Config struct {
	// Service is the engine served; its Store must be open.
	Service *service.Service
	// NodeName is reported by /v1/status and in the micro service metadata.
	NodeName string
	// Token, when set, is the bearer token every HTTP /v1 request must carry
	// (Authorization: Bearer <token>). /healthz, /readyz and /metrics stay
	// open for probes and scrapers. NATS requests are not checked: who may
	// publish to pi.v1.> is the NATS server's authorization (see docs/API.md).
	// It is an admin token named "http-token", next to Tokens.
	Token string
	// Tokens, when not nil, are the scoped bearer tokens of HTTP /v1 (a
	// tokens file: LoadTokens); even an empty set requires a token. Replace
	// them at run time with SetTokens.
	Tokens *Tokens
	// MaxBody bounds JSON request bodies (default DefaultMaxBody).
	MaxBody int64
	// MaxImportBody bounds import bodies (default DefaultMaxImportBody).
	MaxImportBody int64
	// MinSeqTimeout bounds a read's wait for minSeq (default 5 s); past it
	// the read fails with 504 timeout.
	MinSeqTimeout time.Duration
	// Heartbeat is the interval of watch keep-alive comments (default 15 s).
	Heartbeat time.Duration
	// MaxConnections caps the connections of each LimitListener (default
	// DefaultMaxConnections).
	MaxConnections int
	// MaxWatches caps the watch streams open at once (default
	// DefaultMaxWatches); past it a watch is 503 unavailable.
	MaxWatches int
	// MaxRequests caps the HTTP and NATS requests in flight at once, watches
	// and probes aside (default DefaultMaxRequests); past it a request is
	// 503 unavailable.
	MaxRequests int
	// Status returns the adapter-specific part of /v1/status (NATS mode,
	// stream replicas, leader, messages, bytes); it is shown under
	// "jetstream". Optional.
	Status func(ctx context.Context) (any, error)
	// Ready checks the backend for /readyz (JetStream reachable, stream and
	// bucket present). The Store's own catch-up is checked here. Optional.
	Ready func(ctx context.Context) error
	// Archive serves the archive operations (archive.go); nil answers
	// them with 404. Optional.
	Archive Archive
	// Logger receives internal errors (default: discard).
	Logger *slog.Logger
	// Now is the clock for readiness (default time.Now).
	Now func() time.Time
	// MetricsElsewhere takes /metrics off Handler (a 404 there), for a
	// listener of its own serving ProbeHandler (pi-node's --metrics-listen).
	MetricsElsewhere bool
	// CORSOrigins are the origins of pages on other sites that may call
	// /v1 from a browser ("*": any); empty: none (same-origin only).
	CORSOrigins []string
	// Holding, when set, is the share of the shards this node serves from
	// memory (pi-node's --hold): requests for the others' sessions are
	// forwarded over Forward to a node that serves them (forward.go).
	Holding Holding
	// Forward is the connection forwarded requests go out and come in on.
	Forward *nats.Conn
	// ForwardPrefix is their subjects' prefix (default wire.DefaultForwardPrefix).
	ForwardPrefix string
	// Insecure lists what the node exposes without protection because it
	// was started with --insecure; /v1/status shows it to everyone.
	Insecure []string
	// EncryptedAtRest is shown on /v1/status: the node encrypts its files.
	EncryptedAtRest bool
	// Console, when set, serves the web console's static files under
	// /console/ (pi-node's --console; internal/console). They need no
	// token: the page asks /v1 for everything, with the token it is given.
	Console http.Handler
}

// Server is the API over one Service. Create it with New; it is safe for
// concurrent use.
type Server struct {
	cfg     Config
	svc     *service.Service
	log     *slog.Logger
	metrics *metrics
	handler http.Handler

	// base ends with Close: it bounds NATS handlers and watch streams.
	base   context.Context
	cancel context.CancelFunc
	// watches ends on Close or on the HTTP server's Shutdown, which would
	// otherwise wait forever for event streams that never finish.
	watches    context.Context
	endWatches context.CancelFunc

	// tokens is the set in force (SetTokens swaps it).
	tokens atomic.Pointer[tokenSet]

	mu   sync.Mutex
	nats []*natsService

	fwd forwarder // the shards this node answers forwarded requests for

	watchLim, reqLim *limiter // limits.go

	audit *AuditThrottle // of the audit lines of refusals
}

// New checks cfg, fills its defaults and returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Service == nil || cfg.Service.Store == nil || cfg.Service.Log == nil || cfg.Service.Cursors == nil {
		return nil, errors.New("api: Config.Service with Log, Store and Cursors is required")
	}
	if err := CheckCORSOrigins(cfg.CORSOrigins); err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.MaxImportBody <= 0 {
		cfg.MaxImportBody = DefaultMaxImportBody
	}
	if cfg.MinSeqTimeout <= 0 {
		cfg.MinSeqTimeout = DefaultMinSeqTimeout
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.MaxWatches <= 0 {
		cfg.MaxWatches = DefaultMaxWatches
	}
	if cfg.MaxRequests <= 0 {
		cfg.MaxRequests = DefaultMaxRequests
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ForwardPrefix == "" {
		cfg.ForwardPrefix = wire.DefaultForwardPrefix
	}
	s := &Server{cfg: cfg, svc: cfg.Service, log: cfg.Logger}
	s.fwd.sem = make(chan struct{}, fwdConcurrency)
	s.base, s.cancel = context.WithCancel(context.Background())
	s.watches, s.endWatches = context.WithCancel(s.base)
	s.metrics = newMetrics(cfg.Service.Store)
	s.audit = NewAuditThrottle(cfg.Logger, 0, 0, cfg.Now)
	s.watchLim = newLimiter(s.metrics, limitWatches, "max-watches", "watch streams", cfg.MaxWatches)
	s.reqLim = newLimiter(s.metrics, limitRequests, "max-requests", "requests in flight", cfg.MaxRequests)
	s.tokens.Store(newTokenSet(cfg.Token, cfg.Tokens))
	s.handler = s.routes()
	if len(cfg.CORSOrigins) > 0 {
		s.handler = s.cors(s.handler)
	}
	return s, nil
}

// Handler returns the HTTP handler: /v1/..., /healthz, /readyz, /metrics
// (not with Config.MetricsElsewhere).
func (s *Server) Handler() http.Handler { return s.handler }

// Registry returns the Server's private Prometheus registry, so pi-node can
// add its own collectors (JetStream, embedded server) to the same /metrics.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.reg }

// HTTPServer returns an http.Server for Handler with timeouts that suit the
// API: bodies up to MaxImportBody must arrive within ReadTimeout, headers
// within ReadHeaderTimeout; watch streams lift the write deadline per event.
// Its Shutdown ends open watch streams, so it can complete.
func (s *Server) HTTPServer(addr string) *http.Server {
	hs := &http.Server{
		Addr:              addr,
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	hs.RegisterOnShutdown(s.endWatches)
	return hs
}

// Close ends watch streams and in-flight NATS requests and stops the micro
// services started by StartNATS, waiting for their handlers. HTTP handlers
// other than watches finish on their own (pi-node shuts the listener down).
func (s *Server) Close() error {
	s.cancel()
	s.stopForwarding()
	s.mu.Lock()
	svcs := s.nats
	s.nats = nil
	s.mu.Unlock()
	var errs []error
	for _, n := range svcs {
		errs = append(errs, n.Stop())
	}
	return errors.Join(errs...)
}
