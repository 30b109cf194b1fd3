package service_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/pifleet/sessionlog/internal/seal"
	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/wire"
)

// countingLog counts authoritative reads: a Store restored from a snapshot
// must serve its sessions without them.
type countingLog struct {
	session.Log
	reads atomic.Int64
}

func (c *countingLog) Read(ctx context.Context, sid string, after uint64) ([]session.Stored, error) {
	c.reads.Add(1)
	return c.Log.Read(ctx, sid, after)
}

func sessionIDOf(f []byte) string { return string(f[bytes.Index(f, []byte(`"id":"`))+6:][:36]) }

func openSnapStore(t *testing.T, b backend, log session.Log, dir string, budget int64) *store.Store {
	t.Helper()
	return openSealedStore(t, b, log, dir, budget, nil)
}

// openSealedStore is openSnapStore with encryption at rest (ring nil: none).
func openSealedStore(t *testing.T, b backend, log session.Log, dir string, budget int64, ring *seal.Ring) *store.Store {
	t.Helper()
	st := store.New(b.feed, store.Options{Log: log, SnapshotDir: dir, MemoryBudget: budget, Seal: ring})
	if err := st.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st
}

func testSnapshotRestore(t *testing.T, b backend) {
	ctx := ctxT(t)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(11, 12))
	files := make([][]byte, 30)
	for k := range files {
		files[k] = genSession(t, r, 15)
	}
	last := importAll(t, b.log, files)
	st1 := openSnapStore(t, b, b.log, dir, 0)
	waitApplied(t, st1, last)
	if err := st1.Close(); err != nil { // writes the snapshot
		t.Fatal(err)
	}
	// After the snapshot: more entries, a purge.
	svc := &service.Service{Log: b.log, Store: openStore(t, b), Cursors: b.cursors}
	grown := sessionIDOf(files[0])
	res, err := svc.Append(ctx, grown, wire.AppendRequest{Entries: raws(`{"type":"custom","customType":"after-snapshot"}`)})
	if err != nil {
		t.Fatal(err)
	}
	purged := sessionIDOf(files[1])
	if err := b.log.Purge(ctx, purged); err != nil {
		t.Fatal(err)
	}

	cl := &countingLog{Log: b.log}
	st2 := openSnapStore(t, b, cl, dir, 0)
	defer st2.Close()
	// Before catching up: every snapshot session is there, from disk.
	for _, f := range files[2:] {
		if got := exportOf(t, st2, sessionIDOf(f)); !bytes.Equal(got, f) {
			t.Fatalf("restored session %s differs", sessionIDOf(f))
		}
	}
	if n := cl.reads.Load(); n != 0 {
		t.Fatalf("the restored store read the log %d times", n)
	}
	waitApplied(t, st2, lastSeq(t, b))
	if got := exportOf(t, st2, grown); !bytes.Contains(got, []byte("after-snapshot")) || res.LastSeq == 0 {
		t.Fatal("an entry appended after the snapshot is missing")
	}
	if err := st2.View(ctx, purged, func(*store.Doc) error { return nil }); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("a session purged after the snapshot is still there: %v", err)
	}
}

func testSnapshotIgnoredWhenBad(t *testing.T, b backend) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(13, 14))
	files := [][]byte{genSession(t, r, 5), genSession(t, r, 5)}
	last := importAll(t, b.log, files)
	st1 := openSnapStore(t, b, b.log, dir, 0)
	waitApplied(t, st1, last)
	if err := st1.Close(); err != nil {
		t.Fatal(err)
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "store-*.snap"))
	if len(paths) != 1 {
		t.Fatalf("want one snapshot, have %v", paths)
	}
	data, _ := os.ReadFile(paths[0])
	data[len(data)/2] ^= 0xff // corrupt a block or the index
	if err := os.WriteFile(paths[0], data, 0o644); err != nil {
		t.Fatal(err)
	}
	st2 := openSnapStore(t, b, b.log, dir, 0)
	defer st2.Close()
	waitApplied(t, st2, last)
	for _, f := range files {
		if got := exportOf(t, st2, sessionIDOf(f)); !bytes.Equal(got, f) {
			t.Fatal("a store with a corrupt snapshot serves wrong data")
		}
	}
	// A snapshot of another log is not used either.
	other := session.NewMemLog(1000, 8<<20)
	st3 := store.New(other, store.Options{Log: other, SnapshotDir: dir})
	if err := st3.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer st3.Close()
	if s := st3.Stats(); s.Sessions != 0 {
		t.Fatalf("a snapshot of another log was restored: %d sessions", s.Sessions)
	}
}

