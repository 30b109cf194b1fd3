package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/bench"
)

// The bench command at toy sizes, so that CI runs every scenario end to
// end; the figures themselves are not checked (machines vary).

func benchJSON(t *testing.T, args ...string) *bench.Result {
	t.Helper()
	out := mustRun(t, append(args, "--json")...)
	var res bench.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("pi-ctl %s: not JSON: %v\n%s", strings.Join(args, " "), err, out)
	}
	for _, r := range res.Rows {
		if r.Ops == 0 || r.Rate <= 0 {
			t.Errorf("pi-ctl %s: row %+v did nothing", strings.Join(args, " "), r)
		}
	}
	return &res
}

func TestBenchEmbedded(t *testing.T) {
	out := mustRun(t, "bench", "append", "--embedded", "--sync", "interval", "--sessions", "2", "--entries", "3",
		"--concurrency", "2", "--size", "200", "--baseline", "jsonl")
	for _, want := range []string{"append: sessions 2", "raw JetStream", "node, NATS API", "node, HTTP API",
		"pi jsonl file + fsync", "VS RAW", "× rate", "throughput vs raw, node, NATS API"} {
		if !strings.Contains(out, want) {
			t.Errorf("bench append output lacks %q:\n%s", want, out)
		}
	}
	res := benchJSON(t, "bench", "create", "--embedded", "--sync", "interval", "--sessions", "2", "--backlog", "4", "--transports", "raw,nats")
	if len(res.Rows) != 2 || res.Rows[1].Vs != "raw JetStream" || res.Rows[1].RateRatio <= 0 {
		t.Errorf("bench create: %+v", res.Rows)
	}
	res = benchJSON(t, "bench", "context", "--embedded", "--sync", "interval", "--sessions", "2", "--entries", "5", "--requests", "6")
	if len(res.Rows) != 4 {
		t.Errorf("bench context: %+v", res.Rows)
	}
}

// TestBenchRebuildProcess runs the rebuild scenario against the pi-node
// binary, restarted from its snapshot, with its memory read from /proc.
func TestBenchRebuildProcess(t *testing.T) {
	bin := builtBinary(t, "pi-node")
	res := benchJSON(t, "bench", "rebuild", "--pi-node", bin, "--data-dir", t.TempDir(), "--sessions", "8", "--entries", "80",
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

func TestBenchUsage(t *testing.T) {
	for _, args := range [][]string{
		{"bench"},
		{"bench", "frobnicate"},
		{"bench", "append", "--embedded", "--server", "nats://127.0.0.1:1"},
		{"bench", "append", "--data-dir", "/tmp/x"},
		{"bench", "append", "--embedded", "--baseline", "csv"},
		{"bench", "append", "--embedded", "--concurrency", "1,0"},
		{"bench", "create", "--embedded", "--sync", "sometimes"},
		{"bench", "rebuild", "--memory-budget", "lots"},
	} {
		r := runCLI(t, "", args...)
		if r.code != 2 || len(lines(r.stderr)) != 1 || !strings.Contains(r.stderr, "--help") {
			t.Errorf("pi-ctl %q: exit %d, stderr %q; want exit 2 and one line with a hint", args, r.code, r.stderr)
		}
	}
	for _, args := range [][]string{{"bench", "--help"}, {"bench", "append", "--help"}, {"bench", "rebuild", "-h"}} {
		r := runCLI(t, "", args...)
		if r.code != 0 || !strings.Contains(r.stdout, "Usage: pi-ctl bench") {
			t.Errorf("pi-ctl %q: exit %d, stdout %.80q", args, r.code, r.stdout)
		}
	}
	if top := runCLI(t, "", "--help").stdout; !strings.Contains(top, "  bench ") {
		t.Errorf("top-level help does not list bench:\n%s", top)
	}
}
