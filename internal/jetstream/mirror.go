package jetstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/wire"
)

// JetStream API error codes of the cross-region operations (nats-server
// v2.15.2 server/errors.json).
const (
	codeStreamCreate        jetstream.ErrorCode = 10049 // JSStreamCreateErrF (also "error creating store" right after a delete)
	codeStreamSealed        jetstream.ErrorCode = 10109 // JSStreamSealedErr: a fenced stream refuses writes
	codeStreamOffline       jetstream.ErrorCode = 10118 // JSStreamOfflineErr: every replica is down
	codeStreamOfflineReason jetstream.ErrorCode = 10194 // JSStreamOfflineReasonErrF
)

// ProvisionPrimary is Provision for one region of a supercluster: cfg's
// stream and cursor bucket are created placed in cluster (the region), or
// existing ones are checked against the wire contract.
func ProvisionPrimary(ctx context.Context, js jetstream.JetStream, cfg Config, cluster string) error {
	return ProvisionPrimaryShards(ctx, js, cfg, cluster, 1)
}

// ProvisionMirror creates cfg's stream and bucket, placed in cluster, as
// mirrors of origin's: they receive every message of origin at the same
// sequence, with origin's subject prefix rewritten to cfg's (a supercluster
// shares subjects, so each region's copy lives on its own subjects). Assets
// that exist already are left as they are, whatever they are: a region's
// assets are replaced only by the failover and failback operations, never
// by a node starting (Probe tells what they are).
func ProvisionMirror(ctx context.Context, js jetstream.JetStream, cfg, origin Config, cluster string) error {
	return ProvisionMirrorShards(ctx, js, cfg, origin, cluster, 1)
}

// createMirrorIfMissing creates the mirror sc unless a stream of its name
// exists. It first waits for the origin: a mirror created before its
// origin fails to set up its consumer and retries with a backoff that
// grows by 10 s per failure up to 2 minutes (nats-server's
// calculateRetryBackoff), so it could start mirroring long after the origin
// appears.
func createMirrorIfMissing(ctx context.Context, js jetstream.JetStream, log *slog.Logger, sc jetstream.StreamConfig) error {
	_, err := js.Stream(ctx, sc.Name)
	switch {
	case err == nil, apiCode(err) == codeStreamOffline, apiCode(err) == codeStreamOfflineReason:
		return nil // it exists (its region may be down)
	case !errors.Is(err, jetstream.ErrStreamNotFound):
		return err
	}
	for wait := 250 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		_, err := js.Stream(ctx, sc.Mirror.Name)
		if !errors.Is(err, jetstream.ErrStreamNotFound) {
			break // there, or a failure to be judged by the create
		}
		log.Info("waiting for the origin of a mirror to exist", logKeyWhat, sc.Name, "origin", sc.Mirror.Name)
		select {
		case <-ctx.Done():
			return fmt.Errorf("mirror %s: origin %s: %w", sc.Name, sc.Mirror.Name, ctx.Err())
		case <-time.After(wait):
		}
	}
	_, err = js.CreateStream(ctx, sc)
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return nil
	}
	return err
}

// mirrorStreamConfig is the session stream of cfg as a mirror of origin's:
// the primary's settings minus what a mirror may not have (subjects, atomic
// publish, a dedupe window: mirrored messages are never deduplicated).
func mirrorStreamConfig(cfg, origin Config, cluster string) jetstream.StreamConfig {
	sc := cfg.streamConfig()
	sc.Subjects, sc.AllowAtomicPublish, sc.Duplicates = nil, false, 0
	sc.Placement = placement(cluster)
	sc.Mirror = &jetstream.StreamSource{Name: origin.Stream, SubjectTransforms: []jetstream.SubjectTransformConfig{{
		Source:      origin.SubjectPrefix + ".*",
		Destination: cfg.SubjectPrefix + ".{{wildcard(1)}}",
	}}}
	return sc
}

// placement places an asset in a cluster (a region); "" leaves it to the
// server (a single server, or tests).
func placement(cluster string) *jetstream.Placement {
	if cluster == "" {
		return nil
	}
	return &jetstream.Placement{Cluster: cluster}
}

