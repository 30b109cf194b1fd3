package node

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/console"
	"github.com/pifleet/sessionlog/internal/jetstream/embedded"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/size"
)

// Config is everything pi-node can be told, by flag or by environment
// variable PI_NODE_<FLAG> (dashes as underscores, e.g. PI_NODE_HTTP_LISTEN).
// A flag given on the command line wins over the environment.
type Config struct {
	DataDir string

	// External NATS: when NATSURL is set nothing is embedded.
	NATSURL      string
	NATSCreds    string
	NATSUser     string
	NATSPassword string
	NATSToken    string
	TLSCert      string
	TLSKey       string
	TLSCA        string

	// Embedded server's security (security.go).
	NATSAuth       string // users file (internal/natsauth), read again on SIGHUP
	NATSTLSCert    string // client listener
	NATSTLSKey     string
	ClusterTLSCert string // routes and gateways, mutual
	ClusterTLSKey  string
	ClusterTLSCA   string
	// Insecure lets listeners beyond loopback run without auth or TLS.
	Insecure bool

	// Encryption at rest (encryption.go): a key file turns it on;
	// the previous key file is read during a rotation.
	EncryptionKeyFile         string
	PreviousEncryptionKeyFile string
	EncryptionCipher          string // chachapoly | aes: the embedded JetStream file store's

	// Embedded server.
	ClientListen  string
	NodeName      string
	ClusterName   string
	ClusterListen string
	Routes        []*url.URL
	Sync          string // always | interval
	SyncInterval  time.Duration

	// Stream and bucket.
	Replicas      int
	Shards        int // streams new sessions are spread over (shard.Map); 0: the store's, 1 for a new one
	Hold          int // nodes that hold each shard in memory (shard.Holder); 0: 2 with shards, every node without
	Stream        string
	SubjectPrefix string
	Bucket        string

	// Service.
	HTTPListen       string
	HTTPToken        string
	HTTPTokens       string // file of scoped tokens (reload.go)
	HTTPCORSOrigins  string // comma-separated
	HTTPTLSCert      string
	HTTPTLSKey       string
	MemoryBudget     int64
	MaxFileStore     int64  // the embedded server's JetStream file storage limit; 0: the server's default
	GoMemoryLimit    string // memlimit.go: a size, auto or 0
	SnapshotInterval time.Duration
	MinSeqTimeout    time.Duration
	ShutdownGrace    time.Duration
	LameDuck         time.Duration
	ReadyMaxLag      uint64
	// Caps on what clients hold open at once (api.Config; docs/SECURITY.md).
	MaxConnections int
	MaxWatches     int
	MaxRequests    int
	// AbandonedAfter is how long a session written in several batches may
	// stay incomplete (no new record) before a node removes it.
	AbandonedAfter time.Duration
	// MetricsListen, when set, is the listener of /metrics (and of /healthz
	// and /readyz, which stay on HTTPListen too); /metrics is then not
	// served on HTTPListen.
	MetricsListen string
	// Console serves the web console at /console/ on the API listener.
	Console bool
	// MonitorListen, when set, serves the embedded server's own monitoring
	// endpoints (/varz, /jsz, /healthz): for NATS tooling such as
	// prometheus-nats-exporter, next to the node.
	MonitorListen string
	// PprofListen, when set, serves Go's profiles of the node
	// (/debug/pprof/: CPU, heap, goroutines, mutex), to find where it
	// spends its time; loopback only unless Insecure, as MonitorListen.
	PprofListen string

	// Server, when set (no flag), is an embedded server the caller has
	// started: the node runs on it as on its own, but leaves it running at
	// Close, and the settings of an embedded server above do not apply.
	// pi-bench times the server's start apart from the node's, and weighs
	// the node's memory against the server's.
	Server *embedded.Server

	// No flag: tests of clients shrink them to reach the limits quickly.
	MaxBatch   int   // the atomic batch limit (jetstream.Config); 0: the default
	MaxPayload int32 // the embedded server's max_payload; 0: pi-node's 8 MiB

	LogLevel  string
	LogFormat string
	// LogOutput is where the node logs (no flag: pi-node's is its stderr);
	// nil is os.Stderr.
	LogOutput io.Writer

	// Cross-region mode (region.go).
	RegionConfig
	// Retention of idle sessions (archive.go).
	ArchiveConfig
}

