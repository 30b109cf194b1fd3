package jetstream

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/shard"
)

// A region's copy of a sharded log is its shards' streams, named and laid
// out as outside cross-region mode (Config.Shard) but under the region's
// names, and its one cursor bucket. The functions below make, promote,
// fence and replace a copy as a whole; with one shard they are the
// single-stream ones.

// regionMeta is the metadata of shard 0's stream in a copy of n shards:
// the shard map, so that ReadMap (pi-ctl backup) finds every shard of a
// region's copy as it does outside cross-region mode. One shard: none, as
// for every copy made before shards.
func regionMeta(n int) map[string]string {
	if n <= 1 {
		return nil
	}
	return mapMetadata(shard.OneMap(n))
}

// shardStreams returns stream(k) for each of the n shards, shard 0's with
// the copy's metadata.
func shardStreams(n int, stream func(k int) jetstream.StreamConfig) []jetstream.StreamConfig {
	out := make([]jetstream.StreamConfig, 0, max(n, 1))
	for k := range max(n, 1) {
		sc := stream(k)
		if k == 0 {
			sc.Metadata = regionMeta(n)
		}
		out = append(out, sc)
	}
	return out
}

// ProvisionPrimaryShards is ProvisionPrimary for a copy of n shards.
func ProvisionPrimaryShards(ctx context.Context, js jetstream.JetStream, cfg Config, cluster string, n int) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	for _, sc := range shardStreams(n, func(k int) jetstream.StreamConfig {
		sc := cfg.Shard(k).streamConfig()
		sc.Placement = placement(cluster)
		return sc
	}) {
		if err := retryProvision(ctx, logger(cfg), "stream "+sc.Name, func(ctx context.Context) error {
			return ensureStream(ctx, js, sc)
		}); err != nil {
			return err
		}
	}
	bc := cfg.bucketConfig()
	bc.Placement = placement(cluster)
	return retryProvision(ctx, logger(cfg), "bucket "+bc.Bucket, func(ctx context.Context) error {
		return ensureBucket(ctx, js, bc)
	})
}

// mirrorShards is cfg's copy of n shards as mirrors of origin's, shard k
// of shard k, then the bucket.
func mirrorShards(cfg, origin Config, cluster string, n int) []jetstream.StreamConfig {
	return append(shardStreams(n, func(k int) jetstream.StreamConfig {
		return mirrorStreamConfig(cfg.Shard(k), origin.Shard(k), cluster)
	}), mirrorBucketConfig(cfg, origin, cluster))
}

// ProvisionMirrorShards is ProvisionMirror for a copy of n shards: shard k
// mirrors origin's shard k.
func ProvisionMirrorShards(ctx context.Context, js jetstream.JetStream, cfg, origin Config, cluster string, n int) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	log := logger(cfg)
	for _, want := range mirrorShards(cfg, origin, cluster, n) {
		if err := retryProvision(ctx, log, "mirror "+want.Name, func(ctx context.Context) error {
			return createMirrorIfMissing(ctx, js, log, want)
		}); err != nil {
			return err
		}
	}
	return nil
}

// PromoteShards is Promote for a copy of n shards: every shard's stream,
// then the bucket.
func PromoteShards(ctx context.Context, js jetstream.JetStream, cfg Config, cluster string, n int) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	wants := append(shardStreams(n, func(k int) jetstream.StreamConfig {
		sc := cfg.Shard(k).streamConfig()
		sc.Placement = placement(cluster)
		return sc
	}), kvStreamConfig(cfg, cluster))
	for _, want := range wants {
		if err := retryProvision(ctx, logger(cfg), "promote "+want.Name, func(ctx context.Context) error {
			_, err := js.UpdateStream(ctx, want)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// FenceShards is Fence for a copy of n shards: every shard's stream, then
// the bucket.
func FenceShards(ctx context.Context, js jetstream.JetStream, cfg Config, n int) error {
	var names []string
	for k := range max(n, 1) {
		names = append(names, cfg.Shard(k).Stream)
	}
	return fence(ctx, js, cfg, append(names, bucketStream(cfg.Bucket)))
}

// FenceShard seals shard k's stream of cfg's copy alone (its bucket is the
// copy's, fenced with shard 0).
func FenceShard(ctx context.Context, js jetstream.JetStream, cfg Config, k int) error {
	names := []string{cfg.Shard(k).Stream}
	if k == 0 {
		names = append(names, bucketStream(cfg.Bucket))
	}
	return fence(ctx, js, cfg, names)
}

// RecreateMirrorShards is RecreateMirror for a copy of n shards.
func RecreateMirrorShards(ctx context.Context, js jetstream.JetStream, cfg, origin Config, cluster string, n int) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	return recreate(ctx, js, cfg, mirrorShards(cfg, origin, cluster, n))
}
