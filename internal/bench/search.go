package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/search/searchcorpus"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// SearchOptions configure the search scenario.
type SearchOptions struct {
	Entries int    // entries of the generated corpus (default 1,000,000)
	Seed    uint64 // seed of the corpus
	// Dir holds the corpus (Dir/sessions, reused when it is this very
	// corpus) and the node's data (Dir/node, made anew each run). ""
	// uses a temporary dir.
	Dir string
	// Jobs is how many files are imported at once (default 4, pi-ctl
	// import's -j).
	Jobs int
	// Queries is how many times each query is timed (default 200), Rg how
	// many times each rg command (default 10).
	Queries, Rg int
	// Idle is how long the node is left alone once its index has caught up
	// before the index is measured again (scorch merges its segments in
	// the background; default 60 s, negative: not at all).
	Idle time.Duration
	// AppendWriters sessions are appended to one entry per request for
	// AppendFor, once the import is indexed, to see whether indexing keeps
	// up (defaults 16 and 30 s; AppendFor negative: no such phase).
	AppendWriters int
	AppendFor     time.Duration
	// The node's settings: pi-node's --sync always, or the binary to run
	// as a process instead of the node in this process.
	SyncAlways bool
	NodeBin    string
	Progress   Progress
}

func (o *SearchOptions) defaults() {
	o.Entries = cmp0(o.Entries, 1000000)
	o.Jobs = cmp0(o.Jobs, 4)
	o.Queries = cmp0(o.Queries, 200)
	o.Rg = cmp0(o.Rg, 10)
	o.AppendWriters = cmp0(o.AppendWriters, 16)
	if o.Idle == 0 {
		o.Idle = time.Minute
	}
	if o.AppendFor == 0 {
		o.AppendFor = 30 * time.Second
	}
}

// RunSearch measures full-text search on a node (issue 35): it imports a
// generated corpus of pi session files through POST /v1/import, as pi-ctl
// import does, and times the index until it has caught up; measures the
// index on disk against the JSONL, then again once the node has been idle
// (merged); times the queries of searchcorpus.Queries through GET /v1/search
// against rg over the same files; reads the node's resident set from
// /proc; then appends to sessions one entry per request and reports
// whether the index keeps up.
func RunSearch(ctx context.Context, o SearchOptions) (*Result, error) {
	o.defaults()
	dir, cleanup, err := tempDir(o.Dir, "pi-bench-search-")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	o.Progress.report("generating the corpus", 0, o.Entries)
	c, reused, err := SearchCorpus(dir, o.Seed, o.Entries)
	if err != nil {
		return nil, err
	}
	var jsonl int64
	for _, f := range c.Files {
		if fi, err := os.Stat(f); err == nil {
			jsonl += fi.Size()
		}
	}
	res := &Result{Scenario: "search"}
	res.param("sessions", c.Sessions)
	res.param("entries", c.Entries)
	res.param("jsonl MB", jsonl/1e6)
	res.param("corpus reused", reused)
	// The node's data anew; snapshots on: the index is persisted beside
	// them, as on a node with a data dir.
	nodeDir := filepath.Join(dir, "node")
	nopts := NodeOptions{Dir: nodeDir, SyncAlways: o.SyncAlways, SnapshotEvery: 5 * time.Minute}
	sub, _, err := startSubject(ctx, res, o.NodeBin, nopts, nodeDir)
	if err != nil {
		return nil, err
	}
	defer sub.stop(nil, "", 0)
	hc, err := apiclient.NewHTTP(apiclient.HTTPOptions{URL: sub.httpURL()})
	if err != nil {
		return nil, err
	}
	defer hc.Close()

	// Import, and follow the index meanwhile.
	w := &indexWatch{c: sub.api()}
	stopWatch := every(250*time.Millisecond, w.poll)
	start := time.Now()
	retried, err := importCorpus(ctx, sub.httpURL(), c, o)
	imported := time.Since(start)
	if err != nil {
		stopWatch()
		return nil, err
	}
	atEnd := w.latest()
	st, err := nodeStatus(ctx, sub.api())
	if err != nil {
		stopWatch()
		return nil, err
	}
	last := st.Store.LogLastSeq
	err = waitIndexed(ctx, sub.api(), last, o.Progress)
	built := time.Since(start)
	stopWatch()
	if err != nil {
		return nil, err
	}
	mb := float64(jsonl) / 1e6
	res.figure("import through POST /v1/import (entries/s)", float64(c.Entries)/imported.Seconds(), "")
	res.figure("import (MB/s of JSONL)", mb/imported.Seconds(), "")
	res.figure("imports sent again after unavailable or timeout", float64(retried), "")
	res.figure("index build, import start to caught up (s)", built.Seconds(), "")
	res.figure("index build rate (entries/s)", float64(c.Entries)/built.Seconds(), "")
	res.figure("index build rate (MB/s of JSONL)", mb/built.Seconds(), "")
	res.figure("index lag when the import ended (records)", float64(last-min(last, atEnd.Applied)), "")
	res.figure("index: import end to caught up (s)", built.Seconds()-imported.Seconds(), "")
	searchDir := filepath.Join(nodeDir, "search")
	size := dirSize(searchDir)
	res.figure("index on disk, caught up", float64(size)/(1<<20), "MiB")
	res.figure("index / JSONL, caught up", float64(size)/float64(jsonl), "×")
	if o.Idle > 0 {
		if err := waitUntil(ctx, time.Now().Add(o.Idle), "idle, so the index merges its segments (s)", o.Progress); err != nil {
			return nil, err
		}
		size = dirSize(searchDir)
		res.figure(fmt.Sprintf("index on disk after %v idle", o.Idle), float64(size)/(1<<20), "MiB")
	}
	res.target("index / JSONL", float64(size)/float64(jsonl), "×", 0.5, false)

	if err := searchQueries(ctx, res, hc, c, o); err != nil {
		return nil, err
	}
	rssFigures(res, sub, "after the queries")

	if o.AppendFor > 0 {
		if err := appendPhase(ctx, res, sub, c, o); err != nil {
			return nil, err
		}
	}
	res.compare()
	return res, nil
}