// DefaultConfig returns the zero-setup defaults: one embedded node, data in
// ./pi-data, NATS on 127.0.0.1:4222, HTTP on 127.0.0.1:8080.
func DefaultConfig() Config {
	return Config{
		DataDir:          "./pi-data",
		ClientListen:     "127.0.0.1:4222",
		HTTPListen:       "127.0.0.1:8080",
		Sync:             "always",
		SyncInterval:     2 * time.Minute,
		Replicas:         1,
		Stream:           "PI_SESSIONS",
		SubjectPrefix:    "pi.sess",
		Bucket:           "PI_CURSORS",
		MinSeqTimeout:    5 * time.Second,
		GoMemoryLimit:    "auto",
		SnapshotInterval: 5 * time.Minute,
		ShutdownGrace:    20 * time.Second,
		ReadyMaxLag:      100,
		MaxConnections:   api.DefaultMaxConnections,
		MaxWatches:       api.DefaultMaxWatches,
		MaxRequests:      api.DefaultMaxRequests,
		AbandonedAfter:   30 * time.Second,
		LogLevel:         "info",
		LogFormat:        "text",
		RegionConfig:     RegionConfig{RecordBucket: "PI_REGION", RecordReplicas: 1},
		ArchiveConfig:    defaultArchiveConfig(),
	}
}

