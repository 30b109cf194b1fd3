package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// ReadErasures returns the lines of the ledger of erasures beside archive
// stream archiveStream, without creating it: none when the deployment
// never erased a session.
func ReadErasures(ctx context.Context, js jetstream.JetStream, archiveStream string) ([]wire.Erasure, error) {
	return ReadLedger(ctx, js, archiveStream+"_ERASED")
}

// ReadLedger returns the lines of the ledger of erasures in bucket, without
// creating it: none when there is no such bucket.
func ReadLedger(ctx context.Context, js jetstream.JetStream, bucket string) ([]wire.Erasure, error) {
	if _, err := js.Stream(ctx, bucketStream(bucket)); errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("ledger of erasures %s: %w", bucket, Classify(err))
	}
	return NewLedger(js, bucket, "", 1).Erasures(ctx)
}

// waitReplicasCurrent polls until stream name has a leader and every
// other replica is current with it (a stream that does not exist is
// fine: nothing to wait for), for at most a minute.
func waitReplicasCurrent(ctx context.Context, js jetstream.JetStream, name string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		s, err := js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil
		}
		if err == nil {
			info, ierr := s.Info(ctx)
			if err = ierr; err == nil && current(info) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stream %s: its replicas are not current after a restore (%v): %w", name, err, wire.ErrUnavailable)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// current reports whether info's stream has a leader and every replica
// is current with it.
func current(info *jetstream.StreamInfo) bool {
	if info.Cluster == nil || info.Config.Replicas <= 1 {
		return true
	}
	if info.Cluster.Leader == "" || len(info.Cluster.Replicas) < info.Config.Replicas-1 {
		return false
	}
	for _, r := range info.Cluster.Replicas {
		if !r.Current || r.Offline || r.Lag > 0 {
			return false
		}
	}
	return true
}

// Erasing is the deployment ReapplyErasures erases from.
type Erasing struct {
	// Stream is the first shard's sessions stream; its subjects, shard
	// map and the other shards' streams are read from it.
	Stream string
	// Bucket is the cursors' KV bucket (pi-node's --bucket).
	Bucket string
	// Archive is the archive's stream (pi-node's --archive-stream).
	Archive string
}

// Reapplied is what ReapplyErasures did.
type Reapplied struct {
	// Erased is how many of the ledger's sessions it found and erased.
	Erased int
	// Forks is how many forks by reference of them it gave their path.
	Forks int
}

// ReapplyErasures erases every session of lines from the deployment d
// names (each shard's stream, the cursors, the archive's copies) as
// pi-node's delete does, and writes the lines to its ledger: after a
// restore from a backup taken before some of them.
func ReapplyErasures(ctx context.Context, js jetstream.JetStream, d Erasing, lines []wire.Erasure) (Reapplied, error) {
	var done Reapplied
	s, err := js.Stream(ctx, d.Stream)
	if err != nil {
		return done, fmt.Errorf("stream %s: %w", d.Stream, Classify(err))
	}
	cfg := NewConfig()
	cfg.Stream, cfg.Bucket = d.Stream, d.Bucket
	if subj := s.CachedInfo().Config.Subjects; len(subj) > 0 {
		cfg.SubjectPrefix = strings.TrimSuffix(subj[0], ".*")
	}
	m, err := mapOf(s.CachedInfo().Config)
	if err != nil {
		return done, err
	}
	logs := make([]*Log, m.Streams())
	for k := range logs {
		logs[k] = NewLog(js, cfg.Shard(k))
	}
	acfg := NewArchiveConfig(cfg)
	acfg.SetStream(d.Archive)
	arch := NewArchive(logs[0], acfg)
	// Forks by reference of an erased session get their path first, as
	// pi-node's delete gives it them: the backup may predate it. The
	// streams were just restored, and reads below come from their leaders
	// (the registry's listing too: see leaderEntries); every replica is
	// current first all the same, so that the erasures reach them all.
	names := []string{bucketStream(acfg.Stream + "_FORKS")}
	for k := range logs {
		names = append(names, cfg.Shard(k).Stream)
	}
	for _, name := range names {
		if err := waitReplicasCurrent(ctx, js, name); err != nil {
			return done, err
		}
	}
	_, all := NewShards(js, cfg, m)
	for _, line := range lines {
		n, err := session.InheritForks(ctx, all, arch, line.Session, session.LogTree(all, line.Session))
		if err != nil && !errors.Is(err, wire.ErrNotFound) {
			return done, fmt.Errorf("erase %s again: its forks: %w", line.Session, err)
		}
		done.Forks += n
		erased := false
		for _, l := range logs {
			_, err := l.Erase(ctx, line.Session, 0)
			if errors.Is(err, wire.ErrNotFound) {
				continue
			}
			if err != nil {
				return done, err
			}
			erased = true
		}
		copies, err := arch.Find(ctx, line.Session)
		if err != nil && !errors.Is(err, wire.ErrNotFound) {
			return done, err
		}
		if len(copies) > 0 {
			if err := arch.Delete(ctx, copies); err != nil {
				return done, err
			}
			erased = true
		}
		if err := arch.RecordErasure(ctx, line); err != nil {
			return done, err
		}
		if err := arch.ForgetForks(ctx, line.Session); err != nil {
			return done, err
		}
		if erased {
			done.Erased++
		}
	}
	return done, nil
}
