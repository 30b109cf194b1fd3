package embedded

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/natsauth"
)

// Server is an embedded nats-server with JetStream: alone (pi-node's default
// mode) or as one member of a cluster of pi-nodes. Create it with NewServer,
// adjust the exported fields, then Start it.
type Server struct {
	// DataDir holds JetStream's files.
	DataDir string
	// ServerName must be unique and stable in a cluster: JetStream derives
	// the node's raft identity from it. Defaults to the host name.
	ServerName string
	// Host and Port where clients connect. Port -1 picks a random port (tests).
	Host string
	Port int

	// SyncAlways fsyncs every write before it is acknowledged (default true):
	// an acknowledged append survives a power loss. When false, the server
	// fsyncs every SyncInterval (0: the server's default of 2 minutes) and a
	// crash of a majority can lose acknowledged writes.
	SyncAlways   bool
	SyncInterval time.Duration

	// MaxPayload is the largest message a client may publish (default 8 MiB).
	MaxPayload int32
	// MaxMemory and MaxStore limit JetStream's memory and file storage
	// (0: the server's defaults, derived from the machine).
	MaxMemory int64
	MaxStore  int64
	// MaxConsumersPerStream caps the consumers of each stream that sets no
	// limit of its own (nats-server's jetstream.limits.default_max_consumers;
	// 0: the server's default, 1,000 since 2.15; -1: none). Ordered
	// consumers and KV watchers count; on a cluster the cap is on the
	// stream's consumers over all servers.
	MaxConsumersPerStream int

	// MonitorHost and MonitorPort, when MonitorPort is set, serve the
	// server's monitoring endpoints (/varz, /jsz, /healthz, ...), over
	// plain HTTP and without auth: nats-server has none for them. -1
	// picks a free port (MonitorAddr says which).
	MonitorHost string
	MonitorPort int

	// User and Password, or Token, require clients to authenticate: one
	// credential shared by every client, with every right.
	User     string
	Password string
	Token    string
	// Auth, instead, is a users file: each user has a role (auth.go), and
	// the in-process connection of InProcess has every right. Logs names
	// the session logs whose subjects the roles are given.
	Auth *natsauth.File
	Logs []natsauth.Names
	// TLS, when set, is the client listener's TLS; PeerTLS is the mutual
	// TLS of routes and gateways (ServerTLSConfig, PeerTLSConfig).
	TLS     *tls.Config
	PeerTLS *tls.Config

	// ClusterName enables clustering. ClusterListen is the host:port of the
	// route listener; Routes must list the route URLs of every server of the
	// cluster (this one included: a server skips itself), on every server.
	ClusterName     string
	ClusterListen   string
	Routes          []*url.URL
	ClusterUser     string
	ClusterPassword string

	// GatewayName joins this server's cluster to a supercluster of regions
	// (see gateway.go): it must equal ClusterName, the region's name.
	// GatewayListen is the host:port of the gateway listener; Gateways maps
	// every region's name to gateway URLs of its servers (this region may be
	// listed too: it is skipped).
	GatewayName   string
	GatewayListen string
	Gateways      map[string][]*url.URL

	// EncryptionKey, when set, encrypts JetStream's file store (streams,
	// buckets, Raft logs) with Cipher; PreviousEncryptionKey is the key it
	// replaces during a rotation: the server re-encrypts what that key
	// encrypted when it starts (nats-server's jetstream key, prev_key and
	// cipher).
	EncryptionKey         string
	PreviousEncryptionKey string
	Cipher                server.StoreCipher

	// Logger receives the server's log; nil keeps it silent.
	Logger server.Logger

	ns           *server.Server
	internalPass string // of natsauth.InternalUser, with Auth
}

// NewServer returns a server configuration with the defaults: data in
// dataDir, clients on 127.0.0.1:4222, sync always, 8 MiB payloads.
func NewServer(dataDir string) *Server {
	name, err := os.Hostname()
	if err != nil || name == "" {
		name = "pi-node"
	}
	return &Server{
		DataDir:    dataDir,
		ServerName: name,
		Host:       "127.0.0.1",
		Port:       4222,
		SyncAlways: true,
		MaxPayload: 8 << 20,
	}
}

