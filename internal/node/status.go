package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/wire"
)

// status reports the mode and the stream as the leader sees it: replicas,
// leader, each follower's lag, messages and bytes.
func (m *Node) status(ctx context.Context) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cfg := m.streamConfig()
	connected := m.NATSURL
	if m.server != nil {
		connected = "in process (clients: " + m.NATSURL + ")" // pi-node's own connection crosses no network
	}
	out := wire.JetStreamStatus{Mode: m.mode(), Server: m.conn.NC.ConnectedServerName(), Connected: connected, Bucket: cfg.Bucket}
	if m.region != nil {
		rs := m.region.Status(ctx)
		rec := m.region.Record()
		out.Region, out.Bucket = &rs, rec.Assets(m.jsCfg, rs.Home).Bucket
	}
	names := m.sessionStreams()
	var err error
	var sc streamCluster
	out.Stream, sc, err = m.streamStatus(ctx, names[0])
	out.Cluster = sc.name
	if err != nil {
		return out, err
	}
	if h := m.holder; h != nil {
		out.Hold = h.Hold
		for _, mb := range h.Members.Live() {
			out.Members = append(out.Members, wire.MemberStatus{Node: mb.Node, Held: mb.Held, Ready: mb.Ready})
		}
	}
	if len(names) > 1 { // with one stream, Stream says it all
		out.ShardMap = m.shardMap().String()
		out.Shards = append(out.Shards, out.Stream)
		for _, name := range names[1:] {
			ss, _, err := m.streamStatus(ctx, name)
			if err != nil {
				return out, err
			}
			out.Shards = append(out.Shards, ss)
		}
	}
	return out, nil
}

// streamCluster is what streamStatus reports of a stream's cluster beside
// the wire status: the cluster's name, and since when the leader has led
// (zero when the server tells no such time: one server, no raft group).
type streamCluster struct {
	name        string
	leaderSince time.Time
}

// streamStatus is one stream as its leader reports it, and its cluster.
func (m *Node) streamStatus(ctx context.Context, name string) (wire.StreamStatus, streamCluster, error) {
	s, err := m.conn.JS.Stream(ctx, name) // its answer is the stream's info: one request
	if err != nil {
		return wire.StreamStatus{}, streamCluster{}, fmt.Errorf("stream %s: %w", name, err)
	}
	info := s.CachedInfo()
	out := wire.StreamStatus{Name: info.Config.Name, Replicas: info.Config.Replicas, Messages: info.State.Msgs, Bytes: info.State.Bytes,
		FirstSeq: info.State.FirstSeq, LastSeq: info.State.LastSeq, Subjects: uint64(info.State.NumSubjects)}
	if info.Config.MaxBytes > 0 {
		out.MaxBytes = info.Config.MaxBytes
	}
	var cluster streamCluster
	if ci := info.Cluster; ci != nil {
		cluster.name, out.Leader = ci.Name, ci.Leader
		if ci.LeaderSince != nil {
			cluster.leaderSince = *ci.LeaderSince
		}
		now := time.Now()
		for _, p := range ci.Replicas {
			// offline is the state's: the server's own flag comes minutes
			// after a node is killed.
			state := jetstream.ReplicaState(ci, p, m.Config.ReadyMaxLag, now)
			out.Followers = append(out.Followers, wire.PeerStatus{Name: p.Name, Current: p.Current, Offline: state == jetstream.ReplicaOffline, Lag: p.Lag,
				Active: jetstream.LastSeen(ci, p, now), State: state})
		}
	}
	return out, cluster, nil
}

// ready checks what /readyz needs from the backend: connected, stream and
// bucket present. (The API adds: the Store caught up within a second.) In
// a region the stream is the one the Store follows, and the home's bucket
// is not required: a mirror region serves reads while its home is down,
// once its mirror has caught up with the home (region.Node.Ready).
func (m *Node) ready(ctx context.Context) error {
	if m.draining.Load() {
		return errors.New("shutting down (lame duck)")
	}
	if st := m.conn.NC.Status(); st != nats.CONNECTED {
		return fmt.Errorf("NATS connection is %v", st)
	}
	if m.region != nil {
		if err := m.region.Ready(); err != nil {
			return err
		}
	}
	behind, err := m.backendReady(ctx)
	if err == nil {
		m.leaderless.Store(0)
		return m.replicaReady(behind)
	}
	if errors.Is(err, jetstream.ErrMissing) {
		return err // not an election: the stream or bucket is gone
	}
	// No leader, or no answer: an election takes a few seconds and every
	// node sees it at once; pulling them all out of service for it would
	// leave nobody to serve reads. Cut off for longer than electionGrace,
	// the node is not ready (a partition).
	now := time.Now().UnixNano()
	if m.leaderless.CompareAndSwap(0, now) {
		return nil // the first failure: the grace starts now
	}
	// since is 0 if a concurrent check has just succeeded: ready.
	if since := m.leaderless.Load(); since != 0 && time.Duration(now-since) > electionGrace {
		return err
	}
	return nil
}