// bucketStream names the stream behind KV bucket b.
func bucketStream(b string) string { return "KV_" + b }

// kvStreamConfig is the stream nats.go creates for cfg's bucket (history 1,
// see bucketConfig; without rollups, see ensureBucket), written out so that a mirror can be made of it and a
// mirror promoted to it.
func kvStreamConfig(cfg Config, cluster string) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              bucketStream(cfg.Bucket),
		Subjects:          []string{"$KV." + cfg.Bucket + ".>"},
		MaxMsgsPerSubject: 1,
		MaxBytes:          -1,
		MaxMsgSize:        -1,
		MaxMsgs:           -1,
		MaxConsumers:      -1,
		Storage:           jetstream.FileStorage,
		Replicas:          cfg.Replicas,
		Placement:         placement(cluster),
		AllowRollup:       false, // see ensureBucket
		DenyDelete:        true,
		Duplicates:        2 * time.Minute,
		AllowDirect:       true,
		Discard:           jetstream.DiscardNew,
	}
}

// mirrorBucketConfig is cfg's cursor bucket as a mirror of origin's, keys
// moved from $KV.<origin bucket>. to $KV.<cfg bucket>. so that, promoted,
// it is an ordinary bucket. No mirror-direct: the mirror must never answer
// a direct get meant for the origin's bucket.
func mirrorBucketConfig(cfg, origin Config, cluster string) jetstream.StreamConfig {
	sc := kvStreamConfig(cfg, cluster)
	sc.Subjects = nil
	sc.Mirror = &jetstream.StreamSource{Name: bucketStream(origin.Bucket), SubjectTransforms: []jetstream.SubjectTransformConfig{{
		Source:      "$KV." + origin.Bucket + ".>",
		Destination: "$KV." + cfg.Bucket + ".>",
	}}}
	return sc
}

// MirrorLog is a region's Log on its own stream, primary or mirror. As a
// Feed it differs in one way: LastSeq is the origin's last sequence (what
// the home acknowledged, not what the mirror has copied), so a Store
// following a mirror counts the mirror's lag as its own — readiness, the
// Pi-Lag and Pi-Stale headers and the lag in /v1/status include it.
type MirrorLog struct {
	*Log
	caughtUp atomic.Bool // see CaughtUp

	mu        sync.Mutex
	contact   time.Time // the mirror's last contact with its origin, as last seen
	receiving bool      // a later contact than the first one seen has been seen
}

// NewMirrorLog returns the log on cfg's stream, reached through js.
func NewMirrorLog(js jetstream.JetStream, cfg Config) *MirrorLog {
	return &MirrorLog{Log: NewLog(js, cfg)}
}

// ErrLagUnknown is LastSeq's error for a mirror that has never heard from
// its origin while the origin does not answer: nothing tells how much of
// the origin's history the mirror lacks, and 0 would be a lie.
var ErrLagUnknown = errors.New("the mirror has not heard from its origin since it started, and the origin does not answer: its lag is unknown")

// LastSeq returns, for a primary, the stream's last sequence; for a
// mirror, its origin's: asked of the origin when it answers (a mirror that
// has just started, or stopped receiving while its consumer is set up
// again, does not know how far behind it is), else the mirror's own last
// sequence plus its lag as last reported; ErrLagUnknown when the mirror
// never reported either.
func (m *MirrorLog) LastSeq(ctx context.Context) (uint64, error) {
	info, err := m.lastSeqInfo(ctx)
	if err != nil {
		return 0, err
	}
	if info.Mirror == nil {
		m.caughtUp.Store(true)
		return info.State.LastSeq, nil
	}
	p := MirrorPosition{LastSeq: info.State.LastSeq, Reported: info.Mirror.Active >= 0, ReportedLag: info.Mirror.Lag}
	p.Receiving = m.renewed(info.Mirror.Active)
	octx, cancel := context.WithTimeout(ctx, originTimeout)
	defer cancel()
	if o, err := m.js.Stream(octx, info.Mirror.Name); err == nil && Leaderless(o.CachedInfo()) == nil {
		p.OriginLastSeq, p.OriginAnswered = o.CachedInfo().State.LastSeq, true
	}
	lag, ok := p.Lag()
	if !ok {
		// Unavailable, as a read that cannot learn the log's end is.
		return 0, fmt.Errorf("%w: %s, mirror of %s: %w", wire.ErrUnavailable, m.cfg.Stream, info.Mirror.Name, ErrLagUnknown)
	}
	if p.CaughtUp() {
		m.caughtUp.Store(true)
	}
	return p.LastSeq + lag, nil
}

