package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/micro"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/buildinfo"
	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/jetstream/embedded"
	"github.com/pifleet/sessionlog/internal/natsauth"
	"github.com/pifleet/sessionlog/internal/region"
	"github.com/pifleet/sessionlog/internal/search"
	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/store"
)

// Node is one pi-node, started by Open and stopped by Close (doc.go).
type Node struct {
	Config Config
	Logger *slog.Logger

	// Where the node listens, once Open returned (ports resolved).
	HTTPAddr    string
	MetricsAddr string // "" without --metrics-listen
	PprofAddr   string // "" without --pprof-listen
	MonitorAddr string // "" without --monitor-listen
	NATSURL     string

	fatal       chan string // the embedded server's first fatal error (Fatal)
	server      *embedded.Server
	conn        *jetstream.Conn
	writeConn   *jetstream.Conn // region mode: the writes' own connection (backend)
	jsCfg       jetstream.Config
	region      *region.Node
	keys        keys // encryption at rest (encryption.go)
	name        string
	stores      *store.Set                  // one per shard stream
	holder      *shard.Holder[*store.Store] // --hold: this node's share of the shards, or nil
	sharded     *shard.Sharded              // the Service's log, outside region mode
	archives    *shard.Archive              // the archive per shard stream, outside region mode
	archiveCfg  jetstream.ArchiveConfig
	archiver    *archiverJob
	svc         *service.Service
	api         *api.Server
	http        *http.Server
	metricsHTTP *http.Server // --metrics-listen's, or nil
	pprofHTTP   *http.Server // --pprof-listen's, or nil
	pprofErr    chan error
	metricsErr  chan error
	micro       micro.Service
	certs       *certReloader          // --http-tls-cert (reload.go)
	natsCerts   *certReloader          // --nats-tls-cert (security.go)
	peerCerts   *certReloader          // --cluster-tls-cert
	natsAudit   *prometheus.CounterVec // pi_nats_auth_total, with an embedded server
	serveErr    chan error
	stopBG      context.CancelFunc // ends the background work below
	bg          sync.WaitGroup     // releaseAfterRebuild
	leaderless  atomic.Int64       // unix nanos since the stream has had no leader (0: it has one)
	// Readiness of this node's own replicas (replicaReady): caughtUp once
	// they have all been current since start; behindSince when one fell
	// behind after that (0: none).
	caughtUp    atomic.Bool
	behindSince atomic.Int64
	draining    atomic.Bool // LameDuck has begun: not ready, the server goes in lame-duck mode
}

// Open starts a node as c says and returns once it serves: JetStream ready
// (embedded or external), stream and bucket provisioned, the Stores
// following the log, the HTTP API and the NATS micro service listening.
// ctx bounds the start and the node's background work: a node whose ctx
// has ended still serves, but no longer looks after its shards until
// Close. When the start fails, what had started is closed again.
func Open(ctx context.Context, c Config) (*Node, error) {
	m := newNode(c)
	if err := m.start(ctx); err != nil {
		_ = m.Close(context.Background()) // the start's error is the one to report
		return nil, err
	}
	return m, nil
}

// newNode is a node of configuration c, not started.
func newNode(c Config) *Node {
	return &Node{Config: c, Logger: slog.New(slog.NewTextHandler(c.logOutput(), nil)), fatal: make(chan string, 1)}
}

