package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// List returns up to limit copies of month ("" for every month) from
// archive sequence from on, in archive order, and where the next page
// starts (0 when this is the last).
func (a *Archive) List(ctx context.Context, month string, from uint64, limit int) ([]wire.ArchiveCopy, uint64, error) {
	filter := a.cfg.SubjectPrefix + ".*.*"
	if month != "" {
		if err := session.ValidArchiveMonth(month); err != nil {
			return nil, 0, err
		}
		filter = a.cfg.SubjectPrefix + "." + month + ".*"
	}
	out := []wire.ArchiveCopy{}
	var next uint64
	err := a.scan(ctx, filter, max(from, 1), func(c wire.ArchiveCopy) bool {
		if len(out) == limit {
			next = c.Seq
			return false
		}
		out = append(out, c)
		return true
	})
	return out, next, err
}

// Find returns every complete copy of the session, oldest first. It scans
// the headers of one shard: of the id's month for a UUIDv7, else of every
// month.
func (a *Archive) Find(ctx context.Context, sid string) ([]wire.ArchiveCopy, error) {
	if err := session.ValidSessionID(sid); err != nil {
		return nil, err
	}
	month := "*"
	if _, ok := session.V7Time(sid); ok {
		month = session.ArchiveMonth(sid, time.Time{})
	}
	out := []wire.ArchiveCopy{}
	err := a.scan(ctx, a.cfg.SubjectPrefix+"."+month+"."+idTail(sid), 1, func(c wire.ArchiveCopy) bool {
		if c.SessionID == sid {
			out = append(out, c)
		}
		return true
	})
	return out, err
}

// scan calls fn with each complete copy on the subjects filter matches,
// from archive sequence from to the last one there when the scan starts,
// until fn returns false. It reads headers only, with an ordered consumer:
// bodies are fetched by Fetch for the one copy a restore needs. The scan of
// a large month may take seconds: only ctx bounds it.
func (a *Archive) scan(ctx context.Context, filter string, from uint64, fn func(c wire.ArchiveCopy) bool) error {
	end, err := leaderGet(ctx, a.js, a.log.api, a.cfg.Stream, msgGetRequest{LastFor: filter})
	if isNotFound(err) {
		return nil // nothing archived there
	}
	if err != nil {
		return a.noArchive(err)
	}
	if end.Seq < from {
		return nil
	}
	select {
	case a.scans <- struct{}{}:
		defer func() { <-a.scans }()
	case <-ctx.Done():
		return translate(ctx.Err(), wire.ErrConflict)
	}
	c, err := startConsumer(ctx, a.js, a.cfg.Stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{filter},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    from,
		HeadersOnly:    true,
	})
	if err != nil {
		return a.noArchive(err)
	}
	defer c.stop()
	var cur *wire.ArchiveCopy
	var seen uint64 // the last sequence delivered
	if from > 0 {
		seen = from - 1
	}
	for {
		// The last copy may be erased while the scan runs (a restore's or
		// an erasure's delete): the consumer then never reaches end, and
		// waits. Whether anything is left up to end is asked while nothing
		// comes.
		msg, err := c.nextWatched(ctx, func() error {
			next, err := leaderGet(ctx, a.js, a.log.api, a.cfg.Stream, msgGetRequest{Seq: seen + 1, NextFor: filter})
			if isNotFound(err) || err == nil && next.Seq > end.Seq {
				return errScanDone
			}
			return nil // there is more: the consumer brings it
		})
		if errors.Is(err, errScanDone) {
			return nil
		}
		if err != nil {
			return translate(err, wire.ErrConflict)
		}
		meta, err := msg.Metadata()
		if err != nil {
			return err
		}
		seq := meta.Sequence.Stream
		seen = seq
		k, n, err := decodePart(msg.Headers())
		switch {
		case err != nil:
			cur = nil // not a copy of ours: skipped
		case k == 1:
			cur, err = decodeCopy(msg.Subject(), msg.Headers(), seq, n, meta.Timestamp)
			if err != nil {
				cur = nil
			}
		case cur == nil || seq != cur.Seq+uint64(k-1) || n != cur.Parts:
			cur = nil // a part without its first: not a copy
		}
		if cur != nil {
			// Headers-only delivery states the body's size.
			size, _ := strconv.ParseInt(msg.Headers().Get("Nats-Msg-Size"), 10, 64)
			cur.Bytes += size
			if k == n && !fn(*cur) {
				return nil
			}
		}
		if seq >= end.Seq {
			return nil
		}
	}
}

