package jetstream

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

var _ session.ErasureLedger = (*Ledger)(nil)

// Ledger is a ledger of erasures: a KV bucket with a key per erased
// session, its value the wire.Erasure line. The archive keeps one beside
// its stream (PI_ARCHIVE_ERASED); a cross-region deployment keeps one in
// the tie-breaker's cluster (PI_REGION_ERASED), which outlives the loss of
// either main region, so that no region's copy brings an erased session
// back. Every read is from the bucket's leader: a restore reads the ledger
// it just restored, a failback the one the lost home wrote.
type Ledger struct {
	js      jetstream.JetStream
	api     string
	assets  Config // replicas and logger of the bucket
	bucket  string
	cluster string // placement ("": the server's choice)

	mu sync.Mutex
	kv jetstream.KeyValue // opened (and created) on first use
}

// NewLedger returns the ledger in bucket, created on first use with
// replicas and placed in cluster ("" leaves the placement to the server).
func NewLedger(js jetstream.JetStream, bucket, cluster string, replicas int) *Ledger {
	return &Ledger{js: js, api: apiPrefix(js), bucket: bucket, cluster: cluster,
		assets: Config{Replicas: max(replicas, 1)}}
}

// Bucket is the ledger's bucket.
func (l *Ledger) Bucket() string { return l.bucket }

func (l *Ledger) open(ctx context.Context) (jetstream.KeyValue, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return openBucket(ctx, l.js, &l.kv, l.assets, l.bucket, l.cluster, "ledger of erasures")
}

// RecordErasure writes (or overwrites) the session's line; see
// session.ErasureLedger.
func (l *Ledger) RecordErasure(ctx context.Context, e wire.Erasure) error {
	if err := session.ValidSessionID(e.Session); err != nil {
		return err
	}
	kv, err := l.open(ctx)
	if err != nil {
		return err
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if _, err := kv.Put(ctx, e.Session, b); err != nil {
		return fmt.Errorf("ledger of erasures: %w", translate(err, wire.ErrConflict))
	}
	return nil
}

// Erasures returns every line, sorted by session.
func (l *Ledger) Erasures(ctx context.Context) ([]wire.Erasure, error) {
	if _, err := l.open(ctx); err != nil {
		return nil, err
	}
	lines, err := leaderEntries(ctx, l.js, l.api, l.bucket, ">")
	if err != nil {
		return nil, fmt.Errorf("ledger of erasures: %w", err)
	}
	keys := slices.Sorted(maps.Keys(lines))
	out := []wire.Erasure{}
	for _, key := range keys {
		var line wire.Erasure
		if err := json.Unmarshal(lines[key], &line); err != nil {
			return nil, fmt.Errorf("ledger of erasures: %s: %w", key, err)
		}
		out = append(out, line)
	}
	return out, nil
}

// Erased reads the session's line from the bucket's leader.
func (l *Ledger) Erased(ctx context.Context, sid string) (bool, error) {
	if _, err := l.open(ctx); err != nil {
		return false, err
	}
	_, err := leaderGet(ctx, l.js, l.api, bucketStream(l.bucket), msgGetRequest{LastFor: "$KV." + l.bucket + "." + sid})
	if isNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("ledger of erasures: %w", translate(err, wire.ErrConflict))
	}
	return true, nil
}

// ForgetErasure purges the session's line (a purge leaves no delete marker
// for a listing to skip).
func (l *Ledger) ForgetErasure(ctx context.Context, sid string) error {
	if _, err := l.open(ctx); err != nil {
		return err
	}
	if err := purgeSubject(ctx, l.js, l.api, bucketStream(l.bucket), "$KV."+l.bucket+"."+sid, 0); err != nil {
		return fmt.Errorf("ledger of erasures: %w", err)
	}
	return nil
}
