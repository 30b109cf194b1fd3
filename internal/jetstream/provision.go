package jetstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Config names the JetStream assets of a sessionlog deployment and their
// shape; Provision creates them, Log and Cursors use them. Start from
// NewConfig for the defaults of the wire contract (docs/PROTOCOL.md).
type Config struct {
	// Stream holds every session; one subject per session,
	// <SubjectPrefix>.<sessionId>.
	Stream        string
	SubjectPrefix string
	// Bucket is the KV bucket of the cursors.
	Bucket string
	// Replicas of the stream and the bucket: 1 on a single node, 3 in a cluster.
	Replicas int
	// MaxMsgSize is the largest message (JSONL line plus headers) the stream takes.
	MaxMsgSize int32
	// Duplicates is the window in which a repeated Nats-Msg-Id (session and
	// entry id) is refused: the span in which a retried append is detected.
	Duplicates time.Duration
	// MaxBatch is the most records one Append carries; it must not exceed the
	// server's atomic batch limit (1000 by default).
	MaxBatch int
	// Logger reports what Provision waits for; nil keeps it silent.
	Logger *slog.Logger
}

// NewConfig returns the default configuration: stream PI_SESSIONS on
// pi.sess.*, bucket PI_CURSORS, one replica, 8 MiB messages, a two-minute
// dedupe window, batches of up to 1000 records.
func NewConfig() Config {
	return Config{
		Stream:        "PI_SESSIONS",
		SubjectPrefix: "pi.sess",
		Bucket:        "PI_CURSORS",
		Replicas:      1,
		MaxMsgSize:    8 << 20,
		Duplicates:    2 * time.Minute,
		MaxBatch:      1000,
	}
}

// Attribute keys of Provision's log records.
const (
	logKeyWhat    = "what"
	logKeyErr     = "err"
	logKeyAttempt = "attempt"
)

func (c Config) validate() error {
	switch {
	case c.Stream == "" || strings.ContainsAny(c.Stream, ". *>"):
		return fmt.Errorf("config: stream name %q must be a non-empty token", c.Stream)
	case c.SubjectPrefix == "" || strings.ContainsAny(c.SubjectPrefix, " *>"):
		return fmt.Errorf("config: subject prefix %q must be non-empty, without wildcards", c.SubjectPrefix)
	case c.Bucket == "" || strings.ContainsAny(c.Bucket, ". *>"):
		return fmt.Errorf("config: bucket name %q must be a non-empty token", c.Bucket)
	case c.Replicas < 1 || c.Replicas > 5:
		return fmt.Errorf("config: replicas %d, want 1 to 5", c.Replicas)
	case c.MaxMsgSize <= 0 || c.MaxBatch <= 0 || c.Duplicates <= 0:
		return errors.New("config: max message size, max batch and duplicates window must be positive")
	}
	return nil
}

// streamConfig is the stream the wire contract requires: file storage, no
// limits (a session must never lose a record to retention), atomic batches,
// and no direct gets, so every read is answered by the stream leader.
func (c Config) streamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:               c.Stream,
		Subjects:           []string{c.SubjectPrefix + ".*"},
		Retention:          jetstream.LimitsPolicy,
		MaxMsgs:            -1,
		MaxBytes:           -1,
		MaxMsgsPerSubject:  -1,
		Discard:            jetstream.DiscardOld,
		MaxMsgSize:         c.MaxMsgSize,
		Storage:            jetstream.FileStorage,
		Replicas:           c.Replicas,
		Duplicates:         c.Duplicates,
		AllowDirect:        false,
		AllowAtomicPublish: true,
	}
}

func (c Config) bucketConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:   c.Bucket,
		History:  1,
		Storage:  jetstream.FileStorage,
		Replicas: c.Replicas,
	}
}

// Provision creates the stream and the cursor bucket, or checks that existing
// ones are compatible; it is idempotent and safe to run from every node at
// once. An incompatible existing asset is an error naming each differing
// field with both values; nothing is changed. While a cluster is still
// forming (no meta leader, peers unknown) Provision retries with backoff
// until ctx is done, logging what it waits for.
func Provision(ctx context.Context, js jetstream.JetStream, cfg Config) error {
	_, err := ProvisionShards(ctx, js, cfg, 1)
	return err
}

// provisionAssets creates or checks a stream, then a KV bucket, each step
// retried while the cluster is still forming.
func provisionAssets(ctx context.Context, js jetstream.JetStream, log *slog.Logger, sc jetstream.StreamConfig, bc jetstream.KeyValueConfig) error {
	if err := retryProvision(ctx, log, "stream "+sc.Name, func(ctx context.Context) error {
		return ensureStream(ctx, js, sc)
	}); err != nil {
		return err
	}
	return retryProvision(ctx, log, "bucket "+bc.Bucket, func(ctx context.Context) error {
		return ensureBucket(ctx, js, bc)
	})
}