// start is Open's work, on a node Close can clean up after if it fails.
func (m *Node) start(ctx context.Context) error {
	c := &m.Config
	logger, err := NewLogger(c.logOutput(), c.LogLevel, c.LogFormat)
	if err != nil {
		return err
	}
	m.Logger = logger
	if err := m.applyMemoryLimit(); err != nil {
		return err
	}
	name := c.NodeName
	if name == "" {
		name = hostname()
	}

	auth, err := c.loadAuth()
	if err != nil {
		return err
	}
	if m.keys, err = c.loadKeys(); err != nil {
		return err
	}
	switch {
	case len(splitList(c.NATSURL)) == 0 && c.Server == nil:
		if err := c.checkClusterStore(); err != nil {
			return err
		}
	case m.keys.current != nil:
		logger.Info("encryption at rest: this node's snapshots and spill blocks are encrypted and its search index is in memory; JetStream's files are the servers' own to encrypt (their jetstream key)")
	}
	insecure := c.exposures(auth)
	for _, what := range insecure { // only with --insecure: check refused them otherwise
		logger.Warn("--insecure: "+what, "insecure", true)
	}
	urls := splitList(c.NATSURL)
	cc := jetstream.NewConnConfig(urls...)
	cc.Name = "pi-node " + name
	if c.Server != nil {
		m.server = c.Server
	} else if len(urls) == 0 {
		if err := m.startEmbedded(ctx, name, auth); err != nil {
			return err
		}
	}
	if m.server != nil {
		// In process: pi-node's own connection crosses no network and
		// needs no credential of the users file, nor the client TLS.
		cc.URLs = []string{m.server.InProcessURL()}
		cc.Options = m.server.InProcess()
	} else {
		cc.User, cc.Password, cc.Token, cc.CredsFile = c.NATSUser, c.NATSPassword, c.NATSToken, c.NATSCreds
		cc.CertFile, cc.KeyFile, cc.CAFile = c.TLSCert, c.TLSKey, c.TLSCA
	}
	if m.conn, err = jetstream.Connect(ctx, cc); err != nil {
		return fmt.Errorf("connect to NATS %v: %w", cc.URLs, err)
	}
	if c.Region != "" {
		// In a mirror region the Store reads the local mirror while
		// writes go to the home region's stream. On one connection a
		// read the server answers inline (a direct get waiting on the
		// mirror's disk) holds up every publish behind it: in CI a
		// region's writes timed out for a minute so. Writes (and
		// cursors) get a connection, and a server read loop, of their
		// own.
		wc := cc
		wc.Name += " (writes)"
		if m.writeConn, err = jetstream.Connect(ctx, wc); err != nil {
			return fmt.Errorf("connect to NATS %v: %w", cc.URLs, err)
		}
	}
	m.NATSURL = m.conn.NC.ConnectedUrlRedacted()
	if m.server != nil {
		m.NATSURL = m.server.ClientURL()
		m.MonitorAddr = m.server.MonitorAddr()
	}

	log, feeds, cursors, err := m.backend(ctx, name, logger)
	if err != nil {
		return err
	}
	m.name = name
	// Until Open's ctx ends or Close, whichever comes first: its 12 s timer
	// must not hold up a shutdown, nor outlive the Store and connection.
	bgCtx, stopBG := context.WithCancel(ctx)
	m.stopBG = stopBG
	sm := m.shardMap()
	var stores []*store.Store
	if hold := c.holdOf(sm.Streams()); hold > 0 && m.sharded != nil {
		members, err := jetstream.OpenMembers(ctx, m.conn.JS, m.jsCfg, name)
		if err != nil {
			return err
		}
		m.bg.Go(func() { members.Run(bgCtx) })
		m.holder = &shard.Holder[*store.Store]{Node: name, Hold: hold, Members: members, Logs: m.sharded,
			NewStore: func(k int, feed *shard.Log, n int) *store.Store { return m.newStore(k, feed, log, logger, n) },
			Unheld:   func(feed *shard.Log) *store.Store { return store.Unheld(feed) },
			Budget:   c.MemoryBudget, Beat: jetstream.MemberBeat, Logger: logger}
		stores = m.holder.Initial(ctx)
		logger.Info("holding a share of the shards", "hold", hold, "shards", len(feeds), "held", heldCount(stores))
	} else {
		for k, feed := range feeds {
			stores = append(stores, m.newStore(k, feed, log, logger, len(feeds)))
		}
	}
	if m.stores, err = store.NewSet(sm, stores); err != nil {
		return err
	}
	if m.holder != nil {
		m.holder.Stores = m.stores
	}
	if m.region != nil {
		// A region failover may hand a Store a stream of another
		// history; its Feed then empties it (see region.Feed).
		for k, st := range stores {
			m.region.Feeds[k].SetReset(st.Reset)
		}
	}
	for _, st := range stores {
		if err := st.Open(ctx); err != nil {
			return err
		}
	}
	m.bg.Go(func() { m.releaseAfterRebuild(bgCtx) })
	if c.Replicas > 1 {
		m.bg.Go(func() { m.balanceLeaders(bgCtx) })
	}
	// Reads fall back to what the Store follows: in a mirror region its
	// own copy, not the home's stream writes go to; with shards, the
	// session's shard.
	var readLog session.Log = log
	if m.region != nil {
		readLog = m.region.ReadLog()
	}
	m.svc = &service.Service{Log: log, ReadLog: readLog, Store: m.stores, Cursors: cursors, CursorWait: c.MinSeqTimeout}
	archive, err := m.newArchiver(ctx, log, name, logger)
	if err != nil {
		return err
	}
	if m.archives != nil {
		// Forks copy nothing; the registry beside the archive lets an
		// erasure or archiving of their parent give them their path.
		m.svc.Forks = m.archives
	}
	if m.sharded != nil {
		// pi-ctl shards migrate adds shards to a running store: the Stores
		// and the archive above grow with it.
		watch := jetstream.WatchShards(m.conn.JS, m.jsCfg, m.sharded, func(next shard.Map, added []*shard.Log) error {
			return m.growShards(bgCtx, next, added, log, logger)
		})
		m.bg.Go(func() { watch.Run(bgCtx) })
	}
	tokens, err := m.loadTokens()
	if err != nil {
		return err
	}
	m.api, err = api.New(api.Config{
		Service: m.svc, NodeName: name, Token: c.HTTPToken, Tokens: tokens, MinSeqTimeout: c.MinSeqTimeout,
		MaxConnections: c.MaxConnections, MaxWatches: c.MaxWatches, MaxRequests: c.MaxRequests,
		Status: m.status, Ready: m.ready, Archive: archive, Logger: logger,
		MetricsElsewhere: c.MetricsListen != "", Insecure: insecure, EncryptedAtRest: m.keys.current != nil, CORSOrigins: c.corsOrigins(), Console: c.consoleHandler(),
		Holding: m.holding(), Forward: m.conn.NC,
	})
	if err != nil {
		return err
	}
	if m.holder != nil {
		m.holder.Serving = m.api
	}
	if m.natsAudit != nil {
		m.api.Registry().MustRegister(m.natsAudit)
	}
	m.api.Registry().MustRegister(m.streamCollector(bgCtx)) // stream_metrics.go
	m.startArchiver()

	ln, err := net.Listen("tcp", c.HTTPListen)
	if err != nil {
		return fmt.Errorf("http listen: %w", err)
	}
	m.HTTPAddr = ln.Addr().String()
	ln = m.api.LimitListener(ln, false)
	m.http = m.api.HTTPServer(m.HTTPAddr)
	if c.HTTPTLSCert != "" {
		if m.certs, err = newCertReloader("--http-tls-cert", c.HTTPTLSCert, c.HTTPTLSKey); err != nil {
			ln.Close()
			m.http = nil
			return err
		}
		m.http.TLSConfig = embedded.ServerTLSConfig(m.certs.current)
	}
	m.serveErr = make(chan error, 1)
	go func() {
		if m.certs != nil {
			m.serveErr <- m.http.ServeTLS(ln, "", "")
			return
		}
		m.serveErr <- m.http.Serve(ln)
	}()
	if c.MetricsListen != "" {
		mln, err := net.Listen("tcp", c.MetricsListen)
		if err != nil {
			return fmt.Errorf("metrics listen: %w", err)
		}
		m.MetricsAddr = mln.Addr().String()
		mln = m.api.LimitListener(mln, true)
		m.metricsHTTP = m.api.ProbeServer(m.MetricsAddr)
		m.metricsErr = make(chan error, 1)
		go func() { m.metricsErr <- m.metricsHTTP.Serve(mln) }()
	}
	if c.PprofListen != "" {
		pln, err := net.Listen("tcp", c.PprofListen)
		if err != nil {
			return fmt.Errorf("pprof listen: %w", err)
		}
		m.PprofAddr = pln.Addr().String()
		m.pprofHTTP = &http.Server{Handler: pprofMux(), ReadHeaderTimeout: 10 * time.Second}
		m.pprofErr = make(chan error, 1)
		go func() { m.pprofErr <- m.pprofHTTP.Serve(pln) }()
	}
	if m.micro, err = m.api.StartNATS(m.conn.NC); err != nil {
		return fmt.Errorf("start NATS micro service: %w", err)
	}
	if m.holder != nil {
		m.bg.Go(func() { m.holder.Run(bgCtx) })
	}
	logger.Info("pi-node ready", "version", buildinfo.Get().Version, "node", name, "http", m.HTTPAddr, "https", m.certs != nil, "metrics", m.metricsAt(), "nats", m.NATSURL, "monitor", m.MonitorAddr, "pprof", m.PprofAddr, "mode", m.mode())
	return nil
}

