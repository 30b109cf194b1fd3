package store_test

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
)

// TestSnapshotAt: SnapshotAt (pi_store_snapshot_age_seconds) starts at
// Open, moves with each snapshot written and with each pass that finds the
// snapshot current (an idle node's snapshot is not stale), is the file's
// time after a restore, and is zero without snapshots.
func TestSnapshotAt(t *testing.T) {
	ctx := ctxT(t)
	l := session.NewMemLog(smallBatch, 1<<20)
	writeSessions(t, l, 2)
	var now atomic.Int64 // the Store's clock, moved by the test
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	now.Store(t0.UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	at := func(st *store.Store, want time.Time, when string) {
		t.Helper()
		if got := st.SnapshotAt(); !got.Equal(want) {
			t.Fatalf("%s: SnapshotAt %v, want %v", when, got, want)
		}
	}

	off := store.New(l, store.Options{Log: l, Now: clock})
	if err := off.Open(ctx); err != nil {
		t.Fatal(err)
	}
	at(off, time.Time{}, "without SnapshotDir")
	if err := off.Close(); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	st := store.New(l, store.Options{Log: l, SnapshotDir: dir, SnapshotEvery: time.Hour, Now: clock})
	at(st, time.Time{}, "before Open")
	if err := st.Open(ctx); err != nil {
		t.Fatal(err)
	}
	at(st, t0, "after Open, nothing on disk")
	waitApplied(t, st, lastSeq(t, l))
	t1 := t0.Add(time.Minute)
	now.Store(t1.UnixNano())
	if err := st.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	at(st, t1, "after a snapshot")
	t2 := t1.Add(time.Minute)
	now.Store(t2.UnixNano())
	if err := st.Snapshot(ctx); err != nil { // nothing applied since: nothing written
		t.Fatal(err)
	}
	at(st, t2, "after a pass that found the snapshot current")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	files, err := filepath.Glob(filepath.Join(dir, "*.snap"))
	if err != nil || len(files) != 1 {
		t.Fatalf("snapshot files %v (%v), want one", files, err)
	}
	fi, err := os.Stat(files[0])
	if err != nil {
		t.Fatal(err)
	}
	now.Store(t2.Add(time.Hour).UnixNano())
	again := store.New(l, store.Options{Log: l, SnapshotDir: dir, SnapshotEvery: time.Hour, Now: clock})
	if err := again.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	at(again, fi.ModTime(), "after restoring the snapshot")
}
