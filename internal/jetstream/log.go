package jetstream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Compile-time checks: Log is both sides of the session log.
var (
	_ session.Log  = (*Log)(nil)
	_ session.Feed = (*Log)(nil)
)

// Message headers of the wire contract, beside JetStream's own.
const (
	hdrType   = "Pi-Type"
	hdrID     = "Pi-Id"
	hdrParent = "Pi-Parent"
	// hdrRecords is on the header of a session written in several atomic
	// batches: its record count (session.Record.Total).
	hdrRecords = "Pi-Records"
	// hdrForkOf is on the header of a fork by reference: its parent and
	// fork point (session.ForkOf, as JSON).
	hdrForkOf = "Pi-Fork-Of"
)

// Log is the session log on a JetStream stream provisioned by Provision:
// one subject per session, one message per record. It holds no goroutines
// and is safe for concurrent use.
type Log struct {
	js  jetstream.JetStream
	cfg Config
	api string // JetStream API prefix, for leader reads
	// reads holds a slot per read by consumer (maxReadConsumers).
	reads chan struct{}
}

// NewLog returns the log on cfg's stream, reached through js.
func NewLog(js jetstream.JetStream, cfg Config) *Log {
	return &Log{js: js, cfg: cfg, api: apiPrefix(js), reads: make(chan struct{}, maxReadConsumers)}
}

// JetStream returns the JetStream context the log publishes through.
func (l *Log) JetStream() jetstream.JetStream { return l.js }

// MaxBatch returns the most records one Append may carry.
func (l *Log) MaxBatch() int { return l.cfg.MaxBatch }

// Stream is the name of the log's stream.
func (l *Log) Stream() string { return l.cfg.Stream }

func (l *Log) subject(sid string) string { return l.cfg.SubjectPrefix + "." + sid }

// Msg builds the message of one record as the wire contract has it: its
// JSONL line as the body, the routing headers and the session-scoped dedupe
// id; no expectation or batch headers. Exported for bulk loaders and for the
// raw-JetStream baselines of the benchmarks, which must send the same bytes.
func (l *Log) Msg(sid string, r session.Record) *nats.Msg {
	m := nats.NewMsg(l.subject(sid))
	m.Data = r.Data
	id := r.ID
	if r.IsHeader() {
		id = "header"
	}
	m.Header.Set(jetstream.MsgIDHeader, sid+"/"+id)
	m.Header.Set(hdrType, r.Type)
	if r.ID != "" {
		m.Header.Set(hdrID, r.ID)
	}
	if r.Parent != "" {
		m.Header.Set(hdrParent, r.Parent)
	}
	if r.IsHeader() && r.Total > 0 {
		m.Header.Set(hdrRecords, strconv.Itoa(r.Total))
	}
	if r.IsHeader() && r.Fork != nil {
		m.Header.Set(hdrForkOf, session.EncodeForkOf(r.Fork))
	}
	return m
}

