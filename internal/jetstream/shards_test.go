package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/enginetest"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// provisionShards is provision for a store of n shards.
func provisionShards(t *testing.T, conn *Conn, cfg Config, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := ProvisionShards(ctx, conn.JS, cfg, n); err != nil {
		t.Fatalf("provision %d shards: %v", n, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for k := range n {
			_ = conn.JS.DeleteStream(ctx, cfg.Shard(k).Stream)
		}
		_ = conn.JS.DeleteKeyValue(ctx, cfg.Bucket)
	})
}

// A shard's stream keeps the whole contract through its qualifying log,
// and the log over all shards every clause a single feed is not needed for.
func TestShardsContract(t *testing.T) {
	s := runServer(t)
	conn := connect(t, s.ClientURL())
	t.Run("Shard", func(t *testing.T) {
		enginetest.TestLog(t, func(t *testing.T) (session.Log, session.Feed) {
			cfg := testConfig(1)
			provisionShards(t, conn, cfg, 3)
			shards, _ := NewShards(conn.JS, cfg, shard.OneMap(3))
			return shards[2], shards[2]
		})
	})
	t.Run("Sharded", func(t *testing.T) {
		enginetest.TestLogWrites(t, func(t *testing.T) session.Log {
			cfg := testConfig(1)
			provisionShards(t, conn, cfg, 3)
			_, all := NewShards(conn.JS, cfg, shard.OneMap(3))
			return all
		})
	})
}

// The shard map is fixed at provisioning: another count, or a store of
// one shard made before shards existed asked for more, is refused with
// both counts named, and nothing is created.
func TestProvisionShardMap(t *testing.T) {
	s := runServer(t)
	conn := connect(t, s.ClientURL())
	ctx := context.Background()

	cfg := testConfig(1)
	provisionShards(t, conn, cfg, 4)
	for k, want := range []string{cfg.Stream, cfg.Stream + "_1", cfg.Stream + "_2", cfg.Stream + "_3"} {
		st, err := conn.JS.Stream(ctx, want)
		if err != nil {
			t.Fatalf("shard %d's stream %s: %v", k, want, err)
		}
		if subj := st.CachedInfo().Config.Subjects; k > 0 && (len(subj) != 1 || !strings.HasSuffix(subj[0], ".sess."+string(rune('0'+k))+".*")) {
			t.Fatalf("shard %d's subjects %v", k, subj)
		}
	}
	if m, err := ReadMap(ctx, conn.JS, cfg); err != nil || !m.Equal(shard.OneMap(4)) {
		t.Fatalf("ReadMap = %v, %v; want 4 shards", m, err)
	}
	if _, err := ProvisionShards(ctx, conn.JS, cfg, 4); err != nil {
		t.Fatalf("provisioning again: %v", err)
	}
	var sm *ShardMismatchError
	for _, n := range []int{1, 2, 8} {
		_, err := ProvisionShards(ctx, conn.JS, cfg, n)
		if !errors.As(err, &sm) || sm.Have != 4 || sm.Want != n || !strings.Contains(err.Error(), cfg.Stream) {
			t.Fatalf("provision %d over 4 shards: %v", n, err)
		}
	}
	if _, err := conn.JS.Stream(ctx, cfg.Stream+"_4"); err == nil {
		t.Fatal("a refused provisioning created shard 4's stream")
	}
	// Provision (one stream) is a store of one shard too.
	if err := Provision(ctx, conn.JS, cfg); !errors.As(err, &sm) {
		t.Fatalf("Provision over 4 shards: %v", err)
	}

	// A stream of the wire contract without a map: a store of one shard.
	legacy := testConfig(1)
	sc := legacy.streamConfig()
	if _, err := conn.JS.CreateStream(ctx, sc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.JS.DeleteStream(context.Background(), legacy.Stream) })
	if m, err := ReadMap(ctx, conn.JS, legacy); err != nil || !m.Equal(shard.OneMap(1)) {
		t.Fatalf("ReadMap of a stream without a map = %v, %v; want 1 shard", m, err)
	}
	if err := Provision(ctx, conn.JS, legacy); err != nil {
		t.Fatalf("Provision over a stream without a map: %v", err)
	}
	_, err := ProvisionShards(ctx, conn.JS, legacy, 4)
	if !errors.As(err, &sm) || sm.Have != 1 || sm.Want != 4 {
		t.Fatalf("4 shards over a stream without a map: %v", err)
	}
}

