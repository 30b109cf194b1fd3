package writer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/enginetest"
	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/jetstream/embedded/embeddedtest"
	"github.com/pifleet/sessionlog/internal/jetstream/jstest"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
	"github.com/pifleet/sessionlog/internal/writer"
)

// Multi-batch imports and forks (publishSession) on MemLog and on the
// JetStream adapter, both with batches of 10 records.

const smallBatch = 10

func multiBatchLogs(t *testing.T) map[string]func(t *testing.T) session.Log {
	return map[string]func(t *testing.T) session.Log{
		"Mem": func(t *testing.T) session.Log { return session.NewMemLog(smallBatch, 1<<20) },
		"JetStream": func(t *testing.T) session.Log {
			cfg := jetstream.NewConfig()
			cfg.MaxBatch = smallBatch
			l, _ := jstest.BackendConfig(t, cfg, embeddedtest.RunServer(t, false).ClientURL())
			return l
		},
	}
}

// dyingLog stores the first n Appends, then fails every one as a node
// that died would (ErrUnavailable: the outcome unknown to the caller).
type dyingLog struct {
	session.Log
	n     int64
	calls atomic.Int64
}

func (d *dyingLog) Append(ctx context.Context, sid string, expect uint64, recs []session.Record) ([]uint64, error) {
	if d.calls.Add(1) > d.n {
		return nil, fmt.Errorf("injected death: %w", wire.ErrUnavailable)
	}
	return d.Log.Append(ctx, sid, expect, recs)
}

// quick gives up at once on the injected deaths; the appends dyingLog
// passes on are real ones, which a loaded machine may answer slowly, so
// one attempt waits long for them (a real append that timed out would end
// the import early, at the wrong record, and fail the test for nothing).
var quick = writer.RetryPolicy{Attempts: 3, Backoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, UnavailableFor: 10 * time.Millisecond,
	AttemptTimeout: testutil.Scale(time.Minute)}

func TestMultiBatchImport(t *testing.T) {
	for name, newLog := range multiBatchLogs(t) {
		t.Run(name, func(t *testing.T) {
			t.Run("HeaderCountsRecords", func(t *testing.T) { testHeaderCountsRecords(t, newLog(t)) })
			t.Run("RetryAfterCrashCompletes", func(t *testing.T) { testRetryAfterCrash(t, newLog(t)) })
			t.Run("OtherRecordsAreExists", func(t *testing.T) { testOtherRecordsExist(t, newLog(t)) })
			t.Run("FencedAfterPurge", func(t *testing.T) { testFencedAfterPurge(t, newLog(t)) })
			t.Run("ForkInBatches", func(t *testing.T) { testForkInBatches(t, newLog(t)) })
		})
	}
}

// testHeaderCountsRecords: the header of a multi-batch session carries its
// record count through the log; the import's LastSeq is the last record's.
func testHeaderCountsRecords(t *testing.T, l session.Log) {
	ctx := context.Background()
	sid := testutil.SessionID(t)
	file := enginetest.SessionFile(sid, 45, 1)
	res, err := writer.Import(ctx, l, file, nil, writer.RetryPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := l.Read(ctx, sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 46 || recs[0].Total != 46 || recs[1].Total != 0 {
		t.Fatalf("%d records, header total %d, entry total %d; want 46, 46, 0", len(recs), recs[0].Total, recs[1].Total)
	}
	if res.LastSeq != recs[45].Seq || res.Entries != 45 {
		t.Fatalf("import result %+v; last record at %d", res, recs[45].Seq)
	}
	if session.Incomplete(recs) || session.Incomplete(recs[:45]) == false {
		t.Fatal("Incomplete misjudges the session")
	}
	// One batch is atomic by itself: no count.
	small := testutil.SessionID(t)
	if _, err := writer.Import(ctx, l, enginetest.SessionFile(small, 9, 2), nil, writer.RetryPolicy{}); err != nil {
		t.Fatal(err)
	}
	if recs, err := l.Read(ctx, small, 0); err != nil || recs[0].Total != 0 {
		t.Fatalf("single-batch session: %v, total %d", err, recs[0].Total)
	}
}

// testRetryAfterCrash: an import whose writer dies after two of its five
// batches leaves a prefix (hidden from readers); the same import again
// continues it and completes, and once more it is ErrExists.
func testRetryAfterCrash(t *testing.T, l session.Log) {
	ctx := context.Background()
	sid := testutil.SessionID(t)
	file := enginetest.SessionFile(sid, 45, 3)
	_, err := writer.Import(ctx, &dyingLog{Log: l, n: 2}, file, nil, quick)
	if !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("dying import: %v; want ErrUnavailable", err)
	}
	recs, err := l.Read(ctx, sid, 0)
	if err != nil || len(recs) != 20 {
		t.Fatalf("after the crash the log holds %d records (%v); want the 2 batches", len(recs), err)
	}
	if _, _, err := session.Build(recs); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("Build of the prefix: %v; want ErrNotFound", err)
	}
	// A writer that dies again continues further.
	if _, err := writer.Import(ctx, &dyingLog{Log: l, n: 1}, file, nil, quick); !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("second dying import: %v", err)
	}
	res, err := writer.Import(ctx, l, file, nil, writer.RetryPolicy{})
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	recs, err = l.Read(ctx, sid, 0)
	if err != nil || len(recs) != 46 {
		t.Fatalf("after the retry: %d records, %v", len(recs), err)
	}
	if res.LastSeq != recs[45].Seq {
		t.Fatalf("LastSeq %d, last record at %d", res.LastSeq, recs[45].Seq)
	}
	s, _, err := session.Build(recs)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.AppendJSONL(nil); !bytes.Equal(got, file) {
		t.Fatal("the continued import differs from the file")
	}
	if _, err := writer.Import(ctx, l, file, nil, writer.RetryPolicy{}); !errors.Is(err, wire.ErrExists) {
		t.Fatalf("import of a complete session: %v; want ErrExists", err)
	}
}