// startEmbedded starts the embedded JetStream server (alone or as a member
// of an embedded cluster) and waits until JetStream is really ready.
func (m *Node) startEmbedded(ctx context.Context, name string, auth *natsauth.File) error {
	c := &m.Config
	host, port, err := splitHostPort(c.ClientListen)
	if err != nil {
		return fmt.Errorf("--client-listen: %w", err)
	}
	s := embedded.NewServer(c.DataDir)
	s.ServerName, s.Host, s.Port = name, host, port
	s.SyncAlways = c.Sync == "always"
	s.SyncInterval = c.SyncInterval
	s.MaxStore = c.MaxFileStore
	if c.MaxPayload > 0 {
		s.MaxPayload = c.MaxPayload
	}
	if c.MonitorListen != "" {
		if s.MonitorHost, s.MonitorPort, err = splitHostPort(c.MonitorListen); err != nil {
			return fmt.Errorf("--monitor-listen: %w", err)
		}
	}
	s.User, s.Password, s.Token = c.NATSUser, c.NATSPassword, c.NATSToken
	m.keys.encryptServer(s, c.EncryptionCipher)
	if err := m.secureEmbedded(s, auth); err != nil {
		return err
	}
	s.ClusterName, s.ClusterListen, s.Routes = c.ClusterName, c.ClusterListen, c.Routes
	if c.Region != "" {
		s.GatewayName, s.GatewayListen, s.Gateways = c.Region, c.GatewayListen, c.Gateways
	}
	m.natsAudit = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pi_nats_auth_total",
		Help: "Connections and messages the embedded NATS server refused, by outcome: unauthorized, forbidden (outside the user's role), tls_failed.",
	}, []string{"outcome"})
	for _, o := range []string{natsUnauthorized, natsForbidden, natsTLSFailed} {
		m.natsAudit.WithLabelValues(o)
	}
	started := &atomic.Bool{}
	nl := m.Logger.With("component", "nats-server")
	s.Logger = natsLogger{l: nl, audit: m.natsAudit, fatal: m.fatal, started: started, throttle: api.NewAuditThrottle(nl, 0, 0, nil)}
	if c.Region != "" {
		m.Logger.Info("starting embedded region member; waiting for a JetStream meta leader (needs a majority of all regions' servers)",
			"region", c.Region, "gateways", len(c.Gateways))
	} else if c.ClusterName != "" {
		m.Logger.Info("starting embedded cluster member; waiting for a JetStream meta leader (needs a majority of the routes up)",
			"cluster", c.ClusterName, "routes", len(c.Routes))
	}
	if err := s.Start(ctx); err != nil {
		s.Shutdown()
		return fmt.Errorf("embedded NATS server: %w", err)
	}
	started.Store(true)
	m.server = s
	return nil
}

