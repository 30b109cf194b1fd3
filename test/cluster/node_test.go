//go:build linux

package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/testutil"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Generous bounds: the machine has two cores and other tests run beside
// these. They only cap how long a broken cluster takes to fail.
const (
	readyTimeout = 60 * time.Second
	stopTimeout  = 30 * time.Second
)

// piNode is one pi-node process and where it serves.
type piNode struct {
	*proctest.Proc
	name    string // --node-name: also the JetStream server name
	base    string // http://127.0.0.1:port
	natsURL string // its embedded server's client URL ("" in external mode)
	route   string // its nats-route:// URL (embedded cluster)
	dataDir string
}

// startEmbeddedCluster starts n pi-nodes forming one embedded JetStream
// cluster with --replicas 3, all at once (a member waits for a meta leader,
// which needs a majority), and waits until every /readyz answers 200.
func startEmbeddedCluster(t *testing.T, n int) []*piNode {
	t.Helper()
	return startEmbeddedClusterWith(t, n)
}

// startEmbeddedClusterWith is startEmbeddedCluster with extra flags for
// every node.
func startEmbeddedClusterWith(t *testing.T, n int, extra ...string) []*piNode {
	t.Helper()
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = t.TempDir() // before proctest.New: the dir must outlive the process
	}
	nodes := embeddedClusterOn(t, dirs, testutil.FreePorts(t, 3*n), extra...)
	for _, nd := range nodes {
		nd.Start(t)
	}
	for _, nd := range nodes {
		nd.waitReady(t)
	}
	return nodes
}

// embeddedClusterOn is a cluster of len(dataDirs) pi-nodes on those data
// directories and ports (three a node: HTTP, route, client), not started:
// a test that restarts a cluster with other flags makes it again on the
// same directories and ports.
func embeddedClusterOn(t *testing.T, dataDirs []string, ports []int, extra ...string) []*piNode {
	t.Helper()
	n := len(dataDirs)
	routes := make([]string, n)
	for i := range n {
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", ports[3*i+1])
	}
	nodes := make([]*piNode, n)
	for i := range n {
		name := fmt.Sprintf("n%d", i+1)
		dataDir := dataDirs[i]
		httpPort, clusterPort, clientPort := ports[3*i], ports[3*i+1], ports[3*i+2]
		nd := &piNode{name: name, base: fmt.Sprintf("http://127.0.0.1:%d", httpPort),
			natsURL: fmt.Sprintf("nats://127.0.0.1:%d", clientPort), route: routes[i], dataDir: dataDir}
		nd.Proc = proctest.New(t, name, piNodeBin, append([]string{
			"--node-name", name,
			"--cluster-name", "pi-test",
			"--cluster-listen", fmt.Sprintf("127.0.0.1:%d", clusterPort),
			"--routes", strings.Join(routes, ","),
			"--replicas", "3",
			"--data-dir", dataDir,
			"--client-listen", fmt.Sprintf("127.0.0.1:%d", clientPort),
			"--http-listen", fmt.Sprintf("127.0.0.1:%d", httpPort),
			// Above 5 s: net/http's Shutdown waits up to 5 s for a client
			// connection that was opened but never used (a transport's
			// spare dial), which a 5 s grace would turn into an error exit.
			"--shutdown-grace", "10s",
		}, extra...)...)
		nodes[i] = nd
	}
	return nodes
}

// waitReady polls /readyz until it answers 200, failing early if the
// process exits.
func (nd *piNode) waitReady(t *testing.T) time.Duration {
	t.Helper()
	return testutil.WaitFor(t, readyTimeout, func() error {
		if !nd.Running() {
			return fmt.Errorf("%s /readyz: process exited: %v", nd.name, nd.ExitErr())
		}
		if err := proctest.Ready(nd.base); err != nil {
			return fmt.Errorf("%s /readyz: %w", nd.name, err)
		}
		return nil
	})
}

// byName returns the node called name, or nil.
func byName(nodes []*piNode, name string) *piNode {
	for _, nd := range nodes {
		if nd.name == name {
			return nd
		}
	}
	return nil
}

// natsServer is one separately started nats-server process.
type natsServer struct {
	*proctest.Proc
	name string
	url  string
}

// startNATSCluster starts n nats-server processes clustered on loopback,
// each from a generated config file, and waits until JetStream answers
// $JS.API.INFO on every one of them (a meta leader exists and every server
// knows it).
func startNATSCluster(t *testing.T, n int) []*natsServer {
	t.Helper()
	ports := testutil.FreePorts(t, 2*n)
	routes := make([]string, n)
	for i := range n {
		routes[i] = strconv.Quote(fmt.Sprintf("nats-route://127.0.0.1:%d", ports[2*i+1]))
	}
	servers := make([]*natsServer, n)
	for i := range n {
		name := fmt.Sprintf("ext%d", i+1)
		dir := t.TempDir()
		conf := fmt.Sprintf(`server_name: %s
listen: "127.0.0.1:%d"
max_payload: 8MB
jetstream {
  store_dir: %q
  max_file_store: 1GB
  max_memory_store: 64MB
}
cluster {
  name: ext
  listen: "127.0.0.1:%d"
  routes: [%s]
}
`, name, ports[2*i], filepath.Join(dir, "js"), ports[2*i+1], strings.Join(routes, ", "))
		confPath := filepath.Join(dir, "nats.conf")
		if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		s := &natsServer{name: name, url: fmt.Sprintf("nats://127.0.0.1:%d", ports[2*i])}
		s.Proc = proctest.New(t, name, natsServerBin, "-c", confPath)
		servers[i] = s
	}
	for _, s := range servers {
		s.Start(t)
	}
	for _, s := range servers {
		testutil.WaitFor(t, readyTimeout, func() error {
			if !s.Running() {
				return fmt.Errorf("%s JetStream meta leader: process exited: %v", s.name, s.ExitErr())
			}
			if err := jetStreamInfo(s.url); err != nil {
				return fmt.Errorf("%s JetStream meta leader: %w", s.name, err)
			}
			return nil
		})
	}
	return servers
}

// jetStreamInfo asks one server for $JS.API.INFO (account info), which
// fails until the cluster has a meta leader.
func jetStreamInfo(url string) error {
	nc, err := nats.Connect(url, nats.Timeout(time.Second), nats.NoReconnect())
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = js.AccountInfo(ctx)
	return err
}

// startExternalNode starts a pi-node connected to an external cluster.
func startExternalNode(t *testing.T, name, natsURL string) *piNode {
	t.Helper()
	port := testutil.FreePorts(t, 1)[0]
	nd := &piNode{name: name, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	nd.Proc = proctest.New(t, name, piNodeBin,
		"--node-name", name,
		"--nats-url", natsURL,
		// Its own: the default (./pi-data) would be shared by every node
		// of the test, and by every run.
		"--data-dir", t.TempDir(),
		"--replicas", "3",
		"--http-listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--shutdown-grace", "10s",
	)
	nd.Start(t)
	return nd
}

// piCtlStatus runs pi-ctl status against a node's HTTP API and returns
// what it prints, one line per replica of the stream among it.
func piCtlStatus(t *testing.T, base string) string {
	t.Helper()
	return piCtlOut(t, "status", "--http", base)
}

// replicaRow returns the row of pi-ctl status's replica table for node.
func replicaRow(out, node string) string {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == node {
			return line
		}
	}
	return ""
}
