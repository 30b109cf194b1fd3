//go:build linux

package jepsen

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// Generous bounds for a machine shared with other tests: they only cap how
// long a broken cluster takes to fail.
const readyTimeout = 60 * time.Second

// The cluster runs secured as docs/SECURITY.md says (its listeners are
// beyond loopback in namespace mode, where pi-node refuses to start
// otherwise): startCluster runs `pi-ctl gen-secrets`, the HTTP clients use
// its admin token and the NATS clients its worker (client role), over
// routes with mutual TLS.
var (
	httpToken    string
	natsUser     = "worker"
	natsPassword string
)

// piNode is one pi-node process of the cluster.
type piNode struct {
	*proctest.Proc
	idx     int
	name    string // --node-name, also its JetStream server name
	base    string // http://addr:port
	natsURL string
}

// startCluster starts three pi-nodes forming an embedded JetStream cluster
// (R3, --sync always), each in its namespace when net has them, and waits
// until every one is ready.
func startCluster(t *testing.T, net *network, n int) []*piNode {
	t.Helper()
	httpPort, clientPort, clusterPort := make([]int, n), make([]int, n), make([]int, n)
	if net.ns {
		for i := range n { // an address each: the same ports everywhere
			httpPort[i], clientPort[i], clusterPort[i] = 8080, 4222, 6222
		}
	} else {
		ports := testutil.FreePorts(t, 3*n)
		for i := range n {
			httpPort[i], clientPort[i], clusterPort[i] = ports[3*i], ports[3*i+1], ports[3*i+2]
		}
	}
	routes := make([]string, n)
	for i := range n {
		routes[i] = fmt.Sprintf("nats-route://%s:%d", net.addr(i), clusterPort[i])
	}
	names := make([]string, n)
	for i := range n {
		names[i] = net.addr(i)
	}
	sec := filepath.Join(t.TempDir(), "secrets")
	if out, err := exec.Command(piCtlBin, "gen-secrets", "--out", sec, "--names", strings.Join(names, ",")).CombinedOutput(); err != nil {
		t.Fatalf("pi-ctl gen-secrets: %v\n%s", err, out)
	}
	httpToken, natsPassword = readSecret(t, sec, "http-admin.token"), readSecret(t, sec, "nats-worker.password")
	file := func(name string) string { return filepath.Join(sec, name) }
	nodes := make([]*piNode, n)
	for i := range n {
		name, addr := fmt.Sprintf("n%d", i+1), net.addr(i)
		dataDir := t.TempDir() // before proctest.New: the dir must outlive the process
		nd := &piNode{idx: i, name: name,
			base:    fmt.Sprintf("http://%s:%d", addr, httpPort[i]),
			natsURL: fmt.Sprintf("nats://%s:%d", addr, clientPort[i])}
		bin, args := net.command(i, piNodeBin,
			"--node-name", name,
			"--cluster-name", "pi-jepsen",
			"--cluster-listen", fmt.Sprintf("%s:%d", addr, clusterPort[i]),
			"--routes", strings.Join(routes, ","),
			"--replicas", "3",
			"--sync", "always",
			"--data-dir", dataDir,
			"--client-listen", fmt.Sprintf("%s:%d", addr, clientPort[i]),
			"--http-listen", fmt.Sprintf("%s:%d", addr, httpPort[i]),
			"--http-tokens", file("http-tokens"),
			"--nats-auth", file("nats-auth.json"),
			"--cluster-tls-cert", file("node.pem"), "--cluster-tls-key", file("node-key.pem"), "--cluster-tls-ca", file("ca.pem"),
			// Below the clients' timeout, so a read with minSeq that
			// cannot be served answers 504 rather than leaving the
			// client guessing.
			"--min-seq-timeout", "2s",
			"--shutdown-grace", "10s",
		)
		nd.Proc = proctest.New(t, name, bin, args...)
		nodes[i] = nd
	}
	for _, nd := range nodes {
		nd.Start(t)
	}
	for _, nd := range nodes {
		if _, err := nd.waitReady(readyTimeout); err != nil {
			t.Fatal(err)
		}
	}
	return nodes
}

