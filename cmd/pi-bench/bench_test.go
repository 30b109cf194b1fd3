package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/bench"
)

// The scenarios at toy sizes, so that CI runs every scenario end to
// end; the figures themselves are not checked (machines vary).

func benchJSON(t *testing.T, args ...string) *bench.Result {
	t.Helper()
	out := mustRun(t, append(args, "--json")...)
	var res bench.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("pi-bench %s: not JSON: %v\n%s", strings.Join(args, " "), err, out)
	}
	for _, r := range res.Rows {
		if r.Ops == 0 || r.Rate <= 0 {
			t.Errorf("pi-bench %s: row %+v did nothing", strings.Join(args, " "), r)
		}
	}
	return &res
}

func TestBenchEmbedded(t *testing.T) {
	out := mustRun(t, "append", "--embedded", "--sync", "interval", "--sessions", "2", "--entries", "3",
		"--concurrency", "2", "--size", "200", "--baseline", "jsonl")
	for _, want := range []string{"append: sessions 2", "raw JetStream", "node, NATS API", "node, HTTP API",
		"pi jsonl file + fsync", "VS RAW", "× rate", "throughput vs raw, node, NATS API"} {
		if !strings.Contains(out, want) {
			t.Errorf("bench append output lacks %q:\n%s", want, out)
		}
	}
	res := benchJSON(t, "create", "--embedded", "--sync", "interval", "--sessions", "2", "--backlog", "4", "--transports", "raw,nats")
	if len(res.Rows) != 2 || res.Rows[1].Vs != "raw JetStream" || res.Rows[1].RateRatio <= 0 {
		t.Errorf("bench create: %+v", res.Rows)
	}
	res = benchJSON(t, "context", "--embedded", "--sync", "interval", "--sessions", "2", "--entries", "5", "--requests", "6")
	if len(res.Rows) != 4 {
		t.Errorf("bench context: %+v", res.Rows)
	}
}

// TestBenchRebuildProcess runs the rebuild scenario against the pi-node
// binary, restarted from its snapshot, with its memory read from /proc.
func TestBenchRebuildProcess(t *testing.T) {
	bin := builtBinary(t, "pi-node")
	res := benchJSON(t, "rebuild", "--pi-node", bin, "--data-dir", t.TempDir(), "--sessions", "8", "--entries", "80",
		"--settle=false", "--idle=-1s", "--reads", "4", "--samples", "2", "--sync", "interval")
	if len(res.Rows) != 7 || res.Row("node rebuild from the stream").RateRatio <= 0 {
		t.Errorf("bench rebuild rows: %+v", res.Rows)
	}
	var rss bool
	for _, f := range res.Figures {
		rss = rss || strings.HasPrefix(f.Name, "pi-node RSS") && f.Value > 0
	}
	if !rss {
		t.Errorf("bench rebuild reports no resident set of pi-node: %+v", res.Figures)
	}
}

// TestBenchSearch runs the search scenario on a toy corpus: the import,
// the index caught up and measured, every query through the HTTP API (and
// rg, where installed), the append phase; then again over the same dir,
// which reuses the corpus.
func TestBenchSearch(t *testing.T) {
	dir := t.TempDir()
	args := []string{"search", "--dir", dir, "--entries", "300", "--sync", "interval", "--idle=-1s",
		"--queries", "3", "--rg", "1", "--append-writers", "2", "--append-for", "1s"}
	res := benchJSON(t, args...)
	var queries int
	for _, r := range res.Rows {
		if strings.HasPrefix(r.Name, "GET /v1/search ") {
			queries++
		}
	}
	if queries != 5 || res.Row("append through HTTP, one entry per request") == nil {
		t.Errorf("bench search rows: %+v", res.Rows)
	}
	figures := map[string]float64{}
	for _, f := range res.Figures {
		figures[f.Name] = f.Value
	}
	for _, name := range []string{"index build rate (entries/s)", "index / JSONL", "appends meanwhile: entries/s"} {
		if figures[name] <= 0 {
			t.Errorf("bench search: %s is %v: %+v", name, figures[name], res.Figures)
		}
	}
	res = benchJSON(t, append(args, "--append-for=-1s")...)
	for _, p := range res.Params {
		if p.Name == "corpus reused" && p.Value != true {
			t.Errorf("the second run did not reuse the corpus: %+v", res.Params)
		}
	}
}