// errScanDone ends a scan whose last message went while it ran.
var errScanDone = errors.New("nothing left to scan")

// noArchive turns "no such stream" into a clear ErrNotFound.
func (a *Archive) noArchive(err error) error {
	if apiCode(err) == codeStreamNotFound || errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("%w: there is no archive (stream %s): no session has been archived yet", wire.ErrNotFound, a.cfg.Stream)
	}
	return translate(err, wire.ErrConflict)
}

// decodePart reads the Pi-Part header "k/n".
func decodePart(h nats.Header) (k, n int, err error) {
	ks, ns, ok := strings.Cut(h.Get(hdrArchPart), "/")
	if k, err = strconv.Atoi(ks); err == nil && ok {
		n, err = strconv.Atoi(ns)
	}
	if err != nil || !ok || k < 1 || k > n {
		return 0, 0, fmt.Errorf("bad %s header %q", hdrArchPart, h.Get(hdrArchPart))
	}
	return k, n, nil
}

// decodeCopy reads the first part's headers; the month is the subject's.
func decodeCopy(subject string, h nats.Header, seq uint64, parts int, t time.Time) (*wire.ArchiveCopy, error) {
	c := &wire.ArchiveCopy{Seq: seq, Parts: parts, ArchivedAt: t}
	if toks := strings.Split(subject, "."); len(toks) >= 2 {
		c.Month = toks[len(toks)-2]
	}
	if err := json.Unmarshal([]byte(h.Get(hdrArchInfo)), &c.Info); err != nil {
		return nil, fmt.Errorf("archive message %d: %s: %w", seq, hdrArchInfo, err)
	}
	last, err := strconv.ParseUint(h.Get(hdrArchLastSeq), 10, 64)
	if err != nil || c.SessionID != h.Get(hdrArchSession) {
		return nil, fmt.Errorf("archive message %d: inconsistent headers", seq)
	}
	c.LastSeq = last
	return c, nil
}

// Fetch returns the JSONL of a copy: its parts' bodies, from the stream
// leader, checked against the copy's identity.
func (a *Archive) Fetch(ctx context.Context, c wire.ArchiveCopy) ([]byte, error) {
	data := make([]byte, 0, c.Bytes)
	for k := range c.Parts {
		m, err := leaderGet(ctx, a.js, a.log.api, a.cfg.Stream, msgGetRequest{Seq: c.Seq + uint64(k)})
		if err != nil {
			return nil, fmt.Errorf("archived copy of %s, part %d: %w", c.SessionID, k+1, a.noArchive(err))
		}
		pk, pn, err := decodePart(m.Header)
		if err != nil || pk != k+1 || pn != c.Parts || m.Header.Get(hdrArchSession) != c.SessionID ||
			m.Header.Get(hdrArchLastSeq) != strconv.FormatUint(c.LastSeq, 10) {
			return nil, fmt.Errorf("archived copy of %s: message %d is not its part %d", c.SessionID, m.Seq, k+1)
		}
		data = append(data, m.Data...)
	}
	return data, nil
}

// Delete erases the copies' messages. A message already gone is fine.
func (a *Archive) Delete(ctx context.Context, cs []wire.ArchiveCopy) error {
	for _, c := range cs {
		seqs := make([]uint64, c.Parts)
		for k := range c.Parts {
			seqs[k] = c.Seq + uint64(k)
		}
		// Erased, not only deleted: a copy deleted because its session was
		// erased must leave no bytes in the archive's block files.
		if err := eraseMsgs(ctx, a.js, a.log.api, a.cfg.Stream, seqs); err != nil {
			return fmt.Errorf("delete archived copy of %s: %w", c.SessionID, err)
		}
	}
	return nil
}