// ParseFlags fills c from args and the environment (getenv), then checks it.
func (c *Config) ParseFlags(args []string, getenv func(string) string, stderr io.Writer) error {
	fs := flag.NewFlagSet("pi-node", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: pi-node [flags]\n\npi-node serves pi session trees from a replicated NATS JetStream log.\nEvery flag can also be set as PI_NODE_<FLAG> (e.g. PI_NODE_HTTP_LISTEN).\n\n  -version\n    \tprint the build (version, revision, Go) and exit\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "directory of the embedded JetStream server's files")
	fs.StringVar(&c.NATSURL, "nats-url", c.NATSURL, "comma-separated URLs of an external NATS cluster; when set, nothing is embedded")
	fs.StringVar(&c.NATSCreds, "nats-creds", c.NATSCreds, "credentials file (JWT + nkey) for --nats-url")
	fs.StringVar(&c.NATSUser, "nats-user", c.NATSUser, "user for --nats-url (or for clients of the embedded server)")
	fs.StringVar(&c.NATSPassword, "nats-password", c.NATSPassword, "password for --nats-user")
	fs.StringVar(&c.NATSToken, "nats-token", c.NATSToken, "token for --nats-url (or for clients of the embedded server)")
	fs.StringVar(&c.TLSCert, "tls-cert", c.TLSCert, "client certificate for --nats-url")
	fs.StringVar(&c.TLSKey, "tls-key", c.TLSKey, "client key for --tls-cert")
	fs.StringVar(&c.TLSCA, "tls-ca", c.TLSCA, "CA that signed the NATS servers' certificates")
	fs.StringVar(&c.NATSAuth, "nats-auth", c.NATSAuth, "users file of the embedded NATS server: users with roles client, reader, jetstream, admin, and the route and gateway credentials (docs/SECURITY.md; pi-ctl gen-secrets), read again on SIGHUP")
	fs.StringVar(&c.NATSTLSCert, "nats-tls-cert", c.NATSTLSCert, "certificate (PEM) of the embedded NATS server's client listener: clients must use TLS; read again on SIGHUP")
	fs.StringVar(&c.NATSTLSKey, "nats-tls-key", c.NATSTLSKey, "private key (PEM) of --nats-tls-cert")
	fs.StringVar(&c.ClusterTLSCert, "cluster-tls-cert", c.ClusterTLSCert, "certificate (PEM) this server presents on routes and gateways, both ways (mutual TLS); read again on SIGHUP")
	fs.StringVar(&c.ClusterTLSKey, "cluster-tls-key", c.ClusterTLSKey, "private key (PEM) of --cluster-tls-cert")
	fs.StringVar(&c.ClusterTLSCA, "cluster-tls-ca", c.ClusterTLSCA, "CA (PEM) that signed every server's --cluster-tls-cert")
	fs.BoolVar(&c.Insecure, "insecure", c.Insecure, "allow listeners beyond loopback without auth (HTTP, NATS) or without TLS and credentials (routes, gateways); logged, and shown on /v1/status")
	fs.StringVar(&c.EncryptionKeyFile, "encryption-key-file", c.EncryptionKeyFile, "file holding the secret (at least 32 bytes of text; pi-ctl gen-secrets writes one) that encrypts everything this node writes to --data-dir: the embedded JetStream server's file store, the Store's snapshots and spill blocks; the search index is then kept in memory only (docs/SECURITY.md, encryption at rest)")
	fs.StringVar(&c.PreviousEncryptionKeyFile, "previous-encryption-key-file", c.PreviousEncryptionKeyFile, "during a key rotation, the file of the key --encryption-key-file replaces: what it encrypted is still read, and JetStream re-encrypts its files with the new key at start (docs/OPERATIONS.md, key rotation)")
	fs.StringVar(&c.EncryptionCipher, "encryption-cipher", c.EncryptionCipher, "cipher of the embedded JetStream file store with --encryption-key-file: chachapoly or aes (AES-GCM); snapshots are always AES-256-GCM")
	fs.StringVar(&c.ClientListen, "client-listen", c.ClientListen, "host:port of the embedded NATS server's client listener")
	fs.StringVar(&c.NodeName, "node-name", c.NodeName, "server name, unique and stable within a cluster (default: the host name)")
	fs.StringVar(&c.ClusterName, "cluster-name", c.ClusterName, "NATS cluster name; enables the embedded cluster mode")
	fs.StringVar(&c.ClusterListen, "cluster-listen", c.ClusterListen, "host:port of the route listener (e.g. 0.0.0.0:6222)")
	routes := fs.String("routes", joinURLs(c.Routes), "comma-separated nats-route://host:port of EVERY node of the cluster (this one included)")
	fs.StringVar(&c.Sync, "sync", c.Sync, "always: fsync every write before acknowledging it; interval: fsync every --sync-interval (faster, a crash can lose acknowledged writes)")
	fs.DurationVar(&c.SyncInterval, "sync-interval", c.SyncInterval, "fsync interval with --sync interval")
	fs.IntVar(&c.Replicas, "replicas", c.Replicas, "replicas of the stream and the cursor bucket: 1, or 3 in a cluster")
	fs.IntVar(&c.Hold, "hold", c.Hold, "how many pi-nodes hold each shard in memory (rendezvous hashing over the live nodes); the others forward its sessions' requests to them; 0: 2 when the store has several shards, every node when it has one (docs/OPERATIONS.md, capacity planning)")
	fs.IntVar(&c.Shards, "shards", c.Shards, "streams the sessions are spread over (1 to 256): <stream>, <stream>_1, ...; fixed when the store is first provisioned (default 1), changed only by pi-ctl shards migrate; without it a node takes the store's, with it a node refuses a store of another count (docs/OPERATIONS.md, capacity planning)")
	fs.StringVar(&c.Stream, "stream", c.Stream, "JetStream stream holding the sessions (shard 0's, with --shards)")
	fs.StringVar(&c.SubjectPrefix, "subject-prefix", c.SubjectPrefix, "subject prefix; session S lives on <prefix>.S")
	fs.StringVar(&c.Bucket, "bucket", c.Bucket, "KV bucket of the per-client cursors")
	fs.StringVar(&c.HTTPListen, "http-listen", c.HTTPListen, "host:port of the HTTP API")
	fs.StringVar(&c.HTTPToken, "http-token", c.HTTPToken, "bearer token required on every /v1 request (empty: none); an admin token next to --http-tokens")
	fs.StringVar(&c.HTTPCORSOrigins, "http-cors-origins", c.HTTPCORSOrigins, "origins of web pages (scheme://host[:port], comma-separated; * for any) that may call the HTTP API from a browser (CORS); empty: none")
	fs.StringVar(&c.HTTPTokens, "http-tokens", c.HTTPTokens, "file of scoped bearer tokens (read, write, admin; hashed; see docs/API.md), read again on SIGHUP")
	fs.StringVar(&c.HTTPTLSCert, "http-tls-cert", c.HTTPTLSCert, "certificate (PEM, chain) to serve the HTTP API over TLS, read again on SIGHUP")
	fs.StringVar(&c.HTTPTLSKey, "http-tls-key", c.HTTPTLSKey, "private key (PEM) of --http-tls-cert")
	budget := fs.String("memory-budget", size.Format(c.MemoryBudget), "JSON bytes of session trees kept in memory (e.g. 512MiB, 2GiB; 0: no limit); cold sessions beyond it are evicted and reloaded on demand")
	maxFileStore := fs.String("max-file-store", size.Format(c.MaxFileStore), "the embedded server's JetStream file storage limit (e.g. 50GiB): writes beyond it are refused (503) instead of filling the volume; 0: the server's default (75% of the disk's free space at start)")
	fs.StringVar(&c.GoMemoryLimit, "go-memory-limit", c.GoMemoryLimit, "the Go runtime's soft memory limit (e.g. 1800MiB); auto: GOMEMLIMIT if set, else 90% of the container's cgroup limit, else none; 0: none")
	fs.DurationVar(&c.SnapshotInterval, "snapshot-interval", c.SnapshotInterval, "how often the node snapshots its in-memory sessions to <data-dir>/store (also at shutdown), so a restart serves at once; 0 disables snapshots")
	fs.DurationVar(&c.MinSeqTimeout, "min-seq-timeout", c.MinSeqTimeout, "how long a read waits for this node to apply what it must reflect: minSeq, its own writes, consistency=strong (then 504)")
	fs.DurationVar(&c.AbandonedAfter, "abandoned-import-after", c.AbandonedAfter, "how long an import or fork written in several atomic batches may stay incomplete (its writer died) before a node removes it; it is hidden meanwhile")
	fs.DurationVar(&c.ShutdownGrace, "shutdown-grace", c.ShutdownGrace, "after the lame duck, how long a shutdown waits for requests in flight and the last snapshot together (one deadline; a snapshot cut short only means more log to read at the next start)")
	fs.DurationVar(&c.LameDuck, "lame-duck", c.LameDuck, "on SIGTERM, how long pi-node goes on serving HTTP with /readyz 503 and Connection: close, its NATS service withdrawn, before it stops taking requests: the time load balancers or Kubernetes endpoints take to move clients away (e.g. 5s; SIGINT skips it). Either way a SIGTERM ends in lame-duck mode: the embedded server hands its leaderships over and tells its clients")
	fs.Uint64Var(&c.ReadyMaxLag, "ready-max-lag", c.ReadyMaxLag, "with an embedded cluster, /readyz also needs this node's replica of every stream to be at most this many entries behind its leader (and heard from), so a rolling restart does not move on while it catches up")
	fs.IntVar(&c.MaxConnections, "max-connections", c.MaxConnections, "connections the HTTP API listener keeps open at once (the --metrics-listen listener has a cap of its own, the same); past it new ones wait in the kernel's listen backlog, so a flood of idle or half-sent connections cannot use up the process's file descriptors; keep it well below `ulimit -n`")
	fs.IntVar(&c.MaxWatches, "max-watches", c.MaxWatches, "watch streams (GET /v1/sessions/{id}/watch) open at once; past it a watch is refused with 503 unavailable")
	fs.IntVar(&c.MaxRequests, "max-requests", c.MaxRequests, "HTTP and NATS requests in flight at once, watches and probes aside; past it a request is refused with 503 unavailable")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "text or json")
	fs.StringVar(&c.PprofListen, "pprof-listen", c.PprofListen, "host:port of Go's profiling endpoints of this process (/debug/pprof/: CPU, heap, goroutines; e.g. go tool pprof http://127.0.0.1:6060/debug/pprof/profile); unauthenticated, so loopback only unless --insecure (empty: off)")
	fs.StringVar(&c.MonitorListen, "monitor-listen", c.MonitorListen, "host:port of the embedded NATS server's monitoring endpoints (/varz, /jsz, /healthz, ...), for NATS tooling such as prometheus-nats-exporter; unauthenticated (nats-server has no auth for them), so loopback only unless --insecure (empty: off)")
	fs.BoolVar(&c.Console, "console", c.Console, "serve the web console at /console/ on the HTTP API listener (static pages; every call they make needs a token like any /v1 request; docs/CONSOLE.md)")
	fs.StringVar(&c.MetricsListen, "metrics-listen", c.MetricsListen, "host:port of a listener of its own for /metrics (and /healthz, /readyz); /metrics is then not served on --http-listen (empty: it is)")
	gateways := c.addRegionFlags(fs)
	c.addArchiveFlags(fs)

	// The environment first, so that flags on the command line override it.
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		name := "PI_NODE_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v := getenv(name); v != "" && envErr == nil {
			if err := fs.Set(f.Name, v); err != nil {
				envErr = fmt.Errorf("%s=%q: %w", name, v, err)
			}
		}
	})
	if envErr != nil {
		return envErr
	}
	gateways.replaceNext = len(gateways.specs) > 0
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (pi-node takes only flags)", fs.Arg(0))
	}
	var err error
	if c.Routes, err = parseRoutes(*routes); err != nil {
		return fmt.Errorf("--routes: %w", err)
	}
	if c.MemoryBudget, err = size.Parse(*budget); err != nil {
		return fmt.Errorf("--memory-budget: %w", err)
	}
	if c.MaxFileStore, err = size.Parse(*maxFileStore); err != nil {
		return fmt.Errorf("--max-file-store: %w", err)
	}
	if err := c.finishRegion(gateways); err != nil {
		return err
	}
	if c.MonitorListen != "" && c.NATSURL != "" {
		return errors.New("--monitor-listen serves the embedded server's monitoring: with --nats-url, use the external servers' own (their http_port)")
	}
	if err := c.checkArchive(); err != nil {
		return err
	}
	return c.check()
}

