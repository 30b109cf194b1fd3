package region

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

const (
	sid1 = "0190b6a4-7c1f-7cc3-9d32-6c5e2f1d0b01"
	sid2 = "0190b6a4-7c1f-7cc3-9d32-6c5e2f1d0b02"
)

// TestFailoverAndFailbackKeepBothSides loses the home region with entries
// it acknowledged but could not mirror (the mirror region was down when
// they were written), fails over, writes in the new home, brings the old
// home back and fails back: the new home then holds both sides' entries,
// each once, the old home's as the branches they were.
func TestFailoverAndFailbackKeepBothSides(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sc, a, b := startTwoRegions(t)

	a.create(t, sid1, "r1")
	a.add(t, sid1, "a1", "r1")
	b.add(t, sid1, "b1", "r1") // through B, into A's stream
	b.waitEntries(t, sid1, map[string]string{"r1": "", "a1": "r1", "b1": "r1"})
	mirrored := b.store.Applied()
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	putCursor(t, a, "moved-in-b", "a1", t0)
	putCursor(t, a, "moved-in-a", "a1", t0)
	waitCursor(t, b, "moved-in-a", "a1") // mirrored

	// B is lost; A acknowledges what it can no longer mirror. Then A is
	// lost and B comes back.
	sc.stop("B")
	a.add(t, sid1, "a2", "a1")
	a.add(t, sid1, "a3", "a2")
	a.create(t, sid2, "x1")
	putCursor(t, a, "moved-in-a", "a3", t0.Add(time.Minute))
	putCursor(t, a, "only-in-a", "a2", t0.Add(time.Minute))
	sc.stop("A")
	sc.start(t, "B")
	// B's mirror restarted and has not heard from A, which is gone: its
	// lag is unknown, not 0.
	testutil.WaitFor(t, 30*time.Second, func() error {
		m := b.node.Status(ctx).Mirror
		if m == nil || m.Lag != nil || m.LagFrom != "unknown" || m.HomeLastSeq != nil {
			return fmt.Errorf("mirror status with A lost and B's mirror restarted: %+v", m)
		}
		// Nor does the Store learn a log's end from it.
		if _, err := b.node.Feeds[0].LastSeq(ctx); !errors.Is(err, jetstream.ErrLagUnknown) || !errors.Is(err, wire.ErrUnavailable) {
			return fmt.Errorf("the Feed's last sequence with the lag unknown: %v", err)
		}
		return nil
	})

	admin := &Admin{JS: sc.connect(t, "B").JS}
	rep, err := admin.Failover(ctx, "B", false)
	if err != nil {
		t.Fatalf("failover: %v", err)
	}
	if rep.ForkSeq != mirrored || rep.Epoch != 2 || rep.From != "A" || !rep.Changed {
		t.Errorf("failover report %+v, want a change, fork at %d, epoch 2", rep, mirrored)
	}
	// B's mirror never heard from A after its restart: it cannot say how
	// much it lacks, and says so.
	if !strings.HasPrefix(rep.Lost, "unknown") {
		t.Errorf("failover report says %q of what is missing, want unknown", rep.Lost)
	}
	// Run again, it is done already: it succeeds and changes nothing.
	if again, err := admin.Failover(ctx, "B", false); err != nil || again.Changed || again.Epoch != 2 || again.ForkSeq != mirrored {
		t.Errorf("second failover to B: %+v %v, want done already at epoch 2", again, err)
	}
	b.waitRecord(t, "home B", func(r Record) bool { return r.Home == "B" })
	b.add(t, sid1, "b2", "a1") // the writer goes on from what B has
	putCursor(t, b, "moved-in-b", "b2", t0.Add(2*time.Minute))
	before := map[string]string{"r1": "", "a1": "r1", "b1": "r1", "b2": "a1"}
	b.waitEntries(t, sid1, before)

	// While A is away, a failback waits for it as long as it is told, and
	// then refuses, saying so.
	impatient := &Admin{JS: admin.JS, ReturnWait: time.Second, ProbeTimeout: 500 * time.Millisecond}
	began := time.Now()
	if _, err := impatient.Failback(ctx, "A"); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "waited 1s") {
		t.Errorf("failback from A while it is down: %v, want refused after waiting 1s", err)
	}
	if took := time.Since(began); took > testutil.Scale(5*time.Second) {
		t.Errorf("failback from an unreachable A took %v with a 1 s wait", took)
	}

	// A returns: its node reads from B now, and forgets what B lacks.
	sc.start(t, "A")
	a.waitRecord(t, "A stale", func(r Record) bool { _, stale := r.Stale["A"]; return r.Home == "B" && stale })
	a.waitEntries(t, sid1, before)
	if _, err := admin.Failback(ctx, "B"); !errors.Is(err, ErrRefused) {
		t.Errorf("failback from the home: %v, want refused", err)
	}

	fb, err := admin.Failback(ctx, "A")
	if err != nil {
		t.Fatalf("failback: %v", err)
	}
	if st := fb.Stats; !fb.Changed || st.Entries != 3 || st.Created != 1 || st.Conflicts != 0 || st.VerifiedTotal != 3 {
		t.Errorf("failback merged %+v, want a2, a3 and the new session's x1", st)
	}
	after := map[string]string{"r1": "", "a1": "r1", "b1": "r1", "b2": "a1", "a2": "a1", "a3": "a2"}
	b.waitEntries(t, sid1, after)
	b.waitEntries(t, sid2, map[string]string{"x1": ""})
	if st := fb.Stats; st.Cursors != 2 || st.CursorsKept != 1 {
		t.Errorf("failback cursors: %d copied, %d kept; want 2 and 1", st.Cursors, st.CursorsKept)
	}
	waitCursor(t, b, "moved-in-a", "a3") // set later in A than anywhere
	waitCursor(t, b, "only-in-a", "a2")  // B never had it
	waitCursor(t, b, "moved-in-b", "b2") // B's is newer
	a.waitRecord(t, "A a mirror again", func(r Record) bool { _, stale := r.Stale["A"]; return !stale })
	a.waitEntries(t, sid1, after)
	if got := a.node.FeedConfig().Stream; got != "PI_SESSIONS_A" {
		t.Errorf("A's node reads %s, want its own mirror", got)
	}

	// Writes through A reach B; a failback again has nothing to do.
	a.add(t, sid1, "a4", "a3")
	after["a4"] = "a3"
	a.waitEntries(t, sid1, after)
	if again, err := admin.Failback(ctx, "A"); err != nil || again.Changed {
		t.Errorf("second failback: %+v %v, want done already", again, err)
	}
	if _, err := admin.Failback(ctx, "C"); !errors.Is(err, ErrRefused) {
		t.Errorf("failback from an unknown region: %v, want refused", err)
	}
	assertOnce(t, admin, "B", sid1, len(after))
}

