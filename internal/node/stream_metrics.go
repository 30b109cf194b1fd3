package node

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/wire"
)

// streamCollector exports what an SRE watches of the backend: each session
// stream's leader, replicas and size as its leader reports them, the
// server's file storage against its limit, leader elections, the age of
// the Stores' snapshots and the region mirror's lag. It asks JetStream on
// each scrape (the same stream info /v1/status asks for), within
// scrapeBudget: a stream without a leader must not hold the scrape up.
type streamCollector struct {
	m         *Node
	elections *elections // nil: the advisories could not be subscribed to
	errors    atomic.Uint64
}

// scrapeBudget bounds the JetStream requests of one scrape: Prometheus'
// default scrape timeout is 10 s, an election takes 4-9 s.
const scrapeBudget = 2 * time.Second

var (
	descStreamInfo = prometheus.NewDesc("pi_stream_info",
		`Always 1: a session stream, its shard and its leader as this node sees it ("" when it has none, or did not answer).`,
		[]string{"stream", "shard", "leader"}, nil)
	descStreamReplicas = prometheus.NewDesc("pi_stream_replicas",
		"A session stream's replicas by state, as its leader reports them: current (the leader counts), lagging (more than --ready-max-lag entries behind, or not heard from) or offline.",
		[]string{"stream", "state"}, nil)
	descStreamBytes    = prometheus.NewDesc("pi_stream_bytes", "Bytes stored in a session stream.", []string{"stream"}, nil)
	descStreamMessages = prometheus.NewDesc("pi_stream_messages", "Messages (records) in a session stream.", []string{"stream"}, nil)
	descStreamMaxBytes = prometheus.NewDesc("pi_stream_max_bytes", "A session stream's byte limit (MaxBytes); absent without one.", []string{"stream"}, nil)
	descStorageBytes   = prometheus.NewDesc("pi_jetstream_storage_bytes",
		"JetStream file storage in use: the embedded server's, or with --nats-url the account's.", nil, nil)
	descStorageLimit = prometheus.NewDesc("pi_jetstream_storage_limit_bytes",
		"JetStream's file storage limit (--max-file-store, or the embedded server's default; with --nats-url the account's); absent when unlimited.", nil, nil)
	descLeaderChanges = prometheus.NewDesc("pi_stream_leader_changes_total",
		"Leader elections of a session stream since this node started: JetStream's leader-elected advisories, and each leadership a scrape finds that no advisory announced (one the node missed).", []string{"stream"}, nil)
	descSnapshotAge = prometheus.NewDesc("pi_store_snapshot_age_seconds",
		"Seconds since the Store's snapshot last held everything it had applied (written, or found current); absent with --snapshot-interval 0.", []string{"stream"}, nil)
	descMirrorLag = prometheus.NewDesc("pi_region_mirror_lag",
		"Records of the home region's stream this region's mirror has not copied (cross-region mode, in a mirror region; absent while unknown).", []string{"region"}, nil)
	descCollectErrors = prometheus.NewDesc("pi_metrics_collect_errors_total",
		"JetStream requests of /metrics scrapes that failed (the series they feed are left out of that scrape).", nil, nil)
)

// replicaStates are pi_stream_replicas' states, each sent on every scrape
// (0 included), so that an alert on one has a series to compare.
var replicaStates = []string{jetstream.ReplicaCurrent, jetstream.ReplicaLagging, jetstream.ReplicaOffline}

// streamCollector returns the node's collector, subscribed to the
// leader-elected advisories until ctx ends (Close ends it before the
// connection).
func (m *Node) streamCollector(ctx context.Context) *streamCollector {
	c := &streamCollector{m: m}
	e, err := watchElections(m.conn.NC)
	if err != nil {
		m.Logger.Warn("metrics: not counting stream leader elections", "err", err)
		return c
	}
	c.elections = e
	m.bg.Go(func() {
		<-ctx.Done()
		_ = e.sub.Unsubscribe()
	})
	return c
}

func (c *streamCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descStreamInfo, descStreamReplicas, descStreamBytes, descStreamMessages, descStreamMaxBytes,
		descStorageBytes, descStorageLimit, descLeaderChanges, descSnapshotAge, descMirrorLag, descCollectErrors} {
		ch <- d
	}
}