func (c *Config) check() error {
	if err := c.checkEncryption(); err != nil {
		return err
	}
	switch {
	case c.Sync != "always" && c.Sync != "interval":
		return fmt.Errorf("--sync must be always or interval, not %q", c.Sync)
	case c.MaxConnections <= 0 || c.MaxWatches <= 0 || c.MaxRequests <= 0:
		return fmt.Errorf("--max-connections, --max-watches and --max-requests must be positive, not %d, %d and %d", c.MaxConnections, c.MaxWatches, c.MaxRequests)
	case c.AbandonedAfter <= 0:
		return fmt.Errorf("--abandoned-import-after must be positive, not %v", c.AbandonedAfter)
	case c.Shards < 0 || c.Shards > shard.Max:
		return fmt.Errorf("--shards must be 1 to %d (or absent: the store's), not %d", shard.Max, c.Shards)
	case c.Hold < 0:
		return fmt.Errorf("--hold must be at least 1 (or absent), not %d", c.Hold)
	case c.Hold > 0 && c.Region != "":
		return errors.New("--hold is not for cross-region mode: every node of a region holds every shard of its region's copy")
	case c.Replicas != 1 && c.Replicas != 3 && c.Replicas != 5:
		return fmt.Errorf("--replicas must be 1, 3 or 5, not %d", c.Replicas)
	case c.LogFormat != "text" && c.LogFormat != "json":
		return fmt.Errorf("--log-format must be text or json, not %q", c.LogFormat)
	case c.NATSURL != "" && (c.ClusterName != "" || len(c.Routes) > 0):
		return errors.New("--nats-url connects to an external cluster: --cluster-name and --routes are for the embedded one")
	case c.ClusterName != "" && (c.ClusterListen == "" || len(c.Routes) == 0):
		return errors.New("--cluster-name needs --cluster-listen and --routes (every node, this one included)")
	case c.ClusterName == "" && len(c.Routes) > 0:
		return errors.New("--routes needs --cluster-name")
	case (c.TLSCert == "") != (c.TLSKey == ""):
		return errors.New("--tls-cert and --tls-key go together")
	case (c.HTTPTLSCert == "") != (c.HTTPTLSKey == ""):
		return errors.New("--http-tls-cert and --http-tls-key go together")
	case (c.NATSTLSCert == "") != (c.NATSTLSKey == ""):
		return errors.New("--nats-tls-cert and --nats-tls-key go together")
	case (c.ClusterTLSCert == "") != (c.ClusterTLSKey == "") || (c.ClusterTLSCert == "") != (c.ClusterTLSCA == ""):
		return errors.New("--cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca go together")
	case c.NATSURL != "" && (c.NATSAuth != "" || c.NATSTLSCert != "" || c.ClusterTLSCert != ""):
		return errors.New("--nats-auth, --nats-tls-cert and --cluster-tls-cert secure the embedded server; with --nats-url use --nats-creds (or --nats-user) and --tls-ca")
	case c.NATSAuth != "" && (c.NATSToken != "" || c.NATSUser != ""):
		return errors.New("--nats-auth gives every client a user of its own: drop --nats-token and --nats-user (nats-server admits one kind)")
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		return err
	}
	if err := api.CheckCORSOrigins(c.corsOrigins()); err != nil {
		return fmt.Errorf("--http-cors-origins: %w", err)
	}
	return c.checkExposure()
}

