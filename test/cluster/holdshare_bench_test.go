//go:build linux

package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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

// BenchmarkHoldShare measures what --hold saves a node (issue 33 item 6):
// one store of 6 shards, written once, then for each node count N the same
// store held by N pi-nodes with --hold N (every node holds every shard) and
// with --hold 2. Per node it reports the sessions and JSON bytes its Stores
// hold, its RSS and peak RSS, the CPU-seconds of catching up on its share,
// and the CPU-seconds a steady append load costs it. A benchmark, not a
// test: at a scale where the Stores dominate it takes many minutes.
//
// The data lives in one separate nats-server (R1) and the nodes connect to
// it (--nats-url): the figures are the pi-node processes' alone, without a
// JetStream server's, which holds every shard whatever --hold says.
//
// PI_HOLD_BENCH_SESSIONS (default 1000) sessions of 20 entries of about
// 1 KB; PI_HOLD_BENCH_NODES (default 3,5,6); PI_HOLD_BENCH_APPENDS
// (default 2000) appends of one entry each in the write load. Run it with
// -benchtime 1x: one pass is the measurement, whatever b.N says.
func BenchmarkHoldShare(b *testing.B) {
	if testing.Short() {
		b.Skip("starts real pi-node and nats-server processes; skipped with -short")
	}
	sessions := envInt(b, "PI_HOLD_BENCH_SESSIONS", 1000)
	appends := envInt(b, "PI_HOLD_BENCH_APPENDS", 2000)
	var counts []int
	for f := range strings.SplitSeq(cmp.Or(os.Getenv("PI_HOLD_BENCH_NODES"), "3,5,6"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 3 {
			b.Fatalf("PI_HOLD_BENCH_NODES: %q is not a node count of at least 3", f)
		}
		counts = append(counts, n)
	}
	const shards, entries = 6, 20

	url := startBenchNATS(b)
	data := loadHoldBench(b, url, shards, sessions, entries)

	var rows []holdBenchRow
	for _, n := range counts {
		for _, hold := range []int{n, 2} {
			r := runHoldBench(b, url, n, hold, shards, data, appends)
			b.Logf("MEASURED %s", r)
			rows = append(rows, r)
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "%d sessions of %d ~1 KB entries, %d shards, %d appends of one entry; per node, average (max):\n", sessions, entries, shards, appends)
	out.WriteString("| nodes | --hold | sessions held | JSON held MiB | RSS MiB | peak RSS MiB | catch-up CPU s | CPU s per 1000 appends |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		out.WriteString(r.markdown() + "\n")
	}
	for i := 0; i+1 < len(rows); i += 2 {
		all, share := rows[i], rows[i+1]
		fmt.Fprintf(&out, "%d nodes, --hold 2 / --hold %d: sessions %.2f×, JSON %.2f×, RSS %.2f×, peak RSS %.2f×, catch-up CPU %.2f×, write CPU %.2f×\n",
			all.nodes, all.nodes, share.sessions/all.sessions, share.bytes/all.bytes, share.rss/all.rss, share.hwm/all.hwm,
			share.catchUp/all.catchUp, share.writeCPU/all.writeCPU)
	}
	b.Logf("MEASURED hold share table\n%s", out.String())
}

// envInt is the positive integer in environment variable name, else def.
func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

// startBenchNATS starts one nats-server with room for the whole store and
// returns its client URL.
func startBenchNATS(b *testing.B) string {
	port := testutil.FreePorts(b, 1)[0]
	dir := b.TempDir()
	conf := fmt.Sprintf("server_name: hbench\nlisten: \"127.0.0.1:%d\"\nmax_payload: 8MB\njetstream {\n  store_dir: %q\n  max_file_store: 64GB\n  max_memory_store: 256MB\n}\n",
		port, filepath.Join(dir, "js"))
	confPath := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		b.Fatal(err)
	}
	s := proctest.New(b, "hbench-nats", natsServerBin, "-c", confPath)
	s.Start(b)
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	testutil.WaitFor(b, readyTimeout, func() error { return jetStreamInfo(url) })
	return url
}

// benchNode starts a pi-node connected to url with a fresh data directory
// (no snapshot: it catches up from the log).
func benchNode(b *testing.B, name, url string, port int, extra ...string) *piNode {
	nd := &piNode{name: name, base: fmt.Sprintf("http://127.0.0.1:%d", port), dataDir: b.TempDir()}
	nd.Proc = proctest.New(b, name, piNodeBin, append([]string{
		"--node-name", name,
		"--nats-url", url,
		"--replicas", "1",
		"--data-dir", nd.dataDir,
		"--http-listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--shutdown-grace", "10s",
	}, extra...)...)
	nd.Start(b)
	return nd
}

// holdBenchData is what the write load needs to append as a client does:
// every session's id and its last entry's, which the load moves on.
type holdBenchData struct {
	ids  []string
	last []int // index of each session's last entry (its id: %08x)
	// ends is each shard's last sequence once loaded: a node has caught
	// up when it applied that much at least (its own view of the log's
	// end may not have been read yet).
	ends []uint64
}

// loadHoldBench writes the store once through one pi-node: each session
// created with its whole backlog in one atomic batch.
func loadHoldBench(b *testing.B, url string, shards, sessions, entries int) *holdBenchData {
	port := testutil.FreePorts(b, 1)[0]
	loader := benchNode(b, "hbench-load", url, port, "--shards", strconv.Itoa(shards))
	testutil.WaitFor(b, readyTimeout, func() error { return proctest.Ready(loader.base) })
	d := &holdBenchData{ids: make([]string, sessions), last: make([]int, sessions)}
	for s := range d.ids {
		d.ids[s], d.last[s] = testutil.SessionID(b), entries-1
	}
	text := strings.Repeat("lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 16)[:900]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Hour)
	defer cancel()
	start := time.Now()
	const workers = 16
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for s := w; s < sessions && ctx.Err() == nil; s += workers {
				at := time.Now()
				es := make([]proctest.Entry, entries)
				parent := ""
				for i := range es {
					es[i] = proctest.NewEntry(fmt.Sprintf("%08x", i), parent, text, at)
					parent = es[i].ID
				}
				body, _ := json.Marshal(map[string]any{"header": map[string]any{
					"type": "session", "version": 3, "id": d.ids[s], "cwd": "/work/hbench", "timestamp": proctest.Stamp(at),
				}, "entries": es})
				if err := postRetry(ctx, loader.base+"/v1/sessions", body, http.StatusCreated); err != nil {
					errs <- fmt.Errorf("session %d: %w", s, err)
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	testutil.WaitFor(b, readyTimeout, func() error {
		var st holdBenchStatus
		if err := proctest.GetJSON(loader.base+"/v1/status", &st); err != nil {
			return err
		}
		d.ends = nil
		for _, sh := range st.Store.Shards {
			if sh.Applied < sh.LogLastSeq || sh.Holding != "serving" {
				return fmt.Errorf("loader shard %d %s: applied %d of %d", sh.Shard, sh.Holding, sh.Applied, sh.LogLastSeq)
			}
			d.ends = append(d.ends, sh.Applied)
		}
		return nil
	})
	b.Logf("MEASURED hold bench: loaded %d sessions of %d entries in %v", sessions, entries, time.Since(start).Round(time.Second))
	if err := loader.Stop(stopTimeout); err != nil {
		b.Fatalf("stopping the loader: %v", err)
	}
	return d
}

// benchClient waits longer than proctest.ProbeClient: a create of 20 KB
// on a loaded machine can take seconds, and a retry after a timeout finds
// the session there (409) or the append done.
var benchClient = &http.Client{Timeout: time.Minute}

// postRetry posts body until it gets want, retrying what retryable says.
// A retried create answered 409 landed the first time: the ids are random
// and written once.
func postRetry(ctx context.Context, url string, body []byte, want int) error {
	for attempt := 0; ; attempt++ {
		st, _, data, err := proctest.Do(ctx, benchClient, http.MethodPost, url, body)
		switch {
		case err == nil && (st == want || attempt > 0 && want == http.StatusCreated && st == http.StatusConflict):
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case !retryable(st, err):
			return fmt.Errorf("%d %s", st, data)
		}
		proctest.Backoff(ctx, attempt, 1)
	}
}

// holdBenchStatus is the part of /v1/status the benchmark reads.
type holdBenchStatus struct {
	Store struct {
		Sessions  int64 `json:"sessions"`
		BytesHeld int64 `json:"bytesHeld"`
		Shards    []struct {
			Shard      int    `json:"shard"`
			Holding    string `json:"holding"`
			Applied    uint64 `json:"applied"`
			LogLastSeq uint64 `json:"logLastSeq"`
		} `json:"shards"`
	} `json:"store"`
}

// settled checks that every shard is served by exactly hold of the nodes,
// each of them caught up with its log (and at least ends), and returns
// their statuses.
func settled(nodes []*piNode, shards, hold int, ends []uint64) ([]holdBenchStatus, error) {
	sts := make([]holdBenchStatus, len(nodes))
	served := make([]int, shards)
	for i, nd := range nodes {
		if !nd.Running() {
			return nil, fmt.Errorf("%s exited: %v", nd.name, nd.ExitErr())
		}
		if err := proctest.GetJSON(nd.base+"/v1/status", &sts[i]); err != nil {
			return nil, fmt.Errorf("%s: %w", nd.name, err)
		}
		if len(sts[i].Store.Shards) != shards {
			return nil, fmt.Errorf("%s reports %d shards", nd.name, len(sts[i].Store.Shards))
		}
		for _, sh := range sts[i].Store.Shards {
			switch sh.Holding {
			case "serving":
				if end := max(sh.LogLastSeq, ends[sh.Shard]); sh.Applied < end {
					return nil, fmt.Errorf("%s shard %d: applied %d of %d", nd.name, sh.Shard, sh.Applied, end)
				}
				served[sh.Shard]++
			case "elsewhere":
			default:
				return nil, fmt.Errorf("%s shard %d: %s", nd.name, sh.Shard, sh.Holding)
			}
		}
	}
	for k, c := range served {
		if c != hold {
			return nil, fmt.Errorf("shard %d served by %d nodes, want %d", k, c, hold)
		}
	}
	return sts, nil
}

// holdBenchRow is one configuration's per-node figures (averages; the
// maxima beside them, since 6 shards spread lumpily over 5 nodes).
type holdBenchRow struct {
	nodes, hold                           int
	sessions, bytes, rss, hwm             float64
	maxSessions, maxBytes, maxRSS, maxHWM float64
	catchUp, writeCPU                     float64 // CPU-seconds; writeCPU per 1000 appends
	maxCatchUp, maxWriteCPU               float64
}

func (r holdBenchRow) String() string {
	return fmt.Sprintf("hold bench: %d nodes --hold %d, per node avg (max): %.0f (%.0f) sessions, %.0f (%.0f) MiB JSON, RSS %.0f (%.0f) MiB, peak RSS %.0f (%.0f) MiB, catch-up CPU %.2f (%.2f) s, write CPU %.3f (%.3f) s per 1000 appends",
		r.nodes, r.hold, r.sessions, r.maxSessions, r.bytes, r.maxBytes, r.rss, r.maxRSS, r.hwm, r.maxHWM, r.catchUp, r.maxCatchUp, r.writeCPU, r.maxWriteCPU)
}

func (r holdBenchRow) markdown() string {
	return fmt.Sprintf("| %d | %d | %.0f (%.0f) | %.0f (%.0f) | %.0f (%.0f) | %.0f (%.0f) | %.1f (%.1f) | %.2f (%.2f) |",
		r.nodes, r.hold, r.sessions, r.maxSessions, r.bytes, r.maxBytes, r.rss, r.maxRSS, r.hwm, r.maxHWM, r.catchUp, r.maxCatchUp, r.writeCPU, r.maxWriteCPU)
}

// runHoldBench holds the store with n nodes and --hold hold, measures, and
// stops them.
func runHoldBench(b *testing.B, url string, n, hold, shards int, d *holdBenchData, appends int) holdBenchRow {
	ports := testutil.FreePorts(b, n)
	flags := []string{"--shards", strconv.Itoa(shards), "--hold", strconv.Itoa(hold)}
	name := func(i int) string { return fmt.Sprintf("h%d-%d-n%d", n, hold, i+1) }
	var nodes []*piNode
	defer func() {
		for _, nd := range nodes {
			nd.Kill()
		}
	}()
	within := 30 * time.Minute // a full-scale catch-up on two shared cores
	// One node after another, each once the ones before it have caught up:
	// N nodes catching up on everything at once would need N times a
	// catch-up's peak memory at the same instant.
	for i := range n {
		nodes = append(nodes, benchNode(b, name(i), url, ports[i], flags...))
		testutil.WaitFor(b, within, func() error { _, err := settled(nodes, shards, min(hold, len(nodes)), d.ends); return err })
	}
	if hold < n {
		// The first nodes held everything until the others came and then
		// handed the rest back: their memory is not a share's. A node
		// joining a running fleet takes only its share. So each node is
		// killed and restarted with a fresh data directory (no snapshot)
		// within the 5 s before the others would judge it gone: its
		// shards stay where they are and it catches up on exactly its own.
		for i := range nodes {
			nodes[i].Kill()
			nodes[i] = benchNode(b, name(i), url, ports[i], flags...)
			testutil.WaitFor(b, within, func() error { _, err := settled(nodes, shards, hold, d.ends); return err })
		}
	}
	r := holdBenchRow{nodes: n, hold: hold}
	before := make([]procFigures, n)
	for i, nd := range nodes {
		// A process starts at zero CPU: what it used so far is its start
		// and its catch-up (the settled polls' few requests aside).
		before[i] = readProc(b, nd.Pid())
		c := before[i].cpu.Seconds()
		r.catchUp += c
		r.maxCatchUp = max(r.maxCatchUp, c)
	}

	// The write load: one entry an append, with a client id and an explicit
	// parent as pi clients send, through every node in turn; 16 writers,
	// each on its own sessions so that no append races another.
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	const workers = 16
	text := strings.Repeat("append load ", 80)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for k := w; k < appends && ctx.Err() == nil; k += workers {
				s := (k*7919 + w) % len(d.ids)
				for s%workers != w { // this writer's sessions only
					s = (s + 1) % len(d.ids)
				}
				parent := fmt.Sprintf("%08x", d.last[s])
				e := proctest.NewEntry(fmt.Sprintf("%08x", d.last[s]+1), parent, text, time.Now())
				body, _ := json.Marshal(map[string]any{"client": fmt.Sprintf("hbench-%d", w), "entries": []proctest.Entry{e}})
				if err := postRetry(ctx, nodes[k%n].base+"/v1/sessions/"+d.ids[s]+"/entries", body, http.StatusOK); err != nil {
					errs <- fmt.Errorf("append %d to session %d: %w", k, s, err)
					cancel()
					return
				}
				d.last[s]++
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	var sts []holdBenchStatus
	testutil.WaitFor(b, within, func() (err error) { sts, err = settled(nodes, shards, hold, d.ends); return err })
	for i, nd := range nodes {
		after := readProc(b, nd.Pid())
		w := (after.cpu - before[i].cpu).Seconds() * 1000 / float64(appends)
		r.writeCPU += w
		r.maxWriteCPU = max(r.maxWriteCPU, w)
		rss, hwm := float64(after.rssKiB)/1024, float64(after.hwmKiB)/1024
		r.rss, r.hwm = r.rss+rss, r.hwm+hwm
		r.maxRSS, r.maxHWM = max(r.maxRSS, rss), max(r.maxHWM, hwm)
		ss, bs := float64(sts[i].Store.Sessions), float64(sts[i].Store.BytesHeld)/(1<<20)
		r.sessions, r.bytes = r.sessions+ss, r.bytes+bs
		r.maxSessions, r.maxBytes = max(r.maxSessions, ss), max(r.maxBytes, bs)
	}
	f := float64(n)
	r.sessions, r.bytes, r.rss, r.hwm, r.catchUp, r.writeCPU = r.sessions/f, r.bytes/f, r.rss/f, r.hwm/f, r.catchUp/f, r.writeCPU/f
	for _, nd := range nodes {
		if err := nd.Stop(stopTimeout); err != nil {
			b.Errorf("stopping %s: %v", nd.name, err)
		}
	}
	return r
}