func readSecret(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// waitReady polls /readyz until it answers 200, giving up early if the
// process exits. It does not fail the test: the nemesis calls it from the
// test's goroutine, but a node slow to come back is a finding to report
// beside the others, not a reason to drop the history.
func (nd *piNode) waitReady(timeout time.Duration) (time.Duration, error) {
	return testutil.Poll(timeout, func() error {
		if !nd.Running() {
			return fmt.Errorf("%s /readyz: process exited: %v", nd.name, nd.ExitErr())
		}
		if err := proctest.Ready(nd.base); err != nil {
			return fmt.Errorf("%s /readyz: %w", nd.name, err)
		}
		return nil
	})
}

// probe is for status polls and the final reads.
var probe = &http.Client{Timeout: 5 * time.Second, Transport: bearer{}}

// bearer sends the cluster's token with every request, so that the
// clients can use proctest.Do as it is.
type bearer struct{}

func (bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+httpToken)
	return http.DefaultTransport.RoundTrip(r)
}

// nodeStatus is the part of /v1/status the test reads.
type nodeStatus struct {
	Node  string `json:"node"`
	Store struct {
		Applied    uint64 `json:"applied"`
		LogLastSeq uint64 `json:"logLastSeq"`
		// With --shards (PI_NODE_SHARDS): each shard's Store.
		Shards []struct {
			Applied    uint64 `json:"applied"`
			LogLastSeq uint64 `json:"logLastSeq"`
			// Holding: "elsewhere" on a node that does not hold the
			// shard (--hold, 2 by default on a sharded store).
			Holding string `json:"holding"`
		} `json:"shards"`
	} `json:"store"`
	JetStream struct {
		Error  string `json:"error"`
		Stream struct {
			Leader  string `json:"leader"`
			LastSeq uint64 `json:"lastSeq"`
		} `json:"stream"`
		Shards []struct {
			LastSeq uint64 `json:"lastSeq"`
		} `json:"shards"`
	} `json:"jetstream"`
}

// logEnds is the log's end by shard as this node knows it (qualified):
// the stream's last sequence and what its Store was told.
func (s nodeStatus) logEnds() []uint64 {
	if len(s.JetStream.Shards) == 0 {
		return []uint64{max(s.JetStream.Stream.LastSeq, s.Store.LogLastSeq)}
	}
	out := make([]uint64, len(s.JetStream.Shards))
	for k, sh := range s.JetStream.Shards {
		out[k] = shard.Seq(k, sh.LastSeq)
		if k < len(s.Store.Shards) {
			out[k] = max(out[k], s.Store.Shards[k].LogLastSeq)
		}
	}
	return out
}

// appliedAt is the node's Store position in seq's shard; seq itself for a
// shard it does not hold (its reads there are the log's).
func (s nodeStatus) appliedAt(seq uint64) uint64 {
	if k := shard.OfSeq(seq); k < len(s.Store.Shards) && s.Store.Shards[k].Holding == "elsewhere" {
		return seq
	}
	if k := shard.OfSeq(seq); k < len(s.Store.Shards) {
		return s.Store.Shards[k].Applied
	}
	return s.Store.Applied
}

func (nd *piNode) status() (nodeStatus, error) {
	var s nodeStatus
	st, _, body, err := proctest.Do(context.Background(), probe, http.MethodGet, nd.base+"/v1/status", nil)
	switch {
	case err != nil:
		return s, err
	case st != http.StatusOK:
		return s, fmt.Errorf("%s status: %d %s", nd.name, st, body)
	}
	if err := json.Unmarshal(body, &s); err != nil {
		return s, err
	}
	if s.JetStream.Error != "" {
		return s, fmt.Errorf("%s status: jetstream: %s", nd.name, s.JetStream.Error)
	}
	return s, nil
}

// leader asks the nodes in turn which node leads the stream, waiting a
// while for an election in progress.
func leader(nodes []*piNode) (*piNode, error) {
	var l *piNode
	_, err := testutil.Poll(15*time.Second, func() error {
		var err error
		l, err = leaderOnce(nodes)
		return err
	})
	return l, err
}

func leaderOnce(nodes []*piNode) (*piNode, error) {
	var last error
	for _, nd := range nodes {
		if !nd.Running() {
			continue
		}
		st, err := nd.status()
		if err != nil {
			last = err
			continue
		}
		for _, c := range nodes {
			if c.name == st.JetStream.Stream.Leader {
				return c, nil
			}
		}
		last = fmt.Errorf("%s names stream leader %q", nd.name, st.JetStream.Stream.Leader)
	}
	return nil, fmt.Errorf("no stream leader: %v", last)
}
