package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Limits of a stock pi-node with the default JetStream configuration
// (docs/PROTOCOL.md): records per atomic batch, bytes per record.
const (
	DefaultMaxBatch  = 1000
	DefaultMaxRecord = 8 << 20
)

// Log is session.Log over pi-node's API, so that a writer.Writer runs
// against a node it only reaches by URL (or through the NATS micro service).
// A creation goes as the node's import operation (the records as a pi JSONL
// file, stored line for line as one atomic batch), an append as its append
// operation with expectLastSeq (entries that bring their own id, parentId
// and timestamp are stored byte for byte). Either way the log holds the
// very bytes the Writer built.
//
// Differences from the JetStream log, all of them the API's:
//
//   - Read is served from the node's Store, which trails the log by
//     milliseconds. The Log passes, as minSeq, the highest sequence of the
//     session it has seen — its own acknowledged appends and the lastSeq of
//     every conflict — so a read includes everything this Log wrote and
//     everything a conflict was about. Entries another writer appended a
//     moment ago may be missing from a read that had no reason to wait for
//     them; the Writer's CAS append then conflicts and reads again, so
//     nothing is lost, it only costs a round trip. Stored.Time is zero (the
//     API does not report per-entry storage times).
//   - Purge is not an API operation: it fails with ErrInvalid.
//   - A record is refused locally with ErrTooLarge past MaxRecord bytes, and
//     a call past MaxBatch records, before anything is sent.
//
// A Log is safe for concurrent use.
type Log struct {
	c Client
	// MaxBatchSize and MaxRecord are the node's limits (DefaultMaxBatch
	// and DefaultMaxRecord unless set before first use).
	MaxBatchSize, MaxRecord int

	mu   sync.Mutex
	seen map[string]seen
}

// seen is what the Log knows of one session.
type seen struct {
	lastSeq   uint64 // the highest sequence seen: minSeq for reads
	headerSeq uint64 // the header's sequence, once read (0: unknown)
}

var _ session.Log = (*Log)(nil)

// NewLog returns a Log over c.
func NewLog(c Client) *Log {
	return &Log{c: c, MaxBatchSize: DefaultMaxBatch, MaxRecord: DefaultMaxRecord, seen: map[string]seen{}}
}

// Observe tells the Log that session sid has reached seq (a cursor's seq,
// a lastSeq learned elsewhere): its next reads wait until the node has
// applied it.
func (l *Log) Observe(sid string, seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.seen[sid]
	s.lastSeq = max(s.lastSeq, seq)
	l.seen[sid] = s
}

func (l *Log) known(sid string) seen {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen[sid]
}

// MaxBatch returns the most records one Append may carry.
func (l *Log) MaxBatch() int { return l.MaxBatchSize }

// Purge is not offered by the API; it fails with ErrInvalid.
func (l *Log) Purge(ctx context.Context, sid string) error {
	return fmt.Errorf("purge %s: %w: pi-node's API has no purge; purge on JetStream directly", sid, wire.ErrInvalid)
}

// Append stores recs with the node's import (expectLast 0: a new session,
// recs[0] its header) or append (with expectLastSeq) operation; see
// session.Log.
func (l *Log) Append(ctx context.Context, sid string, expectLast uint64, recs []session.Record) ([]uint64, error) {
	if err := session.CheckAppend(sid, recs, l.MaxBatchSize, l.MaxRecord); err != nil {
		return nil, err
	}
	entries := make([]json.RawMessage, 0, len(recs))
	for _, r := range recs {
		if !r.IsHeader() {
			entries = append(entries, r.Data)
		}
	}
	if expectLast == 0 {
		return l.create(ctx, sid, recs, len(entries))
	}
	if len(entries) != len(recs) {
		return nil, fmt.Errorf("%w: a header can only start a new session", wire.ErrInvalid)
	}
	var rep wire.WriteResult
	err := Call(ctx, l.c, wire.AppendRequest{SessionID: sid, Entries: entries, ExpectLastSeq: &expectLast}, &rep)
	var ae *Error
	if errors.As(err, &ae) && ae.LastSeq > 0 {
		l.Observe(sid, ae.LastSeq)
	}
	if err != nil {
		return nil, err
	}
	if len(rep.Entries) != len(entries) {
		return nil, fmt.Errorf("append to %s: the node stored %d entries of %d", sid, len(rep.Entries), len(entries))
	}
	seqs := make([]uint64, len(rep.Entries))
	for i, e := range rep.Entries {
		seqs[i] = e.Seq
	}
	l.Observe(sid, rep.LastSeq)
	return seqs, nil
}