// Append stores recs at the end of the session: one record as a plain
// publish, several as one atomic batch, both conditional on the session's
// last sequence being expectLast. See session.Log for the contract.
func (l *Log) Append(ctx context.Context, sid string, expectLast uint64, recs []session.Record) ([]uint64, error) {
	if err := session.CheckAppend(sid, recs, l.cfg.MaxBatch, int(l.cfg.MaxMsgSize)); err != nil {
		return nil, fmt.Errorf("append to %s: %w", sid, err)
	}
	// A creation that loses, or a record whose id is stored already, is
	// ErrExists when it concerns the session itself: the header, or any
	// write that expected the session not to exist.
	conflict := wire.ErrConflict
	if expectLast == 0 || hasHeader(recs) {
		conflict = wire.ErrExists
	}
	msgs := make([]*nats.Msg, len(recs))
	for i, r := range recs {
		msgs[i] = l.Msg(sid, r)
		if size, limit := msgSize(msgs[i]), l.sizeLimit(); size > limit {
			return nil, fmt.Errorf("append to %s: %w", sid, &session.RecordError{Index: i,
				Err: fmt.Errorf("%w: %d bytes with its headers, the limit is %d", wire.ErrTooLarge, size, limit)})
		}
	}
	if len(recs) == 1 {
		return l.publishOne(ctx, sid, expectLast, msgs[0], recs[0], conflict)
	}
	// The expectation goes on the first message: the server checks it when
	// the batch commits, against the session as it is then.
	msgs[0].Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(expectLast, 10))
	// The first message waits for an ack; bound that wait by ctx as well,
	// not only by the JetStream default timeout.
	ackTimeout := l.js.Options().DefaultTimeout
	if deadline, ok := ctx.Deadline(); ok {
		ackTimeout = min(ackTimeout, time.Until(deadline))
	}
	if ackTimeout <= 0 {
		return nil, fmt.Errorf("append %d records to %s: %w: %w", len(recs), sid, wire.ErrUnavailable, context.DeadlineExceeded)
	}
	var ack *jetstreamext.BatchAck
	err := retryInFlight(ctx, func() (err error) {
		ack, err = jetstreamext.PublishMsgBatch(ctx, l.js, msgs, jetstreamext.BatchFlowControl{AckFirst: true, AckTimeout: ackTimeout})
		return err
	})
	if err != nil {
		if apiCode(err) == codeWrongLastSeq || apiCode(err) == codeWrongLastSeqConstant {
			conflict = casConflict(expectLast)
		}
		return nil, fmt.Errorf("append %d records to %s: %w", len(recs), sid, translate(err, conflict))
	}
	if ack.BatchSize != uint64(len(recs)) || ack.Sequence < uint64(len(recs)) {
		return nil, fmt.Errorf("append %d records to %s: %w: ack for %d records at %d", len(recs), sid,
			wire.ErrUnavailable, ack.BatchSize, ack.Sequence)
	}
	// A committed batch is stored contiguously, ending at the acked sequence.
	seqs := make([]uint64, len(recs))
	for i := range seqs {
		seqs[i] = ack.Sequence - uint64(len(recs)-1-i)
	}
	return seqs, nil
}

func (l *Log) publishOne(ctx context.Context, sid string, expectLast uint64, m *nats.Msg, r session.Record, conflict error) ([]uint64, error) {
	// nats.go sends the expectation header for 0 too ("0": the subject must be empty).
	var ack *jetstream.PubAck
	err := retryInFlight(ctx, func() (err error) {
		// No retries of nats.go's own: retryInFlight's, as for a batch.
		ack, err = l.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(expectLast), jetstream.WithRetryAttempts(0))
		return err
	})
	if err != nil {
		if apiCode(err) == codeWrongLastSeq || apiCode(err) == codeWrongLastSeqConstant {
			conflict = casConflict(expectLast)
		}
		return nil, fmt.Errorf("append to %s: %w", sid, translate(err, conflict))
	}
	if ack.Duplicate {
		// The dedupe window caught a record already stored: never report
		// that as a fresh success; the caller reads and reconciles.
		return nil, fmt.Errorf("append to %s: %w: record %q already stored at %d", sid, conflict, r.ID, ack.Sequence)
	}
	return []uint64{ack.Sequence}, nil
}

// inFlightRetries bounds how often an append refused because a write to
// its session was still in flight is sent again; noResponderRetries, how
// often one that nobody heard is.
const (
	inFlightRetries    = 6
	noResponderRetries = 12
)

// retryInFlight sends an append again when it was refused before anything
// was stored, for a reason that passes by itself:
//   - 10164 from a replicated stream's leader, because a write to the same
//     subject was still in flight. That is not a verdict on the
//     expectation: nats-server acks a write before it clears the write's
//     in-flight mark, so a writer that appends again the moment its ack
//     arrives can be refused for its own previous write (the R3 contract
//     suite caught it). The refusal happens before the proposal, and once
//     the earlier write is applied the server judges the expectation itself
//     (10071 on a real conflict). Backoff 1, 2, 4 ... ms with jitter, about
//     60 ms in all.
//   - No responders: no server took the message, so nothing was stored. A
//     stream just created is not heard on every server of a cluster at
//     once (an append right after a cluster's provisioning met it, in
//     TestClusterR3); the same backoff up to 250 ms, about 1 s in all, after
//     which the stream is taken to be gone (a node cut off from the others
//     hears nobody either) and the append unavailable.
//
// The same message (the same dedupe id) goes again; every wait is bounded
// by ctx.
func retryInFlight(ctx context.Context, publish func() error) error {
	backoff := time.Millisecond
	inFlight, unheard := 0, 0
	for {
		err := publish()
		switch {
		case err == nil:
			return nil
		case apiCode(err) == codeWrongLastSeqConstant && inFlight < inFlightRetries-1:
			inFlight++
			if !session.Sleep(ctx, &backoff, 32*time.Millisecond) {
				return err
			}
		case unheardBy(err) && unheard < noResponderRetries-1:
			unheard++
			if !session.Sleep(ctx, &backoff, 250*time.Millisecond) {
				return err
			}
		default:
			return err
		}
	}
}

