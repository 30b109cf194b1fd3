package jetstream

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Scan calls fn with every record of the stream after sequence after, in
// order and in groups, up to the last record stored when Scan started, and
// returns the last sequence it delivered (after, when there was nothing).
// Unlike Follow it ends: it is for reading a region's stream once, as
// failback does. Records of atomic batches are not held together: a stream
// that is scanned receives no writes (it is fenced).
func (l *Log) Scan(ctx context.Context, after uint64, fn func([]session.Stored) error) (uint64, error) {
	last := after
	err := scanStream(ctx, l.js, l.cfg.Stream, after+1, func(msgs []jetstream.Msg) error {
		recs := make([]session.Stored, 0, len(msgs))
		for _, msg := range msgs {
			s, err := l.decodeMsg(msg)
			if err != nil {
				return err
			}
			recs = append(recs, s)
			last = s.Seq
		}
		return fn(recs)
	})
	if err != nil {
		return last, fmt.Errorf("scan %s: %w", l.cfg.Stream, translate(err, wire.ErrConflict))
	}
	return last, nil
}

// All returns every live cursor of the bucket, in key order of the stream.
// The bucket keeps one message per key, so one pass over its stream from
// the start sees each key once (a value or a tombstone).
func (c *Cursors) All(ctx context.Context) ([]session.CursorEntry, error) {
	var out []session.CursorEntry
	err := scanStream(ctx, c.js, c.stream, 1, func(msgs []jetstream.Msg) error {
		for _, msg := range msgs {
			key, ok := strings.CutPrefix(msg.Subject(), c.prefix)
			sid, client, ok2 := strings.Cut(key, ".")
			if !ok || !ok2 {
				continue // not a cursor key of ours
			}
			meta, err := msg.Metadata()
			if err != nil {
				return err
			}
			e, live, err := decodeCursor(sid, client, meta.Sequence.Stream, msg.Headers(), msg.Data())
			if err != nil {
				return err
			}
			if live {
				out = append(out, e)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list all cursors of %s: %w", c.stream, translate(err, wire.ErrConflict))
	}
	return out, nil
}

// scanStream reads stream from sequence from to the end as it is when the
// scan starts, calling fn with the messages in groups. It stops when the
// consumer reports no more pending messages, so deleted messages at the end
// of the stream do not keep it waiting.
func scanStream(ctx context.Context, js jetstream.JetStream, stream string, from uint64, fn func([]jetstream.Msg) error) error {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return err
	}
	if s.CachedInfo().State.LastSeq < from {
		return nil
	}
	c, err := startConsumer(ctx, js, stream, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:   from,
	})
	if err != nil {
		return err
	}
	defer c.stop()
	if info := c.cons.CachedInfo(); info != nil && info.NumPending == 0 {
		return nil
	}
	const maxGroup = 512
	var group []jetstream.Msg
	for {
		msg, err := c.next(ctx)
		if err != nil {
			return err
		}
		group = append(group, msg)
		meta, err := msg.Metadata()
		if err != nil {
			return err
		}
		if meta.NumPending == 0 || len(group) == maxGroup {
			if err := fn(group); err != nil {
				return err
			}
			group = nil
		}
		if meta.NumPending == 0 {
			return nil
		}
	}
}
