package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/enginetest"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/writer"
)

// TestPreviewsAfterRestart: a Store restarted from its snapshot lists
// every session's first user message at once (the console's "First
// message", pi's /resume preview), not only sessions it has read since:
// the snapshot's index carries them. A snapshot without them (an earlier
// version's) leaves them unknown until the next snapshot, which reads the
// sessions' lines and fills them in.
func TestPreviewsAfterRestart(t *testing.T) {
	ctx := ctxT(t)
	l := session.NewMemLog(smallBatch, 1<<20)
	want := map[string]string{} // session → first message ("" for none)
	for i, first := range []string{"first question", "", "ünïcode ✓ question"} {
		w, err := writer.Create(l, writer.CreateOptions{Cwd: "/p"}, writer.Options{})
		if err != nil {
			t.Fatal(err)
		}
		msgs := [][]byte{enginetest.AssistantMessage("hello")}
		if first != "" {
			msgs = [][]byte{enginetest.UserMessage(first), enginetest.AssistantMessage("a"), enginetest.UserMessage("second")}
		}
		for _, m := range msgs {
			if _, err := w.AppendMessage(ctx, m); err != nil {
				t.Fatalf("session %d: %v", i, err)
			}
		}
		want[w.ID()] = first
	}
	dir := t.TempDir()
	opts := store.Options{Log: l, SnapshotDir: dir, SnapshotEvery: time.Hour}
	st := store.New(l, opts)
	if err := st.Open(ctx); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, st, lastSeq(t, l))
	checkPreviews(ctx, t, "before the restart", st, want)
	if err := st.Close(); err != nil { // writes the last snapshot
		t.Fatal(err)
	}

	again := open(t, l, opts)
	checkPreviews(ctx, t, "after the restart", again, want)
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}

	store.DropListing(t, dir)
	old := open(t, l, opts)
	if got, _ := old.List(ctx, store.ListFilter{Limit: 10, Preview: true}); len(got) != len(want) {
		t.Fatalf("from a snapshot without previews: %d sessions, want %d", len(got), len(want))
	}
	if err := old.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	checkPreviews(ctx, t, "after the next snapshot", old, want)
}

func checkPreviews(ctx context.Context, t *testing.T, when string, st *store.Store, want map[string]string) {
	t.Helper()
	got, _ := st.List(ctx, store.ListFilter{Limit: 10, Preview: true})
	if len(got) != len(want) {
		t.Fatalf("%s: %d sessions, want %d", when, len(got), len(want))
	}
	for _, in := range got {
		switch w := want[in.SessionID]; {
		case w == "" && in.FirstMessage != nil:
			t.Errorf("%s: session %s: first message %q, want none", when, in.SessionID, *in.FirstMessage)
		case w != "" && (in.FirstMessage == nil || *in.FirstMessage != w):
			t.Errorf("%s: session %s: first message %v, want %q", when, in.SessionID, in.FirstMessage, w)
		}
	}
}
