package jetstream

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/session/sessiontest"
)

// provisionShards is provision for a store of n shards.
func provisionShards(t *testing.T, conn *Conn, cfg Config, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := ProvisionShards(ctx, conn.JS, cfg, n); err != nil {
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
		sessiontest.TestLog(t, func(t *testing.T) (session.Log, session.Feed) {
			cfg := testConfig(1)
			provisionShards(t, conn, cfg, 3)
			shards, _ := NewShards(conn.JS, cfg, 3)
			return shards[2], shards[2]
		})
	})
	t.Run("Sharded", func(t *testing.T) {
		sessiontest.TestLogWrites(t, func(t *testing.T) session.Log {
			cfg := testConfig(1)
			provisionShards(t, conn, cfg, 3)
			_, all := NewShards(conn.JS, cfg, 3)
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
	if n, err := ShardCount(ctx, conn.JS, cfg); err != nil || n != 4 {
		t.Fatalf("ShardCount = %d, %v; want 4", n, err)
	}
	if err := ProvisionShards(ctx, conn.JS, cfg, 4); err != nil {
		t.Fatalf("provisioning again: %v", err)
	}
	var sm *ShardMismatchError
	for _, n := range []int{1, 2, 8} {
		err := ProvisionShards(ctx, conn.JS, cfg, n)
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
	if n, err := ShardCount(ctx, conn.JS, legacy); err != nil || n != 1 {
		t.Fatalf("ShardCount of a stream without a map = %d, %v; want 1", n, err)
	}
	if err := Provision(ctx, conn.JS, legacy); err != nil {
		t.Fatalf("Provision over a stream without a map: %v", err)
	}
	err := ProvisionShards(ctx, conn.JS, legacy, 4)
	if !errors.As(err, &sm) || sm.Have != 1 || sm.Want != 4 {
		t.Fatalf("4 shards over a stream without a map: %v", err)
	}
}