// indexWatch polls the node's status for its index's position.
type indexWatch struct {
	c    apiclient.Client
	mu   sync.Mutex
	last wire.SearchStatus
}

func (w *indexWatch) poll() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if s, err := nodeStatus(ctx, w.c); err == nil && s.Store.Search != nil {
		w.mu.Lock()
		w.last = *s.Store.Search
		w.mu.Unlock()
	}
}

func (w *indexWatch) latest() wire.SearchStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

var errNoIndex = errors.New("the node reports no search index (store.search in its status)")

// waitIndexed polls the node's status until its index has applied seq.
func waitIndexed(ctx context.Context, c apiclient.Client, seq uint64, prog Progress) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		s, err := nodeStatus(ctx, c)
		if err != nil {
			return err
		}
		if s.Store.Search == nil {
			return errNoIndex
		}
		prog.report("indexing", int(s.Store.Search.Applied), int(seq))
		if s.Store.Search.Applied >= seq && s.Store.Search.CaughtUp {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// importCorpus imports every file of c through the node's HTTP API,
// o.Jobs at once, and returns how many imports were sent again. A file
// refused as unavailable or timed out (a node short of CPU or disk) is
// sent again, as a user re-runs pi-ctl import, which continues where it
// stopped (docs/API.md, import); "exists" on a retry means the first one
// completed.
func importCorpus(ctx context.Context, httpURL string, c searchcorpus.Corpus, o SearchOptions) (int, error) {
	clients := make([]apiclient.Client, o.Jobs)
	for i := range clients {
		var err error
		if clients[i], err = apiclient.NewHTTP(apiclient.HTTPOptions{URL: httpURL}); err != nil {
			return 0, err
		}
		defer clients[i].Close()
	}
	var retries atomic.Int64
	_, _, err := runJobs(ctx, o.Progress, "importing files", o.Jobs, len(c.Files), len(c.Files), func(ctx context.Context, j int, m *meter) error {
		b, err := os.ReadFile(c.Files[j])
		if err != nil {
			return err
		}
		return m.time(func() error {
			backoff := time.Second
			for try := 0; ; try++ {
				_, err := clients[m.w].Do(ctx, wire.ImportRequest{File: b})
				switch {
				case err == nil, try > 0 && errors.Is(err, wire.ErrExists):
					return nil
				case try < importTries && (errors.Is(err, wire.ErrUnavailable) || errors.Is(err, wire.ErrTimeout)):
					retries.Add(1)
					if !session.Sleep(ctx, &backoff, 10*time.Second) {
						return ctx.Err()
					}
				default:
					return fmt.Errorf("import %s: %w", c.Files[j], err)
				}
			}
		})
	})
	return int(retries.Load()), err
}

// importTries bounds the retries of one file's import.
const importTries = 10

// rssFigures reports the node's resident set and its peak, from /proc: the
// pi-node process's, or this process's when the node runs in it (the
// bench's clients included).
func rssFigures(res *Result, sub subject, when string) {
	name := "pi-node"
	if _, ok := sub.(*inproc); ok {
		name = "pi-bench (node in process)"
	}
	rss, hwm, err := procMemory(sub.pid())
	if err != nil {
		res.note("%s memory %s: %v", name, when, err)
		return
	}
	res.figure(name+" RSS "+when, float64(rss)/(1<<20), "MiB")
	res.figure(name+" peak RSS", float64(hwm)/(1<<20), "MiB")
}
