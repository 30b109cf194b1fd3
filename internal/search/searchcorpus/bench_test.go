//go:build searchengines

package searchcorpus

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkEngines compares the engines of issue 35 on one generated
// corpus, in one run: build rate, index bytes per JSON byte, heap held by
// the open index, query p50/p99 (top 20 by rank and the total), and rg
// over the files for the one-word query. Every engine's hits are first
// checked equal to the oracle's. The engines' files build only with the
// tag searchengines, so that go test ./... (and CI) compiles neither
// engine; go test -tags searchengines also runs TestEnginesAgree. It runs
// once whatever b.N is:
//
//	nice -n 10 go test -tags searchengines -run '^$' -bench Engines -benchtime 1x -timeout 60m ./internal/search/searchcorpus/
//
// SEARCH_BENCH_ENTRIES sets the corpus's size (200000 entries by default),
// SEARCH_BENCH_DIR keeps the corpus and indexes there instead of a
// temporary directory.
func BenchmarkEngines(b *testing.B) {
	entries := 200_000
	if s := os.Getenv("SEARCH_BENCH_ENTRIES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		entries = n
	}
	dir := os.Getenv("SEARCH_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	start := time.Now()
	c, err := Generate(filepath.Join(dir, "sessions"), 1, entries)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("corpus: %d sessions, %d entries, %.0f MB of JSON, generated in %v", c.Sessions, c.Entries, mb(c.Bytes), time.Since(start).Round(time.Second))
	start = time.Now()
	docs, err := Load(c)
	if err != nil {
		b.Fatal(err)
	}
	load := time.Since(start)
	var text int64
	for i := range docs {
		text += int64(len(docs[i].Text))
	}
	out := &strings.Builder{}
	fmt.Fprintf(out, "\ncorpus: %d sessions, %d entries (%d indexed docs, %.0f MB of text), %.0f MB of JSONL\n",
		c.Sessions, c.Entries, len(docs), mb(text), mb(c.Bytes))
	fmt.Fprintf(out, "extract (search.Extract and Load, engine-independent): %.0f entries/s, %.1f MB/s of JSON\n\n",
		float64(c.Entries)/load.Seconds(), mb(c.Bytes)/load.Seconds())

	hits := map[string]int{}
	for _, q := range Queries {
		hits[q.Label] = len(Oracle(docs, q))
	}
	type column struct {
		name  string
		cells []string
	}
	var cols []column
	for _, mk := range []func(string) (engine, error){
		func(d string) (engine, error) { return newBleve(d) },
		func(d string) (engine, error) { return newSQLite(d) },
	} {
		runtime.GC()
		base, baseRSS := heap(), rss()
		idir := filepath.Join(dir, fmt.Sprint("index", len(cols)))
		os.RemoveAll(idir)
		e, err := mk(idir)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := e.build(docs); err != nil {
			b.Fatalf("%s: %v", e.name(), err)
		}
		took := time.Since(start)
		runtime.GC()
		held, heldRSS := heap()-base, rss()-baseRSS
		size := dirSize(idir)
		if err := agree(docs, []engine{e}); err != nil {
			b.Fatal(err)
		}
		col := column{name: e.name(), cells: []string{
			fmt.Sprintf("%.0f entries/s, %.1f MB/s", float64(c.Entries)/took.Seconds(), mb(c.Bytes)/took.Seconds()),
			fmt.Sprintf("%v", took.Round(time.Second)),
			fmt.Sprintf("%.0f MB, %.2f×", mb(size), float64(size)/float64(c.Bytes)),
			fmt.Sprintf("%.0f MB", mb(held)),
			fmt.Sprintf("%.0f MB", mb(heldRSS)),
		}}
		for _, q := range Queries {
			ds, err := latencies(func() error { _, _, err := e.search(q, 20); return err })
			if err != nil {
				b.Fatal(err)
			}
			col.cells = append(col.cells, fmt.Sprintf("%s / %s", ms(ds[len(ds)/2]), ms(ds[len(ds)*99/100])))
		}
		cols = append(cols, col)
		if err := e.close(); err != nil {
			b.Fatal(err)
		}
	}

	// rg as a pi user runs it: every line of every file naming the word.
	rg := column{name: "rg (ripgrep) over the JSONL", cells: []string{"—", "—", "—", "—", "—"}}
	if path, err := exec.LookPath("rg"); err != nil {
		rg.cells = append(rg.cells, "rg not found")
	} else {
		var lines int
		ds, err := latencies(func() error {
			o, err := exec.Command(path, "-i", "-w", "-c", "--no-filename", Queries[0].Words[0], c.Dir).Output()
			lines = 0
			for f := range bytes.FieldsSeq(o) {
				n, _ := strconv.Atoi(string(f))
				lines += n
			}
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		rg.cells = append(rg.cells, fmt.Sprintf("%s / %s (%d lines)", ms(ds[len(ds)/2]), ms(ds[len(ds)*99/100]), lines))
	}
	cols = append(cols, rg)

	rows := []string{"index build rate", "build time (durable on disk)", "index on disk, × the JSONL", "Go heap held by the open index, after GC", "RSS grown by the build, the index open"}
	for _, q := range Queries {
		rows = append(rows, fmt.Sprintf("p50 / p99: %s (%d hits)", q.Label, hits[q.Label]))
	}
	fmt.Fprint(out, "| |")
	for _, col := range cols {
		fmt.Fprintf(out, " %s |", col.name)
	}
	fmt.Fprint(out, "\n|---|")
	for range cols {
		fmt.Fprint(out, "---|")
	}
	fmt.Fprintln(out)
	for i, r := range rows {
		fmt.Fprintf(out, "| %s |", r)
		for _, col := range cols {
			cell := ""
			if i < len(col.cells) {
				cell = col.cells[i]
			}
			fmt.Fprintf(out, " %s |", cell)
		}
		fmt.Fprintln(out)
	}
	fmt.Print(out.String())
	for range b.N {
	}
}

// latencies runs f at least 5 times and for about 3 s (at most 300
// times), after one warm-up, and returns the durations sorted.
func latencies(f func() error) ([]time.Duration, error) {
	if err := f(); err != nil {
		return nil, err
	}
	var ds []time.Duration
	for start := time.Now(); len(ds) < 5 || len(ds) < 300 && time.Since(start) < 3*time.Second; {
		t := time.Now()
		if err := f(); err != nil {
			return nil, err
		}
		ds = append(ds, time.Since(t))
	}
	slices.Sort(ds)
	return ds, nil
}

func heap() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// rss is the process's resident set (VmRSS), 0 where /proc is not.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func mb(n int64) float64 { return float64(n) / 1e6 }

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', -1, 64) + " ms"
}
