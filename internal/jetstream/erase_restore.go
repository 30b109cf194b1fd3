package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// ReadErasures returns the lines of the ledger of erasures beside archive
// stream archiveStream, without creating it: none when the deployment
// never erased a session.
func ReadErasures(ctx context.Context, js jetstream.JetStream, archiveStream string) ([]wire.Erasure, error) {
	bucket := archiveStream + "_ERASED"
	if _, err := js.Stream(ctx, bucketStream(bucket)); errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("ledger of erasures %s: %w", bucket, Classify(err))
	}
	cfg := NewConfig()
	a := NewArchive(NewLog(js, cfg), ArchiveConfig{Stream: archiveStream})
	return a.Erasures(ctx)
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

// ReapplyErasures erases every session of lines from the deployment d
// names (each shard's stream, the cursors, the archive's copies) as
// pi-node's delete does, and writes the lines to its ledger: after a
// restore from a backup taken before some of them. It returns how many
// of the sessions it found and erased.
func ReapplyErasures(ctx context.Context, js jetstream.JetStream, d Erasing, lines []wire.Erasure) (int, error) {
	s, err := js.Stream(ctx, d.Stream)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", d.Stream, Classify(err))
	}
	cfg := NewConfig()
	cfg.Stream, cfg.Bucket = d.Stream, d.Bucket
	if subj := s.CachedInfo().Config.Subjects; len(subj) > 0 {
		cfg.SubjectPrefix = strings.TrimSuffix(subj[0], ".*")
	}
	m, err := mapOf(s.CachedInfo().Config)
	if err != nil {
		return 0, err
	}
	logs := make([]*Log, m.Streams())
	for k := range logs {
		logs[k] = NewLog(js, cfg.Shard(k))
	}
	acfg := NewArchiveConfig(cfg)
	acfg.SetStream(d.Archive)
	arch := NewArchive(logs[0], acfg)
	// Forks by reference of an erased session get their path first, as
	// pi-node's delete gives it them: the backup may predate it.
	_, all := NewShards(js, cfg, m)
	found := 0
	for _, line := range lines {
		if _, err := session.InheritForks(ctx, all, arch, line.Session, session.LogTree(all, line.Session)); err != nil && !errors.Is(err, wire.ErrNotFound) {
			return found, fmt.Errorf("erase %s again: its forks: %w", line.Session, err)
		}
		erased := false
		for _, l := range logs {
			_, err := l.Erase(ctx, line.Session, 0)
			if errors.Is(err, wire.ErrNotFound) {
				continue
			}
			if err != nil {
				return found, err
			}
			erased = true
		}
		copies, err := arch.Find(ctx, line.Session)
		if err != nil && !errors.Is(err, wire.ErrNotFound) {
			return found, err
		}
		if len(copies) > 0 {
			if err := arch.Delete(ctx, copies); err != nil {
				return found, err
			}
			erased = true
		}
		if err := arch.RecordErasure(ctx, line); err != nil {
			return found, err
		}
		if err := arch.ForgetForks(ctx, line.Session); err != nil {
			return found, err
		}
		if erased {
			found++
		}
	}
	return found, nil
}
