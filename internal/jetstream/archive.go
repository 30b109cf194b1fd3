package jetstream

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

var _ session.Archive = (*Archive)(nil)

// Headers of an archive message, beside Nats-Msg-Id
// (archive/<session>/<lastSeq>/<part>).
const (
	hdrArchSession = "Pi-Session"
	hdrArchLastSeq = "Pi-Last-Seq"
	hdrArchPart    = "Pi-Part" // "k/n", 1-based
	hdrArchInfo    = "Pi-Info" // the wire.Info JSON, ASCII only; on part 1
)

// ArchiveConfig names the archive's JetStream assets: a stream with few
// subjects and a KV bucket for the archiver's lease.
type ArchiveConfig struct {
	// Stream holds one message per archived session (more for sessions
	// over MaxMsgSize), on <SubjectPrefix>.<YYYYMM>.<hh>: the month of the
	// session (session.ArchiveMonth) and the last two hex digits of its id. The
	// per-subject index holds 256 entries a month, however many sessions
	// are archived; a restore scans 1/256 of a month.
	Stream        string
	SubjectPrefix string
	// LeaseBucket holds the lease that lets one node at a time run passes.
	LeaseBucket string
	// LeaseKey is the lease's key in it (default "archiver"): with nodes
	// that hold a share of the shards, each shard's archive has a lease of
	// its own ("archiver-<shard>"), taken by one of its holders.
	LeaseKey   string
	Replicas   int
	MaxMsgSize int32
	// Duplicates is the archive stream's dedupe window, which makes a
	// repeated Put of the same copy store nothing.
	Duplicates time.Duration
	Logger     *slog.Logger
}

// NewArchiveConfig returns the archive of a deployment with configuration
// c: stream PI_ARCHIVE on pi.archive.*.*, bucket PI_ARCHIVE_LEASE, with c's
// replicas and message size.
func NewArchiveConfig(c Config) ArchiveConfig {
	a := ArchiveConfig{Replicas: c.Replicas, MaxMsgSize: c.MaxMsgSize, Duplicates: 2 * time.Minute, Logger: c.Logger}
	a.SetStream("PI_ARCHIVE")
	return a
}

// SetStream names the stream and derives the others from it: PI_ARCHIVE
// gives subjects pi.archive.*.* and bucket PI_ARCHIVE_LEASE.
func (c *ArchiveConfig) SetStream(name string) {
	c.Stream = name
	c.SubjectPrefix = strings.ToLower(strings.ReplaceAll(name, "_", "."))
	c.LeaseBucket = name + "_LEASE"
}

// assets is the archive's stream and lease bucket as a log Config (one
// record per batch is all validate needs of MaxBatch).
func (c ArchiveConfig) assets() Config {
	return Config{Stream: c.Stream, SubjectPrefix: c.SubjectPrefix, Bucket: c.LeaseBucket, Replicas: c.Replicas,
		MaxMsgSize: c.MaxMsgSize, Duplicates: c.Duplicates, MaxBatch: 1, Logger: c.Logger}
}

// streamConfig is the session stream's (file storage, no limits: an
// archived session must never expire; atomic batches for copies of several
// parts; no direct gets: reads see every acked copy) on the archive's
// month.shard subjects, with s2 compression (JSONL compresses well).
func (c ArchiveConfig) streamConfig() jetstream.StreamConfig {
	sc := c.assets().streamConfig()
	sc.Subjects = []string{c.SubjectPrefix + ".*.*"}
	sc.Compression = jetstream.S2Compression
	return sc
}

// Archive is the archive on JetStream, beside the session log it archives
// from; it implements session.Archive.
type Archive struct {
	js  jetstream.JetStream
	cfg ArchiveConfig
	log *Log
	// ledger is the ledger of erasures beside the archive.
	ledger *Ledger
	// scans holds a slot per scan's consumer: at most maxReadConsumers at
	// once, as the Log's reads (restores and listings are client-driven).
	scans chan struct{}

	mu      sync.Mutex
	kv      jetstream.KeyValue // the lease bucket, opened on first use
	forksKV jetstream.KeyValue // the registry of forks by reference, likewise
}

// NewArchive returns the archive cfg names, for the sessions of log.
func NewArchive(log *Log, cfg ArchiveConfig) *Archive {
	a := &Archive{js: log.js, cfg: cfg, log: log, scans: make(chan struct{}, maxReadConsumers)}
	a.ledger = NewLedger(log.js, a.ledgerBucketName(), "", cfg.Replicas)
	a.ledger.assets = cfg.assets()
	return a
}

