package jetstream

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/session"
)

// Metadata keys of the shard map on shard 0's stream (PI_SESSIONS): how
// many shards the store has and which function places a session on one
// (session.ShardOf). A stream without them is a store of one shard, as
// every store provisioned before shards existed is.
const (
	MetaShards        = "sessionlog_shards"
	MetaShardFunction = "sessionlog_shard_function"
)

// Shard returns the configuration of shard k of cfg's log: shard 0 is cfg
// itself (its stream keeps the sessions of a store made before shards);
// shard k > 0 is stream <Stream>_<k> on subjects <SubjectPrefix>.<k>.<id>,
// which the shard 0 stream's <SubjectPrefix>.* cannot overlap (one token
// more). The cursor bucket is shared.
func (c Config) Shard(k int) Config {
	if k == 0 {
		return c
	}
	c.Stream = c.Stream + "_" + strconv.Itoa(k)
	c.SubjectPrefix = c.SubjectPrefix + "." + strconv.Itoa(k)
	return c
}

// ShardMismatchError is a store provisioned with another shard map than
// the one asked for: the map is fixed when the store is made, since a
// session found by another map would be looked for on the wrong stream.
type ShardMismatchError struct {
	Stream             string
	Have, Want         int
	HaveFunc, WantFunc string
}

func (e *ShardMismatchError) Error() string {
	if e.HaveFunc != e.WantFunc {
		return fmt.Sprintf("stream %s places sessions on shards by %q, not %q", e.Stream, e.HaveFunc, e.WantFunc)
	}
	return fmt.Sprintf("stream %s is a store of %d shard(s), not %d: the shard count is fixed when the store is provisioned", e.Stream, e.Have, e.Want)
}