// TestMigrate: a store of one stream holding sessions moves to 4 shards
// while a router over it (what pi-node and the Go client hold) keeps
// working: the new streams made like the first, the map recorded with a
// start in the future, the router adopting it (WatchShards) before the
// start; from then on a new session lands on its shard among 4, while one
// made before stays on the first stream, readable and writable there.
// Too short a lead is refused; migrating to the count in force changes
// nothing; a node asking for the old count is refused, one asking for
// none takes the store's.
func TestMigrate(t *testing.T) {
	s := runServer(t)
	conn := connect(t, s.ClientURL())
	ctx := context.Background()
	cfg := testConfig(1)
	cfg.MaxMsgSize = 1 << 20 // not the default: the new streams copy the first's
	provisionShards(t, conn, cfg, 1)
	t.Cleanup(func() {
		for k := 1; k < 4; k++ {
			_ = conn.JS.DeleteStream(context.Background(), cfg.Shard(k).Stream)
		}
	})
	m0, err := ReadMap(ctx, conn.JS, cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, all := NewShards(conn.JS, cfg, m0)
	old := testutil.SessionID(t) // made before the migration
	seqs, err := all.Append(ctx, old, 0, []session.Record{headerRec(old)})
	if err != nil {
		t.Fatal(err)
	}
	watch := WatchShards(conn.JS, cfg, all, nil)

	if _, err := Migrate(ctx, conn.JS, cfg, 4, time.Now().Add(time.Second)); !errors.Is(err, wire.ErrInvalid) {
		t.Fatalf("a migration starting in 1 s: %v, want ErrInvalid (too short a lead)", err)
	}
	start := time.Now().Add(2*MapEvery + time.Second)
	m, err := migrate(ctx, conn.JS, cfg, 4, start, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m.Current() != 4 || m.Streams() != 4 || len(m.Epochs) != 2 {
		t.Fatalf("migrated map %s", m)
	}
	for k := 1; k < 4; k++ {
		st, err := conn.JS.Stream(ctx, cfg.Shard(k).Stream)
		if err != nil {
			t.Fatalf("shard %d's stream: %v", k, err)
		}
		if got := st.CachedInfo().Config.MaxMsgSize; got != cfg.MaxMsgSize {
			t.Fatalf("shard %d's stream has max_msg_size %d, the first %d", k, got, cfg.MaxMsgSize)
		}
	}
	if again, err := Migrate(ctx, conn.JS, cfg, 4, time.Now().Add(time.Hour)); err != nil || !again.Equal(m) {
		t.Fatalf("migrating to the count in force: %v, %v; want %s unchanged", again, err, m)
	}
	var me *ShardMismatchError
	if _, err := ProvisionShards(ctx, conn.JS, cfg, 1); !errors.As(err, &me) || me.Have != 4 {
		t.Fatalf("provisioning 1 shard after the migration: %v, want a mismatch naming 4", err)
	}
	if got, err := ProvisionShards(ctx, conn.JS, cfg, 0); err != nil || !got.Equal(m) {
		t.Fatalf("provisioning with no count: %v, %v; want the store's map %s", got, err, m)
	}
	// A write with a map confirmed lately reads nothing; one whose map is
	// older than MapMaxAge (a process suspended meanwhile) reads the map
	// first and routes by the new one.
	if _, err := all.Append(ctx, old, seqs[0], []session.Record{entryRecs("p", 1)[0]}); err != nil {
		t.Fatal(err)
	}
	if got := all.Map(); !got.Equal(m0) {
		t.Fatalf("a write with a fresh map read it again: %s", got)
	}
	watch.confirmed.Store(time.Now().Add(-MapMaxAge - time.Second).UnixNano())
	seqs, err = all.Append(ctx, old, seqs[0]+1, []session.Record{entryRecs("q", 1)[0]})
	if err != nil {
		t.Fatal(err)
	}
	if got := all.Map(); !got.Equal(m) {
		t.Fatalf("a write with a map %v old routes by %s, not by the store's %s", MapMaxAge, got, m)
	}
	// And the periodic read adopts it as well (a second router).
	_, other := NewShards(conn.JS, cfg, m0)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go WatchShards(conn.JS, cfg, other, nil).Run(wctx)
	testutil.WaitFor(t, 3*MapEvery, func() error {
		if got := other.Map(); !got.Equal(m) {
			return fmt.Errorf("the router routes by %s, not yet by %s", got, m)
		}
		return nil
	})
	if !time.Now().Before(start) {
		t.Fatalf("the router adopted the map only after it started (%v)", start)
	}
	for time.Now().Before(start) {
		time.Sleep(time.Until(start)) // the epoch's start: a schedule, not a condition
	}

	// The session made before: still on the first stream.
	if _, err := all.Append(ctx, old, seqs[0], []session.Record{entryRecs("o", 1)[0]}); err != nil {
		t.Fatalf("appending to a session made before the migration: %v", err)
	}
	if _, err := NewLog(conn.JS, cfg).SessionLastSeq(ctx, old); err != nil {
		t.Fatalf("the old session is not on the first stream: %v", err)
	}
	// New sessions: on their shard among 4, and only there.
	shards := map[int]bool{}
	for range 16 {
		sid := testutil.SessionID(t)
		want := shard.Of(sid, 4)
		got, err := all.Append(ctx, sid, 0, []session.Record{headerRec(sid)})
		if err != nil {
			t.Fatal(err)
		}
		if shard.OfSeq(got[0]) != want {
			t.Fatalf("new session %s stored on shard %d, want %d", sid, shard.OfSeq(got[0]), want)
		}
		if _, err := NewLog(conn.JS, cfg.Shard(want)).SessionLastSeq(ctx, sid); err != nil {
			t.Fatalf("new session %s not on shard %d's stream: %v", sid, want, err)
		}
		shards[want] = true
	}
	if len(shards) < 2 {
		t.Fatalf("16 new sessions all on shard(s) %v", shards)
	}
}

// A cross-region deployment's streams (mirrors, sourced) take one shard:
// Migrate refuses them and creates nothing.
func TestMigrateRefusesMirror(t *testing.T) {
	s := runServer(t)
	conn := connect(t, s.ClientURL())
	ctx := context.Background()
	home := testConfig(1)
	provisionShards(t, conn, home, 1)
	mirror := testConfig(1)
	if _, err := conn.JS.CreateStream(ctx, jetstream.StreamConfig{Name: mirror.Stream, Mirror: &jetstream.StreamSource{Name: home.Stream}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.JS.DeleteStream(context.Background(), mirror.Stream) })
	if _, err := migrate(ctx, conn.JS, mirror, 4, time.Now().Add(time.Minute), 0); !errors.Is(err, wire.ErrInvalid) || !strings.Contains(err.Error(), "mirror") {
		t.Fatalf("migrating a mirror: %v, want refused", err)
	}
	if _, err := conn.JS.Stream(ctx, mirror.Shard(1).Stream); err == nil {
		t.Fatal("a refused migration created a shard stream")
	}
}