// logOutput is LogOutput, os.Stderr when unset.
func (c *Config) logOutput() io.Writer {
	if c.LogOutput == nil {
		return os.Stderr
	}
	return c.LogOutput
}

// NewLogger builds the slog logger --log-level and --log-format ask for.
func NewLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	lvl, err := parseLevel(level)
	if err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: lvl}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level must be debug, info, warn or error, not %q", s)
	}
	return l, nil
}

// corsOrigins is --http-cors-origins as a list.
func (c *Config) corsOrigins() []string {
	var out []string
	for _, o := range strings.Split(c.HTTPCORSOrigins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			out = append(out, o)
		}
	}
	return out
}

func parseRoutes(s string) ([]*url.URL, error) {
	var out []*url.URL
	for _, r := range strings.Split(s, ",") {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		u, err := url.Parse(r)
		if err != nil || u.Host == "" || u.Port() == "" {
			return nil, fmt.Errorf("%q is not nats-route://host:port", r)
		}
		if u.Scheme != "nats-route" && u.Scheme != "nats" {
			return nil, fmt.Errorf("%q: scheme must be nats-route", r)
		}
		out = append(out, u)
	}
	return out, nil
}

func joinURLs(us []*url.URL) string {
	s := make([]string, len(us))
	for i, u := range us {
		s[i] = u.String()
	}
	return strings.Join(s, ",")
}

// hostname is the default node name.
func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "pi-node"
	}
	return h
}

// holdOf is how many nodes hold each of n shards (--hold; 0: 2 when the
// store has several, every node — 0 — when it has one), as the holder
// uses it: 0 is every node.
func (c *Config) holdOf(n int) int {
	switch {
	case c.Hold > 0:
		return c.Hold
	case n > 1:
		return 2
	}
	return 0
}

// consoleHandler is the web console's handler with --console, else nil.
func (c *Config) consoleHandler() http.Handler {
	if !c.Console {
		return nil
	}
	return console.Handler()
}