// metricsAt is where /metrics is served, for the ready line.
// pprofMux serves net/http/pprof's handlers on a mux of their own (the
// package registers them on http.DefaultServeMux too, which nothing here
// serves). Not /cmdline: --http-token and --nats-token may be on it.
func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/debug/pprof/cmdline" {
			http.NotFound(w, r)
			return
		}
		pprof.Index(w, r)
	})
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

func (m *Node) metricsAt() string {
	if m.MetricsAddr != "" {
		return m.MetricsAddr
	}
	return m.HTTPAddr
}

func (m *Node) mode() string {
	switch {
	case m.server == nil:
		return "external"
	case m.Config.Region != "":
		return "embedded-region"
	case m.Config.ClusterName != "":
		return "embedded-cluster"
	}
	return "embedded"
}

// Fatal delivers the embedded NATS server's first fatal error. The server
// only logs one (it calls its logger's Fatalf and goes on, its state
// undefined: a listener gone, JetStream not started): the node must stop
// with a failure rather than serve on top of it.
func (m *Node) Fatal() <-chan string { return m.fatal }

// LameDuck is the first part of a graceful stop (SIGTERM): /readyz answers
// 503, HTTP answers carry Connection: close, and the NATS micro service
// leaves its queue group, so NATS API requests go to the other nodes at
// once. HTTP requests are still served for delay (or until ctx ends: a
// second signal), the time a load balancer or Kubernetes' endpoints take
// to stop sending any; Close then does the rest.
func (m *Node) LameDuck(ctx context.Context, delay time.Duration) error {
	// Connections close before /readyz says so: a client (or a probe)
	// that sees the node not ready must find its connections closing.
	if m.http != nil {
		m.http.SetKeepAlivesEnabled(false)
	}
	m.draining.Store(true)
	m.Logger.Info("lame duck: not ready, withdrawing the NATS service, HTTP closing connections; stopping after the delay", "delay", delay)
	var err error
	if m.micro != nil {
		err = m.micro.Stop() // waits for the handlers in flight
		m.micro = nil
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return err
}

// Close stops accepting, drains requests in flight and writes the Stores'
// last snapshots (together within ShutdownGrace), closes the connection and
// shuts the embedded server down (after LameDuck, in lame-duck mode: its
// leaderships handed over, its clients told); it returns once every
// goroutine Open started has ended. ctx may cut the drain and the
// snapshots shorter than ShutdownGrace.
func (m *Node) Close(ctx context.Context) error {
	if m.stopBG != nil {
		m.stopBG()
		m.bg.Wait()
	}
	ctx, cancel := context.WithTimeout(ctx, m.Config.ShutdownGrace)
	defer cancel()
	var errs []error
	if m.micro != nil {
		errs = append(errs, m.micro.Stop())
	}
	if m.http != nil {
		errs = append(errs, m.http.Shutdown(ctx))
		if err := <-m.serveErr; !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	if m.api != nil {
		m.api.Close()
	}
	m.stopArchiver()
	// Side by side: each writes its last snapshot, and one shard's slow
	// stream must not hold up the others' (nor add to the shutdown's length).
	stores := m.stores.All()
	closed := make([]error, len(stores))
	var wg sync.WaitGroup
	for k, st := range stores {
		wg.Go(func() { closed[k] = st.CloseContext(ctx) })
	}
	wg.Wait()
	for k, err := range closed {
		if errors.Is(err, context.DeadlineExceeded) {
			// Nothing is lost: the log has it all, and the next start reads
			// what the previous snapshot lacks.
			m.Logger.Warn("the last snapshot did not fit in --shutdown-grace; the previous one stays", "shard", k, "err", err)
			continue
		}
		errs = append(errs, err)
	}
	if m.pprofHTTP != nil {
		errs = append(errs, m.pprofHTTP.Shutdown(ctx))
		if err := <-m.pprofErr; !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	// Metrics are scraped to the end, the shutdown's included.
	if m.metricsHTTP != nil {
		errs = append(errs, m.metricsHTTP.Shutdown(ctx))
		if err := <-m.metricsErr; !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	if m.region != nil {
		m.region.Close()
	}
	if m.writeConn != nil {
		m.writeConn.Close()
	}
	if m.conn != nil {
		m.conn.Close()
	}
	if m.server != nil && m.Config.Server == nil {
		if m.draining.Load() {
			errs = append(errs, m.server.LameDuckShutdown())
		} else {
			m.server.Shutdown()
		}
	}
	return errors.Join(errs...)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func splitHostPort(hp string) (string, int, error) {
	host, p, err := net.SplitHostPort(hp)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return "", 0, fmt.Errorf("port %q: %w", p, err)
	}
	if port == 0 {
		port = -1 // the server's "pick a free port"
	}
	return host, port, nil
}

// releaseAfterRebuild returns the rebuild's garbage to the OS once the
// Store has caught up with the log as it stood at the start and moved each
// session's lines together (store.Store.Rebuilt, which waits for both). A
// rebuild allocates about as much again as it keeps (parsing, grown maps),
// and with the default GOGC the process would hold that as resident memory
// until the next collections. One forced collection, once, is cheap next to that.
func (m *Node) releaseAfterRebuild(ctx context.Context) {
	// The lines sit among the freed buffers of the messages they came in:
	// packed together (the Store does it once caught up), those spans
	// empty and can be returned.
	for _, st := range m.stores.All() {
		select {
		case <-ctx.Done():
			return
		case <-st.Rebuilt():
		}
	}
	debug.FreeOSMemory()
	// The embedded server keeps the blocks the rebuild read cached for
	// 10 s; an idle process collects them only at Go's forced GC, two
	// minutes on. Release them once they have expired.
	select {
	case <-ctx.Done():
	case <-time.After(blockCacheExpiry):
		debug.FreeOSMemory()
	}
}

// balanceLeaders spreads the shards' stream leaders over the servers
// (jetstream.BalanceLeaders): JetStream places each stream's leader on its
// own, and several on one server would put their writes on one disk. It
// looks every 10 s for the first 3 minutes, as the cluster's members arrive
// and elections settle, and for as long as a look moves a leader or cannot
// finish; then every 5 minutes (a failover piles leaders on the survivors;
// the returning server gets its share back). Every node looks, and whoever
// looks first moves. In a region, the streams of the region's own copy.
func (m *Node) balanceLeaders(ctx context.Context) {
	start := time.Now()
	for {
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		cfg, n := m.jsCfg, len(m.streams())
		if m.region != nil {
			cfg, n = m.region.OwnConfig(), len(m.region.Feeds)
		}
		moved, err := jetstream.BalanceLeaders(actx, m.conn.JS, cfg, n)
		cancel()
		switch {
		case err != nil:
			m.Logger.Debug("spreading the shards' stream leaders", "err", err)
		case moved > 0:
			m.Logger.Info("spread the shards' stream leaders over the servers", "moved", moved)
		}
		every := 10 * time.Second
		if err == nil && moved == 0 && time.Since(start) > 3*time.Minute {
			every = 5 * time.Minute
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// newStore makes the Store of shard k (of n at the start), following feed.
func (m *Node) newStore(k int, feed feedLog, log session.Log, logger *slog.Logger, n int) *store.Store {
	c := &m.Config
	so := store.Options{MemoryBudget: c.MemoryBudget / int64(n), Log: feed, Logger: logger, SnapshotEvery: c.SnapshotInterval,
		Writer: log, AbandonedAfter: c.AbandonedAfter}
	if m.region == nil {
		// Each shard's Store writes its abandonment markers with the
		// CAS of its own stream, and snapshots on its own; a fork's
		// parent may be in any shard.
		so.Writer, so.Parents = feed, log
	}
	if k > 0 || n > 1 {
		so.Logger = logger.With("shard", k)
	}
	if c.SnapshotInterval > 0 {
		so.SnapshotDir = filepath.Join(c.DataDir, storeDir(k))
	}
	so.Seal = m.keys.store
	// The full-text index of the shard, persisted beside the Store's
	// snapshot when there is one (a restart indexes only the tail). With
	// encryption at rest it is kept in memory: bleve's files cannot be
	// encrypted, and they hold the text.
	dir := ""
	switch {
	case m.keys.store != nil:
		removePlainIndex(filepath.Join(c.DataDir, searchDir(k)), so.Logger)
	case so.SnapshotDir != "":
		dir = filepath.Join(c.DataDir, searchDir(k))
	}
	idx, err := search.Open(dir, so.Logger)
	switch {
	case err != nil:
		// The Store still serves every other read; searches of this
		// shard answer 503 and say why.
		so.Logger.Error("the search index cannot be opened: this shard is not searchable here", "dir", dir, "err", err)
	case m.region != nil:
		// The region's stream may switch to one of another history
		// (a failover): the index takes that decision for itself, for
		// what it has indexed, and starts over when it must.
		so.Search, so.SearchFeed = idx, m.region.SearchFeed(k, idx.FeedReset)
	default:
		so.Search = idx
	}
	return store.New(feed, so)
}

// searchDir is the full-text index directory of shard k, under --data-dir.
func searchDir(k int) string {
	if k == 0 {
		return "search"
	}
	return "search-" + strconv.Itoa(k)
}

// shardMap places sessions on the Stores: the store's map, or in a
// region the copies' (the record's count).
func (m *Node) shardMap() shard.Map {
	switch {
	case m.region != nil:
		return m.region.ShardMap()
	case m.sharded != nil:
		return m.sharded.Map()
	}
	return shard.OneMap(1)
}

// streams is every shard's stream, by shard (none in region mode).
func (m *Node) streams() []*jetstream.Log {
	if m.sharded == nil {
		return nil
	}
	var out []*jetstream.Log
	for _, l := range m.sharded.Logs() {
		out = append(out, l.(*shard.Log).Log.(*jetstream.Log))
	}
	return out
}

// growShards prepares this node for next, a shard map that extends the
// store's (pi-ctl shards migrate), before the router routes to the streams
// it adds (jetstream.WatchShards): a Store follows each of them, and the
// archive purges there. Stores first: a write the router sends to a new
// shard is waited for (read your writes) in that shard's Store. The new
// epoch begins in the future (jetstream.MigrateLead), so nothing is routed
// to the new streams before every node has them. Called by one MapWatch,
// one map at a time.
func (m *Node) growShards(ctx context.Context, next shard.Map, added []*shard.Log, log session.Log, logger *slog.Logger) error {
	// Checked before anything changes: the Stores, the archive and the
	// router grow in step, so none of the Grows can refuse half-way.
	if cur := m.sharded.Map(); !m.stores.Map().Equal(cur) {
		return fmt.Errorf("the Stores (%s) and the log (%s) route by different shard maps", m.stores.Map(), cur)
	}
	var stores []*store.Store
	var archives []session.Archive
	for _, sh := range added {
		if m.holder != nil {
			// Its holders take it on their next look (shard.Holder's rebalance);
			// the new epoch begins far enough ahead for that.
			stores = append(stores, store.Unheld(sh))
			archives = append(archives, jetstream.NewArchive(sh.Log.(*jetstream.Log), m.shardArchiveConfig(sh.Shard)))
			continue
		}
		st := m.newStore(sh.Shard, sh, log, logger, next.Streams())
		if err := st.Open(ctx); err != nil {
			for _, o := range stores {
				_ = o.Close()
			}
			return err
		}
		stores = append(stores, st)
		archives = append(archives, jetstream.NewArchive(sh.Log.(*jetstream.Log), m.archiveCfg))
	}
	if err := m.stores.Grow(next, stores); err != nil {
		for _, st := range stores {
			_ = st.Close()
		}
		return err
	}
	return m.archives.Grow(next, archives) // made before the watch started (start)
}

// storeDir is the snapshot directory of shard k's Store, under --data-dir:
// shard 0 keeps the one of a store without shards.
func storeDir(k int) string {
	if k == 0 {
		return "store"
	}
	return "store-" + strconv.Itoa(k)
}

// blockCacheExpiry is a little more than the time nats-server's filestore
// keeps a block it read in memory (10 s).
const blockCacheExpiry = 12 * time.Second

// holding is the API's Holding: the holder, or none (every node holds
// every shard).
func (m *Node) holding() api.Holding {
	if m.holder == nil {
		return nil
	}
	return m.holder
}

// heldCount is how many of stores follow their shard.
func heldCount(stores []*store.Store) int {
	n := 0
	for _, st := range stores {
		if st.Held() {
			n++
		}
	}
	return n
}
