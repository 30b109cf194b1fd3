package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/testutil"

	"github.com/nats-io/nats.go"

	"github.com/pifleet/sessionlog/internal/conformance"
	"github.com/pifleet/sessionlog/internal/tree"
)

// startNATSCluster runs three nats-server processes with JetStream as one
// cluster on loopback, and returns their client URLs once JetStream has a
// meta leader (each server answers $JS.API.INFO).
func startNATSCluster(t *testing.T) []string {
	t.Helper()
	bin := builtBinary(t, "nats-server")
	dir := t.TempDir()
	const n = 3
	var clients, routes []string
	var clusterPorts []int
	for range n {
		clients = append(clients, fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t)))
		p := testutil.FreePort(t)
		clusterPorts = append(clusterPorts, p)
		routes = append(routes, fmt.Sprintf("%q", fmt.Sprintf("nats-route://127.0.0.1:%d", p)))
	}
	var urls []string
	for k := range n {
		name := fmt.Sprintf("s%d", k+1)
		conf := fmt.Sprintf(`server_name: %s
listen: %q
jetstream { store_dir: %q }
cluster {
  name: "pi-ctl-test"
  listen: "127.0.0.1:%d"
  routes: [%s]
}
`, name, clients[k], filepath.Join(dir, name), clusterPorts[k], strings.Join(routes, ", "))
		cf := filepath.Join(dir, name+".conf")
		if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		logf, err := os.Create(filepath.Join(dir, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-c", cf)
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := startProcess(cmd); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); logf.Close() })
		urls = append(urls, "nats://"+clients[k])
	}
	for _, u := range urls {
		testutil.WaitFor(t, 30*time.Second, func() error {
			if jetStreamReady(u) {
				return nil
			}
			b, _ := os.ReadFile(filepath.Join(dir, "s1.log"))
			return errors.New("JetStream meta leader seen from " + u + "; s1's log:\n" + string(b))
		})
	}
	return urls
}

// jetStreamReady asks one server for the account's JetStream info, which
// only succeeds once the cluster has elected its meta leader.
func jetStreamReady(url string) bool {
	nc, err := nats.Connect(url, nats.Timeout(time.Second))
	if err != nil {
		return false
	}
	defer nc.Close()
	msg, err := nc.Request("$JS.API.INFO", nil, time.Second)
	if err != nil {
		return false
	}
	var info struct {
		Error *json.RawMessage `json:"error"`
	}
	return json.Unmarshal(msg.Data, &info) == nil && info.Error == nil
}

// TestClusterMinSeq: two pi-nodes on one external three-server JetStream
// cluster, each connected to a different server, stream replicated three
// times. Whatever is written through node A, node B answers identically,
// byte for byte, when asked with the write's lastSeq as --min-seq: no
// polling, no sleeping. The third server, with no pi-node of its own,
// serves the NATS API too (the request reaches a node through the cluster).
func TestClusterMinSeq(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-server NATS cluster and two pi-nodes (-short)")
	}
	urls := startNATSCluster(t)
	a := startNode(t, "a", urls[0], "--replicas", "3")
	b := startNode(t, "b", urls[1], "--replicas", "3")
	viaA := []string{"--http", a.httpURL}
	viaB := []string{"--http", b.httpURL}

	_, vs := v3Vectors(t)
	v := vs[0] // example-auth-salt-debugging: a branch, a label, a name
	for _, x := range vs {
		if x.name == "p08-branching" { // more branches, summaries, several roots
			v = x
		}
	}
	var imp importResult
	mustJSON(t, mustRun(t, withFlags(viaA, "import", v.file, "--json")...), &imp)
	if imp.Result != "ok" {
		t.Fatalf("import through A: %+v", imp)
	}
	same := func(minSeq uint64, args ...string) string {
		t.Helper()
		ms := []string{"--min-seq", jsonNum(minSeq)}
		fromA := mustRun(t, withFlags(append(viaA, ms...), args...)...)
		fromB := mustRun(t, withFlags(append(viaB, ms...), args...)...)
		if fromA != fromB {
			t.Errorf("pi-ctl %s: node B answers differently from A:\n A: %.300s\n B: %.300s", strings.Join(args, " "), fromA, fromB)
		}
		return fromB
	}
	if got := same(imp.LastSeq, "export", v.sid); got != expectedExport(t, v.data) {
		t.Errorf("export through B differs from the file")
	}
	same(imp.LastSeq, "show", v.sid, "--json")
	same(imp.LastSeq, "tree", v.sid, "--json")
	same(imp.LastSeq, "tree", v.sid)
	ctxs, _ := conformance.Field(v.exp, "contexts")
	for k, want := range ctxs.Arr {
		if k%4 != 0 {
			continue // a sample is enough here; TestEndToEnd checks them all
		}
		leaf, _ := conformance.Field(want, "leafId")
		arg := "null"
		if leaf.Kind == tree.KindString {
			arg = leaf.Str
		}
		checkContext(t, want, func(extra ...string) string {
			return same(imp.LastSeq, append([]string{"context", v.sid, "--leaf", arg}, extra...)...)
		})
	}

	// A write through A, read at once through B.
	seq := seqOf(t, mustRun(t, withFlags(viaA, "label", v.sid, leafOf(t, v), "via A", "--json", "--client", "w")...))
	var d struct {
		Labels map[string]string `json:"labels"`
	}
	mustJSON(t, mustRun(t, withFlags(viaB, "show", v.sid, "--json", "--min-seq", jsonNum(seq))...), &d)
	if d.Labels[leafOf(t, v)] != "via A" {
		t.Errorf("B with --min-seq %d does not see A's label: %v", seq, d.Labels)
	}
	same(seq, "context", v.sid, "--client", "w", "--json")
	same(seq, "log", v.sid, "--json")

	// Over NATS, through the server without a pi-node.
	if got := mustRun(t, "show", v.sid, "--json", "--server", urls[2], "--min-seq", jsonNum(seq)); got != mustRun(t, withFlags(viaB, "show", v.sid, "--json")...) {
		t.Errorf("show over NATS through s3 differs")
	}

	status := mustRun(t, withFlags(viaA, "status")...)
	for _, want := range []string{"jetstream  external, connected to s1 at ", ", cluster pi-ctl-test", "replicas   3, leader s"} {
		if !strings.Contains(status, want) {
			t.Errorf("status lacks %q:\n%s", want, status)
		}
	}
	if rows := strings.Split(status[strings.Index(status, "REPLICA"):], "\n"); len(rows) != 5 || strings.Count(status, "follower") != 2 {
		t.Errorf("status does not list 3 replicas:\n%s", status)
	}
}

// leafOf is the vector's default leaf.
func leafOf(t *testing.T, v vector) string {
	t.Helper()
	l, _ := conformance.Field(v.exp, "leafId")
	return l.Str
}
