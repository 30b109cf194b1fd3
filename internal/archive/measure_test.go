package archive_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/archive"
	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/jetstream/embedded"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
)

// TestMeasureMemory measures what retention is for: the memory an
// in-process nats-server holds for the session stream, per session, before
// and after archiving every session, and the archive's throughput. It runs
// only when asked, with the number of sessions:
//
//	PI_ARCHIVE_MEASURE=1000000 go test -run TestMeasureMemory -v -timeout 2h ./internal/archive
//
// Method: the server runs in this process with --sync interval; sessions
// of 1 to 3 messages (header, then 0 to 2 entries) are published directly.
// Memory is the live Go heap after two GCs, measured each time on a server
// freshly restarted on the same data directory, so that caches that expire
// by themselves (message blocks after 10 s, per-block subject state after
// 2 min, message ids for the dedupe window) do not count: what remains is
// what the server keeps for as long as the stream exists. The figures for
// the archive stream come from deleting it and restarting once more. Lines
// starting with "measured:" are the results.
func TestMeasureMemory(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("PI_ARCHIVE_MEASURE"))
	if n <= 0 {
		t.Skip("set PI_ARCHIVE_MEASURE=<sessions> to measure")
	}
	ctx := context.Background()
	dir := t.TempDir()
	srv := embedded.NewServer(dir)
	srv.ServerName, srv.Port, srv.SyncAlways = "measure", -1, false
	restart := func() {
		// Past the dedupe windows, so that the restarted server does not
		// reload the ids of the messages just written (it rebuilds the
		// dedupe map from the last window's messages).
		<-time.After(1500 * time.Millisecond)
		srv.Shutdown()
		sctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		if err := srv.Start(sctx); err != nil {
			t.Fatal(err)
		}
	}
	restart()
	defer srv.Shutdown()
	cfg := jetstream.NewConfig()
	cfg.Duplicates = time.Second // the ids of a million sessions would fill the heap for 2 minutes
	acfg := jetstream.NewArchiveConfig(cfg)
	acfg.Duplicates = time.Second
	setup := func() (*jetstream.Conn, *jetstream.Log, *jetstream.Archive) {
		c, err := jetstream.Connect(ctx, jetstream.NewConnConfig(srv.ClientURL()))
		if err != nil {
			t.Fatal(err)
		}
		if err := jetstream.Provision(ctx, c.JS, cfg); err != nil {
			t.Fatal(err)
		}
		l := jetstream.NewLog(c.JS, cfg)
		return c, l, jetstream.NewArchive(l, acfg)
	}
	c, _, arch := setup()
	if err := arch.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	c.Close()
	restart()
	base := liveHeap()

	c, l, _ := setup()
	start := time.Now()
	msgs := load(t, c.JS, l, n)
	t.Logf("measured: loaded %d sessions (%d messages) in %v", n, msgs, time.Since(start).Round(time.Millisecond))
	c.Close()
	report(t, "right after loading, before a restart (caches and dedupe ids included)", liveHeap()-base, n)
	restart()
	loaded := liveHeap()
	report(t, "session stream with every session live", loaded-base, n)

	c, l, arch = setup()
	archiveAll(t, c, l, arch, cfg.Stream, n)
	c.Close()
	report(t, "right after the pass, before a restart (caches and dedupe ids included)", liveHeap()-base, n)

	restart()
	archived := liveHeap()
	report(t, "session stream and archive stream after archiving every session", archived-base, n)
	c, _, _ = setup()
	if err := c.JS.DeleteStream(ctx, acfg.Stream); err != nil {
		t.Fatal(err)
	}
	c.Close()
	restart()
	withoutArchive := liveHeap()
	report(t, "session stream alone after archiving (notices included)", withoutArchive-base, n)
	report(t, "archive stream alone", archived-withoutArchive, n)
}

// archiveAll follows the log with a Store (reporting its memory, for
// comparison), archives every session, and reports the throughput.
func archiveAll(t *testing.T, c *jetstream.Conn, l *jetstream.Log, arch *jetstream.Archive, streamName string, n int) {
	ctx := context.Background()
	st := store.New(l, store.Options{})
	beforeStore := liveHeap()
	if err := st.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	last, err := l.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	if err := st.WaitFor(wctx, last); err != nil {
		t.Fatal(err)
	}
	report(t, "pi-node Store holding every session (for comparison)", liveHeap()-beforeStore, n)

	workers, _ := strconv.Atoi(os.Getenv("PI_ARCHIVE_WORKERS"))
	workers = cmp.Or(workers, 8)
	a := archive.New(st, l, arch, archive.Options{Node: "m", Workers: workers, Now: func() time.Time { return time.Now().Add(time.Hour) }})
	res, err := a.Pass(ctx, 0)
	if err != nil || res.Archived != n {
		t.Fatalf("pass: %+v, %v", res, err)
	}
	t.Logf("measured: archived %d sessions (%.1f MB of JSONL) in %.1f s: %.0f sessions/s with %d workers",
		res.Archived, float64(res.Bytes)/1e6, res.Seconds, float64(res.Archived)/res.Seconds, workers)
	stream, err := c.JS.Stream(ctx, streamName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("measured: session stream after archiving: %d messages (the purge notices), %d subjects", info.State.Msgs, info.State.NumSubjects)
}

// load publishes n sessions of 1 to 3 pi lines without waiting for each
// ack, and returns the number of messages.
func load(t *testing.T, js natsjs.JetStream, l *jetstream.Log, n int) int {
	var futures []natsjs.PubAckFuture
	msgs := 0
	wait := func() {
		for _, f := range futures {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				t.Fatal(err)
			}
		}
		futures = futures[:0]
	}
	ts := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	for i := range n {
		sid := uuid.Must(uuid.NewV7()).String()
		recs := []session.Record{{Type: "session", Data: []byte(`{"type":"session","version":3,"id":"` + sid + `","timestamp":"` + ts + `","cwd":"/home/dev/project"}`)}}
		parent := ""
		for k := range i % 3 {
			id := fmt.Sprintf("%08x", k+1)
			pj := "null"
			if parent != "" {
				pj = `"` + parent + `"`
			}
			recs = append(recs, session.Record{Type: "message", ID: id, Parent: parent,
				Data: []byte(`{"type":"message","id":"` + id + `","parentId":` + pj + `,"timestamp":"` + ts + `","message":{"role":"user","content":"what does this function do?"}}`)})
			parent = id
		}
		for _, r := range recs {
			f, err := js.PublishMsgAsync(l.Msg(sid, r))
			if err != nil {
				t.Fatal(err)
			}
			futures = append(futures, f)
			msgs++
		}
		if len(futures) > 2000 {
			wait()
		}
	}
	wait()
	return msgs
}

// liveHeap is the live Go heap: after the collections, what is reachable.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

func report(t *testing.T, what string, bytes int64, n int) {
	t.Logf("measured: %s: %.1f MiB, %.0f bytes per session, %.0f MiB per million sessions",
		what, float64(bytes)/(1<<20), float64(bytes)/float64(n), float64(bytes)/float64(n)*1e6/(1<<20))
}
