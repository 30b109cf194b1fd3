package session_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/session/sessiontest"
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
		w, err := session.Create(log, session.CreateOptions{Cwd: "/leak"}, session.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range [][]byte{sessiontest.UserMessage("q"), sessiontest.AssistantMessage("a")} {
			if _, err := w.AppendMessage(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
		last = w.LastSeq()
	}
	return last
}

// TestStoreCloseJoinsGoroutines: Close returns only once follow, watchLag
// and snapshotLoop have ended, even when the log is slow to let go.
func TestStoreCloseJoinsGoroutines(t *testing.T) {
	before := goleak.IgnoreCurrent() // other tests' leftovers are not this test's
	l := session.NewMemLog(1000, 1<<20)
	st := session.NewStore(slowFeed{l}, session.StoreOptions{
		Log: l, SnapshotDir: t.TempDir(), SnapshotEvery: time.Millisecond,
		MemoryBudget: 1, // evicts: snapshots then read blocks back
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
	infos, _ := st.List(session.ListFilter{})
	for _, in := range infos {
		if err := st.View(ctx, in.SessionID, func(*session.Doc) error { return nil }); err != nil {
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
	st := session.NewStore(l, session.StoreOptions{Log: l, SnapshotDir: t.TempDir()})
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, before)
}

// TestWriterStartsNoGoroutines: a Writer (created, published, reopened,
// forked) owns no goroutine, so it needs no Close.
func TestWriterStartsNoGoroutines(t *testing.T) {
	before := goleak.IgnoreCurrent()
	ctx := context.Background()
	l := session.NewMemLog(1000, 1<<20)
	w, err := session.Create(l, session.CreateOptions{Cwd: "/leak"}, session.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q, err := w.AppendMessage(ctx, sessiontest.UserMessage("q"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendMessage(ctx, sessiontest.AssistantMessage("a")); err != nil {
		t.Fatal(err)
	}
	w2, err := session.Open(ctx, l, w.ID(), session.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w2.AppendMessage(ctx, sessiontest.UserMessage("more")); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Fork(ctx, q, session.CreateOptions{Cwd: "/leak"}); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, before)
}
