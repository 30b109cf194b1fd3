//go:build linux

package region

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// Generous bounds: the machine may have two cores and other suites running
// beside this one. They only cap how long a broken deployment takes to fail.
const (
	readyTimeout = 90 * time.Second
)

// node is one pi-node process of a region.
type node struct {
	*proctest.Proc
	name    string
	region  string
	base    string // http://127.0.0.1:port
	natsURL string // its embedded server's client URL
	dataDir string
}

// topology is two regions of pi-nodes and the tie-breaker, a nats-server.
type topology struct {
	tiebreaker *proctest.Proc
	tbURL      string
	regions    map[string][]*node
}

// nodesPerRegion is 1 unless PI_REGION_NODES asks for 3 (R3 streams).
func nodesPerRegion(t *testing.T) int {
	switch v := os.Getenv("PI_REGION_NODES"); v {
	case "", "1":
		return 1
	case "3":
		return 3
	default:
		t.Fatalf("PI_REGION_NODES=%q: want 1 or 3", v)
		return 0
	}
}

// shardsPerRegion is 1 unless PI_REGION_SHARDS asks for more: every
// pi-node gets --shards, every region's copy that many streams.
func shardsPerRegion(t *testing.T) int {
	t.Helper()
	n, err := regionShards()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// regionShards reads PI_REGION_SHARDS.
func regionShards() (int, error) {
	v := os.Getenv("PI_REGION_SHARDS")
	if v == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 16 {
		return 0, fmt.Errorf("PI_REGION_SHARDS=%q: want 1 to 16", v)
	}
	return n, nil
}

// startTopology starts regions A and B with n pi-nodes each (home A),
// each with the flags extra as well, and the tie-breaker T, all at once —
// the JetStream meta group needs a majority of all of them — and waits
// until every node is ready.
func startTopology(t *testing.T, n int, extra ...string) *topology {
	t.Helper()
	type ports struct{ http, client, route, gateway int }
	regions := []string{"A", "B"}
	pp := map[string][]ports{}
	gateways := map[string][]string{}
	for _, r := range regions {
		for range n {
			p := testutil.FreePorts(t, 4)
			pp[r] = append(pp[r], ports{p[0], p[1], p[2], p[3]})
			gateways[r] = append(gateways[r], fmt.Sprintf("nats://127.0.0.1:%d", p[3]))
		}
	}
	tp := testutil.FreePorts(t, 3)
	gateways["T"] = []string{fmt.Sprintf("nats://127.0.0.1:%d", tp[2])}
	var spec []string
	for _, r := range []string{"A", "B", "T"} {
		spec = append(spec, r+"="+strings.Join(gateways[r], ","))
	}

	top := &topology{regions: map[string][]*node{}, tbURL: fmt.Sprintf("nats://127.0.0.1:%d", tp[0])}
	top.tiebreaker = proctest.New(t, "T", natsServerBin, "-c", tiebreakerConfig(t, tp, gateways))
	for _, r := range regions {
		var routes []string
		for _, p := range pp[r] {
			routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p.route))
		}
		for i, p := range pp[r] {
			name := fmt.Sprintf("%s%d", strings.ToLower(r), i+1)
			dataDir := t.TempDir() // before proctest.New: the dir must outlive the process
			nd := &node{name: name, region: r, base: fmt.Sprintf("http://127.0.0.1:%d", p.http),
				natsURL: fmt.Sprintf("nats://127.0.0.1:%d", p.client), dataDir: dataDir}
			args := []string{"--node-name", name,
				"--region", r,
				"--home-region", "A",
				"--tiebreaker", "T",
				"--gateway-listen", fmt.Sprintf("127.0.0.1:%d", p.gateway),
				"--gateways", strings.Join(spec, ";"),
				"--cluster-listen", fmt.Sprintf("127.0.0.1:%d", p.route),
				"--routes", strings.Join(routes, ","),
				"--replicas", strconv.Itoa(n),
				"--data-dir", dataDir,
				"--client-listen", fmt.Sprintf("127.0.0.1:%d", p.client),
				"--http-listen", fmt.Sprintf("127.0.0.1:%d", p.http),
				"--shutdown-grace", "10s",
			}
			if k := shardsPerRegion(t); k > 1 {
				args = append(args, "--shards", strconv.Itoa(k))
			}
			args = append(args, extra...)
			nd.Proc = proctest.New(t, name, piNodeBin, args...)
			top.regions[r] = append(top.regions[r], nd)
		}
	}
	top.tiebreaker.Start(t)
	for _, nd := range top.all() {
		nd.Start(t)
	}
	top.waitReady(t, top.all())
	return top
}

// tiebreakerConfig writes the tie-breaker's nats-server configuration: a
// one-server cluster T (routed to itself: JetStream clusters only over
// routes) with JetStream, joined to A and B by gateways.
func tiebreakerConfig(t *testing.T, p []int, gateways map[string][]string) string {
	t.Helper()
	dir := t.TempDir()
	var remotes []string
	for _, r := range []string{"A", "B"} {
		var urls []string
		for _, u := range gateways[r] {
			urls = append(urls, strconv.Quote(u))
		}
		remotes = append(remotes, fmt.Sprintf("{name: %s, urls: [%s]}", r, strings.Join(urls, ", ")))
	}
	conf := fmt.Sprintf(`server_name: T
listen: "127.0.0.1:%d"
jetstream {
  store_dir: %q
  max_file_store: 256MB
  max_memory_store: 32MB
}
cluster {
  name: T
  listen: "127.0.0.1:%d"
  routes: ["nats-route://127.0.0.1:%d"]
}
gateway {
  name: T
  listen: "127.0.0.1:%d"
  gateways: [%s]
}
`, p[0], filepath.Join(dir, "js"), p[1], p[1], p[2], strings.Join(remotes, ", "))
	path := filepath.Join(dir, "tiebreaker.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func (top *topology) all() []*node {
	return append(append([]*node(nil), top.regions["A"]...), top.regions["B"]...)
}

func (top *topology) bases(region string) []string {
	var out []string
	for _, nd := range top.regions[region] {
		out = append(out, nd.base)
	}
	return out
}

// waitReady polls every node's /readyz until it answers 200, failing early
// if a process exits; it returns when all are ready.
func (top *topology) waitReady(t *testing.T, nodes []*node) time.Duration {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(nodes))
	start := time.Now()
	for i, nd := range nodes {
		wg.Go(func() {
			_, errs[i] = testutil.Poll(readyTimeout, func() error {
				if !nd.Running() {
					return fmt.Errorf("process exited: %v", nd.ExitErr())
				}
				return proctest.Ready(nd.base)
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s /readyz: not within %v: %v", nodes[i].name, readyTimeout, err)
		}
	}
	return time.Since(start)
}

// kill stops every process of a region with SIGKILL: the region is lost.
func (top *topology) kill(region string) {
	var wg sync.WaitGroup
	for _, nd := range top.regions[region] {
		wg.Go(nd.Kill)
	}
	wg.Wait()
}

// restart starts a killed region's nodes again on their data.
func (top *topology) restart(t *testing.T, region string) {
	t.Helper()
	for _, nd := range top.regions[region] {
		nd.Start(t)
	}
}