// unheardBy reports whether a publish's error says that no server took it.
func unheardBy(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse)
}

// headerReserve covers the headers added after a message is built: the
// expected last sequence (up to 20 digits) and the batch id, sequence and
// commit headers, about 150 bytes together.
const headerReserve = 192

// msgSize is what the server counts against max_msg_size and the client
// against max_payload: the body plus the encoded headers ("NATS/1.0\r\n",
// "Key: value\r\n" each, a blank line), plus headerReserve.
func msgSize(m *nats.Msg) int {
	n := len(m.Data) + len("NATS/1.0\r\n\r\n") + headerReserve
	for k, vs := range m.Header {
		for _, v := range vs {
			n += len(k) + len(": \r\n") + len(v)
		}
	}
	return n
}

// sizeLimit is the largest message the stream and the connection accept.
// Checking it before publishing matters for batches: the server refuses an
// oversize message inside a batch without an answer, and the batch then
// fails as "incomplete", which is indistinguishable from a lost message.
func (l *Log) sizeLimit() int { return msgLimit(l.js, l.cfg.MaxMsgSize) }

// msgLimit is the smaller of a stream's max message size and the
// connection's max payload.
func msgLimit(js jetstream.JetStream, maxMsgSize int32) int {
	limit := int(maxMsgSize)
	if p := js.Conn().MaxPayload(); p > 0 {
		limit = min(limit, int(p))
	}
	return limit
}

// casConflict is the sentinel for a failed expected-last-sequence check.
func casConflict(expectLast uint64) error {
	if expectLast == 0 {
		return wire.ErrExists
	}
	return wire.ErrConflict
}

func hasHeader(recs []session.Record) bool {
	for _, r := range recs {
		if r.IsHeader() {
			return true
		}
	}
	return false
}

// Read returns the session's records after afterSeq as the stream leader
// has them, so it includes every acknowledged append; see read for how.
func (l *Log) Read(ctx context.Context, sid string, afterSeq uint64) ([]session.Stored, error) {
	if err := session.ValidSessionID(sid); err != nil {
		return nil, fmt.Errorf("read %s: %w", sid, err)
	}
	out, err := l.read(ctx, sid, afterSeq)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", sid, err)
	}
	return out, nil
}

// Purge removes every record of the session from the stream, then
// publishes the purge notice (session.PurgeRecord on <prefix>._purge) so that
// Stores drop what they applied; see session.Log. upTo is the stream's last
// sequence just before the purge: every record of the session is at or below
// it, a re-creation after the purge is above it.
//
// The two steps are not atomic: if the notice cannot be published, Purge
// fails with ErrUnavailable, and a retry finds the session gone and does
// nothing. The dedupe window still remembers the purged ids: re-creating the
// session within it is refused with ErrExists.
func (l *Log) Purge(ctx context.Context, sid string) error {
	if err := session.ValidSessionID(sid); err != nil {
		return fmt.Errorf("purge %s: %w", sid, err)
	}
	s, err := l.js.Stream(ctx, l.cfg.Stream)
	if err != nil {
		return fmt.Errorf("purge %s: %w", sid, translate(err, wire.ErrConflict))
	}
	upTo := s.CachedInfo().State.LastSeq
	_, err = leaderGet(ctx, l.js, l.api, l.cfg.Stream, msgGetRequest{LastFor: l.subject(sid)})
	if isNotFound(err) {
		return nil
	}
	if err == nil {
		err = s.Purge(ctx, jetstream.WithPurgeSubject(l.subject(sid)))
	}
	if err != nil {
		return fmt.Errorf("purge %s: %w", sid, translate(err, wire.ErrConflict))
	}
	if err := l.notifyPurge(ctx, sid, upTo); err != nil {
		return fmt.Errorf("purge %s: notice: %w", sid, err)
	}
	return nil
}