// shardMap reads the shard map of shard 0's stream config.
func shardMap(sc jetstream.StreamConfig) (int, string, error) {
	v, ok := sc.Metadata[MetaShards]
	if !ok {
		return 1, session.ShardFunction, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || session.ValidShards(n) != nil {
		return 0, "", fmt.Errorf("stream %s: metadata %s is %q, want a shard count from 1 to %d", sc.Name, MetaShards, v, session.MaxShards)
	}
	f := sc.Metadata[MetaShardFunction]
	if f == "" {
		f = session.ShardFunction
	}
	return n, f, nil
}

// ProvisionShards creates (or checks) the n streams of a sharded store and
// the cursor bucket. Shard 0's stream is made first and carries the map; a
// store whose map differs is refused with a *ShardMismatchError and
// nothing is created. Safe from every node at once, like Provision.
func ProvisionShards(ctx context.Context, js jetstream.JetStream, cfg Config, n int) error {
	if err := session.ValidShards(n); err != nil {
		return err
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	log := logger(cfg)
	sc := cfg.streamConfig()
	sc.Metadata = map[string]string{MetaShards: strconv.Itoa(n), MetaShardFunction: session.ShardFunction}
	if err := retryProvision(ctx, log, "stream "+sc.Name, func(ctx context.Context) error {
		return ensureStream(ctx, js, sc)
	}); err != nil {
		return err
	}
	for k := 1; k < n; k++ {
		sk := cfg.Shard(k).streamConfig()
		if err := retryProvision(ctx, log, "stream "+sk.Name, func(ctx context.Context) error {
			return ensureStream(ctx, js, sk)
		}); err != nil {
			return err
		}
	}
	bc := cfg.bucketConfig()
	return retryProvision(ctx, log, "bucket "+bc.Bucket, func(ctx context.Context) error {
		return ensureBucket(ctx, js, bc)
	})
}

// compareShards refuses a shard 0 stream whose map is not want's.
func compareShards(have, want jetstream.StreamConfig) error {
	if want.Metadata == nil {
		return nil // not asked: Provision of one stream, the map is checked by who shards
	}
	hn, hf, err := shardMap(have)
	if err != nil {
		return err
	}
	wn, wf, _ := shardMap(want)
	if hn != wn || hf != wf {
		return &ShardMismatchError{Stream: have.Name, Have: hn, Want: wn, HaveFunc: hf, WantFunc: wf}
	}
	return nil
}

// ShardCount reads the shard count of the store on cfg's stream: 1 for a
// store made before shards (no map). wire.ErrNotFound (via Classify) when
// the stream does not exist.
func ShardCount(ctx context.Context, js jetstream.JetStream, cfg Config) (int, error) {
	s, err := js.Stream(ctx, cfg.Stream)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", cfg.Stream, Classify(err))
	}
	n, f, err := shardMap(s.CachedInfo().Config)
	if err != nil {
		return 0, err
	}
	if f != session.ShardFunction {
		return 0, &ShardMismatchError{Stream: cfg.Stream, Have: n, Want: n, HaveFunc: f, WantFunc: session.ShardFunction}
	}
	return n, nil
}

// NewShards returns the log of each of n shards of cfg, each qualifying
// its sequences (session.ShardLog), and the log over all of them
// (session.Sharded) that routes each session to its shard.
func NewShards(js jetstream.JetStream, cfg Config, n int) ([]*session.ShardLog, session.Sharded) {
	shards := make([]*session.ShardLog, n)
	all := make(session.Sharded, n)
	for k := range shards {
		l := NewLog(js, cfg.Shard(k))
		shards[k] = &session.ShardLog{Log: l, Feed: l, Shard: k}
		all[k] = shards[k]
	}
	return shards, all
}

// BalanceLeaders spreads the leaders of the n shards' streams over the
// servers holding their replicas, so that the shards' writes (each
// stream's fsyncs and CAS checks happen on its leader) do not all land on
// one server: while one server leads two more streams than another that
// holds a current replica of one of them, that stream's leader steps down
// in the other's favour. It returns the leaders moved. Safe from every
// node at once: a move another node made first fails harmlessly ("already
// leader") and the next look sees it.
func BalanceLeaders(ctx context.Context, js jetstream.JetStream, cfg Config, n int) (int, error) {
	moved := 0
	for range 2 * n { // each round moves at most one leader
		type shard struct {
			name, leader string
			current      []string // servers with a current replica, the leader aside
		}
		var shards []shard
		led := map[string]int{}
		for k := range n {
			name := cfg.Shard(k).Stream
			s, err := js.Stream(ctx, name)
			if err != nil {
				return moved, fmt.Errorf("stream %s: %w", name, Classify(err))
			}
			info, err := s.Info(ctx)
			if err != nil {
				return moved, fmt.Errorf("stream %s: %w", name, Classify(err))
			}
			ci := info.Cluster
			if ci == nil || ci.Leader == "" {
				return moved, nil // no cluster, or an election: nothing to balance now
			}
			sh := shard{name: name, leader: ci.Leader}
			for _, p := range ci.Replicas {
				led[p.Name] += 0 // a server that leads none counts too
				if p.Current && !p.Offline {
					sh.current = append(sh.current, p.Name)
				}
			}
			led[ci.Leader]++
			shards = append(shards, sh)
		}
		from, to, stream := "", "", ""
		for _, sh := range shards {
			for _, peer := range sh.current {
				if led[sh.leader]-led[peer] >= 2 && (from == "" || led[sh.leader]-led[peer] > led[from]-led[to]) {
					from, to, stream = sh.leader, peer, sh.name
				}
			}
		}
		if stream == "" {
			return moved, nil
		}
		body := []byte(fmt.Sprintf(`{"placement":{"preferred":%q}}`, to))
		msg, err := js.Conn().RequestWithContext(ctx, apiPrefix(js)+"STREAM.LEADER.STEPDOWN."+stream, body)
		if err != nil {
			return moved, fmt.Errorf("move the leader of %s from %s to %s: %w", stream, from, to, err)
		}
		var resp struct {
			Error *struct {
				Description string `json:"description"`
			} `json:"error"`
		}
		if json.Unmarshal(msg.Data, &resp) == nil && resp.Error != nil {
			// Most likely another node moved it first; look again later.
			return moved, fmt.Errorf("move the leader of %s from %s to %s: %s", stream, from, to, resp.Error.Description)
		}
		if err := waitLeaderMoved(ctx, js, stream, from); err != nil {
			return moved, err
		}
		moved++
	}
	return moved, nil
}

// waitLeaderMoved waits until stream has a leader other than from.
func waitLeaderMoved(ctx context.Context, js jetstream.JetStream, stream, from string) error {
	for {
		s, err := js.Stream(ctx, stream)
		if err == nil {
			if ci := s.CachedInfo().Cluster; ci != nil && ci.Leader != "" && ci.Leader != from {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stream %s: a new leader after %s stepped down: %w", stream, from, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
