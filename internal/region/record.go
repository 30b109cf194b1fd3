package region

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	pijs "github.com/pifleet/sessionlog/internal/jetstream"
)

// DefaultRecordBucket is the KV bucket of the region record.
const DefaultRecordBucket = "PI_REGION"

// validName: a region name is a NATS cluster and gateway name, a token of
// stream names (PI_SESSIONS_<region>) and a subject token
// (pi.sess.<region>.<session>), so it keeps to what all of them accept.
var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// ValidName checks a region name.
func ValidName(name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("region name %q: use 1 to 32 letters, digits, '-' or '_'", name)
	}
	return nil
}

// Names are the single-region names of the log's assets (pi-node's
// --stream, --subject-prefix and --bucket) from which every region's own
// names derive. The region record holds them, so every node and pi-ctl
// agree on them.
type Names struct {
	Stream        string `json:"stream"`
	SubjectPrefix string `json:"subjectPrefix"`
	Bucket        string `json:"bucket"`
}

// NamesOf returns the names of a single-region configuration.
func NamesOf(cfg pijs.Config) Names {
	return Names{Stream: cfg.Stream, SubjectPrefix: cfg.SubjectPrefix, Bucket: cfg.Bucket}
}

// Assets returns region r's copy of the log as a jetstream.Config: stream
// <Stream>_<r> on subjects <SubjectPrefix>.<r>.*, cursor bucket
// <Bucket>_<r>, with r's replicas; the other settings come from base.
//
// Every region has its own names because a supercluster has one JetStream
// meta layer: two streams may not hold overlapping subjects, and the stream
// of a lost region stays in the meta layer (offline, with its subjects)
// until the region returns. A mirror promoted in another region therefore
// cannot take the lost home's subjects — and must not, since deleting the
// offline stream to free them would delete its data when it comes back.
// With a subject prefix per region, promotion is a plain update and the
// old home's stream survives, which is what failback merges from.
func Assets(base pijs.Config, n Names, r string, replicas int) pijs.Config {
	cfg := base
	cfg.Stream = n.Stream + "_" + r
	cfg.SubjectPrefix = n.SubjectPrefix + "." + r
	cfg.Bucket = n.Bucket + "_" + r
	if replicas > 0 {
		cfg.Replicas = replicas
	}
	return cfg
}

// Record says where the log's home is; one copy of it lives in the KV bucket
// PI_REGION, placed on the tie-breaker, which survives the loss of either
// main region. Every node watches it and re-wires itself when it changes;
// failover and failback change it with compare-and-swap, so two operators
// cannot both succeed.
type Record struct {
	// Home is the region whose stream takes the writes.
	Home string `json:"home"`
	// Epoch counts failovers: each one starts a new history of sequences
	// that shares the previous one's up to ForkSeq.
	Epoch   uint64 `json:"epoch"`
	ForkSeq uint64 `json:"forkSeq,omitempty"`
	// Stale lists the regions whose own stream is not a mirror of the
	// home's history (an old home, or a mirror of it), each with the last
	// sequence its stream shares with the home's. Their nodes read from the
	// home until failback merges what the stream has beyond that sequence
	// and replaces it with a mirror.
	Stale map[string]uint64 `json:"stale,omitempty"`
	// Shards is how many shards every region's copy has (0: one). It is
	// fixed when the record is made: shard k of a mirror mirrors the
	// home's shard k.
	Shards int `json:"shards,omitempty"`
	// ForkSeqs and StaleShards are ForkSeq and Stale for every shard, by
	// shard, when there are several: each shard's stream has its own
	// sequences. Their shard 0 is ForkSeq's and Stale's.
	ForkSeqs    []uint64            `json:"forkSeqs,omitempty"`
	StaleShards map[string][]uint64 `json:"staleShards,omitempty"`
	// Regions is every region a node has started in, with its replicas.
	Regions map[string]RegionInfo `json:"regions"`
	// Names are the single-region asset names the regions' names derive from.
	Names     Names     `json:"names"`
	UpdatedAt time.Time `json:"updatedAt"`
	Change    string    `json:"change"` // what made the last change, for operators
}

// RegionInfo is what the record knows of one region.
type RegionInfo struct {
	Replicas int `json:"replicas"`
}