// PurgeCopy purges the session's records at or below upTo from the log's
// stream, with no notice: a cross-region deployment's mirror region
// purging its own copy as the home's purge notice says (mirrors copy the
// notice, not the purge). Records above upTo (the session created again)
// stay.
func (l *Log) PurgeCopy(ctx context.Context, sid string, upTo uint64) error {
	if err := session.ValidSessionID(sid); err != nil {
		return fmt.Errorf("purge %s: %w", sid, err)
	}
	// A read first: the home's own stream, or a copy purged already by
	// another node of the region, has nothing left to purge, and a purge is
	// a Raft proposal on a replicated stream.
	m, err := leaderGet(ctx, l.js, l.api, l.cfg.Stream, msgGetRequest{Seq: 1, NextFor: l.subject(sid)})
	switch {
	case isNotFound(err) || err == nil && m.Seq > upTo:
		return nil
	case err != nil:
		err = translate(err, wire.ErrConflict)
	default:
		err = purgeSubject(ctx, l.js, l.api, l.cfg.Stream, l.subject(sid), upTo+1)
	}
	if err != nil {
		return fmt.Errorf("purge %s from %s: %w", sid, l.cfg.Stream, err)
	}
	return nil
}

// notifyPurge publishes the purge notice session.PurgeRecord(sid, upTo)
// on <prefix>._purge, with a message id that makes a repeated notice a
// duplicate.
func (l *Log) notifyPurge(ctx context.Context, sid string, upTo uint64) error {
	return l.notify(ctx, session.PurgeRecord(sid, upTo), fmt.Sprintf("%s/%s/%d", session.PurgeToken, sid, upTo))
}

// notify publishes a notice record on <prefix>._purge with message id id.
func (l *Log) notify(ctx context.Context, notice session.Record, id string) error {
	m := nats.NewMsg(l.subject(session.PurgeToken))
	m.Data = notice.Data
	m.Header.Set(jetstream.MsgIDHeader, id)
	m.Header.Set(hdrType, notice.Type)
	m.Header.Set(hdrID, notice.ID)
	_, err := l.js.PublishMsg(ctx, m)
	return translate(err, wire.ErrConflict)
}

