package node

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestStreamMetrics: a node with two shards exports each shard stream's
// leader (the one /v1/status names), replicas, size and snapshot age, the
// server's storage against --max-file-store, and counts the leader
// elections JetStream announces.
func TestStreamMetrics(t *testing.T) {
	const limit = 256 << 20
	m, logs := startNode(t, func(c *Config) { c.Shards, c.MaxFileStore = 2, limit })
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	base := "http://" + m.HTTPAddr
	createSession(t, base)
	js := nodeStatus(t, base)
	if len(js.Shards) != 2 {
		t.Fatalf("/v1/status lists %d shard streams, want 2: %+v", len(js.Shards), js)
	}
	got := scrape(t, base)
	for k, ss := range js.Shards {
		if ss.Leader == "" {
			t.Fatalf("shard %d: no leader in /v1/status", k)
		}
		want := map[string]float64{
			proctest.Series("pi_stream_info", "leader", ss.Leader, "shard", strconv.Itoa(k), "stream", ss.Name): 1,
			proctest.Series("pi_stream_replicas", "state", "current", "stream", ss.Name):                        1,
			proctest.Series("pi_stream_replicas", "state", "lagging", "stream", ss.Name):                        0,
			proctest.Series("pi_stream_replicas", "state", "offline", "stream", ss.Name):                        0,
			proctest.Series("pi_stream_messages", "stream", ss.Name):                                            float64(ss.Messages),
			proctest.Series("pi_stream_bytes", "stream", ss.Name):                                               float64(ss.Bytes),
			proctest.Series("pi_stream_leader_changes_total", "stream", ss.Name):                                0, // one server elects nobody
		}
		for s, v := range want {
			if g, ok := got[s]; !ok || g != v {
				t.Errorf("%s = %v (present %v), want %v", s, g, ok, v)
			}
		}
		age, ok := got[proctest.Series("pi_store_snapshot_age_seconds", "stream", ss.Name)]
		if !ok || age < 0 || age > 60 {
			t.Errorf("shard %d: pi_store_snapshot_age_seconds %v (present %v), want the seconds since the start", k, age, ok)
		}
		if _, ok := got[proctest.Series("pi_stream_max_bytes", "stream", ss.Name)]; ok {
			t.Errorf("pi_stream_max_bytes of %s, which has no byte limit", ss.Name)
		}
	}
	if g := got["pi_jetstream_storage_limit_bytes"]; g != limit {
		t.Errorf("pi_jetstream_storage_limit_bytes %v, want --max-file-store %d", g, limit)
	}
	if g, ok := got["pi_jetstream_storage_bytes"]; !ok || g <= 0 || g > limit {
		t.Errorf("pi_jetstream_storage_bytes %v (present %v): the streams hold something", g, ok)
	}
	if g, ok := got["pi_metrics_collect_errors_total"]; !ok || g != 0 {
		t.Errorf("pi_metrics_collect_errors_total %v (present %v), want 0", g, ok)
	}
	for s := range got {
		if strings.HasPrefix(s, "pi_region_mirror_lag") {
			t.Errorf("%s outside region mode", s)
		}
	}

	// The advisory of an election (as a cluster's servers publish it) is
	// counted for its stream.
	name := js.Shards[1].Name
	if err := m.conn.NC.Publish(leaderElected+name, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	changes := proctest.Series("pi_stream_leader_changes_total", "stream", name)
	testutil.WaitFor(t, 10*time.Second, func() error {
		if g := scrape(t, base)[changes]; g != 1 {
			return fmt.Errorf("%s = %v after one advisory", changes, g)
		}
		return nil
	})
}

// TestStreamMetricsDegraded: with snapshots off there is no snapshot age;
// a stream that does not answer (here: deleted) leaves its series out of
// the scrape, which still succeeds, with the stream leaderless and the
// failure counted.
func TestStreamMetricsDegraded(t *testing.T) {
	m, _ := startNode(t, func(c *Config) { c.SnapshotInterval = 0 })
	t.Cleanup(func() { _ = m.Close(context.Background()) }) // the Store's last snapshot fails without its stream: not this test's
	base := "http://" + m.HTTPAddr
	name := m.Config.Stream
	got := scrape(t, base)
	if _, ok := got[proctest.Series("pi_stream_info", "leader", "t1", "shard", "0", "stream", name)]; !ok {
		t.Fatalf("no pi_stream_info for %s:\n%v", name, got)
	}
	for s := range got {
		if strings.HasPrefix(s, "pi_store_snapshot_age_seconds") {
			t.Errorf("%s with --snapshot-interval 0", s)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.conn.JS.DeleteStream(ctx, name); err != nil {
		t.Fatal(err)
	}
	got = scrape(t, base)
	if g := got[proctest.Series("pi_stream_info", "leader", "", "shard", "0", "stream", name)]; g != 1 {
		t.Errorf("a stream that does not answer: pi_stream_info with no leader %v, want 1:\n%v", g, got)
	}
	for s := range got {
		if strings.HasPrefix(s, "pi_stream_replicas") || strings.HasPrefix(s, "pi_stream_bytes") {
			t.Errorf("%s of a stream that did not answer", s)
		}
	}
	if g := got["pi_metrics_collect_errors_total"]; g < 1 {
		t.Errorf("pi_metrics_collect_errors_total %v after a failed stream info", g)
	}
	if _, ok := got["pi_jetstream_storage_bytes"]; !ok {
		t.Error("pi_jetstream_storage_bytes left out with the stream: it does not depend on it")
	}
}

// TestReplicaCounts: the leader is current, each follower counts by the
// state the status gives it (jetstream.ReplicaState: TestReplicaState).
func TestReplicaCounts(t *testing.T) {
	st := wire.StreamStatus{Leader: "n1", Followers: []wire.PeerStatus{
		{Name: "n2", State: "current"},
		{Name: "n3", Lag: 4, State: "current"},
		{Name: "n4", State: "lagging"},
		{Name: "n5", Offline: true, State: "offline"},
		{Name: "n6", Lag: 101, State: "lagging"},
	}}
	if got := replicaCounts(st); got != [3]int{3, 2, 1} {
		t.Errorf("replicaCounts %v, want current 3, lagging 2, offline 1", got)
	}
	if got := replicaCounts(wire.StreamStatus{}); got != [3]int{} {
		t.Errorf("no leader, no followers: %v", got)
	}
}

// nodeStatus is the jetstream part of /v1/status.
func nodeStatus(t *testing.T, base string) wire.JetStreamStatus {
	t.Helper()
	code, body := httpGet(t, base+"/v1/status")
	var st struct {
		JetStream wire.JetStreamStatus `json:"jetstream"`
	}
	if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil {
		t.Fatalf("/v1/status: %d %v %s", code, err, body)
	}
	return st.JetStream
}

// scrape reads base's /metrics (proctest.Metrics: keys by proctest.Series).
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	got, err := proctest.Metrics(base)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestElectionsMissedAdvisory: a leadership a scrape finds is counted once,
// whether its advisory came before, after or never; one begun before the
// node started is not.
func TestElectionsMissedAdvisory(t *testing.T) {
	start := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return start.Add(time.Duration(s) * time.Second) }
	e := &elections{start: start, by: map[string]*streamElections{}}
	steps := []struct {
		what string
		do   func()
		want uint64
	}{
		{"led by n1 before the start", func() { e.observe("S", "n1", at(-5)) }, 0},
		{"its advisory, in flight at the start", func() { e.heard("S", advisory{Leader: "n1", Time: at(-5)}) }, 0},
		{"n2 elected, heard", func() { e.heard("S", advisory{Leader: "n2", Time: at(10)}) }, 1},
		{"the scrape finds n2", func() { e.observe("S", "n2", at(10).Add(-time.Millisecond)) }, 1},
		{"n3 elected, advisory missed: the scrape counts it", func() { e.observe("S", "n3", at(20)) }, 2},
		{"scraped again", func() { e.observe("S", "n3", at(20)) }, 2},
		{"n1 elected, scraped before its advisory", func() { e.observe("S", "n1", at(30)) }, 3},
		{"its advisory", func() { e.heard("S", advisory{Leader: "n1", Time: at(30).Add(time.Millisecond)}) }, 3},
		{"n1 elected again, advisory missed", func() { e.observe("S", "n1", at(40)) }, 4},
		{"no leader", func() { e.observe("S", "", time.Time{}) }, 4},
		{"one server: no since", func() { e.observe("S", "n2", time.Time{}) }, 4},
		{"an unreadable advisory", func() { e.heard("S", advisory{}) }, 5},
	}
	for _, s := range steps {
		s.do()
		if got := e.count("S"); got != s.want {
			t.Fatalf("%s: %d elections counted, want %d", s.what, got, s.want)
		}
	}
	if got := e.count("other"); got != 0 {
		t.Errorf("another stream: %d elections", got)
	}
}