// Provision creates the archive stream and the lease bucket, or checks
// existing ones, as Provision does for the log; idempotent.
func (a *Archive) Provision(ctx context.Context) error {
	lc := a.cfg.assets()
	if err := lc.validate(); err != nil {
		return fmt.Errorf("archive %w", err)
	}
	return provisionAssets(ctx, a.js, logger(lc), a.cfg.streamConfig(), lc.bucketConfig())
}

// DuplicateWindow is the session log's dedupe window.
func (a *Archive) DuplicateWindow() time.Duration { return a.log.cfg.Duplicates }

// copySubject is where copies of the session go: its month and shard.
func (a *Archive) copySubject(sid, month string) string {
	return a.cfg.SubjectPrefix + "." + month + "." + idTail(sid)
}

// idTail is the last two hex digits of the id: random in v4 and v7 ids.
func idTail(sid string) string { return strings.ToLower(sid[len(sid)-2:]) }

// Put stores data as a copy of c.SessionID up to c.LastSeq: one message, or
// one atomic batch of parts when it exceeds the message size, so a copy is
// in the archive whole or not at all. Message ids make a repeated Put of
// the same copy within the dedupe window a no-op; after it, a second
// identical copy (Find returns both; restores take the newest).
func (a *Archive) Put(ctx context.Context, c wire.ArchiveCopy, data []byte) error {
	sid := c.SessionID
	if err := session.ValidSessionID(sid); err != nil {
		return fmt.Errorf("archive %s: %w", sid, err)
	}
	info := infoHeader(c.Info)
	// Every part is cut to fit with the largest headers any part carries.
	chunk := a.partLimit() - len(info) - 512 - headerReserve
	if chunk < 4096 {
		return fmt.Errorf("archive %s: %w: its catalog record is %d bytes, too large for a message header", sid, wire.ErrTooLarge, len(info))
	}
	n := max(1, (len(data)+chunk-1)/chunk)
	if n > 1000 {
		return fmt.Errorf("archive %s: %w: %d bytes would take %d parts, more than one atomic batch carries", sid, wire.ErrTooLarge, len(data), n)
	}
	subj := a.copySubject(sid, c.Month)
	last := strconv.FormatUint(c.LastSeq, 10)
	msgs := make([]*nats.Msg, n)
	for k := range n {
		m := nats.NewMsg(subj)
		m.Data = data[k*chunk : min((k+1)*chunk, len(data))]
		m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("archive/%s/%s/%d", sid, last, k+1))
		m.Header.Set(hdrArchSession, sid)
		m.Header.Set(hdrArchLastSeq, last)
		m.Header.Set(hdrArchPart, fmt.Sprintf("%d/%d", k+1, n))
		if k == 0 {
			m.Header.Set(hdrArchInfo, info)
		}
		msgs[k] = m
	}
	if n == 1 {
		// A duplicate ack means this very copy is stored already: done.
		if _, err := a.js.PublishMsg(ctx, msgs[0]); err != nil {
			return fmt.Errorf("archive %s: %w", sid, translate(err, wire.ErrConflict))
		}
		return nil
	}
	timeout := a.js.Options().DefaultTimeout
	if deadline, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(deadline))
	}
	_, err := jetstreamext.PublishMsgBatch(ctx, a.js, msgs, jetstreamext.BatchFlowControl{AckFirst: true, AckTimeout: timeout})
	if apiCode(err) == codeBatchDuplicateMsgID {
		return nil // the same copy was committed before, atomically: whole
	}
	if err != nil {
		return fmt.Errorf("archive %s (%d parts): %w", sid, n, translate(err, wire.ErrConflict))
	}
	return nil
}

// partLimit is the largest archive message the stream and the connection
// take, headers included.
func (a *Archive) partLimit() int { return msgLimit(a.js, a.cfg.MaxMsgSize) }

// infoHeader encodes the catalog record for the Pi-Info header: JSON with
// every non-ASCII character escaped, as header values are safest in ASCII.
// A record too large for a header (a name of many kilobytes) loses its name
// and cwd: the copy's body has them anyway.
func infoHeader(in wire.Info) string {
	b, _ := json.Marshal(in)
	if len(b) > 16<<10 {
		in.Name, in.Cwd = nil, ""
		b, _ = json.Marshal(in)
	}
	var sb strings.Builder
	for _, r := range string(b) {
		switch {
		case r < utf8.RuneSelf:
			sb.WriteRune(r)
		case r > 0xFFFF:
			r -= 0x10000
			fmt.Fprintf(&sb, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
		default:
			fmt.Fprintf(&sb, `\u%04x`, r)
		}
	}
	return sb.String()
}
