//go:build linux

package cluster

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestClusterMetrics: on every node of a 3-node embedded cluster, once it
// has settled, each session stream (every shard's, with PI_NODE_SHARDS)
// has its three replicas current, and the leader /metrics names is the
// one /v1/status names; a leader step-down is counted as an election on
// every node, and the leader label follows it.
func TestClusterMetrics(t *testing.T) {
	skipShort(t)
	t.Parallel()
	nodes := startEmbeddedCluster(t, 3)
	var streams []string
	leaders := func() (map[string]string, error) { // by stream, as every node agrees
		out := map[string]string{}
		for _, nd := range nodes {
			var st wire.StatusReply
			if err := proctest.GetJSON(nd.base+"/v1/status", &st); err != nil {
				return nil, err
			}
			if st.Cluster == nil {
				return nil, fmt.Errorf("%s: /v1/status without its cluster", nd.name)
			}
			streams = streams[:0]
			for _, ss := range st.Cluster.Streams { // every shard's stream
				streams = append(streams, ss.Name)
				if l, ok := out[ss.Name]; ss.Leader == "" || ok && l != ss.Leader {
					return nil, fmt.Errorf("%s: stream %s led by %q, another node says %q", nd.name, ss.Name, ss.Leader, l)
				}
				out[ss.Name] = ss.Leader
			}
		}
		return out, nil
	}
	// settled checks every node's metrics against the leaders of
	// /v1/status; changes are the elections counted, by node and stream.
	changes := map[string]map[string]float64{}
	settled := func() error {
		lead, err := leaders()
		if err != nil {
			return err
		}
		for _, nd := range nodes {
			got, err := proctest.Metrics(nd.base)
			if err != nil {
				return fmt.Errorf("%s: %w", nd.name, err)
			}
			changes[nd.name] = map[string]float64{}
			for k, s := range streams {
				want := map[string]float64{
					proctest.Series("pi_stream_info", "leader", lead[s], "shard", strconv.Itoa(k), "stream", s): 1,
					proctest.Series("pi_stream_replicas", "state", "current", "stream", s):                      3,
					proctest.Series("pi_stream_replicas", "state", "lagging", "stream", s):                      0,
					proctest.Series("pi_stream_replicas", "state", "offline", "stream", s):                      0,
				}
				for series, v := range want {
					if g, ok := got[series]; !ok || g != v {
						return fmt.Errorf("%s: %s = %v (present %v), want %v", nd.name, series, g, ok, v)
					}
				}
				n, ok := got[proctest.Series("pi_stream_leader_changes_total", "stream", s)]
				if !ok {
					return fmt.Errorf("%s: no pi_stream_leader_changes_total for %s", nd.name, s)
				}
				changes[nd.name][s] = n
			}
		}
		return nil
	}
	testutil.WaitFor(t, readyTimeout, testutil.Awaiting("every node's metrics to agree with /v1/status, every replica current", settled))
	before := map[string]map[string]float64{}
	for n, c := range changes {
		before[n] = c
	}
	stream := streams[0]
	lead, err := leaders()
	if err != nil {
		t.Fatal(err)
	}
	old := lead[stream]

	nc, err := nats.Connect(nodes[0].natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+stream, nil, 10*time.Second); err != nil {
		t.Fatalf("step down the leader %s of %s: %v", old, stream, err)
	}
	testutil.WaitFor(t, readyTimeout, testutil.Awaiting("the election to be counted on every node", func() error {
		if err := settled(); err != nil {
			return err
		}
		// The leader may be old again: a step-down elects among the
		// current replicas, and over shards the nodes' leader balancing
		// may move it back; an election happened either way, and is what
		// every node must count.
		for n, c := range changes {
			if c[stream] <= before[n][stream] {
				return fmt.Errorf("%s: pi_stream_leader_changes_total{stream=%q} still %v", n, stream, c[stream])
			}
		}
		return nil
	}))
	for _, nd := range nodes {
		t.Logf("%s: elections of %s counted before the step-down %v, after %v", nd.name, stream, before[nd.name][stream], changes[nd.name][stream])
	}
}