// testOtherRecordsExist: a prefix of another import with the same id is
// not continued, nor purged: ErrExists.
func testOtherRecordsExist(t *testing.T, l session.Log) {
	ctx := context.Background()
	sid := testutil.SessionID(t)
	if _, err := writer.Import(ctx, &dyingLog{Log: l, n: 2}, enginetest.SessionFile(sid, 45, 4), nil, quick); err == nil {
		t.Fatal("dying import succeeded")
	}
	for _, other := range [][]byte{
		enginetest.SessionFile(sid, 45, 5), // same header, other entries
		enginetest.SessionFile(sid, 44, 4), // a prefix of it, but another count
	} {
		if _, err := writer.Import(ctx, l, other, nil, writer.RetryPolicy{}); !errors.Is(err, wire.ErrExists) {
			t.Fatalf("import over another import's prefix: %v; want ErrExists", err)
		}
	}
	if recs, err := l.Read(ctx, sid, 0); err != nil || len(recs) != 20 {
		t.Fatalf("the prefix changed: %d records, %v", len(recs), err)
	}
}

// testFencedAfterPurge: a writer that was only slow cannot complete a
// session once it was purged, nor once it was claimed as abandoned: its
// next batch is a CAS on the last sequence it stored.
func testFencedAfterPurge(t *testing.T, l session.Log) {
	ctx := context.Background()
	for _, claim := range []bool{false, true} {
		sid := testutil.SessionID(t)
		if _, err := writer.Import(ctx, &dyingLog{Log: l, n: 2}, enginetest.SessionFile(sid, 45, 6), nil, quick); err == nil {
			t.Fatal("dying import succeeded")
		}
		recs, err := l.Read(ctx, sid, 0)
		if err != nil {
			t.Fatal(err)
		}
		last := recs[len(recs)-1].Seq
		if claim {
			if _, err := l.Append(ctx, sid, last, []session.Record{session.AbandonRecord(last, "")}); err != nil {
				t.Fatal(err)
			}
		} else if err := l.Purge(ctx, sid); err != nil {
			t.Fatal(err)
		}
		next := session.Record{Type: "message", ID: "fffffff0", Data: []byte(`{"type":"message","id":"fffffff0"}`)}
		if _, err := l.Append(ctx, sid, last, []session.Record{next, {Type: "message", ID: "fffffff1", Data: next.Data}}); !errors.Is(err, wire.ErrConflict) {
			t.Fatalf("claim %v: the slow writer's next batch: %v; want ErrConflict", claim, err)
		}
	}
}

// testForkInBatches: a fork beyond one batch goes the same way as an import.
func testForkInBatches(t *testing.T, l session.Log) {
	ctx := context.Background()
	src := enginetest.SessionFile(testutil.SessionID(t), 45, 7)
	f, err := tree.Read(src, tree.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leaf := f.Entry(f.Len() - 1).ID
	id, last, err := writer.Fork(ctx, l, f.Session, leaf, time.Now(), nil, writer.RetryPolicy{}, false)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := l.Read(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 46 || recs[0].Total != 46 || last != recs[45].Seq {
		t.Fatalf("fork: %d records, total %d, last %d (log %d)", len(recs), recs[0].Total, last, recs[len(recs)-1].Seq)
	}
}