// SessionLastSeq returns the session's last sequence from the stream
// leader (not a direct get, which a lagging replica may answer).
func (l *Log) SessionLastSeq(ctx context.Context, sid string) (uint64, error) {
	if err := session.ValidSessionID(sid); err != nil {
		return 0, fmt.Errorf("last seq of %s: %w", sid, err)
	}
	m, err := leaderGet(ctx, l.js, l.api, l.cfg.Stream, msgGetRequest{LastFor: l.subject(sid)})
	if isNotFound(err) {
		return 0, fmt.Errorf("session %s: %w", sid, wire.ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("last seq of %s: %w", sid, translate(err, wire.ErrConflict))
	}
	return m.Seq, nil
}

// LastSeq returns the stream's last sequence, from the stream leader.
func (l *Log) LastSeq(ctx context.Context) (uint64, error) {
	info, err := l.lastSeqInfo(ctx)
	if err != nil {
		return 0, err
	}
	return info.State.LastSeq, nil
}

// lastSeqInfo is the stream's info for LastSeq: ErrUnavailable without a
// leader (see Leaderless).
func (l *Log) lastSeqInfo(ctx context.Context) (*jetstream.StreamInfo, error) {
	s, err := l.js.Stream(ctx, l.cfg.Stream)
	if err != nil {
		return nil, fmt.Errorf("last seq: %w", translate(err, wire.ErrConflict))
	}
	info := s.CachedInfo()
	if err := Leaderless(info); err != nil {
		return nil, fmt.Errorf("last seq: %w", err)
	}
	return info, nil
}

// Identity names the stream the log is on: its name and creation time, so
// a Store's snapshot of a stream that was deleted and created again (its
// sequences restart) is recognized as another log's.
func (l *Log) Identity(ctx context.Context) (string, error) {
	s, err := l.js.Stream(ctx, l.cfg.Stream)
	if err != nil {
		return "", fmt.Errorf("identity: %w", translate(err, wire.ErrConflict))
	}
	info := s.CachedInfo()
	return fmt.Sprintf("jetstream/%s/%d", info.Config.Name, info.Created.UnixNano()), nil
}

var _ session.Identifier = (*Log)(nil)

// Leaderless returns ErrUnavailable when a replicated stream has no leader,
// or none that can still be trusted to be it. A node cut off from the
// majority still answers stream info from its own replica, with its own
// (stale) last sequence: without this check it would believe itself caught
// up and ready. And a leader cut off, or paused, keeps calling itself the
// leader for 10 s and more while the majority elects another and commits
// on without it; its answer is only the log's end while it holds a lease:
// see leaseLapsed.
func Leaderless(info *jetstream.StreamInfo) error {
	if info == nil || info.Cluster == nil || info.Config.Replicas <= 1 {
		return nil
	}
	if info.Cluster.Leader == "" {
		return fmt.Errorf("%w: stream %s has no leader (this node may be cut off from the majority)", wire.ErrUnavailable, info.Config.Name)
	}
	if d, lapsed := leaseLapsed(info); lapsed {
		return fmt.Errorf("%w: stream %s: its leader %s has not heard from a majority of its replicas for %v, so another may have been elected and taken writes (this node may be cut off from the majority, or was paused)",
			wire.ErrUnavailable, info.Config.Name, info.Cluster.Leader, d.Round(time.Millisecond))
	}
	return nil
}

// ReplicaBehind says why server's replica of the stream is not current
// by its leader's account: offline, not heard from for replicaSilence, or
// more than maxLag entries behind. nil when it is current, is the leader,
// or holds no replica (a stream of R3 on five servers). The info must come
// from the leader (a stream info request is answered by it).
func ReplicaBehind(info *jetstream.StreamInfo, server string, maxLag uint64) error {
	if info == nil || info.Cluster == nil || server == "" || info.Cluster.Leader == "" || info.Cluster.Leader == server {
		return nil // no leader is Leaderless's to report
	}
	now := time.Now()
	for _, p := range info.Cluster.Replicas {
		if p.Name != server {
			continue
		}
		silence, never := ReplicaSilence(info.Cluster, p, now)
		if never && info.Cluster.LeaderSince == nil {
			return nil // not the leader's account: nothing to judge by
		}
		switch ReplicaState(info.Cluster, p, maxLag, now) {
		case ReplicaCurrent:
			return nil
		case ReplicaOffline:
			if never {
				return fmt.Errorf("%w: this node's replica of stream %s is offline: its leader %s has not heard from it since it was elected %v ago", wire.ErrUnavailable, info.Config.Name, info.Cluster.Leader, silence.Round(time.Millisecond))
			}
			return fmt.Errorf("%w: this node's replica of stream %s is offline to its leader %s", wire.ErrUnavailable, info.Config.Name, info.Cluster.Leader)
		}
		if silence > replicaSilence {
			return fmt.Errorf("%w: this node's replica of stream %s has not been heard from by its leader %s for %v", wire.ErrUnavailable, info.Config.Name, info.Cluster.Leader, silence.Round(time.Millisecond))
		}
		return fmt.Errorf("%w: this node's replica of stream %s is %d entries behind its leader %s (ready at %d or fewer)", wire.ErrUnavailable, info.Config.Name, p.Lag, info.Cluster.Leader, maxLag)
	}
	return nil
}

// The states of ReplicaState.
const (
	ReplicaCurrent = "current"
	ReplicaLagging = "lagging"
	ReplicaOffline = "offline"
)

// ReplicaState is how current a follower is by its leader's account: the
// one classification /readyz (ReplicaBehind), the status and the replica
// metrics share. Offline when the server says so or when not heard from
// for replicaOffline; lagging when more than maxLag entries behind or not
// heard from for replicaSilence; else current — a few entries in flight
// are current, as a follower under steady writes is behind by some at
// almost every instant. ci is the leader's cluster info p comes from.
func ReplicaState(ci *jetstream.ClusterInfo, p *jetstream.PeerInfo, maxLag uint64, now time.Time) string {
	silence, never := ReplicaSilence(ci, p, now)
	switch {
	case p.Offline || silence > replicaOffline:
		return ReplicaOffline
	case silence > replicaSilence || p.Lag > maxLag || never && ci.LeaderSince == nil:
		return ReplicaLagging
	}
	return ReplicaCurrent
}

// ReplicaSilence is how long p's leader has not heard from it, and whether
// it never has. The server reports a peer it has not heard from since it
// became leader as active 0, the figure of one heard from this instant
// (its peers' last-heard times are reset at each election: a killed leader
// is never heard from by its successor, and its server is marked offline
// only minutes later). A follower answers the leader's first heartbeat
// within a second (current or not: a new leader of an empty stream calls
// every peer current), so for one never heard from the silence is the
// time since the election. An info without the leader's election time is
// not the leader's account (a server answered that does not lead the
// stream, as one may while leadership moves): active 0 there says nothing,
// and the peer counts as never heard from for an unknown time (0), which
// ReplicaState calls lagging, never current — the Jepsen-style kill test
// saw a dead node reported "current, last seen 0s" by such an answer.
func ReplicaSilence(ci *jetstream.ClusterInfo, p *jetstream.PeerInfo, now time.Time) (d time.Duration, never bool) {
	switch {
	case p.Active > 0:
		return p.Active, false
	case ci == nil:
		return 0, false
	case ci.LeaderSince == nil:
		return 0, true
	}
	return max(now.Sub(*ci.LeaderSince), 0), true
}

// LastSeen is how a status shows ReplicaSilence: "never" for a peer the
// leader has not heard from since its election.
func LastSeen(ci *jetstream.ClusterInfo, p *jetstream.PeerInfo, now time.Time) string {
	d, never := ReplicaSilence(ci, p, now)
	if never {
		return "never"
	}
	return d.Round(time.Millisecond).String()
}

// replicaSilence: a leader hears from each replica every second (raft
// heartbeats); three missed ones is a replica that is not following.
const replicaSilence = 3 * time.Second

// replicaOffline: ten missed heartbeats, longer than any election (4–9 s)
// takes, is a replica that is gone: killed, cut off or stopped. The
// server's own offline flag waits for the lost server's system events,
// minutes for one that was killed.
const replicaOffline = 10 * time.Second

// leaderLease is how recently a stream leader must have heard from a
// majority (itself included) for its state to be the log's: a follower
// that answered the leader at t does not call an election before
// t + 4 s (nats-server's minimum election timeout), so no other leader
// can have committed anything by the time the answer is read. A healthy
// leader hears from every replica at least every second (heartbeats;
// 0.93 s at most measured idle), so 2 s leaves room for a busy machine and
// 2 s of margin before an election can begin.
const leaderLease = 2 * time.Second

// leaseLapsed reports whether info, as a stream leader answered it, comes
// from a leader that has not heard from a majority within leaderLease, and
// how long ago the majority's last was. Replicas list the other peers with
// when the leader last heard from them (Active; 0 when never).
func leaseLapsed(info *jetstream.StreamInfo) (time.Duration, bool) {
	need := info.Config.Replicas / 2 // a majority of Replicas, less the leader
	var heard []time.Duration
	for _, r := range info.Cluster.Replicas {
		if r != nil && r.Active > 0 {
			heard = append(heard, r.Active)
		}
	}
	if len(heard) < need {
		return 0, true // never heard from enough of them: no lease
	}
	slices.Sort(heard)
	d := heard[need-1] // the majority's least recent
	return d, d > leaderLease
}

// isNotFound reports whether err says there is no such message.
func isNotFound(err error) bool {
	return apiCode(err) == codeMsgNotFound || errors.Is(err, jetstream.ErrMsgNotFound)
}