func retryProvision(ctx context.Context, log *slog.Logger, what string, fn func(context.Context) error) error {
	wait := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		// Short attempts: a request that hits a server still electing its
		// meta leader hangs until the timeout, and the next attempt may not.
		actx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := fn(actx)
		cancel()
		if err == nil || !retryableProvisioning(err) || ctx.Err() != nil {
			if err != nil {
				return fmt.Errorf("provision %s: %w", what, err)
			}
			return nil
		}
		log.Info("waiting for the JetStream cluster (meta leader, peers) to provision",
			logKeyWhat, what, logKeyAttempt, attempt, logKeyErr, err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("provision %s: %w (last: %w)", what, ctx.Err(), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// retryLater marks an error provisioning should wait out: the asset is
// being created by another node and not visible here yet.
type retryLater struct{ error }

func (r retryLater) Unwrap() error { return r.error }

func errRetryLater(err error) error {
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return retryLater{err}
	}
	return err
}

func ensureStream(ctx context.Context, js jetstream.JetStream, want jetstream.StreamConfig) error {
	s, err := js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		created, err := js.CreateStream(ctx, want)
		if err == nil {
			return waitLeader(ctx, created)
		}
		if !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return err
		}
		// Another node created it first, maybe differently: compare.
		if s, err = js.Stream(ctx, want.Name); err != nil {
			return errRetryLater(err)
		}
	}
	if err != nil {
		return err
	}
	if err := compareStream(s.CachedInfo().Config, want); err != nil {
		return err
	}
	return compareShards(s.CachedInfo().Config, want)
}

// waitLeader waits, within the provisioning attempt, until a stream just
// created has elected its leader: a replicated stream takes a moment, and
// until then a publish to its subjects finds no responders. Only a stream
// this call created is waited for, so that a node restarting while its
// cluster lacks a quorum still starts (and serves reads, flagged stale);
// an attempt that runs out is retried, and the retry takes the stream as it
// is.
func waitLeader(ctx context.Context, s jetstream.Stream) error {
	for {
		info, err := s.Info(ctx)
		switch {
		case err == nil && (info.Config.Replicas <= 1 || info.Cluster != nil && info.Cluster.Leader != ""):
			return nil
		case err != nil && !isTransport(err):
			// A server that has not applied the new assignment yet says
			// the stream is not found (10059): as for the bucket, retry.
			return errRetryLater(err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func ensureBucket(ctx context.Context, js jetstream.JetStream, want jetstream.KeyValueConfig) error {
	_, err := js.CreateKeyValue(ctx, want)
	if err != nil && !errors.Is(err, jetstream.ErrBucketExists) {
		return err
	}
	// Also on success: creating a bucket that exists identically succeeds.
	s, err := js.Stream(ctx, bucketStream(want.Bucket))
	if err != nil {
		// Right after another node's creation the stream can still be
		// unknown to the server answering (10059): try again.
		return errRetryLater(err)
	}
	have := s.CachedInfo().Config
	if have.AllowRollup && have.Mirror == nil {
		// nats.go makes every bucket allow Nats-Rollup, whose "all" purges
		// the whole bucket in one publish: a worker's to make, whose role
		// may write keys. Nothing here purges by rollup (a KV Purge would;
		// the archive purges through the API), so it is turned off, also
		// on buckets made before.
		have.AllowRollup = false
		if _, err := js.UpdateStream(ctx, have); err != nil {
			return fmt.Errorf("bucket %s: turn off rollups: %w", want.Bucket, err)
		}
	}
	var diffs []string
	diffs = diff(diffs, "replicas", have.Replicas, want.Replicas)
	diffs = diff(diffs, "storage", have.Storage, want.Storage)
	diffs = diff(diffs, "history", have.MaxMsgsPerSubject, int64(want.History))
	diffs = diff(diffs, "ttl", have.MaxAge, want.TTL)
	return incompatible("bucket", want.Bucket, diffs)
}

// compareStream lists every field of have that breaks the wire contract.
func compareStream(have, want jetstream.StreamConfig) error {
	var diffs []string
	hs, ws := slices.Clone(have.Subjects), slices.Clone(want.Subjects)
	slices.Sort(hs)
	diffs = diff(diffs, "subjects", strings.Join(hs, ","), strings.Join(ws, ","))
	diffs = diff(diffs, "storage", have.Storage, want.Storage)
	diffs = diff(diffs, "replicas", have.Replicas, want.Replicas)
	diffs = diff(diffs, "allow_atomic", have.AllowAtomicPublish, want.AllowAtomicPublish)
	diffs = diff(diffs, "allow_direct", have.AllowDirect, want.AllowDirect)
	diffs = diff(diffs, "retention", have.Retention, want.Retention)
	diffs = diff(diffs, "discard", have.Discard, want.Discard)
	diffs = diff(diffs, "max_msgs", have.MaxMsgs, want.MaxMsgs)
	diffs = diff(diffs, "max_bytes", have.MaxBytes, want.MaxBytes)
	diffs = diff(diffs, "max_msgs_per_subject", have.MaxMsgsPerSubject, want.MaxMsgsPerSubject)
	diffs = diff(diffs, "max_age", have.MaxAge, want.MaxAge)
	diffs = diff(diffs, "max_msg_size", have.MaxMsgSize, want.MaxMsgSize)
	diffs = diff(diffs, "duplicate_window", have.Duplicates, want.Duplicates)
	diffs = diff(diffs, "deny_purge", have.DenyPurge, false)
	diffs = diff(diffs, "sealed", have.Sealed, false)
	return incompatible("stream", want.Name, diffs)
}

func diff[T comparable](diffs []string, field string, have, want T) []string {
	if have == want {
		return diffs
	}
	return append(diffs, fmt.Sprintf("%s is %v, want %v", field, have, want))
}

func incompatible(kind, name string, diffs []string) error {
	if len(diffs) == 0 {
		return nil
	}
	return fmt.Errorf("%s %s exists with an incompatible configuration: %s", kind, name, strings.Join(diffs, "; "))
}
