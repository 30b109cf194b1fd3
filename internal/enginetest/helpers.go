package enginetest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/pifleet/sessionlog/internal/session"
)

// waitTimeout bounds every wait for an asynchronous delivery (Follow, Watch).
// It is generous because replicated logs may need a leader election.
const waitTimeout = 30 * time.Second

// oversize is the Data size of the record that every log under test must
// refuse with ErrTooLarge.
const oversize = 16 << 20

// entrySeq makes entry ids unique across the whole test binary, so a record
// never collides with one of another subtest by accident.
var entrySeq atomic.Uint32

func newSessionID(t *testing.T) string {
	t.Helper()
	id, err := uuid.NewV7()
	if err != nil {
		t.Fatalf("uuid: %v", err)
	}
	return id.String()
}

func newEntryID() string { return fmt.Sprintf("%08x", entrySeq.Add(1)) }

// header is a pi v3 session header record.
func header(sid string) session.Record {
	return session.Record{
		Type: "session",
		Data: fmt.Appendf(nil, `{"type":"session","version":3,"id":%q,"timestamp":"2026-01-02T03:04:05.006Z","cwd":"/work"}`, sid),
	}
}

// entry is a pi message entry with the given id and parent ("" for a root).
func entry(id, parent string) session.Record {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	return session.Record{
		Type:   "message",
		ID:     id,
		Parent: parent,
		Data: fmt.Appendf(nil, `{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-02T03:04:05.006Z","message":{"role":"user","content":"hello %s"}}`,
			id, p, id),
	}
}

// chain returns n entries with fresh ids, each the child of the previous one,
// the first the child of parent.
func chain(parent string, n int) []session.Record {
	recs := make([]session.Record, n)
	for i := range recs {
		recs[i] = entry(newEntryID(), parent)
		parent = recs[i].ID
	}
	return recs
}

// create appends the header plus n entries as one exclusive creation and
// returns the records and their sequences.
func create(t *testing.T, l session.Log, sid string, n int) ([]session.Record, []uint64) {
	t.Helper()
	recs := append([]session.Record{header(sid)}, chain("", n)...)
	return recs, mustAppend(t, l, sid, 0, recs)
}

func mustAppend(t *testing.T, l session.Log, sid string, expectLast uint64, recs []session.Record) []uint64 {
	t.Helper()
	seqs, err := l.Append(context.Background(), sid, expectLast, recs)
	if err != nil {
		t.Fatalf("append %d records to %s after %d: %v", len(recs), sid, expectLast, err)
	}
	if len(seqs) != len(recs) {
		t.Fatalf("append %d records returned %d sequences", len(recs), len(seqs))
	}
	for i := range seqs {
		if seqs[i] <= expectLast || i > 0 && seqs[i] <= seqs[i-1] {
			t.Fatalf("append after %d returned sequences %v: not increasing", expectLast, seqs)
		}
	}
	return seqs
}

func mustRead(t *testing.T, l session.Log, sid string, after uint64) []session.Stored {
	t.Helper()
	got, err := l.Read(context.Background(), sid, after)
	if err != nil {
		t.Fatalf("read %s after %d: %v", sid, after, err)
	}
	return got
}

// wantErr fails unless err matches target with errors.Is.
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

// sameStored checks that got holds exactly recs, stored in session sid under seqs.
func sameStored(t *testing.T, got []session.Stored, sid string, recs []session.Record, seqs []uint64) {
	t.Helper()
	if len(got) != len(recs) {
		t.Fatalf("got %d records %v, want %d at %v", len(got), storedSeqs(got), len(recs), seqs)
	}
	for i, g := range got {
		r := recs[i]
		switch {
		case g.Session != sid:
			t.Fatalf("record %d: session %q, want %q", i, g.Session, sid)
		case g.Seq != seqs[i]:
			t.Fatalf("record %d: seq %d, want %d (all: %v, want %v)", i, g.Seq, seqs[i], storedSeqs(got), seqs)
		case g.Type != r.Type || g.ID != r.ID || g.Parent != r.Parent:
			t.Fatalf("record %d: type/id/parent %q/%q/%q, want %q/%q/%q", i, g.Type, g.ID, g.Parent, r.Type, r.ID, r.Parent)
		case string(g.Data) != string(r.Data):
			t.Fatalf("record %d: data %s, want %s", i, g.Data, r.Data)
		case g.Time.IsZero():
			t.Fatalf("record %d: zero time", i)
		}
	}
}

func storedSeqs(s []session.Stored) []uint64 {
	seqs := make([]uint64, len(s))
	for i := range s {
		seqs[i] = s[i].Seq
	}
	return seqs
}

func lastSeq(t *testing.T, f session.Feed) uint64 {
	t.Helper()
	seq, err := f.LastSeq(context.Background())
	if err != nil {
		t.Fatalf("last seq: %v", err)
	}
	return seq
}
