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
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestReadFreshness: a read's freshness names the sequence its data
// reflected (not the Store's state afterwards), and the lag counts
// sequences the node was told of (its own acknowledged writes) before the
// log's end shows them.
func TestReadFreshness(t *testing.T) {
	ctx := context.Background()
	l := session.NewMemLog(1000, 1<<20)
	st := store.New(slowFeed{l}, store.Options{Log: l}) // LastSeq never answers: only notes move Known
	if err := st.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	last := writeSessions(t, l, 2)
	testutil.WaitFor(t, 5*time.Second, func() error { return st.WaitFor(ctx, last) })

	infos, _ := st.List(ctx, store.ListFilter{})
	sid := infos[0].SessionID
	var seen uint64
	f, err := st.ViewOrRead(ctx, l, sid, func(d *store.Doc) error { seen = d.LastSeq; return nil })
	if err != nil {
		t.Fatal(err)
	}
	more := writeSessions(t, l, 1) // applied after the read: not in its freshness
	testutil.WaitFor(t, 5*time.Second, func() error { return st.WaitFor(ctx, more) })
	if f.Applied != last || f.Applied < seen {
		t.Fatalf("freshness %+v: want Applied %d, what the read saw", f, last)
	}

	if lag := st.Freshness().Lag(); lag != 0 {
		t.Fatalf("caught up, but lag %d", lag)
	}
	st.NoteLogSeq(more + 5)
	st.NoteLogSeq(more + 2) // lower notes do not lower it
	if f := st.Freshness(); f.Lag() != 5 || f.Known != more+5 {
		t.Fatalf("after noting seq %d: %+v, lag %d; want lag 5", more+5, f, f.Lag())
	}
	st.Reset()
	if f := st.Freshness(); f.Known != 0 {
		t.Fatalf("a reset Store still knows %d of the old log", f.Known)
	}
}

// switchFeed is a MemLog whose LastSeq can be made to fail, as a poll does
// during an election or through a leader that lost its lease.
type switchFeed struct {
	*session.MemLog
	down *atomic.Bool
}

func (f switchFeed) LastSeq(ctx context.Context) (uint64, error) {
	if f.down.Load() {
		return 0, wire.ErrUnavailable
	}
	return f.MemLog.LastSeq(ctx)
}

// TestCaughtUpOnlyAsOfAPoll: a Store is current as of the last poll of the
// log's end that it has applied up to, not as of the last record it
// applied. While polls fail, the records it goes on applying are no news
// of the log's end (they may be a replica's tail that stopped short of
// what the majority committed since), so CaughtUpAt must not move, and a
// read over it turns stale (Pi-Stale) instead of looking current.
func TestCaughtUpOnlyAsOfAPoll(t *testing.T) {
	ctx := context.Background()
	l := session.NewMemLog(1000, 1<<20)
	down := new(atomic.Bool)
	st := store.New(switchFeed{l, down}, store.Options{Log: l})
	if err := st.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	last := writeSessions(t, l, 2)
	testutil.WaitFor(t, 5*time.Second, func() error {
		if f := st.Freshness(); f.Applied < last || f.CaughtUpAt.IsZero() {
			return fmt.Errorf("not caught up yet: %+v", f)
		}
		return nil
	})

	down.Store(true)
	failing := time.Now()
	more := writeSessions(t, l, 3)
	testutil.WaitFor(t, 5*time.Second, func() error { return st.WaitFor(ctx, more) })
	if at := st.Freshness().CaughtUpAt; at.After(failing) {
		t.Fatalf("caught up at %v, after the polls began to fail (%v): applying records moved it", at, failing)
	}

	down.Store(false)
	healed := time.Now()
	testutil.WaitFor(t, 5*time.Second, func() error {
		if at := st.Freshness().CaughtUpAt; !at.After(healed) {
			return fmt.Errorf("caught up at %v, not since the polls answer again (%v)", at, healed)
		}
		return nil
	})
}

// hangFeed is a MemLog whose first LastSeq never answers (it returns only
// when its context ends), as a poll sent to a stream leader that has just
// died: nats-server neither answers nor refuses it.
type hangFeed struct {
	*session.MemLog
	calls *atomic.Int64
}

func (f hangFeed) LastSeq(ctx context.Context) (uint64, error) {
	if f.calls.Add(1) == 1 {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	return f.MemLog.LastSeq(ctx)
}

// TestLogEndPollBounded: a poll of the log's end that gets no answer is
// given up and the next one sent, so the Store learns the log's end after
// a failover (store.logLastSeq in /v1/status, Pi-Lag, /readyz). Before the
// poll had its own bound it waited for the caller's context, here forever
// (in pi-node, the JetStream API timeout): the wait below never ended.
func TestLogEndPollBounded(t *testing.T) {
	ctx := context.Background()
	l := session.NewMemLog(1000, 1<<20)
	calls := &atomic.Int64{}
	st := store.New(hangFeed{l, calls}, store.Options{Log: l})
	if err := st.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	last := writeSessions(t, l, 2)
	testutil.WaitFor(t, 30*time.Second, func() error {
		if f := st.Freshness(); f.Known < last {
			return fmt.Errorf("the Store knows the log's end as %d after %d polls, want %d", f.Known, calls.Load(), last)
		}
		return nil
	})
}
