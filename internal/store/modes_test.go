package store_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/enginetest"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/writer"
)

// TestSnapshotModes: the Store's snapshots and spill files hold whole
// sessions, so they are their owner's only (0600), in a directory the
// Store creates 0700.
func TestSnapshotModes(t *testing.T) {
	ctx := ctxT(t)
	l := session.NewMemLog(smallBatch, 1<<20)
	for i := range 3 {
		sid := testutil.SessionID(t)
		if _, err := writer.Import(ctx, l, enginetest.SessionFile(sid, 5, uint32(i)), nil, writer.RetryPolicy{}); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "snaps")
	check := func(when, wantPart string) {
		t.Helper()
		st, err := os.Stat(dir)
		if err != nil || st.Mode().Perm() != 0o700 {
			t.Fatalf("%s: snapshot dir %v (%v), want mode 0700", when, st, err)
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range ents {
			info, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			if info.Mode().Perm() != 0o600 {
				t.Errorf("%s: %s has mode %v, want 0600", when, e.Name(), info.Mode().Perm())
			}
			found = found || strings.Contains(e.Name(), wantPart)
		}
		if !found {
			t.Fatalf("%s: no %q file in %v", when, wantPart, ents)
		}
	}
	// A budget of one byte evicts every session once applied: without a
	// snapshot yet, each one is spilled.
	st := store.New(l, store.Options{Log: l, SnapshotDir: dir, MemoryBudget: 1})
	if err := st.Open(ctx); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, st, lastSeq(t, l))
	check("after evictions", "spill")
	if err := st.Close(); err != nil { // writes the snapshot
		t.Fatal(err)
	}
	check("after Close", ".snap")
}
