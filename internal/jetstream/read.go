package jetstream

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// msgGetRequest is the body of $JS.API.STREAM.MSG.GET.<stream>. Unlike a
// direct get, this request is answered by the stream leader only, so it sees
// every acknowledged write (read-your-writes on R3).
type msgGetRequest struct {
	Seq     uint64 `json:"seq,omitempty"`
	LastFor string `json:"last_by_subj,omitempty"`
	NextFor string `json:"next_by_subj,omitempty"`
}

type msgGetResponse struct {
	Error   *jetstream.APIError `json:"error,omitempty"`
	Message *struct {
		Subject string    `json:"subject"`
		Seq     uint64    `json:"seq"`
		Header  []byte    `json:"hdrs,omitempty"`
		Data    []byte    `json:"data,omitempty"`
		Time    time.Time `json:"time"`
	} `json:"message,omitempty"`
}

// storedMsg is one message as a leader get returns it.
type storedMsg struct {
	Subject string
	Seq     uint64
	Header  nats.Header
	Data    []byte
	Time    time.Time
}

// leaderGet asks the leader of stream for one message. A missing message
// comes back as an error carrying code 10037 (see isNotFound); errors are
// untranslated.
func leaderGet(ctx context.Context, js jetstream.JetStream, api, stream string, req msgGetRequest) (*storedMsg, error) {
	ctx, cancel := withDefaultDeadline(ctx, js)
	defer cancel()
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	msg, err := js.Conn().RequestWithContext(ctx, api+"STREAM.MSG.GET."+stream, body)
	if err != nil {
		return nil, err
	}
	var resp msgGetResponse
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return nil, fmt.Errorf("stream msg get: bad response: %w", err)
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	if resp.Message == nil {
		return nil, fmt.Errorf("stream msg get: response without message")
	}
	m := resp.Message
	out := &storedMsg{Subject: m.Subject, Seq: m.Seq, Data: m.Data, Time: m.Time}
	if len(m.Header) > 0 {
		if out.Header, err = nats.DecodeHeadersMsg(m.Header); err != nil {
			return nil, fmt.Errorf("stream msg get: headers of %d: %w", m.Seq, err)
		}
	}
	return out, nil
}

// withDefaultDeadline bounds ctx by js's default API timeout unless ctx has
// a deadline already, as nats.go does for its own requests.
func withDefaultDeadline(ctx context.Context, js jetstream.JetStream) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, js.Options().DefaultTimeout)
}

// decodeMsg turns a consumed message back into a Stored record.
func (l *Log) decodeMsg(msg jetstream.Msg) (session.Stored, error) {
	meta, err := msg.Metadata()
	if err != nil {
		return session.Stored{}, err
	}
	return l.decodeStored(msg.Subject(), meta.Sequence.Stream, msg.Headers(), msg.Data(), meta.Timestamp)
}

// decodeStored turns a stream message back into a Stored record.
func (l *Log) decodeStored(subject string, seq uint64, hdr nats.Header, data []byte, t time.Time) (session.Stored, error) {
	sid, ok := strings.CutPrefix(subject, l.cfg.SubjectPrefix+".")
	if !ok {
		return session.Stored{}, fmt.Errorf("message %d: subject %q is not under %s", seq, subject, l.cfg.SubjectPrefix)
	}
	r := session.Record{
		Type:   hdr.Get(hdrType),
		ID:     hdr.Get(hdrID),
		Parent: hdr.Get(hdrParent),
		Data:   data,
	}
	if v := hdr.Get(hdrRecords); v != "" && r.IsHeader() {
		// A malformed count is taken as none: the session is then shown as
		// it is, as before Pi-Records existed.
		r.Total, _ = strconv.Atoi(v)
	}
	if v := hdr.Get(hdrForkOf); v != "" && r.IsHeader() {
		// Malformed, it is taken as none, as a count is: CheckAppend
		// lets no writer of this package store one, and a failure here
		// would stop every follower of the stream at this message.
		r.Fork, _ = session.DecodeForkOf(v)
	}
	return session.Stored{Session: sid, Seq: seq, Time: t, Record: r}, nil
}

// maxReadConsumers is how many of a Log's reads may hold a consumer at
// once; more wait for one to end. Reads are what clients drive (a cold
// session's load, a long tail), and nats-server caps a stream's consumers,
// over the whole cluster, at 1,000 by default since 2.15: a pi-node's share
// is this, plus one consumer per follower of the stream (its Store, its
// search index, a region's feed), so that even 9 nodes stay far below the
// cap. A read the server refuses a consumer anyway (JetStream clients'
// consumers fill the cap) reads the rest by gets.
const maxReadConsumers = 16