// streamSample is one stream's info as one scrape read it.
type streamSample struct {
	status  wire.StreamStatus
	cluster streamCluster
	err     error
}

// Collect asks for every stream (and the region's status) side by side,
// within one scrapeBudget; what fails is left out and counted.
func (c *streamCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	ctx, cancel := context.WithTimeout(context.Background(), scrapeBudget)
	defer cancel()
	names := m.sessionStreams()
	samples := make([]streamSample, len(names))
	var wg sync.WaitGroup
	for k, name := range names {
		wg.Go(func() {
			s := &samples[k]
			s.status, s.cluster, s.err = m.streamStatus(ctx, name)
		})
	}
	var region *wire.RegionStatus
	if m.region != nil {
		wg.Go(func() {
			rs := m.region.Status(ctx)
			region = &rs
		})
	}
	var used uint64
	var limit int64
	var storageErr error
	wg.Go(func() { used, limit, storageErr = m.storage(ctx) })
	wg.Wait()

	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for k, name := range names {
		s := samples[k]
		if s.err != nil {
			c.failed("stream info", s.err)
			gauge(descStreamInfo, 1, name, strconv.Itoa(k), "") // no answer: no leader this node can reach
			continue
		}
		st := s.status
		if e := c.elections; e != nil {
			e.observe(name, st.Leader, s.cluster.leaderSince)
		}
		gauge(descStreamInfo, 1, name, strconv.Itoa(k), st.Leader)
		counts := replicaCounts(st)
		for i, state := range replicaStates {
			gauge(descStreamReplicas, float64(counts[i]), name, state)
		}
		gauge(descStreamBytes, float64(st.Bytes), name)
		gauge(descStreamMessages, float64(st.Messages), name)
		if st.MaxBytes > 0 {
			gauge(descStreamMaxBytes, float64(st.MaxBytes), name)
		}
	}
	if storageErr != nil {
		c.failed("storage", storageErr)
	} else {
		gauge(descStorageBytes, float64(used))
		if limit > 0 {
			gauge(descStorageLimit, float64(limit))
		}
	}
	if e := c.elections; e != nil {
		for _, name := range names {
			ch <- prometheus.MustNewConstMetric(descLeaderChanges, prometheus.CounterValue, float64(e.count(name)), name)
		}
	}
	now := time.Now()
	for k, st := range m.stores.All() {
		if at := st.SnapshotAt(); k < len(names) && !at.IsZero() {
			gauge(descSnapshotAge, now.Sub(at).Seconds(), names[k])
		}
	}
	if region != nil && region.Mirror != nil && region.Mirror.Lag != nil {
		gauge(descMirrorLag, float64(*region.Mirror.Lag), region.Region)
	}
	ch <- prometheus.MustNewConstMetric(descCollectErrors, prometheus.CounterValue, float64(c.errors.Load()))
}

// failed counts a request of a scrape that failed; the log has it at
// debug (a scrape every 15 s during an outage would flood it otherwise).
func (c *streamCollector) failed(what string, err error) {
	c.errors.Add(1)
	c.m.Logger.Debug("metrics: "+what, "err", err)
}

// replicaCounts counts st's replicas in replicaStates' order: the leader is
// current, each follower by its State (jetstream.ReplicaState, the bound
// /readyz keeps).
func replicaCounts(st wire.StreamStatus) [3]int {
	var n [3]int
	if st.Leader != "" {
		n[0]++
	}
	for _, p := range st.Followers {
		if i := slices.Index(replicaStates, p.State); i >= 0 {
			n[i]++
		}
	}
	return n
}

// sessionStreams are the streams the Stores follow, by shard: every
// shard's, or in a region the one the record says.
func (m *Node) sessionStreams() []string {
	cfg := m.streamConfig()
	out := make([]string, m.shardMap().Streams())
	for k := range out {
		out[k] = cfg.Shard(k).Stream
	}
	return out
}

