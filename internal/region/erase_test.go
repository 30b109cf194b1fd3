package region

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestEraseAcrossRegions: a delete erases every region's copy, over three
// shards, and nothing erased comes back through a failover or a failback.
//   - d1, erased in A while B mirrors: B's copy loses its records and
//     cursors, B's Store the session.
//   - d2, erased in A while B is down (its notice never reaches B): once
//     B is the home, its nodes erase it from the ledger's line.
//   - x, written in A while B is down (after the fork), erased in B after
//     the failover: the failback merges nothing of it.
//   - keep, written in A while B is down: merged by the failback as ever.
//   - p, purged in A (a rolled-back import): B's copy purges it too.
func TestEraseAcrossRegions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-region supercluster")
	}
	const shards = 3
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sc := startSupercluster(t, "A", "B", "T")
	a := openShardedStack(t, sc, "A", "A", shards)
	b := openShardedStack(t, sc, "B", "A", 0)
	ids := sessionsOnEveryShard(t, shards+2)
	d1, d2, x, keep, p := ids[0], ids[1], ids[2], ids[3], ids[4]
	for _, sid := range ids {
		a.create(t, sid, "r1")
		a.add(t, sid, "e1", "r1")
		b.waitEntries(t, sid, map[string]string{"r1": "", "e1": "r1"})
	}
	putCursorOf(t, a, d1, "w1", "e1")
	waitCopy(t, b, d1, 3)
	testutil.WaitFor(t, 20*time.Second, func() error {
		if n := cursorKeys(ctx, t, b, d1); n != 1 {
			return fmt.Errorf("B's copy of the cursor bucket holds %d keys of %s, want 1", n, d1)
		}
		return nil
	})

	// d1: erased in A; B's copy follows.
	erase(ctx, t, a, d1)
	waitCopy(t, a, d1, 0)
	waitCopy(t, b, d1, 0)
	b.waitEntries(t, d1, map[string]string{})
	testutil.WaitFor(t, 20*time.Second, func() error {
		if n := cursorKeys(ctx, t, b, d1); n != 0 {
			return fmt.Errorf("B's copy of the cursor bucket still holds %d keys of %s", n, d1)
		}
		return nil
	})

	// p: purged in A; B's copy follows.
	testutil.WaitFor(t, 30*time.Second, func() error { return a.node.WriteLog().Purge(ctx, p) })
	waitCopy(t, a, p, 0)
	waitCopy(t, b, p, 0)
	b.waitEntries(t, p, map[string]string{})

	// B is lost; A erases d2 and writes x and keep; then A is lost.
	sc.stop("B")
	erase(ctx, t, a, d2)
	waitCopy(t, a, d2, 0)
	a.add(t, x, "a2", "e1")
	a.add(t, keep, "a2", "e1")
	sc.stop("A")
	sc.start(t, "B")
	admin := &Admin{JS: sc.connect(t, "B").JS}
	if _, err := admin.Failover(ctx, "B", false); err != nil {
		t.Fatalf("failover: %v", err)
	}
	b.waitRecord(t, "home B", func(r Record) bool { return r.Home == "B" })
	// d2's notice was lost with A; B's nodes find its line in the ledger.
	waitCopy(t, b, d2, 0)
	b.waitEntries(t, d2, map[string]string{})

	// x is erased in B, the home now.
	erase(ctx, t, b, x)
	waitCopy(t, b, x, 0)
	b.waitEntries(t, x, map[string]string{})

	sc.start(t, "A")
	a.waitRecord(t, "A stale", func(r Record) bool { _, stale := r.Stale["A"]; return r.Home == "B" && stale })
	fb, err := admin.Failback(ctx, "A")
	if err != nil {
		t.Fatalf("failback: %v", err)
	}
	// x's a2 and d2's notice-less records are A's after the fork: x's
	// are left out; keep's a2 is merged.
	if st := fb.Stats; st.Erased < 1 || st.Entries != 1 || st.Created != 0 {
		t.Errorf("failback merged %+v; want keep's a2 alone, x's records left out", st)
	}
	a.waitRecord(t, "A a mirror again", func(r Record) bool { _, stale := r.Stale["A"]; return !stale })
	for _, sid := range []string{d1, d2, x} {
		waitCopy(t, b, sid, 0)
		waitCopy(t, a, sid, 0)
		a.waitEntries(t, sid, map[string]string{})
		b.waitEntries(t, sid, map[string]string{})
	}
	want := map[string]string{"r1": "", "e1": "r1", "a2": "e1"}
	a.waitEntries(t, keep, want)
	b.waitEntries(t, keep, want)
	assertOnceOn(t, admin, regionShard("B", keep, shards), keep, len(want))

	lines, err := jetstream.ReadLedger(ctx, admin.JS, LedgerBucket(DefaultRecordBucket))
	if err != nil || len(lines) != 3 {
		t.Errorf("the ledger holds %v (%v), want d1, d2 and x", lines, err)
	}
}

// regionShard is the config of the stream of region's copy that holds sid.
func regionShard(region, sid string, shards int) jetstream.Config {
	return Assets(testBase(), NamesOf(testBase()), region, 1).Shard(shard.OneMap(shards).Of(sid))
}

// erase deletes sid as pi-node's delete does in cross-region mode: its
// line in the ledger, then the erasure of the home's stream.
func erase(ctx context.Context, t *testing.T, s *stack, sid string) {
	t.Helper()
	if err := s.node.Ledger().RecordErasure(ctx, wire.Erasure{Session: sid, At: time.Now().UTC(), By: "test"}); err != nil {
		t.Fatalf("ledger line of %s: %v", sid, err)
	}
	testutil.WaitFor(t, 30*time.Second, func() error {
		_, err := s.node.WriteLog().(session.Eraser).Erase(ctx, sid, 0)
		if errors.Is(err, wire.ErrNotFound) {
			return nil // an earlier attempt erased it
		}
		return err
	})
}

// waitCopy waits until the stream of s's region's copy holds want records
// of sid.
func waitCopy(t *testing.T, s *stack, sid string, want int) {
	t.Helper()
	cfg := regionShard(s.node.Region, sid, len(s.node.Feeds))
	testutil.WaitFor(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		recs, err := jetstream.NewLog(s.node.JS, cfg).Read(ctx, sid, 0)
		if errors.Is(err, wire.ErrNotFound) {
			recs, err = nil, nil
		}
		if err != nil {
			return err
		}
		if len(recs) != want {
			return fmt.Errorf("%s holds %d records of %s, want %d", cfg.Stream, len(recs), sid, want)
		}
		return nil
	})
}

func putCursorOf(t *testing.T, s *stack, sid, client, leaf string) {
	t.Helper()
	testutil.WaitFor(t, 20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := s.node.Cursors.Put(ctx, sid, client, session.Cursor{LeafID: leaf, UpdatedAt: time.Now()})
		return err
	})
}

// cursorKeys counts the keys of sid in the bucket of s's region's copy.
func cursorKeys(ctx context.Context, t *testing.T, s *stack, sid string) int {
	t.Helper()
	cfg := Assets(testBase(), NamesOf(testBase()), s.node.Region, 1)
	str, err := s.node.JS.Stream(ctx, "KV_"+cfg.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	info, err := str.Info(ctx, natsjs.WithSubjectFilter("$KV."+cfg.Bucket+"."+sid+".>"))
	if err != nil {
		t.Fatal(err)
	}
	return len(info.State.Subjects)
}