// getBudget is how many records Read fetches with leader gets before it
// switches to a consumer. Measured with BenchmarkRead (2-core machine,
// loopback, -benchtime 20x, ranges over three runs): a leader get costs
// 55-90 µs per record; an ordered consumer costs a fixed 0.4 ms on one node
// and 2.6-5.7 ms on R3 (its creation and deletion are meta-layer
// proposals), then 3-7 µs per record.
//
//	                   gets only     consumer only   Read (32 gets, then consumer)
//	1000 records, R1   55-60 ms      3.8-4.9 ms      6.3-7.0 ms
//	1000 records, R3   68-86 ms      7.3-9.3 ms      10.4-11.1 ms
//	 100 records, R3   7.0-9.6 ms    2.9-3.6 ms      5.1-6.8 ms
//	  10 records, R3   0.55-0.95 ms  2.6-5.7 ms      0.68-0.79 ms
//
// Short reads (the tail after a sequence the caller knows, the common case)
// are fastest by gets, long ones by the consumer; the mix pays at most 32
// gets (about 2 ms) over the better of the two.
const getBudget = 32

// read returns the session's records after afterSeq, by leader gets for the
// first getBudget records and by a consumer for the rest.
func (l *Log) read(ctx context.Context, sid string, afterSeq uint64) ([]session.Stored, error) {
	out, more, err := l.readByGet(ctx, sid, afterSeq, getBudget)
	if err != nil || !more {
		return out, err
	}
	after := out[len(out)-1].Seq
	rest, err := l.readByConsumer(ctx, sid, after)
	if isConsumerLimit(err) {
		// The stream has as many consumers as nats-server allows (other
		// nodes', JetStream clients'): the rest by gets, slower but whole.
		rest, _, err = l.readByGet(ctx, sid, after, math.MaxInt)
	}
	if err != nil {
		return nil, err
	}
	return append(out, rest...), nil
}

// readByGet reads up to limit records of the session with one leader get
// each, asking for the next message on the session's subject; more reports
// that the limit stopped it. No records at all is ErrNotFound.
func (l *Log) readByGet(ctx context.Context, sid string, afterSeq uint64, limit int) (out []session.Stored, more bool, err error) {
	subj := l.subject(sid)
	out = []session.Stored{}
	for seq := afterSeq + 1; len(out) < limit; {
		m, err := leaderGet(ctx, l.js, l.api, l.cfg.Stream, msgGetRequest{Seq: seq, NextFor: subj})
		if isNotFound(err) {
			break
		}
		if err != nil {
			return nil, false, translate(err, wire.ErrConflict)
		}
		s, err := l.decodeStored(m.Subject, m.Seq, m.Header, m.Data, m.Time)
		if err != nil {
			return nil, false, err
		}
		out = append(out, s)
		seq = m.Seq + 1
	}
	if len(out) == limit {
		return out, true, nil
	}
	if len(out) > 0 {
		return out, false, nil
	}
	if afterSeq == 0 {
		return nil, false, wire.ErrNotFound
	}
	// Nothing after afterSeq: an existing session reads as empty, a missing
	// one as ErrNotFound.
	if _, err := leaderGet(ctx, l.js, l.api, l.cfg.Stream, msgGetRequest{LastFor: subj}); err != nil {
		return nil, false, translate(err, wire.ErrConflict)
	}
	return out, false, nil
}

// readByConsumer reads the session's records after afterSeq with a filtered
// ordered consumer. The consumer may sit on a replica that lags the leader,
// so the session's last sequence is first asked from the leader and the
// consumer is read until that record has arrived: the result is as
// authoritative as leader gets. A purge racing with the read ends it at the
// default API timeout, as ErrUnavailable.
func (l *Log) readByConsumer(ctx context.Context, sid string, afterSeq uint64) ([]session.Stored, error) {
	ctx, cancel := withDefaultDeadline(ctx, l.js)
	defer cancel()
	out := []session.Stored{}
	last, err := leaderGet(ctx, l.js, l.api, l.cfg.Stream, msgGetRequest{LastFor: l.subject(sid)})
	if isNotFound(err) {
		return out, nil // purged since the gets
	}
	if err != nil {
		return nil, translate(err, wire.ErrConflict)
	}
	if last.Seq <= afterSeq {
		return out, nil
	}
	// At most maxReadConsumers at once per Log: reads are client-driven,
	// and every node's share of the stream's consumer limit must stay small
	// (see maxReadConsumers).
	select {
	case l.reads <- struct{}{}:
		defer func() { <-l.reads }()
	case <-ctx.Done():
		return nil, translate(ctx.Err(), wire.ErrConflict)
	}
	c, err := startConsumer(ctx, l.js, l.cfg.Stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{l.subject(sid)},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    afterSeq + 1,
	})
	if err != nil {
		return nil, translate(err, wire.ErrConflict)
	}
	defer c.stop()
	for len(out) == 0 || out[len(out)-1].Seq < last.Seq {
		msg, err := c.next(ctx)
		if err != nil {
			return nil, translate(err, wire.ErrConflict)
		}
		s, err := l.decodeMsg(msg)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
