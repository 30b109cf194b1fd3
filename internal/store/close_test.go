package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
)

// TestCloseCutShort: a last snapshot that does not fit in the shutdown's
// deadline (pi-node's --shutdown-grace) is abandoned with the deadline's
// error, the snapshot before it stays as it was, and a Store started
// again from it and the log has every session: nothing is lost, the start
// only reads more of the log (docs/OPERATIONS.md, Stopping a node).
func TestCloseCutShort(t *testing.T) {
	ctx := ctxT(t)
	l := session.NewMemLog(smallBatch, 1<<20)
	writeSessions(t, l, 3)
	dir := t.TempDir()
	st := store.New(l, store.Options{Log: l, SnapshotDir: dir, SnapshotEvery: time.Hour})
	if err := st.Open(ctx); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, st, lastSeq(t, l))
	if err := st.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	snaps, _ := filepath.Glob(filepath.Join(dir, "*.snap"))
	if len(snaps) != 1 {
		t.Fatalf("snapshot files %v, want one", snaps)
	}
	before, err := os.ReadFile(snaps[0])
	if err != nil {
		t.Fatal(err)
	}
	writeSessions(t, l, 2) // applied, and in no snapshot
	waitApplied(t, st, lastSeq(t, l))

	expired, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	if err := st.CloseContext(expired); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CloseContext past its deadline: %v, want the deadline's error", err)
	}
	if after, err := os.ReadFile(snaps[0]); err != nil || string(after) != string(before) {
		t.Fatalf("the previous snapshot changed or went (%v)", err)
	}

	again := store.New(l, store.Options{Log: l, SnapshotDir: dir, SnapshotEvery: time.Hour})
	if err := again.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = again.Close() })
	waitApplied(t, again, lastSeq(t, l))
	if got, _ := again.List(ctx, store.ListFilter{Limit: 100}); len(got) != 5 {
		t.Fatalf("%d sessions after the restart, want all 5", len(got))
	}
}
