package apiclient_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/nodetest"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
	"github.com/pifleet/sessionlog/internal/writer"
)

// TestLogOverAPI: the API's Log stores the very records it is given (the
// node keeps the bytes of entries that carry id, parentId and timestamp,
// and rebuilds the same header), reports sequences as the stream has them,
// and reads back what a conflict was about.
func TestLogOverAPI(t *testing.T) {
	n := nodetest.Start(t, nodetest.Options{})
	for name, c := range transports(t, n) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			l := apiclient.NewLog(c)
			sid := testutil.SessionID(t)
			recs := records(t, sid, 3)
			seqs, err := l.Append(ctx, sid, 0, recs)
			if err != nil {
				t.Fatal(err)
			}
			direct, err := n.Log.Read(ctx, sid, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(direct) != len(recs) || len(seqs) != len(recs) {
				t.Fatalf("stored %d records, %d seqs; want %d", len(direct), len(seqs), len(recs))
			}
			for i, d := range direct {
				if string(d.Data) != string(recs[i].Data) || d.Seq != seqs[i] {
					t.Fatalf("record %d stored as %s at %d, want %s at %d", i, d.Data, d.Seq, recs[i].Data, seqs[i])
				}
			}
			got, err := l.Read(ctx, sid, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i, g := range got {
				r := recs[i]
				if g.Seq != seqs[i] || g.Type != r.Type || g.ID != r.ID || g.Parent != r.Parent || string(g.Data) != string(r.Data) || g.Session != sid {
					t.Fatalf("read record %d: %+v, want %+v at %d", i, g, r, seqs[i])
				}
			}
			if tail, err := l.Read(ctx, sid, seqs[1]); err != nil || len(tail) != 2 || tail[0].Seq != seqs[2] {
				t.Fatalf("read after %d: %d records, %v", seqs[1], len(tail), err)
			}

			// Another writer appends directly on JetStream; a stale append
			// through the API conflicts, and the next read includes it.
			other, err := n.Log.Append(ctx, sid, seqs[3], []session.Record{entry(t, "other", recs[3].ID)})
			if err != nil {
				t.Fatal(err)
			}
			_, err = l.Append(ctx, sid, seqs[3], []session.Record{entry(t, "mine", recs[3].ID)})
			var ce *wire.ConflictError
			if !errors.As(err, &ce) || ce.LastSeq != other[0] {
				t.Fatalf("stale append: %v", err)
			}
			missed, err := l.Read(ctx, sid, seqs[3])
			if err != nil || len(missed) != 1 || missed[0].Seq != other[0] {
				t.Fatalf("read after the conflict: %v, %v", missed, err)
			}

			if _, err := l.Append(ctx, sid, 0, recs); !errors.Is(err, wire.ErrExists) {
				t.Fatalf("second creation: %v", err)
			}
			if _, err := l.Read(ctx, testutil.SessionID(t), 0); !errors.Is(err, wire.ErrNotFound) {
				t.Fatalf("read of a missing session: %v", err)
			}
			huge := []session.Record{entry(t, "huge", "other")}
			huge[0].Data = append(huge[0].Data, strings.Repeat(" ", l.MaxRecord)...)
			if _, err := l.Append(ctx, sid, other[0], huge); !errors.Is(err, wire.ErrTooLarge) {
				t.Fatalf("oversize record: %v", err)
			}
			if err := l.Purge(ctx, sid); !errors.Is(err, wire.ErrInvalid) {
				t.Fatalf("purge: %v", err)
			}
		})
	}
}

// TestCreateWholeOverAPI: a session larger than one batch goes to the node
// as one import (which the node writes in batches, hidden until whole), and
// the sequences the Log reports are the ones the stream holds — also when
// the writer is the engine's import, which hands the Log the whole session.
func TestCreateWholeOverAPI(t *testing.T) {
	n := nodetest.Start(t, nodetest.Options{MaxBatch: 10})
	for name, c := range transports(t, n) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			l := apiclient.NewLog(c)
			l.MaxBatchSize = 10
			sid := testutil.SessionID(t)
			recs := records(t, sid, 34)
			seqs, err := l.CreateWhole(ctx, sid, recs)
			if err != nil {
				t.Fatal(err)
			}
			direct, err := n.Log.Read(ctx, sid, 0)
			if err != nil || len(direct) != len(recs) {
				t.Fatalf("stored %d records (%v), want %d", len(direct), err, len(recs))
			}
			for i, d := range direct {
				if d.Seq != seqs[i] || string(d.Data) != string(recs[i].Data) {
					t.Fatalf("record %d stored at %d, the Log says %d", i, d.Seq, seqs[i])
				}
			}
			if direct[0].Total != len(recs) {
				t.Fatalf("the node wrote the session without its record count (%d): it was not hidden while written", direct[0].Total)
			}
			if _, err := l.CreateWhole(ctx, sid, recs); !errors.Is(err, wire.ErrExists) {
				t.Fatalf("creating it again: %v, want ErrExists", err)
			}

			var file []byte
			for _, r := range records(t, testutil.SessionID(t), 25) {
				file = append(append(file, r.Data...), '\n')
			}
			res, err := writer.Import(ctx, l, file, nil, writer.RetryPolicy{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := n.Log.Read(ctx, res.SessionID, 0)
			if err != nil || len(got) != 26 || got[25].Seq != res.LastSeq {
				t.Fatalf("import through the Log: %d records (%v), last at %d, want 26 ending at %d", len(got), err, got[len(got)-1].Seq, res.LastSeq)
			}
		})
	}
}