func testSnapshotEvictions(t *testing.T, b backend) {
	ctx := ctxT(t)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(15, 16))
	files := make([][]byte, 40)
	total := 0
	for k := range files {
		files[k] = genSession(t, r, 10)
		total += len(files[k])
	}
	cl := &countingLog{Log: b.log}
	st := openSnapStore(t, b, cl, dir, int64(total/4))
	defer st.Close()
	last := importAll(t, b.log, files)
	waitApplied(t, st, last)
	// Evicted before any snapshot: spilled to local blocks, so neither the
	// snapshot nor a reload reads them from the log.
	before := cl.reads.Load()
	if s := st.Stats(); s.Evictions == 0 {
		t.Fatalf("nothing was evicted before the snapshot: %+v", s)
	}
	if spills, _ := filepath.Glob(filepath.Join(dir, "spill-*.blk")); len(spills) == 0 {
		t.Fatal("sessions were evicted but not spilled")
	}
	if err := st.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if spills, _ := filepath.Glob(filepath.Join(dir, "spill-*.blk")); len(spills) != 0 {
		t.Fatalf("spill files remain after a snapshot took their sessions over: %v", spills)
	}
	// Grow every session while most are evicted: their tails are kept.
	svc := &service.Service{Log: b.log, Store: st, Cursors: b.cursors}
	var lastRes uint64
	for _, f := range files {
		res, err := svc.Append(ctx, sessionIDOf(f), wire.AppendRequest{Entries: raws(`{"type":"custom","customType":"tail"}`)})
		if err != nil {
			t.Fatal(err)
		}
		lastRes = res.LastSeq
	}
	waitApplied(t, st, lastRes)
	for _, f := range files {
		got := exportOf(t, st, sessionIDOf(f))
		if !bytes.HasPrefix(got, f) || !bytes.Contains(got[len(f):], []byte(`"customType":"tail"`)) {
			t.Fatalf("session %s after eviction and reload is wrong", sessionIDOf(f))
		}
	}
	if s := st.Stats(); s.Evictions == 0 || s.Reloads == 0 {
		t.Fatalf("nothing was evicted and reloaded: %+v", s)
	}
	if n := cl.reads.Load() - before; n != 0 {
		t.Fatalf("evicted sessions were read from the log %d times", n)
	}
}

// hookFeed runs hook (once) when the Store asks for the log's identity, as
// Snapshot does between capturing the sessions and writing them.
type hookFeed struct {
	*session.MemLog
	hook atomic.Pointer[func()]
}

func (f *hookFeed) Identity(ctx context.Context) (string, error) {
	if h := f.hook.Swap(nil); h != nil {
		(*h)()
	}
	return f.MemLog.Identity(ctx)
}

// TestSnapshotKeepsLaterSpill: a session loaded when a snapshot captures it,
// then grown and evicted (spilled) while the snapshot is being written,
// keeps the records the snapshot lacks.
func TestSnapshotKeepsLaterSpill(t *testing.T) {
	ctx := ctxT(t)
	r := rand.New(rand.NewPCG(17, 18))
	file := genSession(t, r, 10)
	feed := &hookFeed{MemLog: session.NewMemLog(1000, 8<<20)}
	// The session fits until it grows by as much again.
	st := store.New(feed, store.Options{Log: feed.MemLog, SnapshotDir: t.TempDir(), MemoryBudget: int64(len(file) * 5 / 4)})
	if err := st.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	waitApplied(t, st, importAll(t, feed.MemLog, [][]byte{file}))
	sid := sessionIDOf(file)
	svc := &service.Service{Log: feed.MemLog, Store: st, Cursors: session.NewMemCursors()}
	late := `{"type":"custom","customType":"late","data":"` + string(bytes.Repeat([]byte("x"), len(file))) + `"}`
	hook := func() {
		res, err := svc.Append(ctx, sid, wire.AppendRequest{Entries: raws(late)})
		if err != nil {
			t.Error(err)
			return
		}
		waitApplied(t, st, res.LastSeq)
	}
	feed.hook.Store(&hook)
	if err := st.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if feed.hook.Load() != nil {
		t.Fatal("the hook did not run")
	}
	if s := st.Stats(); s.Evictions == 0 {
		t.Fatalf("the grown session was not evicted: %+v", s)
	}
	if got := exportOf(t, st, sid); !bytes.Contains(got, []byte(`"customType":"late"`)) {
		t.Fatal("an entry applied between the snapshot's capture and its swap is lost")
	}
}