// storage is JetStream's file storage in use and its limit (0: none): the
// embedded server's own (what --max-file-store caps), or with --nats-url
// the account's.
func (m *Node) storage(ctx context.Context) (used uint64, limit int64, err error) {
	if m.server != nil {
		ns := m.server.NATS()
		if ns == nil {
			return 0, 0, errors.New("the embedded server has stopped")
		}
		jsz, err := ns.Jsz(nil) // local: no request
		if err != nil {
			return 0, 0, err
		}
		return jsz.Store, jsz.Config.MaxStore, nil
	}
	ai, err := m.conn.JS.AccountInfo(ctx)
	if err != nil {
		return 0, 0, err
	}
	return ai.Store, ai.Limits.MaxStore, nil
}

// leaderElected is the subject prefix of JetStream's advisory that a
// stream has elected a leader (the stream's name follows it).
const leaderElected = "$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED."

// elections counts a stream's leader elections. JetStream announces each
// with an advisory, but only the new leader's server publishes it, only if
// it knows of a subscriber at that instant, and core NATS delivers it at
// most once: a node whose interest has not reached that server over the
// routes yet, or whose route to it is down (reconnecting under load), never
// hears of the election (a CI run's TestClusterMetrics: n2 never counted a
// step-down n1 and n3 counted). So each scrape's stream info (leader, and
// since when it leads) is compared with the last leadership counted: one
// no advisory announced is counted then. What it cannot see is an election
// both missed and superseded between two scrapes.
//
// pi-node's own connection may subscribe: with the embedded server it has
// every right; with --nats-url its user needs to subscribe to
// $JS.EVENT.ADVISORY.> (or only the scrapes count).
type elections struct {
	sub   *nats.Subscription
	start time.Time // elections of leaderships begun before are not counted
	mu    sync.Mutex
	by    map[string]*streamElections
}

// streamElections is one stream's count and the leadership it last
// counted (or found leading before the start).
type streamElections struct {
	n      uint64
	leader string
	since  time.Time // the advisory's time, or the leader's own since
	// polled: the leadership was found by a scrape, its advisory not
	// heard (yet): the next one naming the same leader is taken for it.
	polled bool
}

// advisory is what elections reads of a leader-elected advisory.
type advisory struct {
	Leader string    `json:"leader"`
	Time   time.Time `json:"timestamp"`
}

func watchElections(nc *nats.Conn) (*elections, error) {
	e := &elections{start: time.Now(), by: map[string]*streamElections{}}
	sub, err := nc.Subscribe(leaderElected+"*", func(msg *nats.Msg) {
		var adv advisory
		_ = json.Unmarshal(msg.Data, &adv) // counted even unreadable: an election it is
		e.heard(strings.TrimPrefix(msg.Subject, leaderElected), adv)
	})
	if err != nil {
		return nil, err
	}
	e.sub = sub
	// The local server has the interest once the node is ready (the
	// routes carry it on from there).
	if err := nc.FlushTimeout(5 * time.Second); err != nil {
		_ = sub.Unsubscribe()
		return nil, err
	}
	return e, nil
}

func (e *elections) stream(name string) *streamElections {
	s := e.by[name]
	if s == nil {
		s = &streamElections{}
		e.by[name] = s
	}
	return s
}

// heard counts an advisory, unless it announces the leadership a scrape
// already counted.
func (e *elections) heard(stream string, adv advisory) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.stream(stream)
	if s.polled && adv.Leader != "" && adv.Leader == s.leader {
		s.polled = false // since stays the leader's: a later re-election differs from it
		return
	}
	s.n++
	s.leader, s.since, s.polled = adv.Leader, adv.Time, false
}

// observe compares the leadership a scrape found (leader leading since
// since, by its server's clock) with the last one counted, and counts it
// if no advisory announced it. The advisory of an election is sent after
// the leader's since is set, so an advisory's time is never before the
// since of the leadership it announced.
func (e *elections) observe(stream, leader string, since time.Time) {
	if leader == "" || since.IsZero() {
		return // no leader, or one server: no elections to tell apart
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.stream(stream)
	if s.leader == leader && !since.After(s.since) {
		return // counted already
	}
	if since.After(e.start) {
		s.n++
	}
	s.leader, s.since, s.polled = leader, since, true
}

func (e *elections) count(stream string) uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s := e.by[stream]; s != nil {
		return s.n
	}
	return 0
}