// RegionNames returns the regions in name order.
func (r *Record) RegionNames() []string { return slices.Sorted(maps.Keys(r.Regions)) }

// Assets returns region name's assets under the record's names.
func (r *Record) Assets(base pijs.Config, name string) pijs.Config {
	return Assets(base, r.Names, name, r.Regions[name].Replicas)
}

// ShardCount is how many shards every region's copy has.
func (r *Record) ShardCount() int { return max(r.Shards, 1) }

// ShardAssets returns shard k of region name's copy.
func (r *Record) ShardAssets(base pijs.Config, name string, k int) pijs.Config {
	return r.Assets(base, name).Shard(k)
}

// ForkSeqOf is ForkSeq of shard k.
func (r *Record) ForkSeqOf(k int) uint64 {
	if k == 0 {
		return r.ForkSeq
	}
	if k < len(r.ForkSeqs) {
		return r.ForkSeqs[k]
	}
	return 0
}

// StaleOf is the last sequence shard k of stale region name shares with
// the home's history; ok is false if the region is not stale.
func (r *Record) StaleOf(name string, k int) (shared uint64, ok bool) {
	shared, ok = r.Stale[name]
	if !ok || k == 0 {
		return shared, ok
	}
	if s := r.StaleShards[name]; k < len(s) {
		return s[k], true
	}
	return 0, true // nothing known to be shared: failback merges all of it
}

// setStale records stale region name's shared sequences, by shard.
func (r *Record) setStale(name string, shared []uint64) {
	if r.Stale == nil {
		r.Stale = map[string]uint64{}
	}
	r.Stale[name] = shared[0]
	if r.ShardCount() > 1 {
		if r.StaleShards == nil {
			r.StaleShards = map[string][]uint64{}
		}
		r.StaleShards[name] = slices.Clone(shared)
	}
}

// clearStale ends region name's staleness.
func (r *Record) clearStale(name string) {
	delete(r.Stale, name)
	delete(r.StaleShards, name)
	if len(r.StaleShards) == 0 {
		r.StaleShards = nil
	}
}

func (r *Record) clone() Record {
	c := *r
	c.Stale = maps.Clone(r.Stale)
	c.Regions = maps.Clone(r.Regions)
	c.ForkSeqs = slices.Clone(r.ForkSeqs)
	if r.StaleShards != nil {
		c.StaleShards = make(map[string][]uint64, len(r.StaleShards))
		for name, s := range r.StaleShards {
			c.StaleShards[name] = slices.Clone(s)
		}
	}
	return c
}

// ShardsError is a node started with another shard count than the
// record's: every region's copy has the record's, fixed when it was made.
type ShardsError struct {
	Record, Node int
}

func (e *ShardsError) Error() string {
	return fmt.Sprintf("the region record says every region's copy has %d shard(s); this node was started with --shards %d: start it with --shards %d, or without --shards to take the record's (the count is fixed when the record is made)", e.Record, e.Node, e.Record)
}

// shardSuffix is a region name that ends like a shard's stream suffix.
var shardSuffix = regexp.MustCompile(`^(.+)_([0-9]+)$`)

// clashes returns a region of regions whose shard stream would carry
// name's stream name (A and A_1: PI_SESSIONS_A_1 is both shard 1 of A and
// shard 0 of A_1) when copies have n shards, or "".
func clashes(name string, regions []string, n int) string {
	if n <= 1 {
		return ""
	}
	for _, other := range regions {
		if other == name {
			continue
		}
		for _, pair := range [][2]string{{name, other}, {other, name}} {
			m := shardSuffix.FindStringSubmatch(pair[0])
			if m == nil || m[1] != pair[1] {
				continue
			}
			if k, err := strconv.Atoi(m[2]); err == nil && k >= 1 && k < n && strconv.Itoa(k) == m[2] {
				return other
			}
		}
	}
	return ""
}

// recordKey is the record's key in the bucket.
const recordKey = "home"

// ErrNoRecord means the region record has not been written yet: no node has
// been started with --home-region.
var ErrNoRecord = errors.New("no region record yet (start the first nodes with --home-region)")

// Registry reads, changes and watches the record.
type Registry struct {
	kv     jetstream.KeyValue
	bucket string
}