func putCursor(t *testing.T, s *stack, client, leaf string, at time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	testutil.WaitFor(t, 20*time.Second, func() error {
		if _, err := s.node.Cursors.Put(ctx, sid1, client, session.Cursor{LeafID: leaf, UpdatedAt: at}); err != nil {
			return fmt.Errorf("put cursor %s in %s: %w", client, s.node.Region, err)
		}
		return nil
	})
}

// waitCursor waits until the node's home bucket has the client's cursor
// at leaf.
func waitCursor(t *testing.T, s *stack, client, leaf string) {
	t.Helper()
	testutil.WaitFor(t, 20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err := s.node.Cursors.Get(ctx, sid1, client)
		cancel()
		if err == nil && c.LeafID == leaf {
			return nil
		}
		return fmt.Errorf("cursor %s in %s: %+v %v, want leaf %s", client, s.node.Region, c, err, leaf)
	})
}

// assertOnce reads the session from region's stream and checks that no
// entry id is stored twice.
func assertOnce(t *testing.T, admin *Admin, region, sid string, want int) {
	t.Helper()
	assertOnceOn(t, admin, Assets(testBase(), NamesOf(testBase()), region, 1), sid, want)
}

// TestFailoverRefusedWhileHomeHealthy: a failover is refused while the home
// answers; --force fences it first, and then nothing is lost at all.
func TestFailoverRefusedWhileHomeHealthy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sc, a, b := startTwoRegions(t)
	a.create(t, sid1, "r1")
	b.add(t, sid1, "b1", "r1")
	admin := &Admin{JS: sc.connect(t, "B").JS}
	// B's mirror, caught up, counts its lag from A's stream: B is ready.
	testutil.WaitFor(t, 30*time.Second, func() error {
		m := b.node.Status(ctx).Mirror
		if m == nil || m.Lag == nil || *m.Lag != 0 || m.LagFrom != "origin" || m.HomeLastSeq == nil || !m.CaughtUp {
			return fmt.Errorf("mirror status of a caught-up B: %+v", m)
		}
		return b.node.Ready()
	})

	if _, err := admin.Failover(ctx, "B", false); !errors.Is(err, ErrRefused) {
		t.Fatalf("failover while A is healthy: %v, want refused", err)
	}
	if rec := a.node.Record(); rec.Home != "A" || rec.Epoch != 1 {
		t.Fatalf("a refused failover changed the record: %+v", rec)
	}
	a.add(t, sid1, "a1", "b1")
	rep, err := admin.Failover(ctx, "B", true)
	if err != nil {
		t.Fatalf("forced failover: %v", err)
	}
	if rep.HomeState != "fenced by --force" {
		t.Errorf("home state %q", rep.HomeState)
	}
	// Everything A acknowledged is in B: the switchover lost nothing.
	want := map[string]string{"r1": "", "b1": "r1", "a1": "b1"}
	b.waitEntries(t, sid1, want)
	a.add(t, sid1, "a2", "a1") // A's node writes to B now
	want["a2"] = "a1"
	b.waitEntries(t, sid1, want)
	a.waitEntries(t, sid1, want)

	fb, err := admin.Failback(ctx, "A")
	if err != nil {
		t.Fatalf("failback: %v", err)
	}
	if fb.Stats.Entries != 0 {
		t.Errorf("failback after a switchover merged %d entries, want none", fb.Stats.Entries)
	}
	a.waitRecord(t, "A a mirror again", func(r Record) bool { _, stale := r.Stale["A"]; return !stale })
	a.add(t, sid1, "a3", "a2")
	want["a3"] = "a2"
	a.waitEntries(t, sid1, want)
	assertOnce(t, admin, "B", sid1, len(want))
}