// TestBenchAppendProcesses runs the append scenario against a nats-server
// and two pi-node processes, and checks that each one's CPU per append is
// read from /proc: the server's for every row, and the second node's in
// the raw rows (it applies every record without serving any).
func TestBenchAppendProcesses(t *testing.T) {
	res := benchJSON(t, "append", "--pi-node", builtBinary(t, "pi-node"), "--nats-server", builtBinary(t, "nats-server"),
		"--nodes", "2", "--data-dir", t.TempDir(), "--sync", "interval", "--sessions", "4", "--entries", "100",
		"--concurrency", "4", "--size", "200", "--transports", "raw,nats,http")
	cpu := map[string]float64{}
	for _, f := range res.Figures {
		if rest, ok := strings.CutPrefix(f.Name, "CPU per append, "); ok {
			cpu[rest] = f.Value
		}
	}
	for _, proc := range []string{"nats-server", "pi-node 1", "pi-node 2", "pi-bench (the clients)"} {
		for _, way := range []string{"raw JetStream", "node, NATS API", "node, HTTP API"} {
			if _, ok := cpu[proc+", "+way]; !ok {
				t.Errorf("no CPU per append of %s for %s: %v", proc, way, cpu)
			}
		}
	}
	// 400 appends: the server's share is a few ticks of 10 ms at least.
	if cpu["nats-server, node, HTTP API"] <= 0 || cpu["pi-node 1, node, HTTP API"] <= 0 {
		t.Errorf("server or serving node spent no CPU on HTTP appends: %v", cpu)
	}
	var target bool
	for _, f := range res.Figures {
		target = target || f.Name == "pi-node 1 CPU / nats-server CPU per append, node, HTTP API" && f.Met != nil
	}
	if !target {
		t.Errorf("no CPU target for the node serving HTTP: %+v", res.Figures)
	}
}

// TestBenchAppendCluster runs the append scenario on an embedded cluster
// of three pi-nodes (--cluster 3) with and without a client, and checks
// the rows, each node's CPU per append, and the with-client ratio.
func TestBenchAppendCluster(t *testing.T) {
	res := benchJSON(t, "append", "--pi-node", builtBinary(t, "pi-node"), "--cluster", "3",
		"--data-dir", t.TempDir(), "--sessions", "4", "--entries", "10", "--concurrency", "2", "--rounds", "1",
		"--size", "200", "--cas=false", "--transports", "raw,nats,http", "--client", "both")
	var names []string
	for _, r := range res.Rows {
		names = append(names, r.Name)
		if r.Ops != 40 || r.Rate <= 0 {
			t.Errorf("row %q: %d ops at %.0f/s, want 40", r.Name, r.Ops, r.Rate)
		}
	}
	want := "raw JetStream|node, NATS API|node, NATS API, with client|node, HTTP API|node, HTTP API, with client"
	if strings.Join(names, "|") != want {
		t.Errorf("rows %q, want %q", names, want)
	}
	figures := map[string]bool{}
	for _, f := range res.Figures {
		figures[f.Name] = true
	}
	for _, name := range []string{"CPU per append, pi-node 3, node, NATS API, with client",
		"CPU per append, all pi-nodes (servers included), node, HTTP API",
		"throughput with client vs without, node, NATS API"} {
		if !figures[name] {
			t.Errorf("no figure %q: %v", name, figures)
		}
	}
	if figures["CPU per append, nats-server, raw JetStream"] {
		t.Error("a nats-server process figure in an embedded cluster")
	}
}

func TestBenchUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"append", "--embedded", "--server", "nats://127.0.0.1:1"},
		{"append", "--data-dir", "/tmp/x"},
		{"append", "--embedded", "--baseline", "csv"},
		{"append", "--embedded", "--baseline", "jsonl,mysql"},
		{"append", "--embedded", "--postgres-dsn", "host=/tmp"},
		{"create", "--embedded", "--baseline", "postgres"},
		{"append", "--embedded", "--concurrency", "1,0"},
		{"create", "--embedded", "--sync", "sometimes"},
		{"rebuild", "--memory-budget", "lots"},
		{"append", "--pi-node", "/bin/true"},
		{"append", "--pi-node", "/bin/true", "--nats-server", "/bin/true", "--embedded"},
		{"append", "--embedded", "--nodes", "2"},
		{"append", "--cluster", "3"},
		{"append", "--embedded", "--cluster", "3"},
		{"append", "--pi-node", "/bin/true", "--cluster", "4"},
		{"append", "--pi-node", "/bin/true", "--cluster", "3", "--nats-server", "/bin/true"},
		{"append", "--pi-node", "/bin/true", "--cluster", "3", "--nodes", "3"},
		{"append", "--embedded", "--client", "sometimes"},
		{"append", "--embedded", "--node-pprof"},
		{"search", "--entries", "0"},
		{"search", "--sync", "never"},
	} {
		code, _, stderr := piBench(args...)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--help") {
			t.Errorf("pi-bench %q: exit %d, stderr %q; want exit 2 and one line with a hint", args, code, stderr)
		}
	}
	for _, args := range [][]string{{"--help"}, {"append", "--help"}, {"rebuild", "-h"}} {
		code, stdout, _ := piBench(args...)
		if code != 0 || !strings.Contains(stdout, "Usage: pi-bench") {
			t.Errorf("pi-bench %q: exit %d, stdout %.80q", args, code, stdout)
		}
	}
	top := mustRun(t, "--help")
	for _, c := range scenarios {
		if !strings.Contains(top, "  "+c.name+" ") {
			t.Errorf("help does not list %q:\n%s", c.name, top)
		}
		if h := mustRun(t, c.name, "-h"); !strings.Contains(h, "Usage: pi-bench "+c.name) {
			t.Errorf("%s --help:\n%s", c.name, h)
		}
	}
}