// OpenRegistry binds to the record bucket, creating it (placed in cluster,
// the tie-breaker, with replicas) if it does not exist. It retries while
// the supercluster is still forming.
func OpenRegistry(ctx context.Context, js jetstream.JetStream, bucket, cluster string, replicas int, log *slog.Logger) (*Registry, error) {
	var kv jetstream.KeyValue
	err := pijs.RetryProvisioning(ctx, log, "bucket "+bucket, func(ctx context.Context) error {
		var err error
		kv, err = js.KeyValue(ctx, bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket, History: 16,
				Storage: jetstream.FileStorage, Replicas: replicas, Placement: &jetstream.Placement{Cluster: cluster}})
			if errors.Is(err, jetstream.ErrBucketExists) {
				kv, err = js.KeyValue(ctx, bucket)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &Registry{kv: kv, bucket: bucket}, nil
}

// BindRegistry binds to an existing record bucket (pi-ctl).
func BindRegistry(ctx context.Context, js jetstream.JetStream, bucket string) (*Registry, error) {
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("region record bucket %s: %w", bucket, err)
	}
	return &Registry{kv: kv, bucket: bucket}, nil
}

// Load returns the record and its revision; ErrNoRecord if there is none.
func (g *Registry) Load(ctx context.Context) (Record, uint64, error) {
	e, err := g.kv.Get(ctx, recordKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Record{}, 0, ErrNoRecord
	}
	if err != nil {
		return Record{}, 0, fmt.Errorf("region record: %w", err)
	}
	rec, err := decodeRecord(e.Value())
	return rec, e.Revision(), err
}

func decodeRecord(b []byte) (Record, error) {
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, fmt.Errorf("region record: %w", err)
	}
	if rec.Home == "" || rec.Epoch == 0 {
		return rec, errors.New("region record: no home or epoch")
	}
	return rec, nil
}

// errNoChange, returned by an Update function, ends Update without writing.
var errNoChange = errors.New("no change")

// Update changes the record with fn, compare-and-swap on its revision,
// reading it again and calling fn again when another writer got there
// first. fn gets the current record (exists false: none yet) and edits it;
// an error from fn ends Update unchanged (errNoChange: successfully, with
// the current record).
func (g *Registry) Update(ctx context.Context, fn func(rec *Record, exists bool) error) (Record, error) {
	for attempt := 0; ; attempt++ {
		cur, rev, err := g.Load(ctx)
		exists := err == nil
		if err != nil && !errors.Is(err, ErrNoRecord) {
			return Record{}, err
		}
		next := cur.clone()
		if err := fn(&next, exists); errors.Is(err, errNoChange) {
			return cur, nil
		} else if err != nil {
			return Record{}, err
		}
		b, err := json.Marshal(next)
		if err != nil {
			return Record{}, err
		}
		if exists {
			_, err = g.kv.Update(ctx, recordKey, b, rev)
		} else {
			_, err = g.kv.Create(ctx, recordKey, b)
		}
		if err == nil {
			return next, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !isWrongRevision(err) || attempt >= 20 {
			return Record{}, fmt.Errorf("region record: %w", err)
		}
	}
}

func isWrongRevision(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// Watch calls fn with the record now and whenever it changes, until ctx is
// done. It survives the loss of the tie-breaker: the watch resumes when the
// bucket answers again, and fn is not called meanwhile.
func (g *Registry) Watch(ctx context.Context, log *slog.Logger, fn func(Record)) {
	wait := 100 * time.Millisecond
	for ctx.Err() == nil {
		w, err := g.kv.Watch(ctx, recordKey)
		if err == nil {
			for e := range w.Updates() {
				if e == nil || e.Operation() != jetstream.KeyValuePut {
					continue // the end of the initial values, or a deletion
				}
				rec, err := decodeRecord(e.Value())
				if err != nil {
					log.Warn("ignoring a region record that does not decode", logKeyRevision, e.Revision(), logKeyErr, err)
					continue
				}
				wait = 100 * time.Millisecond
				fn(rec)
			}
			_ = w.Stop()
		}
		if ctx.Err() != nil {
			return
		}
		log.Warn("watching the region record failed; retrying", logKeyErr, err)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}