// create stores a new session with the node's import operation: the
// records as a pi JSONL file, which the node stores line for line — header
// and entries byte for byte, orphans (a fork's entry whose parent was a
// dropped label) included — as one atomic batch on an empty subject, or
// not at all (409: ErrExists). The batch is contiguous, so the sequences
// follow from the last one.
func (l *Log) create(ctx context.Context, sid string, recs []session.Record, entries int) ([]uint64, error) {
	if !recs[0].IsHeader() {
		return nil, fmt.Errorf("%w: a new session's first record must be its header", wire.ErrInvalid)
	}
	if entries != len(recs)-1 {
		return nil, fmt.Errorf("%w: a session has one header", wire.ErrInvalid)
	}
	if h, err := tree.ParseHeader(recs[0].Data); err != nil || h.ID != sid || h.Version != tree.CurrentVersion {
		return nil, fmt.Errorf("%w: the header is not a version 3 header of session %s", wire.ErrInvalid, sid)
	}
	var file []byte
	for _, r := range recs {
		file = append(append(file, r.Data...), '\n')
	}
	// Strict: a record the node would skip fails the creation instead of
	// leaving a session that lacks it.
	body, err := l.c.Do(ctx, wire.ImportRequest{File: file, Strict: true})
	if err != nil {
		return nil, err
	}
	var rep wire.ImportResult
	if err := json.Unmarshal(body, &rep); err != nil {
		return nil, fmt.Errorf("create %s: unexpected reply from pi-node: %v", sid, err)
	}
	if rep.SessionID != sid || rep.Entries != entries || len(rep.Skipped) > 0 || rep.LastSeq < uint64(entries) {
		return nil, fmt.Errorf("create %s: the node stored %d entries of %d as session %s", sid, rep.Entries, entries, rep.SessionID)
	}
	seqs := make([]uint64, len(recs))
	for i := range seqs {
		seqs[i] = rep.LastSeq - uint64(entries-i)
	}
	l.Observe(sid, rep.LastSeq)
	return seqs, nil
}

var _ session.WholeCreator = (*Log)(nil)

// CreateWhole stores a session larger than one batch with one import: the
// node writes it in batches and hides it until whole (see session.Log).
// The batches need not be contiguous in the log, so the sequences are read
// back from the node.
func (l *Log) CreateWhole(ctx context.Context, sid string, recs []session.Record) ([]uint64, error) {
	for i, r := range recs {
		if len(r.Data) > l.MaxRecord {
			return nil, &session.RecordError{Index: i, Err: fmt.Errorf("%w: record of %d bytes exceeds the limit of %d", wire.ErrTooLarge, len(r.Data), l.MaxRecord)}
		}
	}
	seqs, err := l.create(ctx, sid, recs, len(recs)-1)
	if err != nil || len(recs) <= l.MaxBatchSize {
		return seqs, err
	}
	stored, err := l.Read(ctx, sid, 0)
	if err != nil {
		return nil, fmt.Errorf("create %s: stored, but reading its sequences back failed: %w", sid, err)
	}
	if len(stored) != len(recs) {
		return nil, fmt.Errorf("create %s: stored, but the node holds %d records of %d", sid, len(stored), len(recs))
	}
	for i := range stored {
		seqs[i] = stored[i].Seq
	}
	return seqs, nil
}

// SessionLastSeq returns the session's last sequence from a linearizable
// read (consistency=strong): the node asks the log's leader.
func (l *Log) SessionLastSeq(ctx context.Context, sid string) (uint64, error) {
	if err := session.ValidSessionID(sid); err != nil {
		return 0, err
	}
	var d wire.Detail
	if err := Call(ctx, l.c, wire.GetRequest{SessionID: sid, Consistency: wire.ConsistencyStrong}, &d); err != nil {
		return 0, err
	}
	l.Observe(sid, d.LastSeq)
	return d.LastSeq, nil
}

// Read returns the session's records with Seq > afterSeq: the header from
// the get operation (when afterSeq is before it), then the entries, page by
// page; see Log for how fresh it is. ErrNotFound when the node knows no
// such session.
func (l *Log) Read(ctx context.Context, sid string, afterSeq uint64) ([]session.Stored, error) {
	if err := session.ValidSessionID(sid); err != nil {
		return nil, err
	}
	k := l.known(sid)
	var out []session.Stored
	if k.headerSeq == 0 || afterSeq < k.headerSeq {
		var d wire.Detail
		if err := Call(ctx, l.c, wire.GetRequest{SessionID: sid, MinSeq: k.lastSeq}, &d); err != nil {
			return nil, err
		}
		l.mu.Lock()
		s := l.seen[sid]
		s.headerSeq, s.lastSeq = d.HeaderSeq, max(s.lastSeq, d.LastSeq)
		l.seen[sid] = s
		l.mu.Unlock()
		if afterSeq < d.HeaderSeq {
			out = append(out, session.Stored{Session: sid, Seq: d.HeaderSeq, Record: session.Record{Type: "session", Data: d.Header}})
		}
	}
	r := NewEntryReader(l.c, sid)
	r.MinSeq = k.lastSeq
	r.limit = 10000 // the node's largest page
	for after := afterSeq; ; {
		page, _, last, err := r.Next(ctx, after)
		if err != nil {
			return nil, err
		}
		for _, e := range page {
			en, err := tree.ParseEntry(e.Entry)
			if err != nil {
				continue // not a line pi could read; the node's Store skips them too
			}
			out = append(out, session.Stored{Session: sid, Seq: e.Seq,
				Record: session.Record{Type: en.Type(), ID: en.ID, Parent: en.ParentID, Data: e.Entry}})
			after = e.Seq
		}
		if len(page) == 0 || after >= last {
			return out, nil
		}
	}
}
