package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/session"
)

// relay is raw JetStream behind one NATS request hop, with no logic: it
// receives an entry, publishes it exactly as the raw sink does and replies
// with the sequence. A write through pi-node's API makes the same hop (the
// client's request to the node, the node's publish, the node's reply), so
// the relay is the floor under the node's API: what a node with no work
// of its own would cost. The node's rows over the relay's are the node's
// own cost; the relay's over raw is the hop's.
type relay struct {
	conn    *jetstream.Conn
	subject string
	raw     *rawSink

	mu      sync.Mutex
	closing bool
	serving sync.WaitGroup // the requests in flight, which close waits for
}

// Request headers of the relay.
const (
	relaySession = "Bench-Session"
	relayLast    = "Bench-Last"
	relayCAS     = "Bench-Cas"
	relayType    = "Bench-Type"
	relayID      = "Bench-Id"
	relayParent  = "Bench-Parent"
)

// startRelay serves the relay on a connection of its own, made as cc
// says (as the raw side's is); stop it with close. Each request is handled
// on its own goroutine, as pi-node handles its API requests, so concurrent
// writers are not serialized.
func startRelay(ctx context.Context, cc jetstream.ConnConfig, cfg jetstream.Config) (*relay, error) {
	cc.Name = "pi-bench relay"
	// Its own connection for requests and publishes alike, as a node has.
	conn, err := jetstream.Connect(ctx, cc)
	if err != nil {
		return nil, err
	}
	r := &relay{conn: conn, subject: "_bench.relay." + nuid.Next(), raw: &rawSink{js: conn.JS, log: jetstream.NewLog(conn.JS, cfg)}}
	if _, err := conn.NC.Subscribe(r.subject, r.dispatch); err != nil {
		conn.Close()
		return nil, err
	}
	return r, conn.NC.Flush()
}

// dispatch serves m on a goroutine of its own, unless the relay is closing
// (the subscription may still deliver while close waits).
func (r *relay) dispatch(m *nats.Msg) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closing {
		return
	}
	r.serving.Go(func() { r.serve(m) })
}

func (r *relay) serve(m *nats.Msg) {
	h := m.Header
	last, _ := strconv.ParseUint(h.Get(relayLast), 10, 64)
	rec := session.Record{Type: h.Get(relayType), ID: h.Get(relayID), Parent: h.Get(relayParent), Data: m.Data}
	sink := *r.raw
	sink.cas = h.Get(relayCAS) != ""
	seq, err := sink.append(context.Background(), 0, h.Get(relaySession), last, rec)
	reply := nats.NewMsg(m.Reply)
	if err != nil {
		reply.Header.Set("Bench-Error", err.Error())
	} else {
		reply.Data = strconv.AppendUint(nil, seq, 10)
	}
	_ = m.RespondMsg(reply)
}

// close waits for the requests in flight, then closes the connection they
// answer on.
func (r *relay) close() {
	r.mu.Lock()
	r.closing = true
	r.mu.Unlock()
	r.serving.Wait()
	r.conn.Close()
}

// relaySink sends appends through the relay; creations go raw (they are
// not what the relay is for).
type relaySink struct {
	nc  *nats.Conn
	r   *relay
	cas bool
}

func (s *relaySink) create(ctx context.Context, w int, sid string, recs []session.Record) (uint64, error) {
	return s.r.raw.create(ctx, w, sid, recs)
}

func (s *relaySink) append(ctx context.Context, _ int, sid string, last uint64, rec session.Record) (uint64, error) {
	m := nats.NewMsg(s.r.subject)
	m.Data = rec.Data
	m.Header.Set(relaySession, sid)
	m.Header.Set(relayLast, strconv.FormatUint(last, 10))
	m.Header.Set(relayType, rec.Type)
	m.Header.Set(relayID, rec.ID)
	m.Header.Set(relayParent, rec.Parent)
	if s.cas {
		m.Header.Set(relayCAS, "1")
	}
	reply, err := s.nc.RequestMsgWithContext(ctx, m)
	if err != nil {
		return 0, err
	}
	if e := reply.Header.Get("Bench-Error"); e != "" {
		return 0, errors.New(e)
	}
	seq, err := strconv.ParseUint(string(reply.Data), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("relay reply %q: %w", reply.Data, err)
	}
	return seq, nil
}
