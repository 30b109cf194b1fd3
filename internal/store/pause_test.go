package store_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// pausingFeed answers one poll of the log's end only after the Store's
// clock has moved on by pause, as a process stopped with the poll in
// flight (SIGSTOP) reads the answer on waking; every later poll fails.
type pausingFeed struct {
	*session.MemLog
	clock *atomic.Int64
	pause time.Duration
	armed atomic.Bool  // the next poll is the paused one
	polls atomic.Int32 // polls since it was armed
}

func (f *pausingFeed) LastSeq(ctx context.Context) (uint64, error) {
	if !f.armed.Load() {
		return f.MemLog.LastSeq(ctx)
	}
	if f.polls.Add(1) > 1 {
		return 0, context.DeadlineExceeded // no news after the paused answer
	}
	last, err := f.MemLog.LastSeq(ctx)
	f.clock.Add(int64(f.pause)) // the process slept with the answer in hand
	return last, err
}

// TestPausedPollIsNoNews: an answer to a poll of the log's end read seconds
// after it was asked (the process was paused) does not make the Store
// current as of its reading: CaughtUpAt stays at the last poll answered
// within the bound. Jepsen saw a node paused 4 s answer a read at once
// with Pi-Lag 0 and no Pi-Stale, 52 sequences behind.
func TestPausedPollIsNoNews(t *testing.T) {
	ctx := ctxT(t)
	l := session.NewMemLog(smallBatch, 1<<20)
	writeSessions(t, l, 2)
	var now atomic.Int64
	t0 := time.Date(2026, 12, 6, 11, 0, 0, 0, time.UTC)
	now.Store(t0.UnixNano())
	f := &pausingFeed{MemLog: l, clock: &now, pause: 4 * time.Second}
	st := store.New(f, store.Options{Log: l, Now: func() time.Time { return time.Unix(0, now.Load()) }})
	if err := st.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	waitApplied(t, st, lastSeq(t, l))
	testutil.WaitFor(t, 10*time.Second, func() error {
		if got := st.Freshness().CaughtUpAt; !got.Equal(t0) {
			return fmt.Errorf("caught up at %v, want %v", got, t0)
		}
		return nil
	})
	f.armed.Store(true)
	testutil.WaitFor(t, 10*time.Second, func() error { // the paused answer was taken in
		if f.polls.Load() < 2 {
			return fmt.Errorf("%d polls since the pause", f.polls.Load())
		}
		return nil
	})
	if got := st.Freshness().CaughtUpAt; !got.Equal(t0) {
		t.Fatalf("caught up at %v after an answer read %v late; want %v, the last poll answered in time", got, f.pause, t0)
	}
}
