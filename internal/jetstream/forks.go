package jetstream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

var _ session.ForkRegistry = (*Archive)(nil)

// forksBucketName is the KV bucket of the registry of forks by reference:
// a key <parent>.<fork> per fork (<archive stream>_FORKS, PI_ARCHIVE_FORKS).
func (a *Archive) forksBucketName() string { return a.cfg.Stream + "_FORKS" }

// forks opens the registry's bucket, creating it on first use.
func (a *Archive) forks(ctx context.Context) (jetstream.KeyValue, error) {
	return a.bucket(ctx, &a.forksKV, a.forksBucketName(), "registry of forks")
}

// forksIfAny opens the registry's bucket if it exists: nil, nil when no
// fork was ever recorded. Listing and forgetting, which every archiving
// and erasure does, then neither create the bucket (on a loaded cluster
// an archive pass's first run took seconds more) nor read it.
func (a *Archive) forksIfAny(ctx context.Context) (jetstream.KeyValue, error) {
	a.mu.Lock()
	kv := a.forksKV
	a.mu.Unlock()
	if kv != nil {
		return kv, nil
	}
	kv, err := a.js.KeyValue(ctx, a.forksBucketName())
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("registry of forks %s: %w", a.forksBucketName(), translate(err, wire.ErrConflict))
	}
	a.mu.Lock()
	a.forksKV = kv
	a.mu.Unlock()
	return kv, nil
}

// RecordFork notes fork as a fork by reference of parent; see
// session.ForkRegistry.
func (a *Archive) RecordFork(ctx context.Context, parent, fork string) error {
	for _, id := range []string{parent, fork} {
		if err := session.ValidSessionID(id); err != nil {
			return err
		}
	}
	kv, err := a.forks(ctx)
	if err != nil {
		return err
	}
	if _, err := kv.Put(ctx, parent+"."+fork, nil); err != nil {
		return fmt.Errorf("registry of forks: %w", translate(err, wire.ErrConflict))
	}
	return nil
}

// Forks lists parent's forks from the bucket's stream leader: every Put
// acknowledged before is in it, also right after a restore.
func (a *Archive) Forks(ctx context.Context, parent string) ([]string, error) {
	if err := session.ValidSessionID(parent); err != nil {
		return nil, err
	}
	kv, err := a.forksIfAny(ctx)
	if err != nil || kv == nil {
		return nil, err
	}
	keys, err := leaderEntries(ctx, a.js, a.log.api, a.forksBucketName(), parent+".*")
	if err != nil {
		return nil, fmt.Errorf("registry of forks: %w", err)
	}
	out := make([]string, 0, len(keys))
	for key := range keys {
		if _, fork, ok := strings.Cut(key, "."); ok {
			out = append(out, fork)
		}
	}
	slices.Sort(out)
	return out, nil
}

// ForgetForks purges parent's keys (a purge leaves no delete marker).
func (a *Archive) ForgetForks(ctx context.Context, parent string) error {
	if err := session.ValidSessionID(parent); err != nil {
		return err
	}
	if kv, err := a.forksIfAny(ctx); err != nil || kv == nil {
		return err
	}
	bucket := a.forksBucketName()
	if err := purgeSubject(ctx, a.js, a.log.api, bucketStream(bucket), "$KV."+bucket+"."+parent+".*", 0); err != nil {
		return fmt.Errorf("registry of forks: %w", err)
	}
	return nil
}
