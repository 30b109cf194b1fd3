package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// leaseKey is the lease's key in the lease bucket: ArchiveConfig.LeaseKey,
// else "archiver", the one lease of a deployment whose nodes hold every
// shard.
func (a *Archive) leaseKey() string {
	if a.cfg.LeaseKey != "" {
		return a.cfg.LeaseKey
	}
	return "archiver"
}

// Lease takes or renews the archiver's lease: a KV value {holder, until},
// changed only by compare-and-swap on its revision, so of two nodes that
// find it free at once exactly one gets it. A lease past its until is free.
// The clocks of the nodes are compared (until is the holder's time): a skew
// of seconds against a lease of a minute at least only lets two passes
// overlap briefly, which is safe, as every step of a pass is idempotent.
func (a *Archive) Lease(ctx context.Context, holder string, ttl time.Duration) (session.Lease, error) {
	kv, err := a.leaseBucket(ctx)
	if err != nil {
		return session.Lease{}, err
	}
	for range 3 {
		now := time.Now()
		want := session.Lease{Holder: holder, Until: now.Add(ttl)}
		val, _ := json.Marshal(want)
		cur, rev, found, err := a.leaseGet(ctx)
		if err != nil {
			return session.Lease{}, err
		}
		if found && cur.Holder != holder && now.Before(cur.Until) {
			return cur, nil
		}
		// rev is the last write to the key (0: none; a delete's, when it
		// was given up): a compare-and-swap on it, as kv.Create and
		// kv.Update do.
		if _, err = kv.Update(ctx, a.leaseKey(), val, rev); err == nil {
			return want, nil
		}
		// Someone changed it between our read and our write: read again
		// and see who has it now.
		if !errors.Is(err, jetstream.ErrKeyExists) && apiCode(err) != codeWrongLastSeq {
			return session.Lease{}, fmt.Errorf("archiver lease: %w", translate(err, wire.ErrConflict))
		}
	}
	return session.Lease{}, fmt.Errorf("archiver lease: %w: contended", wire.ErrConflict)
}

// Unlease gives the lease up if holder has it, by a delete conditional on
// the revision holder last wrote.
func (a *Archive) Unlease(ctx context.Context, holder string) error {
	kv, err := a.leaseBucket(ctx)
	if err != nil {
		return err
	}
	cur, rev, found, err := a.leaseGet(ctx)
	if err != nil {
		return err
	}
	if !found || cur.Holder != holder {
		return nil
	}
	err = kv.Delete(ctx, a.leaseKey(), jetstream.LastRevision(rev))
	if err != nil && apiCode(err) != codeWrongLastSeq {
		return fmt.Errorf("archiver lease: %w", translate(err, wire.ErrConflict))
	}
	return nil
}

// leaseGet reads the lease from the lease bucket's stream leader, and the
// revision of the key's last write (0: never written). Not kv.Get: that is
// a direct get, which a replica behind the leader may answer (the CAS then
// fails, and a pass gives up as contended), and which nobody answers for a
// moment after the bucket is created ("no responders": a pass right after
// a cluster's start failed on it).
func (a *Archive) leaseGet(ctx context.Context) (cur session.Lease, rev uint64, found bool, err error) {
	m, err := leaderGet(ctx, a.js, a.log.api, "KV_"+a.cfg.LeaseBucket, msgGetRequest{LastFor: "$KV." + a.cfg.LeaseBucket + "." + a.leaseKey()})
	switch {
	case isNotFound(err):
		return cur, 0, false, nil
	case err != nil:
		return cur, 0, false, fmt.Errorf("archiver lease: %w", translate(err, wire.ErrConflict))
	}
	if op := m.Header.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
		return cur, m.Seq, false, nil
	}
	if json.Unmarshal(m.Data, &cur) != nil {
		return session.Lease{}, m.Seq, false, nil // not a lease: free, overwritten by the next
	}
	return cur, m.Seq, true, nil
}

// leaseBucket opens the lease bucket once.
func (a *Archive) leaseBucket(ctx context.Context) (jetstream.KeyValue, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.kv != nil {
		return a.kv, nil
	}
	kv, err := a.js.KeyValue(ctx, a.cfg.LeaseBucket)
	if err != nil {
		return nil, fmt.Errorf("archiver lease bucket %s: %w", a.cfg.LeaseBucket, translate(err, wire.ErrConflict))
	}
	a.kv = kv
	return kv, nil
}
