package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/pifleet/sessionlog/internal/enginetest"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/writer"
)

// slowFeed is a MemLog whose LastSeq lets go slowly, as a request in
// flight to a leader being elected does: it answers only when its context
// ends (watchLag's per-poll timeout), and once the Store cancels it, after
// a linger that outlasts goleak's retries (about half a second). So a
// goroutine that Close cancels but does not wait for is still there when
// the test looks. (Follow does not linger: the Store used to wait for it
// alone, and its linger would hide the others'.)
type slowFeed struct{ *session.MemLog }

func (f slowFeed) LastSeq(ctx context.Context) (uint64, error) {
	<-ctx.Done()
	if errors.Is(ctx.Err(), context.Canceled) {
		<-time.After(time.Second)
	}
	return 0, ctx.Err()
}

// writeSessions appends n small sessions through Writers and returns the
// last sequence.
func writeSessions(t *testing.T, log session.Log, n int) uint64 {
	t.Helper()
	ctx := context.Background()
	var last uint64
	for range n {
		w, err := writer.Create(log, writer.CreateOptions{Cwd: "/leak"}, writer.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range [][]byte{enginetest.UserMessage("q"), enginetest.AssistantMessage("a")} {
			if _, err := w.AppendMessage(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
		last = w.LastSeq()
	}
	return last
}

// TestStoreCloseJoinsGoroutines: Close returns only once follow, watchLag,
// snapshotLoop and reapLoop have ended, even when the log is slow to let go.
func TestStoreCloseJoinsGoroutines(t *testing.T) {
	before := goleak.IgnoreCurrent() // other tests' leftovers are not this test's
	l := session.NewMemLog(1000, 1<<20)
	st := store.New(slowFeed{l}, store.Options{
		Log: l, SnapshotDir: t.TempDir(), SnapshotEvery: time.Millisecond,
		MemoryBudget: 1, // evicts: snapshots then read blocks back
		Writer:       l, AbandonedAfter: time.Millisecond,
	})
	if err := st.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	last := writeSessions(t, l, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := st.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	infos, _ := st.List(context.Background(), store.ListFilter{})
	for _, in := range infos {
		if err := st.View(ctx, in.SessionID, func(*store.Doc) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, before)

	// Idempotent, and a closed Store does not start again.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, before)
}

// TestStoreCloseUnopened: Close of a Store never opened does nothing.
func TestStoreCloseUnopened(t *testing.T) {
	before := goleak.IgnoreCurrent()
	l := session.NewMemLog(1000, 1<<20)
	st := store.New(l, store.Options{Log: l, SnapshotDir: t.TempDir()})
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, before)
}