// backendReady checks the streams the Stores follow (and their leaders)
// and, outside region mode, the cursor bucket. behind is the first of them
// whose replica on this node's embedded server is not current.
func (m *Node) backendReady(ctx context.Context) (behind, err error) {
	var self string // the embedded server's name: the replicas that are this node's
	if m.server != nil {
		self = m.server.ServerName
	}
	check := func(name, what string) error {
		s, err := m.conn.JS.Stream(ctx, name)
		if err != nil {
			return fmt.Errorf("%s: %w", what, jetstream.Classify(err))
		}
		info := s.CachedInfo()
		if err := jetstream.Leaderless(info); err != nil {
			return err
		}
		if behind == nil {
			behind = jetstream.ReplicaBehind(info, self, m.Config.ReadyMaxLag)
		}
		return nil
	}
	for _, name := range m.sessionStreams() {
		if err := check(name, "stream "+name); err != nil {
			return nil, err
		}
	}
	if m.region != nil {
		return behind, nil // a mirror region serves reads while its home is down
	}
	if err := check("KV_"+m.jsCfg.Bucket, "bucket "+m.jsCfg.Bucket); err != nil {
		return nil, err
	}
	return behind, nil
}

// replicaReady: a node is not ready until its replicas have caught up
// since it started (a rolling restart must not take down the next node
// while this one is the replica a majority needs), and one that falls
// behind later stays ready for electionGrace first: a burst of writes or
// a slow disk is not a reason to pull it out of service.
func (m *Node) replicaReady(behind error) error {
	if behind == nil {
		m.caughtUp.Store(true)
		m.behindSince.Store(0)
		return nil
	}
	if !m.caughtUp.Load() {
		return behind
	}
	now := time.Now().UnixNano()
	if m.behindSince.CompareAndSwap(0, now) {
		return nil
	}
	if since := m.behindSince.Load(); since != 0 && time.Duration(now-since) > electionGrace {
		return behind
	}
	return nil
}

// electionGrace is how long /readyz stays 200 while the stream has no
// leader: longer than an election (4-9 s), shorter than a partition.
const electionGrace = 10 * time.Second

// natsLogger routes the embedded server's log into slog. The server's
// refusals (a failed login, a permissions violation, a failed TLS
// handshake) become audit lines and count in pi_nats_auth_total, as the
// HTTP API's do: they are where an attack on the NATS port shows.
type natsLogger struct {
	l     *slog.Logger
	audit *prometheus.CounterVec // by outcome; nil: none
	fatal chan<- string          // Main.Fatal; nil: none
	// throttle bounds the audit lines per client address (nil: none).
	throttle *api.AuditThrottle
	// started is set once the server is up: its notices before that are
	// its start-up banner (a dozen lines that would drown pi-node's own),
	// after it what an operator watches for (stream and meta leaders
	// elected, peers lost and back).
	started *atomic.Bool
}

// Noticef is info once the server has started, debug before.
func (n natsLogger) Noticef(format string, v ...any) {
	if n.started != nil && n.started.Load() {
		n.l.Info(fmt.Sprintf(format, v...))
		return
	}
	n.l.Debug(fmt.Sprintf(format, v...))
}
func (n natsLogger) Warnf(format string, v ...any) { n.l.Warn(fmt.Sprintf(format, v...)) }

// Fatalf logs the error and hands it to Main.Fatal (the first one: the
// node is stopping by then).
func (n natsLogger) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	n.l.Error("fatal: "+msg, "fatal", true)
	if n.fatal != nil {
		select {
		case n.fatal <- msg:
		default:
		}
	}
}

func (n natsLogger) Debugf(format string, v ...any) { n.l.Debug(fmt.Sprintf(format, v...)) }
func (n natsLogger) Tracef(format string, v ...any) { n.l.Debug(fmt.Sprintf(format, v...)) }

func (n natsLogger) Errorf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	outcome := natsOutcome(msg)
	if outcome == "" {
		n.l.Error(msg)
		return
	}
	if n.audit != nil {
		n.audit.WithLabelValues(outcome).Inc()
	}
	remote, _, _ := strings.Cut(msg, " - ")
	if n.throttle != nil && !n.throttle.Refused(api.AuditSource(remote)) {
		return
	}
	n.l.Warn("audit: nats "+outcome, "user", natsUser(msg), "remote", remote, "detail", msg)
}

// Outcomes of pi_nats_auth_total.
const (
	natsUnauthorized = "unauthorized" // no or wrong credentials
	natsForbidden    = "forbidden"    // a subject outside the user's role
	natsTLSFailed    = "tls_failed"   // a handshake failed: no or a foreign certificate
)

// natsOutcome classifies one of the server's error lines ("": not a
// refusal).
func natsOutcome(msg string) string {
	switch {
	case strings.Contains(msg, "authentication error"):
		return natsUnauthorized
	case strings.Contains(msg, "Publish Violation"), strings.Contains(msg, "Subscription Violation"):
		return natsForbidden
	case strings.Contains(msg, "handshake error"):
		return natsTLSFailed
	}
	return ""
}

// userLabel finds the user in the server's connection label
// (`"$G/user:worker"`) or in an authentication error (`User "worker"`).
var userLabel = regexp.MustCompile(`/(?:user|nkey):([^"]+)"|(?:User|Nkey) "([^"]+)"`)

func natsUser(msg string) string {
	m := userLabel.FindStringSubmatch(msg)
	switch {
	case m == nil:
		return ""
	case m[1] != "":
		return m[1]
	}
	return m[2]
}
