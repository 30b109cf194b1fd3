package region

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// sessionsOnEveryShard returns one session id per shard of a map of n.
func sessionsOnEveryShard(t *testing.T, n int) []string {
	t.Helper()
	m := shard.OneMap(n)
	out := make([]string, n)
	for i := 0; slices.Contains(out, ""); i++ {
		sid := fmt.Sprintf("0190b6a4-7c1f-7cc3-9d32-6c5e2f1d%04x", i)
		if k := m.Of(sid); out[k] == "" {
			out[k] = sid
		}
		if i > 1000 {
			t.Fatal("no session id for every shard")
		}
	}
	return out
}

// TestShardedFailoverAndFailback is TestFailoverAndFailbackKeepBothSides
// over three shards, a session on each: B is lost while A acknowledges an
// entry on every shard; B takes over (each shard forks at what its mirror
// held), writes, and A fails back — every shard's entry merged into B's
// same shard once, and A's three streams mirrors of B's again.
func TestShardedFailoverAndFailback(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-region supercluster")
	}
	const shards = 3
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sc := startSupercluster(t, "A", "B", "T")
	a := openShardedStack(t, sc, "A", "A", shards)
	b := openShardedStack(t, sc, "B", "A", 0) // takes the record's count
	if len(b.node.Feeds) != shards {
		t.Fatalf("B's node follows %d shards, want the record's %d", len(b.node.Feeds), shards)
	}
	// Shard 0's stream of every copy carries the map, so that pi-ctl
	// backup (jetstream.ReadMap) of a region takes every shard.
	for _, r := range []string{"A", "B"} {
		m, err := jetstream.ReadMap(ctx, a.node.JS, Assets(testBase(), NamesOf(testBase()), r, 1))
		if err != nil || m.Streams() != shards {
			t.Fatalf("the shard map of region %s's copy: %v (%v), want %d shards", r, m, err, shards)
		}
	}
	sids := sessionsOnEveryShard(t, shards)
	for _, sid := range sids {
		a.create(t, sid, "r1")
		b.add(t, sid, "b1", "r1") // through B, into A's stream of its shard
	}
	mirrored := make([]uint64, shards)
	for k, sid := range sids {
		b.waitEntries(t, sid, map[string]string{"r1": "", "b1": "r1"})
		st, err := jetstream.Probe(ctx, b.node.JS, Assets(testBase(), NamesOf(testBase()), "B", 1).Shard(k).Stream)
		if err != nil {
			t.Fatal(err)
		}
		mirrored[k] = st.LastSeq
	}
	// Each shard's stream has its own sequences: the Service's are
	// qualified by shard.
	if seq := a.add(t, sids[2], "a1", "b1"); shard.OfSeq(seq) != 2 {
		t.Fatalf("an append to shard 2 got sequence %d, of shard %d", seq, shard.OfSeq(seq))
	}
	for k, sid := range sids {
		want := map[string]string{"r1": "", "b1": "r1"}
		if k == 2 {
			want["a1"] = "b1"
		}
		b.waitEntries(t, sid, want)
		if k == 2 {
			mirrored[k]++
		}
	}

	sc.stop("B")
	for _, sid := range sids {
		a.add(t, sid, "a2", "r1") // acknowledged by A only
	}
	sc.stop("A")
	sc.start(t, "B")

	admin := &Admin{JS: sc.connect(t, "B").JS}
	rep, err := admin.Failover(ctx, "B", false)
	if err != nil {
		t.Fatalf("failover: %v", err)
	}
	if !rep.Changed || rep.Epoch != 2 || !slices.Equal(rep.ForkSeqs, mirrored) || rep.ForkSeq != mirrored[0] {
		t.Fatalf("failover report %+v; want forks by shard at %v", rep, mirrored)
	}
	if got := rep.StaleShards["A"]; !slices.Equal(got, mirrored) {
		t.Errorf("A stale with shared sequences %v by shard, want %v", got, mirrored)
	}
	b.waitRecord(t, "home B", func(r Record) bool { return r.Home == "B" })
	before := make([]map[string]string, shards)
	for k, sid := range sids {
		b.add(t, sid, "b2", "b1")
		before[k] = map[string]string{"r1": "", "b1": "r1", "b2": "b1"}
		if k == 2 {
			before[k]["a1"] = "b1"
		}
		b.waitEntries(t, sid, before[k])
	}

	sc.start(t, "A")
	a.waitRecord(t, "A stale", func(r Record) bool { _, stale := r.Stale["A"]; return r.Home == "B" && stale })
	for k, sid := range sids {
		a.waitEntries(t, sid, before[k]) // from B, A's own copy set aside
	}
	fb, err := admin.Failback(ctx, "A")
	if err != nil {
		t.Fatalf("failback: %v", err)
	}
	if st := fb.Stats; !fb.Changed || st.Entries != shards || st.Conflicts != 0 || st.VerifiedTotal != shards || !slices.Equal(fb.SharedShards, mirrored) {
		t.Errorf("failback %+v merged %+v; want a2 of every shard after %v", fb, st, mirrored)
	}
	a.waitRecord(t, "A a mirror again", func(r Record) bool { _, stale := r.Stale["A"]; return !stale && r.StaleShards == nil })
	for k, sid := range sids {
		after := before[k]
		after["a2"] = "r1"
		b.waitEntries(t, sid, after)
		a.waitEntries(t, sid, after)
		assertOnceOn(t, admin, Assets(testBase(), NamesOf(testBase()), "B", 1).Shard(k), sid, len(after))
		st, err := jetstream.Probe(ctx, admin.JS, Assets(testBase(), NamesOf(testBase()), "A", 1).Shard(k).Stream)
		if want := Assets(testBase(), NamesOf(testBase()), "B", 1).Shard(k).Stream; err != nil || st.MirrorOf != want {
			t.Errorf("A's shard %d: mirror of %q (%v), want of %s", k, st.MirrorOf, err, want)
		}
	}
	if again, err := admin.Failback(ctx, "A"); err != nil || again.Changed {
		t.Errorf("second failback: %+v %v, want done already", again, err)
	}

	// A node with another count is refused, naming both.
	c := sc.connect(t, "A")
	n := &Node{JS: c.JS, Base: testBase(), Region: "A", RecordCluster: "T", Shards: 2}
	octx, ocancel := context.WithTimeout(ctx, 20*time.Second)
	defer ocancel()
	var se *ShardsError
	if err := n.Open(octx); !errors.As(err, &se) || se.Record != shards || se.Node != 2 {
		t.Errorf("a node with --shards 2 beside a record of %d: %v", shards, err)
	}
}

