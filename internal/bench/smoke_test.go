package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/tree"
)

// The scenarios at toy sizes: not measurements (CI machines vary), but
// proof that every way of every scenario does its work end to end and
// reports it.

func openEmbedded(t *testing.T) *Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := Open(ctx, EnvOptions{Embedded: true, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// checkRows fails unless res has exactly the rows named, each with ops
// operations done, and the node's rows compared with a raw row.
func checkRows(t *testing.T, res *Result, ops int, names ...string) {
	t.Helper()
	if len(res.Rows) != len(names) {
		t.Fatalf("%s: %d rows, want %v: %+v", res.Scenario, len(res.Rows), names, res.Rows)
	}
	for i, r := range res.Rows {
		if r.Name != names[i] || r.Ops != ops || r.Rate <= 0 {
			t.Errorf("%s row %d: %q, %d ops at %.0f/s; want %q with %d ops", res.Scenario, i, r.Name, r.Ops, r.Rate, names[i], ops)
		}
		if r.Kind == KindNode && (r.Vs == "" || r.RateRatio <= 0) {
			t.Errorf("%s row %q is not compared with raw: %+v", res.Scenario, r.Name, r)
		}
	}
}

func TestScenarios(t *testing.T) {
	e := openEmbedded(t)
	ctx := context.Background()
	dir := t.TempDir()

	res, err := RunAppend(ctx, e, AppendOptions{Sessions: 3, Entries: 4, Concurrency: 2, Size: 300, CAS: true, JSONL: true, JSONLDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, res, 12, rawName, bareName, noDedupeName, relayName, "node, NATS API", "node, HTTP API", "pi jsonl file", "pi jsonl file + fsync")
	if !slices.ContainsFunc(res.Figures, func(f Figure) bool { return f.Name == "throughput, with the dedupe id vs without" && f.Value > 0 }) {
		t.Errorf("append: no figure of the dedupe id's cost: %+v", res.Figures)
	}
	targets, vsBare := 0, 0
	for _, f := range res.Figures {
		if f.Met != nil {
			targets++
		}
		if strings.HasPrefix(f.Name, "throughput vs the bare CAS publish, ") && f.Value > 0 {
			vsBare++
		}
	}
	if vsBare != 5 { // raw, no dedupe id, relay, NATS, HTTP
		t.Errorf("append: %d rows compared with the bare publish, want 5: %+v", vsBare, res.Figures)
	}
	if targets != 4 {
		t.Errorf("append: figures %+v, want the 4 targets of the node's rows", res.Figures)
	}
	// The file baseline writes what pi would: a header, then the entries.
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) != 6 { // 3 sessions for each of the two file ways
		t.Fatalf("jsonl baseline wrote %d files, want 6", len(files))
	}
	data, _ := os.ReadFile(files[0])
	if f, err := tree.Read(data, tree.ReadOptions{Strict: true}); err != nil || f.Len() != 4 {
		t.Errorf("jsonl baseline file: %v, %+v", err, f)
	}

	sweep, err := RunAppendSweep(ctx, e, AppendOptions{Sessions: 2, Entries: 2, Size: 300, Transports: []string{"raw", "bare", "nats"}}, []int{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, sweep, 4, rawName+", 1 writer", bareName+", 1 writer", "node, NATS API, 1 writer",
		rawName+", 2 writers", bareName+", 2 writers", "node, NATS API, 2 writers")
	if r := sweep.Row("node, NATS API, 2 writers"); r == nil || r.Vs != rawName+", 2 writers" {
		t.Errorf("sweep: the node's row at 2 writers is compared with %+v", r)
	}

	res, err = RunCreate(ctx, e, CreateOptions{Sessions: 3, Backlog: 5, Concurrency: 2, Size: 300, Transports: []string{"raw", "nats"}})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, res, 3, "raw JetStream", "node, NATS API")

	res, err = RunContext(ctx, e, ContextOptions{Sessions: 3, Entries: 6, Requests: 10, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, res, 10, "raw read + client-side build", "node, NATS API", "node, HTTP API", "node engine, in-process")
	if b, err := json.Marshal(res); err != nil || !strings.Contains(string(b), `"p99Ms"`) {
		t.Errorf("result JSON: %v, %s", err, b)
	}
}

func TestRebuildScenario(t *testing.T) {
	dir := t.TempDir()
	o := RebuildOptions{Sessions: 12, Entries: 120, Active: 4, Dir: dir, SnapshotEvery: time.Minute, Reads: 5, Samples: 2, Idle: -1}
	res, err := RunRebuild(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{rowRawConsumer, rowRebuild, rowRawFiltered, rowRawRead, rowFirstRead, rowFirstReads, rowReads}
	if len(res.Rows) != len(want) {
		t.Fatalf("rows %+v, want %v", res.Rows, want)
	}
	for i, r := range res.Rows {
		if r.Name != want[i] || r.Ops == 0 {
			t.Errorf("row %d: %+v, want %q", i, r, want[i])
		}
	}
	if r := res.Row(rowRebuild); r.Ops != 132 || r.RateRatio <= 0 { // 12 headers and 120 entries
		t.Errorf("rebuild row %+v", r)
	}
	// A second run reuses the load the data dir holds.
	res, err = RunRebuild(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	reused := false
	for _, p := range res.Params {
		reused = reused || p.Name == "data reused" && p.Value == true
	}
	if !reused {
		t.Errorf("second run did not reuse the data dir: %+v", res.Params)
	}
	// Another load in the same dir replaces it; a foreign dir is refused.
	o.Entries = 60
	if _, err := RunRebuild(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	foreign := t.TempDir()
	os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o644)
	o.Dir = foreign
	if _, err := RunRebuild(context.Background(), o); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("rebuild in a foreign non-empty dir: %v", err)
	}
}
