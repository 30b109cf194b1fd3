package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/wire"
)

// sink is one way of storing sessions, the thing the append and create
// scenarios compare: pi-node's API over NATS or HTTP, raw JetStream, or
// pi's own local file. Every sink gets byte-identical records.
//
// create stores a new session (recs[0] its header) at once; append stores
// one entry after last, the session's last sequence as the caller knows
// it, and returns the new one. w is the calling worker, for sinks that
// keep a client per worker.
type sink interface {
	create(ctx context.Context, w int, sid string, recs []session.Record) (uint64, error)
	append(ctx context.Context, w int, sid string, last uint64, rec session.Record) (uint64, error)
}

// nodeSink writes through pi-node's API: create and append operations
// whose entries carry their id, parentId and timestamp, so the node stores
// the given bytes, as the Go client's Writer does over the API.
type nodeSink struct {
	clients []apiclient.Client // one per worker (HTTP), or one per node (NATS): worker w uses w mod their number
	cas     bool               // send expectLastSeq
	// withClient names a client in every append, one per worker ("w" and
	// the worker's number), as fleet workers do: the append moves that
	// client's cursor on the session to its entry.
	withClient bool
}

func (s *nodeSink) client(w int) apiclient.Client { return s.clients[w%len(s.clients)] }

func (s *nodeSink) create(ctx context.Context, w int, sid string, recs []session.Record) (uint64, error) {
	entries := make([]json.RawMessage, len(recs)-1)
	for i, r := range recs[1:] {
		entries[i] = r.Data
	}
	var rep struct{ LastSeq uint64 }
	err := apiclient.Call(ctx, s.client(w), wire.CreateRequest{Header: json.RawMessage(recs[0].Data), Entries: entries}, &rep)
	return rep.LastSeq, err
}

func (s *nodeSink) append(ctx context.Context, w int, sid string, last uint64, rec session.Record) (uint64, error) {
	req := wire.AppendRequest{SessionID: sid, Entries: []json.RawMessage{rec.Data}}
	if s.withClient {
		req.Client = writerClient(w)
	}
	if s.cas {
		req.ExpectLastSeq = &last
	}
	var rep struct{ LastSeq uint64 }
	err := apiclient.Call(ctx, s.client(w), req, &rep)
	return rep.LastSeq, err
}

// writerClient is worker w's client id.
func writerClient(w int) string { return "w" + strconv.Itoa(w) }

// rawSink is the same work on JetStream directly, with the adapter's
// messages (Log.Msg: body, Pi-* headers, Nats-Msg-Id) and its
// expectations: a plain publish with Nats-Expected-Last-Subject-Sequence
// for an entry, one atomic batch expecting an empty subject for a creation.
type rawSink struct {
	js natsjs.JetStream
	// nodes, when set, is JetStream through each node of a cluster:
	// worker w publishes through w mod their number, as the API's
	// workers do.
	nodes []natsjs.JetStream
	log   *jetstream.Log
	// shards, when more than one, are every shard's log: a session's
	// messages go to its own (shard.Of), as the node's do.
	shards []*jetstream.Log
	cas    bool
	// noDedupe leaves the Nats-Msg-Id header out of appends.
	noDedupe bool
}

// jsFor is worker w's JetStream.
func (s *rawSink) jsFor(w int) natsjs.JetStream {
	if len(s.nodes) > 1 {
		return s.nodes[w%len(s.nodes)]
	}
	return s.js
}

// logFor is the log of sid's shard.
func (s *rawSink) logFor(sid string) *jetstream.Log {
	if len(s.shards) > 1 {
		return s.shards[shard.Of(sid, len(s.shards))]
	}
	return s.log
}

// The sequences the raw side passes around are the stream's own: each
// session stays on one stream, so they compare as they should.
func (s *rawSink) create(ctx context.Context, w int, sid string, recs []session.Record) (uint64, error) {
	log, js := s.logFor(sid), s.jsFor(w)
	if len(recs) == 1 {
		ack, err := js.PublishMsg(ctx, log.Msg(sid, recs[0]), natsjs.WithExpectLastSequencePerSubject(0))
		if err != nil {
			return 0, err
		}
		return ack.Sequence, nil
	}
	msgs := make([]*nats.Msg, len(recs))
	for i, r := range recs {
		msgs[i] = log.Msg(sid, r)
	}
	msgs[0].Header.Set(natsjs.ExpectedLastSubjSeqHeader, "0")
	// The default flow control is the adapter's: wait for the first ack.
	ack, err := jetstreamext.PublishMsgBatch(ctx, js, msgs)
	if err != nil {
		return 0, err
	}
	if ack.BatchSize != uint64(len(recs)) {
		return 0, fmt.Errorf("batch of %d acked with size %d", len(recs), ack.BatchSize)
	}
	return ack.Sequence, nil
}

func (s *rawSink) append(ctx context.Context, w int, sid string, last uint64, rec session.Record) (uint64, error) {
	var opts []natsjs.PublishOpt
	if s.cas {
		opts = append(opts, natsjs.WithExpectLastSequencePerSubject(last))
	}
	m := s.logFor(sid).Msg(sid, rec)
	if s.noDedupe {
		m.Header.Del(natsjs.MsgIDHeader)
	}
	ack, err := s.jsFor(w).PublishMsg(ctx, m, opts...)
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// fileSink is pi's local approach: SessionManager appends each line with
// Node's appendFileSync — open, write, close — and never fsyncs. With
// fsync, each append (and a creation, once at its end) is fsynced before
// it returns, the durability JetStream's sync: always gives.
type fileSink struct {
	dir   string
	fsync bool
}

func (s *fileSink) path(sid string) string { return filepath.Join(s.dir, sid+".jsonl") }

func (s *fileSink) create(_ context.Context, _ int, sid string, recs []session.Record) (uint64, error) {
	for i, r := range recs {
		if err := appendLine(s.path(sid), r.Data, s.fsync && i == len(recs)-1); err != nil {
			return 0, err
		}
	}
	return 0, nil
}

func (s *fileSink) append(_ context.Context, _ int, sid string, _ uint64, rec session.Record) (uint64, error) {
	return 0, appendLine(s.path(sid), rec.Data, s.fsync)
}

// appendLine is appendFileSync(path, line + "\n"), optionally fsynced.
func appendLine(path string, line []byte, fsync bool) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, len(line)+1)
	buf = append(append(buf, line...), '\n')
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return err
	}
	if fsync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}
