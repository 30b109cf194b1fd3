package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Metadata keys of the shard map on shard 0's stream (PI_SESSIONS): how
// many shards new sessions are spread over, which function places a
// session on one, and, once the count has changed (pi-ctl shards
// migrate), every epoch of the map (shard.Map's encoding). A stream
// without them is a store of one shard, as every store provisioned before
// shards existed is.
const (
	MetaShards        = "sessionlog_shards"
	MetaShardFunction = "sessionlog_shard_function"
	MetaShardEpochs   = "sessionlog_shard_epochs"
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
// session found by another map would be looked for on the wrong stream;
// only pi-ctl shards migrate changes it, by adding an epoch.
type ShardMismatchError struct {
	Stream             string
	Have, Want         int
	HaveFunc, WantFunc string
}

func (e *ShardMismatchError) Error() string {
	if e.HaveFunc != e.WantFunc {
		return fmt.Sprintf("stream %s places sessions on shards by %q, not %q", e.Stream, e.HaveFunc, e.WantFunc)
	}
	return fmt.Sprintf("stream %s is a store of %d shard(s), not %d: the shard count is fixed when the store is provisioned, and changed only by pi-ctl shards migrate", e.Stream, e.Have, e.Want)
}

// shardMap reads the shard map of shard 0's stream config.
func shardMap(sc jetstream.StreamConfig) (shard.Map, string, error) {
	v, ok := sc.Metadata[MetaShards]
	if !ok {
		return shard.OneMap(1), shard.Function, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || shard.ValidCount(n) != nil {
		return shard.Map{}, "", fmt.Errorf("stream %s: metadata %s is %q, want a shard count from 1 to %d", sc.Name, MetaShards, v, shard.Max)
	}
	f := sc.Metadata[MetaShardFunction]
	if f == "" {
		f = shard.Function
	}
	m := shard.OneMap(n)
	if e, ok := sc.Metadata[MetaShardEpochs]; ok {
		if m, err = shard.ParseMap(e); err != nil {
			return shard.Map{}, "", fmt.Errorf("stream %s: metadata %s: %w", sc.Name, MetaShardEpochs, err)
		}
		if m.Current() != n {
			return shard.Map{}, "", fmt.Errorf("stream %s: metadata %s is %d, but the last epoch of %s %q has %d", sc.Name, MetaShards, n, MetaShardEpochs, e, m.Current())
		}
	}
	return m, f, nil
}

// mapOf is the shard map of shard 0's stream config, refused (a
// *ShardMismatchError) when it names a function other than the one its
// epochs need: a store made by a later version, or edited by hand.
func mapOf(sc jetstream.StreamConfig) (shard.Map, error) {
	m, f, err := shardMap(sc)
	if err != nil {
		return shard.Map{}, err
	}
	if f != m.Function() {
		return shard.Map{}, &ShardMismatchError{Stream: sc.Name, Have: m.Current(), Want: m.Current(), HaveFunc: f, WantFunc: m.Function()}
	}
	return m, nil
}

// mapMetadata is the metadata recording m.
func mapMetadata(m shard.Map) map[string]string {
	md := map[string]string{MetaShards: strconv.Itoa(m.Current()), MetaShardFunction: m.Function()}
	if len(m.Epochs) > 1 {
		md[MetaShardEpochs] = m.String()
	}
	return md
}

// ProvisionShards creates (or checks) the streams of a sharded store and
// the cursor bucket, and returns the store's shard map. A new store gets
// n shards (1 when n is 0); an existing one keeps its map, and n, unless
// 0 (take the store as it is), must be its current count, else the store
// is refused with a *ShardMismatchError and nothing is created. Shard 0's
// stream is made first and carries the map. Safe from every node at once,
// like Provision.
func ProvisionShards(ctx context.Context, js jetstream.JetStream, cfg Config, n int) (shard.Map, error) {
	if n != 0 {
		if err := shard.ValidCount(n); err != nil {
			return shard.Map{}, err
		}
	}
	if err := cfg.validate(); err != nil {
		return shard.Map{}, err
	}
	log := logger(cfg)
	sc := cfg.streamConfig()
	var m shard.Map
	if err := retryProvision(ctx, log, "stream "+sc.Name, func(ctx context.Context) error {
		have, err := js.Stream(ctx, sc.Name)
		switch {
		case err == nil:
			hm, err := mapOf(have.CachedInfo().Config)
			if err != nil {
				return err
			}
			if n != 0 && hm.Current() != n {
				return &ShardMismatchError{Stream: sc.Name, Have: hm.Current(), Want: n, HaveFunc: hm.Function(), WantFunc: hm.Function()}
			}
			m = hm
			return ensureStream(ctx, js, sc) // its map is checked: the rest of its config
		case errors.Is(err, jetstream.ErrStreamNotFound):
			m = shard.OneMap(max(n, 1))
			want := sc
			want.Metadata = mapMetadata(m)
			return ensureStream(ctx, js, want)
		default:
			return err
		}
	}); err != nil {
		return shard.Map{}, err
	}
	if err := ensureShardStreams(ctx, js, cfg, 1, m.Streams()); err != nil {
		return shard.Map{}, err
	}
	bc := cfg.bucketConfig()
	return m, retryProvision(ctx, log, "bucket "+bc.Bucket, func(ctx context.Context) error {
		return ensureBucket(ctx, js, bc)
	})
}

// ensureShardStreams creates (or checks) the streams of shards from..to-1.
func ensureShardStreams(ctx context.Context, js jetstream.JetStream, cfg Config, from, to int) error {
	for k := from; k < to; k++ {
		sk := cfg.Shard(k).streamConfig()
		if err := retryProvision(ctx, logger(cfg), "stream "+sk.Name, func(ctx context.Context) error {
			return ensureStream(ctx, js, sk)
		}); err != nil {
			return err
		}
	}
	return nil
}

// compareShards refuses a shard 0 stream whose map is not want's.
func compareShards(have, want jetstream.StreamConfig) error {
	if want.Metadata == nil {
		return nil // not asked: Provision of one stream, the map is checked by who shards
	}
	hm, hf, err := shardMap(have)
	if err != nil {
		return err
	}
	wm, wf, _ := shardMap(want)
	if !hm.Equal(wm) || hf != wf {
		return &ShardMismatchError{Stream: have.Name, Have: hm.Current(), Want: wm.Current(), HaveFunc: hf, WantFunc: wf}
	}
	return nil
}

// ReadMap reads the shard map of the store on cfg's stream: one shard for
// a store made before shards (no map). wire.ErrNotFound (via Classify)
// when the stream does not exist.
func ReadMap(ctx context.Context, js jetstream.JetStream, cfg Config) (shard.Map, error) {
	s, err := js.Stream(ctx, cfg.Stream)
	if err != nil {
		return shard.Map{}, fmt.Errorf("stream %s: %w", cfg.Stream, Classify(err))
	}
	return mapOf(s.CachedInfo().Config)
}

// Migrate changes the store's shard count to n for the sessions whose ids
// are made from at on (shard.Map.Grow): it creates the streams the new
// count needs, then records the map on shard 0's stream. Sessions made
// before at stay on their shards for good. Every pi-node and Go client
// reads the map again every few seconds (MapWatch) and must know it before
// at; Migrate refuses an at less than MigrateLead away. Migrating to the
// current count changes nothing and returns the map.
func Migrate(ctx context.Context, js jetstream.JetStream, cfg Config, n int, at time.Time) (shard.Map, error) {
	return migrate(ctx, js, cfg, n, at, MigrateLead)
}

// migrate is Migrate with the lead it requires.
func migrate(ctx context.Context, js jetstream.JetStream, cfg Config, n int, at time.Time, minLead time.Duration) (shard.Map, error) {
	if err := shard.ValidCount(n); err != nil {
		return shard.Map{}, err
	}
	s, err := js.Stream(ctx, cfg.Stream)
	if err != nil {
		return shard.Map{}, fmt.Errorf("stream %s: %w", cfg.Stream, Classify(err))
	}
	sc := s.CachedInfo().Config
	if sc.Mirror != nil || len(sc.Sources) > 0 || sc.Sealed {
		return shard.Map{}, fmt.Errorf("%w: stream %s is a mirror, sourced or sealed (a cross-region deployment's?): a cross-region deployment's shard count is fixed when its region record is made", wire.ErrInvalid, sc.Name)
	}
	cur, err := mapOf(sc)
	if err != nil {
		return shard.Map{}, err
	}
	if cur.Current() == n {
		return cur, nil
	}
	if lead := time.Until(at); lead < minLead-leadSlack {
		return shard.Map{}, fmt.Errorf("%w: the new map must start at least %v from now (every node and client reads the map every %v), not %v", wire.ErrInvalid, minLead, MapEvery, lead.Round(time.Second))
	}
	next, err := cur.Grow(n, at)
	if err != nil {
		return shard.Map{}, err
	}
	// The new streams as shard 0's, whatever the caller's defaults.
	base := cfg
	base.Replicas, base.MaxMsgSize, base.Duplicates = sc.Replicas, sc.MaxMsgSize, sc.Duplicates
	if len(sc.Subjects) == 1 && strings.HasSuffix(sc.Subjects[0], ".*") {
		base.SubjectPrefix = strings.TrimSuffix(sc.Subjects[0], ".*")
	}
	if err := ensureShardStreams(ctx, js, base, cur.Streams(), next.Streams()); err != nil {
		return shard.Map{}, err
	}
	for k, v := range mapMetadata(next) {
		if sc.Metadata == nil {
			sc.Metadata = map[string]string{}
		}
		sc.Metadata[k] = v
	}
	if _, err := js.UpdateStream(ctx, sc); err != nil {
		return shard.Map{}, fmt.Errorf("record the shard map %s on stream %s: %w", next, sc.Name, Classify(err))
	}
	got, err := ReadMap(ctx, js, cfg)
	if err != nil {
		return shard.Map{}, err
	}
	if !got.Equal(next) {
		return got, fmt.Errorf("%w: stream %s records the shard map %s, not %s: another migration ran at the same time", wire.ErrConflict, sc.Name, got, next)
	}
	return next, nil
}

// MapEvery is how often pi-node and the Go client read the shard map
// again (MapWatch); MigrateLead is how far ahead a migration must start,
// so that every one of them has read it before: a few reads, and room
// for a writer whose clock runs ahead (a UUIDv7 made by a clock 30 s
// fast is 30 s in the future).
const (
	MapEvery    = 5 * time.Second
	MigrateLead = 30 * time.Second
	leadSlack   = 2 * time.Second // the caller's own round trips since it chose at
)

// MapWatch keeps a process's shard map current: it reads the store's map
// every MapEvery (Run) and calls grow with each map that extends the one in
// force (shard.Extends); a map that does not (a store made again, a hand
// edit) is logged and ignored, since following it would move sessions.
// Fresh, called before every write, reads the map at once when it has not
// been confirmed for MapMaxAge: a process that was suspended, or cut off
// from JetStream, past a migration's start would otherwise place a new
// session by the map it had (see MapMaxAge).
type MapWatch struct {
	js        jetstream.JetStream
	cfg       Config
	grow      func(shard.Map) error
	mu        sync.Mutex // serialises checks
	cur       shard.Map
	confirmed atomic.Int64 // unix nanos of the last read of the map that answered
}

// MapMaxAge is how old a process's knowledge of the map may be when it
// writes. A migration recorded at r starts at r + MigrateLead at the
// earliest (less leadSlack); a writer whose map was confirmed after r
// knows it, and one confirmed before r writes before r + MapMaxAge, ahead
// of the start by the rest of the lead, so every id it makes (by its own
// clock) is of the epoch before, which both maps place alike.
const MapMaxAge = MigrateLead - leadSlack - 2*MapEvery

// WatchShards returns the MapWatch that keeps all, the router over cfg's
// shard streams, on the store's map (its current one read just now), and
// makes every write through all check the map first (MapWatch.Fresh). On
// a map that grew, prepare (if not nil) is given the logs of the streams
// it adds before all routes to them: pi-node opens a Store on each, so
// that a write routed there finds the Store that waits for it.
func WatchShards(js jetstream.JetStream, cfg Config, all *shard.Sharded, prepare func(next shard.Map, added []*shard.Log) error) *MapWatch {
	w := newMapWatch(js, cfg, all.Map(), func(next shard.Map) error {
		added := ShardLogs(js, cfg, len(all.Logs()), next.Streams())
		if prepare != nil {
			if err := prepare(next, added); err != nil {
				return err
			}
		}
		return all.Grow(next, AsLogs(added))
	})
	all.Guard(w.Fresh)
	return w
}

// newMapWatch watches cfg's store, whose map cur was read just now.
func newMapWatch(js jetstream.JetStream, cfg Config, cur shard.Map, grow func(shard.Map) error) *MapWatch {
	w := &MapWatch{js: js, cfg: cfg, grow: grow, cur: cur}
	w.confirmed.Store(time.Now().UnixNano())
	return w
}

// Run reads the map every MapEvery until ctx ends.
func (w *MapWatch) Run(ctx context.Context) {
	t := time.NewTicker(MapEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, MapEvery)
		_ = w.check(rctx)
		cancel()
	}
}

// Fresh returns nil when the map in force was confirmed within MapMaxAge,
// else reads it now; ErrUnavailable when it cannot.
func (w *MapWatch) Fresh(ctx context.Context) error {
	if time.Since(time.Unix(0, w.confirmed.Load())) <= MapMaxAge {
		return nil
	}
	if err := w.check(ctx); err != nil {
		return fmt.Errorf("%w: the store's shard map was last read %v ago and cannot be read now, so a write might go to the wrong shard: %w",
			wire.ErrUnavailable, time.Since(time.Unix(0, w.confirmed.Load())).Round(time.Second), err)
	}
	return nil
}

// check reads the map and adopts it if it grew.
func (w *MapWatch) check(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	m, err := ReadMap(ctx, w.js, w.cfg)
	if err != nil {
		return err
	}
	log := logger(w.cfg)
	if !m.Equal(w.cur) {
		if err := shard.Extends(w.cur, m); err != nil {
			log.Error("the store's shard map changed in a way that would move sessions; keeping the one this process started with", "have", w.cur.String(), "found", m.String(), "err", err)
			return err
		}
		if err := w.grow(m); err != nil {
			log.Error("adopting the store's new shard map", "map", m.String(), "err", err)
			return err
		}
		log.Info("adopted the store's new shard map", "map", m.String(), "streams", m.Streams(), "new sessions on", m.Current())
		w.cur = m
	}
	w.confirmed.Store(time.Now().UnixNano())
	return nil
}

// ShardLogs returns the logs of shards from..to-1 of cfg, each qualifying
// its sequences (shard.Log).
func ShardLogs(js jetstream.JetStream, cfg Config, from, to int) []*shard.Log {
	var out []*shard.Log
	for k := from; k < to; k++ {
		l := NewLog(js, cfg.Shard(k))
		out = append(out, &shard.Log{Log: l, Feed: l, Shard: k})
	}
	return out
}

// NewShards returns the log of each shard stream of m, each qualifying its
// sequences (shard.Log), and the log over all of them
// (shard.Sharded) that routes each session to its shard.
func NewShards(js jetstream.JetStream, cfg Config, m shard.Map) ([]*shard.Log, *shard.Sharded) {
	shards := ShardLogs(js, cfg, 0, m.Streams())
	all, err := shard.NewSharded(m, AsLogs(shards))
	if err != nil {
		panic(err) // as many logs as streams, by construction
	}
	return shards, all
}

// AsLogs is shards as session.Logs.
func AsLogs(shards []*shard.Log) []session.Log {
	out := make([]session.Log, len(shards))
	for k, sh := range shards {
		out[k] = sh
	}
	return out
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