// contactRenewed is how much later than the one seen before a mirror's
// last contact must be to count as a new one: more than the jitter of the
// estimate (a request's latency), less than the mirror's heartbeat (1 s).
const contactRenewed = 400 * time.Millisecond

// renewed notes a mirror's last contact, active ago, and reports whether
// one later than the first seen has been seen: the mirror is receiving.
// nats-server counts the setting up of the mirror's consumer as a contact,
// and a consumer set up across a gateway may deliver nothing for seconds
// (seen on loopback at start: no message nor heartbeat for 5 s, until the
// mirror's own health check set it up again); only a renewed contact — a
// message or a heartbeat — shows that messages flow.
func (m *MirrorLog) renewed(active time.Duration) bool {
	if active < 0 {
		return false
	}
	c := time.Now().Add(-active)
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.contact.IsZero():
		m.contact = c
	case c.Sub(m.contact) > contactRenewed:
		m.contact, m.receiving = c, true
	}
	return m.receiving
}

// CaughtUp reports whether LastSeq has found the stream holding everything
// its origin held (always, for a primary) at least once. A mirror that has
// not is still copying what the home acknowledged before it started.
func (m *MirrorLog) CaughtUp() bool { return m.caughtUp.Load() }

// MirrorPosition is a mirror measured against its origin.
type MirrorPosition struct {
	LastSeq uint64 // the mirror's own last sequence
	// OriginLastSeq is the origin's last sequence, asked after the
	// mirror's; only when OriginAnswered.
	OriginLastSeq  uint64
	OriginAnswered bool
	// Reported: the mirror has heard from its origin since its stream
	// started (nats-server reports Active -1 until then), and ReportedLag
	// is the lag it computed then — 0 until its first messages arrive,
	// whatever the origin holds.
	Reported    bool
	ReportedLag uint64
	// Receiving: messages or heartbeats have been seen arriving, not only
	// the setting up of the mirror's consumer (see MirrorLog.renewed).
	Receiving bool
}

// Lag is how many of the origin's sequences the mirror has not copied:
// from the origin's state when it answered, else the mirror's last report;
// false when neither is known.
func (p MirrorPosition) Lag() (uint64, bool) {
	switch {
	case p.OriginAnswered:
		return p.OriginLastSeq - min(p.OriginLastSeq, p.LastSeq), true
	case p.Reported:
		return p.ReportedLag, true
	}
	return 0, false
}

// LagSource says where Lag comes from: "origin", "mirror" (its last
// report; the origin did not answer) or "unknown".
func (p MirrorPosition) LagSource() string {
	switch {
	case p.OriginAnswered:
		return "origin"
	case p.Reported:
		return "mirror"
	}
	return "unknown"
}

// CaughtUp reports whether the mirror, receiving from its origin, held
// everything the origin held when it was asked (the origin was asked
// second, so it may hold more by then). A mirror not seen receiving is not
// caught up even with an empty origin: it might not copy the origin's
// first writes for seconds.
func (p MirrorPosition) CaughtUp() bool {
	return p.Receiving && p.OriginAnswered && p.LastSeq >= p.OriginLastSeq
}

// originTimeout bounds MirrorLog's question to the origin: the Store asks
// four times a second, and an origin that is down must not hold it up.
const originTimeout = 500 * time.Millisecond

func logger(cfg Config) *slog.Logger {
	if cfg.Logger != nil {
		return cfg.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// RetryProvisioning runs fn as Provision runs its steps: attempts of a few
// seconds, retried with backoff while the cluster is still forming (no meta
// leader, peers unknown, no answer), until ctx is done; what names the step
// in log lines and errors. For callers provisioning assets of their own.
func RetryProvisioning(ctx context.Context, log *slog.Logger, what string, fn func(context.Context) error) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return retryProvision(ctx, log, what, fn)
}