// assertOnceOn checks that every entry of sid in cfg's stream is stored
// once, and that there are want of them.
func assertOnceOn(t *testing.T, admin *Admin, cfg jetstream.Config, sid string, want int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	testutil.WaitFor(t, 10*time.Second, func() error {
		recs, err := jetstream.NewLog(admin.JS, cfg).Read(ctx, sid, 0)
		if err != nil {
			return err
		}
		seen := map[string]int{}
		for _, r := range recs {
			if !r.IsHeader() {
				seen[r.ID]++
			}
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("entry %s of %s stored %d times in %s", id, sid, n, cfg.Stream)
			}
		}
		if len(seen) != want {
			return fmt.Errorf("%d entries of %s in %s, want %d", len(seen), sid, cfg.Stream, want)
		}
		return nil
	})
}

// TestRecordShards: a record of one shard encodes as before shards
// existed; a sharded one keeps forks and staleness by shard.
func TestRecordShards(t *testing.T) {
	one := Record{Home: "A", Epoch: 2, ForkSeq: 7, Regions: map[string]RegionInfo{"A": {Replicas: 1}, "B": {Replicas: 1}}}
	one.setStale("B", []uint64{7})
	b, err := json.Marshal(one)
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"shards", "forkSeqs", "staleShards"} {
		if strings.Contains(string(b), field) {
			t.Errorf("a one-shard record has %s: %s", field, b)
		}
	}
	three := Record{Home: "A", Epoch: 2, Shards: 3, ForkSeq: 7, ForkSeqs: []uint64{7, 3, 9}, Regions: one.Regions}
	three.setStale("B", []uint64{7, 3, 9})
	if got, ok := three.StaleOf("B", 2); !ok || got != 9 || three.ForkSeqOf(1) != 3 || three.Stale["B"] != 7 {
		t.Errorf("shard 2 of B shares %d (%v), shard 1 forked at %d; want 9 and 3", got, ok, three.ForkSeqOf(1))
	}
	c := three.clone()
	c.StaleShards["B"][1] = 100
	if three.StaleShards["B"][1] != 3 {
		t.Error("a clone shares its staleness by shard with the original")
	}
	three.clearStale("B")
	if _, ok := three.StaleOf("B", 1); ok || three.StaleShards != nil {
		t.Errorf("B still stale after clearStale: %+v", three)
	}
}

// TestShardNameClash: with shards, a region named like another's shard
// stream suffix is refused; without, or with too few shards, it is not.
func TestShardNameClash(t *testing.T) {
	for _, c := range []struct {
		name    string
		regions []string
		shards  int
		want    string
	}{
		{"A_1", []string{"A", "B"}, 3, "A"},
		{"A", []string{"A_2", "B"}, 3, "A_2"},
		{"A_1", []string{"A"}, 1, ""},
		{"A_3", []string{"A"}, 3, ""},  // shard 3 does not exist
		{"A_01", []string{"A"}, 3, ""}, // shard streams are named _1, not _01
		{"B", []string{"A", "A_1"}, 3, ""},
	} {
		if got := clashes(c.name, c.regions, c.shards); got != c.want {
			t.Errorf("clashes(%s, %v, %d) = %q, want %q", c.name, c.regions, c.shards, got, c.want)
		}
	}
}