// options translates the configuration to nats-server options.
func (s *Server) options() (*server.Options, error) {
	if s.DataDir == "" {
		return nil, errors.New("server: data dir is empty")
	}
	opts := &server.Options{
		ServerName:         s.ServerName,
		Host:               s.Host,
		Port:               s.Port,
		JetStream:          true,
		StoreDir:           s.DataDir,
		SyncAlways:         s.SyncAlways,
		MaxPayload:         s.MaxPayload,
		JetStreamMaxMemory: s.MaxMemory,
		JetStreamMaxStore:  s.MaxStore,
		JetStreamLimits:    server.JSLimitOpts{DefaultMaxConsumers: s.MaxConsumersPerStream},
		JetStreamKey:       s.EncryptionKey,
		JetStreamOldKey:    s.PreviousEncryptionKey,
		JetStreamCipher:    s.Cipher,
		Username:           s.User,
		Password:           s.Password,
		Authorization:      s.Token,
		HTTPHost:           s.MonitorHost,
		HTTPPort:           s.MonitorPort,
		NoSigs:             true,
		NoLog:              s.Logger == nil,
		// LameDuckShutdown's: the clients left once pi-node's own work is
		// done are few (other nodes' tools, NATS API callers), and a pod's
		// grace period is short; nats-server's 2 min default would outlast it.
		LameDuckDuration:    lameDuckDuration,
		LameDuckGracePeriod: time.Second,
	}
	if !s.SyncAlways {
		opts.SyncInterval = s.SyncInterval
	}
	if err := s.gatewayOptions(opts); err != nil {
		return nil, err
	}
	if err := s.clusterOptions(opts); err != nil {
		return nil, err
	}
	if err := s.authOptions(opts); err != nil {
		return nil, err
	}
	s.tlsOptions(opts)
	return opts, nil
}

