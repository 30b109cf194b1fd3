package store_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// unreachableFeed is a log whose Follow never delivers: each attempt
// fails (no consumer, no leader answering), and it retries by itself, as
// jetstream.Log's Follow does while a stream's leader is gone, telling
// the report in its ctx of every attempt.
type unreachableFeed struct {
	*session.MemLog
	attempts chan struct{} // one per attempt, for the test to step them
}

func (f *unreachableFeed) Follow(ctx context.Context, _ uint64, _ func([]session.Stored) error) error {
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-f.attempts:
		}
		session.ReportFollowRetry(ctx, fmt.Errorf("attempt %d: consumer: %w; leader gets: no responders", n, context.DeadlineExceeded))
	}
}

// TestFollowRetriesReported: a Store whose feed retries without reading
// anything says why — its last follow error and a warning — though Follow
// itself never returns. A sharded TestKillStreamLeader saw a Store taken
// over apply nothing for a minute with no follow error and no log line.
func TestFollowRetriesReported(t *testing.T) {
	ctx := ctxT(t)
	l := session.NewMemLog(smallBatch, 1<<20)
	var logs testutil.SyncBuffer
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC) // the Store's clock: moved by the test alone
	var clock sync.Mutex
	f := &unreachableFeed{MemLog: l, attempts: make(chan struct{})}
	st := store.New(f, store.Options{Log: l, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Now: func() time.Time { clock.Lock(); defer clock.Unlock(); return now }})
	if err := st.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	step := func() {
		t.Helper()
		select {
		case f.attempts <- struct{}{}:
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	warnings := func() int { return strings.Count(logs.String(), "nothing read; retrying") }
	waitFor := func(what string, ok func() error) {
		t.Helper()
		testutil.WaitFor(t, 10*time.Second, testutil.Awaiting(what, ok))
	}

	step()
	waitFor("the first attempt reported", func() error {
		if got := st.Stats().LastFollowErr; !strings.Contains(got, "attempt 1:") {
			return fmt.Errorf("last follow error %q", got)
		}
		if n := warnings(); n != 1 {
			return fmt.Errorf("%d warnings:\n%s", n, logs.String())
		}
		return nil
	})
	// The next attempts, within retryLogEvery and with nothing applied:
	// the error is the latest, the warning not repeated.
	step()
	step()
	waitFor("the third attempt reported", func() error {
		if got := st.Stats().LastFollowErr; !strings.Contains(got, "attempt 3:") {
			return fmt.Errorf("last follow error %q", got)
		}
		return nil
	})
	if n := warnings(); n != 1 {
		t.Fatalf("%d warnings within 10 s of the first, want 1:\n%s", n, logs.String())
	}
	// Still nothing applied 10 s on: warned again.
	clock.Lock()
	now = now.Add(10 * time.Second)
	clock.Unlock()
	step()
	waitFor("a second warning", func() error {
		if n := warnings(); n != 2 {
			return fmt.Errorf("%d warnings", n)
		}
		return nil
	})
	if !strings.Contains(logs.String(), "applied=0") || !strings.Contains(logs.String(), context.DeadlineExceeded.Error()) {
		t.Fatalf("the warning names neither the position nor the error:\n%s", logs.String())
	}
}
