package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/proctest"
)

// TestAppendCluster runs the append scenario on the production shape —
// three pi-node processes, each with its embedded server, clustered, at
// R3, sync always — with and without a client, PostgreSQL beside them
// where Debian's package is installed, and checks that every row did its
// work, that the stream and the cursor bucket really are at three
// replicas, all current, that the writers really went through the three
// nodes, and that the with-client rows moved a cursor per session.
func TestAppendCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three pi-node processes; skipped with -short")
	}
	bins, _, cleanup, err := proctest.Build("pi-bench-cluster-bin-", proctest.PiNode)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e, err := Open(ctx, EnvOptions{Procs: &ProcOptions{PiNode: bins["pi-node"], Cluster: 3, Pprof: true}, Dir: t.TempDir(), SyncAlways: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	// Each node's profiles, where issue 36's profiling reads them.
	if len(e.PprofURLs) != 3 {
		t.Fatalf("profile endpoints %v, want 3", e.PprofURLs)
	}
	for _, u := range e.PprofURLs {
		resp, err := http.Get(u + "/debug/pprof/goroutine?debug=1")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), "goroutine profile") {
			t.Fatalf("%s: %d %.200s", u, resp.StatusCode, body)
		}
	}

	// Enough appends that each row's CPU spans several of /proc's clock
	// ticks (10 ms): with 20, a raw row's three nodes spent less than one
	// each once the index stopped syncing per batch, and read as 0.
	o := AppendOptions{Sessions: 8, Entries: 25, Concurrency: 2, Size: 300, Rounds: 1, Client: ClientBoth,
		Transports: []string{"raw", "nats", "http"}}
	want := []string{rawName, natsName, natsName + withClientSuffix, httpName, httpName + withClientSuffix}
	if _, err := PostgresBin(); err == nil {
		pg, err := StartPostgres(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pg.Close() })
		o.PostgresDSN = pg.DSN
		want = append(want, pgName)
	} else {
		t.Logf("no PostgreSQL row: %v", err)
	}
	res, err := RunAppend(ctx, e, o)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, res, o.Sessions*o.Entries, want...)
	for _, r := range res.Rows {
		if r.P50Ms <= 0 || r.P99Ms < r.P50Ms {
			t.Errorf("row %q: p50 %v ms, p99 %v ms", r.Name, r.P50Ms, r.P99Ms)
		}
	}
	for _, w := range want[:5] {
		name := "CPU per append, all pi-nodes (servers included), " + w
		if !slices.ContainsFunc(res.Figures, func(f Figure) bool { return f.Name == name && f.Value > 0 }) {
			t.Errorf("no figure %q above 0: %+v", name, res.Figures)
		}
	}
	for _, w := range []string{natsName, httpName} {
		name := "throughput with client vs without, " + w
		if !slices.ContainsFunc(res.Figures, func(f Figure) bool { return f.Name == name && f.Value > 0 }) {
			t.Errorf("no figure %q: %+v", name, res.Figures)
		}
	}

	// The stream and the cursor bucket: three replicas, a leader and two
	// current followers, the three nodes between them.
	cfg := jetstream.NewConfig()
	for _, name := range []string{cfg.Stream, "KV_" + cfg.Bucket} {
		s, err := e.Raw.JS.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info := s.CachedInfo()
		if info.Config.Replicas != 3 || info.Cluster == nil || info.Cluster.Leader == "" || len(info.Cluster.Replicas) != 2 {
			t.Fatalf("stream %s: replicas %d, cluster %+v; want R3 with a leader and two replicas", name, info.Config.Replicas, info.Cluster)
		}
		members := []string{info.Cluster.Leader}
		for _, r := range info.Cluster.Replicas {
			if !r.Current || r.Offline {
				t.Errorf("stream %s: replica %s current %v offline %v", name, r.Name, r.Current, r.Offline)
			}
			members = append(members, r.Name)
		}
		slices.Sort(members)
		if !slices.Equal(members, []string{"bench1", "bench2", "bench3"}) {
			t.Errorf("stream %s on %v, want bench1, bench2, bench3", name, members)
		}
		if name == cfg.Stream && info.State.Msgs < uint64(len(want[:5])*o.Sessions*(o.Entries+1)) {
			t.Errorf("stream %s holds %d messages, fewer than the rows wrote", name, info.State.Msgs)
		}
		// Each with-client row's sessions got one writer's cursor each;
		// the rows without a client moved none.
		if name != cfg.Stream && info.State.NumSubjects != uint64(2*o.Sessions) {
			t.Errorf("cursor bucket holds %d keys, want %d (a cursor per session of the two with-client rows)", info.State.NumSubjects, 2*o.Sessions)
		}
	}
	// The writers went through every node.
	var servers []string
	for _, c := range e.raws {
		servers = append(servers, c.NC.ConnectedServerName())
	}
	slices.Sort(servers)
	if fmt.Sprint(servers) != "[bench1 bench2 bench3]" {
		t.Errorf("raw connections on %v, want one on each node", servers)
	}
}

// TestClusterTargets: on the production shape the verdicts are issue 36's
// — the API ≥ 0.8× raw at 64 writers, ≥ PostgreSQL at 64 or 128, a
// client's appends ≥ 0.9× of the same without — not the one-server ones.
func TestClusterTargets(t *testing.T) {
	rows := func() *Result {
		return &Result{Rows: []Row{
			{Name: rawName, Kind: KindRaw, Rate: 1000},
			{Name: natsName, Kind: KindNode, Vs: rawName, Rate: 850, RateRatio: 0.85},
			{Name: natsName + withClientSuffix, Kind: KindNode, Vs: rawName, Rate: 700, RateRatio: 0.7},
			{Name: pgName, Kind: KindBaseline, Rate: 800},
		}}
	}
	met := func(res *Result, name string) (bool, bool) {
		for _, f := range res.Figures {
			if f.Name == name && f.Met != nil {
				return *f.Met, true
			}
		}
		return false, false
	}
	res := rows()
	clusterTargets(res, 64)
	for name, want := range map[string]bool{
		"throughput vs raw, " + natsName:                           true,  // 0.85 ≥ 0.8
		"throughput vs raw, " + natsName + withClientSuffix:        false, // 0.7
		"throughput vs PostgreSQL, " + natsName:                    true,  // 850/800
		"throughput vs PostgreSQL, " + natsName + withClientSuffix: false, // 700/800
		"throughput with client vs without, " + natsName:           false, // 700/850 = 0.82
	} {
		if got, ok := met(res, name); !ok || got != want {
			t.Errorf("%s: met %v (present %v), want %v", name, got, ok, want)
		}
	}
	res = rows()
	clusterTargets(res, 16)
	for _, name := range []string{"throughput vs raw, " + natsName, "throughput vs PostgreSQL, " + natsName} {
		if _, ok := met(res, name); ok {
			t.Errorf("%s: a target at 16 writers", name)
		}
	}
	if _, ok := met(res, "throughput with client vs without, "+natsName); !ok {
		t.Error("no client-cost target at 16 writers")
	}
}