// clusterOptions adds the route listener and the routes to opts; without
// a ClusterName it does nothing.
func (s *Server) clusterOptions(opts *server.Options) error {
	if s.ClusterName == "" {
		return nil
	}
	if s.ServerName == "" {
		return errors.New("server: a cluster member needs a server name")
	}
	host, portStr, err := net.SplitHostPort(s.ClusterListen)
	if err != nil {
		return fmt.Errorf("server: cluster listen %q: %w", s.ClusterListen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("server: cluster listen %q: bad port: %w", s.ClusterListen, err)
	}
	user, pass := s.ClusterUser, s.ClusterPassword
	if user == "" && s.Auth != nil && s.Auth.Routes != nil {
		user, pass = s.Auth.Routes.User, s.Auth.Routes.Password
	}
	opts.Cluster = server.ClusterOpts{
		Name:     s.ClusterName,
		Host:     host,
		Port:     port,
		Username: user,
		Password: pass,
	}
	for _, r := range s.Routes {
		r := *r
		if r.User == nil && user != "" {
			r.User = url.UserPassword(user, pass)
		}
		opts.Routes = append(opts.Routes, &r)
	}
	return nil
}

// Start starts the server and returns once JetStream answers API requests:
// accepting connections is not enough, a cluster first needs a meta leader,
// which takes a quorum of its members (start them concurrently) and a few
// seconds of election. Start gives up when ctx is done; calling it on a
// started server does nothing.
func (s *Server) Start(ctx context.Context) error {
	if s.ns != nil {
		return nil
	}
	opts, err := s.options()
	if err != nil {
		return err
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if s.Logger != nil {
		ns.SetLoggerV2(s.Logger, false, false, false)
	}
	go ns.Start()
	s.ns = ns
	// A listener that cannot bind (port in use) is only logged by the
	// server, which then never becomes ready: fail fast instead of waiting
	// for a JetStream that will not come.
	if !ns.ReadyForConnections(listenTimeout) {
		s.Shutdown()
		return fmt.Errorf("server %s: its listeners did not start within %v (is the client or cluster port in use? the server log says why)", s.ServerName, listenTimeout)
	}
	if err := s.waitReady(ctx); err != nil {
		s.Shutdown()
		return err
	}
	return nil
}

// listenTimeout bounds how long Start waits for the listeners to be up.
const listenTimeout = 10 * time.Second

// waitReady polls, with bounded backoff, until the server accepts
// connections, JetStream is current with a meta leader, and an account info
// request through a client succeeds.
func (s *Server) waitReady(ctx context.Context) error {
	wait := 20 * time.Millisecond
	var last error
	for {
		if last = s.checkReady(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("server %s: jetstream not ready: %w (last: %v)", s.ServerName, ctx.Err(), last)
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

func (s *Server) checkReady(ctx context.Context) error {
	if !s.ns.ReadyForConnections(100 * time.Millisecond) {
		return errors.New("not accepting connections")
	}
	if !s.ns.JetStreamEnabled() {
		return errors.New("jetstream not enabled yet")
	}
	if s.ns.JetStreamIsClustered() && !s.ns.JetStreamIsCurrent() {
		return errors.New("no meta leader yet")
	}
	nc, err := nats.Connect("", append(s.clientAuth(), nats.InProcessServer(s.ns), nats.NoReconnect())...)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = js.AccountInfo(actx)
	return err
}

// clientAuth returns the options a client needs to pass this server's auth.
func (s *Server) clientAuth() []nats.Option {
	switch {
	case s.Auth != nil:
		// A prefix of its own: replies to pi-node (JetStream's, the
		// admin restore's transcript) go to no inbox a user may read.
		return []nats.Option{nats.UserInfo(natsauth.InternalUser, s.internalPass),
			nats.CustomInboxPrefix(natsauth.InboxPrefix(natsauth.InternalUser))}
	case s.Token != "":
		return []nats.Option{nats.Token(s.Token)}
	case s.User != "":
		return []nats.Option{nats.UserInfo(s.User, s.Password)}
	}
	return nil
}

// Shutdown stops the server and waits until it has stopped; Start may then
// start it again.
func (s *Server) Shutdown() { s.stop((*server.Server).Shutdown) }

// stop stops the server by how and waits until it has.
func (s *Server) stop(how func(*server.Server)) {
	if s.ns == nil {
		return
	}
	how(s.ns)
	s.ns.WaitForShutdown()
	s.ns = nil
}

// LameDuckShutdown stops the server as a rolling restart wants it to: it
// stops accepting clients, hands the leadership of every raft group it
// leads (streams, consumers, the meta group) to a current peer, so the
// cluster does not wait out an election timeout (4-9 s) to write again,
// tells its clients it is going (nats.go's lame-duck handler), closes them
// over lameDuckDuration so they reconnect elsewhere without a storm, and
// shuts down. It returns once the server has stopped, or with an error
// once LameDuckBudget has passed.
//
// The bound is pi-node's, not nats-server's. In a .ci/run a node stopped
// seconds after a peer restarted waited over a minute in its JetStream
// shutdown for a stream's monitor to exit (nats-server 2.15.2). In
// lame-duck mode the server still runs while its JetStream shuts down, and
// a monitor catching its stream up from a peer (processSnapshot) watches
// only its raft group and the server's end, both of which LDM leaves
// running, so it retries for up to a minute. Past ldmBound the server gets
// a plain Shutdown, which marks it stopped and stops the raft groups; past
// LameDuckBudget LameDuckShutdown gives up waiting. What is left
// unfinished is what a kill -9 leaves: nothing acknowledged is lost, and
// the next start recovers the files.
func (s *Server) LameDuckShutdown() error {
	if s.ns == nil {
		return nil
	}
	ns := s.ns
	stopped := make(chan struct{})
	ldm := lameDuck
	go func() {
		ldm(ns)
		ns.WaitForShutdown()
		close(stopped)
	}()
	select {
	case <-stopped:
		s.ns = nil
		return nil
	case <-time.After(ldmBound):
	}
	ns.Warnf("Lame duck mode has not stopped the server within %v: shutting down", ldmBound)
	go ns.Shutdown()
	select {
	case <-stopped:
		s.ns = nil
		return nil
	case <-time.After(LameDuckBudget - ldmBound):
		return fmt.Errorf("server %s: still stopping %v after its lame duck began (its JetStream shutdown waits for a stream); left unfinished, as a kill -9 would", s.ServerName, LameDuckBudget)
	}
}

// lameDuck is nats-server's lame-duck shutdown; a test stands in a hang.
var lameDuck = (*server.Server).LameDuckShutdown

// lameDuckDuration bounds the spreading of the clients' closing in
// nats-server's lame-duck mode, past the leader hand-off (1 s) and the
// grace before clients are closed (1 s).
const lameDuckDuration = 3 * time.Second

// ldmBound is how long the lame-duck mode has before a plain Shutdown.
const ldmBound = lameDuckDuration + time.Second

// LameDuckBudget is the longest LameDuckShutdown takes.
const LameDuckBudget = ldmBound + 2*time.Second

// ClientURL returns the URL clients connect to ("" before Start).
func (s *Server) ClientURL() string {
	if s.ns == nil {
		return ""
	}
	return s.ns.ClientURL()
}

// MonitorAddr is where the monitoring endpoints listen, "" without them.
func (s *Server) MonitorAddr() string {
	if s.ns == nil || s.MonitorPort == 0 {
		return ""
	}
	if a := s.ns.MonitorAddr(); a != nil {
		return a.String()
	}
	return ""
}

// NATS returns the running nats-server, for status pages and tests.
func (s *Server) NATS() *server.Server { return s.ns }
