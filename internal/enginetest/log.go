package enginetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestLog checks every clause of the session.Log and session.Feed contracts.
// newLog must return an empty log (LastSeq 0) for each call, and both values
// must be views of the same log. The log must refuse records of 16 MiB.
func TestLog(t *testing.T, newLog func(t *testing.T) (session.Log, session.Feed)) {
	t.Run("CreateIsExclusive", func(t *testing.T) { testCreateExclusive(t, newLog) })
	t.Run("AppendReturnsSequences", func(t *testing.T) { testAppendSeqs(t, newLog) })
	t.Run("AppendCAS", func(t *testing.T) { testAppendCAS(t, newLog) })
	t.Run("ConcurrentWriters", func(t *testing.T) { testConcurrentWriters(t, newLog) })
	t.Run("OversizeRecordStoresNothing", func(t *testing.T) { testOversize(t, newLog) })
	t.Run("MaxBatch", func(t *testing.T) { testMaxBatch(t, newLog) })
	t.Run("DuplicateID", func(t *testing.T) { testDuplicateID(t, newLog) })
	t.Run("InvalidInput", func(t *testing.T) { testInvalidInput(t, newLog) })
	t.Run("ReadAfterSeq", func(t *testing.T) { testReadAfter(t, newLog) })
	t.Run("ReadMissing", func(t *testing.T) { testReadMissing(t, newLog) })
	t.Run("Purge", func(t *testing.T) { testPurge(t, newLog) })
	t.Run("Erase", func(t *testing.T) { testErase(t, newLog) })
	t.Run("LastSeq", func(t *testing.T) { testLastSeq(t, newLog) })
	t.Run("SessionLastSeq", func(t *testing.T) { testSessionLastSeq(t, newLog) })
	t.Run("FollowOrderAndBatches", func(t *testing.T) { testFollowOrder(t, newLog) })
	t.Run("FollowResume", func(t *testing.T) { testFollowResume(t, newLog) })
	t.Run("FollowStops", func(t *testing.T) { testFollowStops(t, newLog) })
}

// TestLogWrites checks the clauses of the session.Log contract that need
// no Feed, for a log that has none of its own: shard.Sharded, whose
// shards each have theirs (each checked by TestLog as a shard.Log).
func TestLogWrites(t *testing.T, newLog func(t *testing.T) session.Log) {
	both := func(t *testing.T) (session.Log, session.Feed) { return newLog(t), nil }
	t.Run("CreateIsExclusive", func(t *testing.T) { testCreateExclusive(t, both) })
	t.Run("AppendReturnsSequences", func(t *testing.T) { testAppendSeqs(t, both) })
	t.Run("AppendCAS", func(t *testing.T) { testAppendCAS(t, both) })
	t.Run("ConcurrentWriters", func(t *testing.T) { testConcurrentWriters(t, both) })
	t.Run("OversizeRecordStoresNothing", func(t *testing.T) { testOversize(t, both) })
	t.Run("MaxBatch", func(t *testing.T) { testMaxBatch(t, both) })
	t.Run("DuplicateID", func(t *testing.T) { testDuplicateID(t, both) })
	t.Run("InvalidInput", func(t *testing.T) { testInvalidInput(t, both) })
	t.Run("ReadAfterSeq", func(t *testing.T) { testReadAfter(t, both) })
	t.Run("ReadMissing", func(t *testing.T) { testReadMissing(t, both) })
	t.Run("SessionLastSeq", func(t *testing.T) { testSessionLastSeq(t, both) })
}

// testCreateExclusive races two creators of one session: exactly one wins,
// the other gets ErrExists, and only the winner's records are stored.
func testCreateExclusive(t *testing.T, newLog func(t *testing.T) (session.Log, session.Feed)) {
	l, _ := newLog(t)
	sid := newSessionID(t)
	var recs [2][]session.Record
	var errs [2]error
	var seqs [2][]uint64
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range recs {
		recs[i] = append([]session.Record{header(sid)}, chain("", 2)...)
		wg.Go(func() {
			<-start
			seqs[i], errs[i] = l.Append(context.Background(), sid, 0, recs[i])
		})
	}
	close(start)
	wg.Wait()

	winner := -1
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				t.Fatalf("both creators won: %v and %v", seqs[0], seqs[1])
			}
			winner = i
			continue
		}
		wantErr(t, fmt.Sprintf("creator %d", i), err, wire.ErrExists)
	}
	if winner < 0 {
		t.Fatalf("no creator won: %v / %v", errs[0], errs[1])
	}
	sameStored(t, mustRead(t, l, sid, 0), sid, recs[winner], seqs[winner])

	_, err := l.Append(context.Background(), sid, 0, []session.Record{entry(newEntryID(), "")})
	wantErr(t, "create of an existing session", err, wire.ErrExists)
}

func testAppendSeqs(t *testing.T, newLog func(t *testing.T) (session.Log, session.Feed)) {
	l, _ := newLog(t)
	sid := newSessionID(t)
	recs, seqs := create(t, l, sid, 3)
	more := chain(recs[len(recs)-1].ID, 1)
	seqs = append(seqs, mustAppend(t, l, sid, seqs[len(seqs)-1], more)...)
	batch := chain(more[0].ID, 4)
	seqs = append(seqs, mustAppend(t, l, sid, seqs[len(seqs)-1], batch)...)
	recs = append(append(recs, more...), batch...)
	sameStored(t, mustRead(t, l, sid, 0), sid, recs, seqs)
}

// testAppendCAS checks expectLast: stale, ahead, and 0 on an existing session
// all fail and store nothing; the right one succeeds.
func testAppendCAS(t *testing.T, newLog func(t *testing.T) (session.Log, session.Feed)) {
	l, _ := newLog(t)
	ctx := context.Background()
	sid := newSessionID(t)

	_, err := l.Append(ctx, sid, 7, chain("", 1))
	wantErr(t, "append to a missing session with expectLast 7", err, wire.ErrConflict)
	_, err = l.Read(ctx, sid, 0)
	wantErr(t, "read after the refused append", err, wire.ErrNotFound)

	recs, seqs := create(t, l, sid, 1)
	last := seqs[len(seqs)-1]
	next := chain(recs[1].ID, 1)
	seq := mustAppend(t, l, sid, last, next)
	recs, seqs = append(recs, next...), append(seqs, seq...)

	for _, tc := range []struct {
		name       string
		expectLast uint64
		want       error
	}{
		{"stale", last, wire.ErrConflict},
		{"ahead", seq[0] + 100, wire.ErrConflict},
		{"zero", 0, wire.ErrExists},
	} {
		_, err := l.Append(ctx, sid, tc.expectLast, chain(next[0].ID, 1))
		wantErr(t, "append with "+tc.name+" expectLast", err, tc.want)
		_, err = l.Append(ctx, sid, tc.expectLast, chain(next[0].ID, 3))
		wantErr(t, "batch with "+tc.name+" expectLast", err, tc.want)
	}
	sameStored(t, mustRead(t, l, sid, 0), sid, recs, seqs)
}

// testConcurrentWriters runs writers that append to one session in a CAS
// loop, as the engine's Writer does: every append lands exactly once.
func testConcurrentWriters(t *testing.T, newLog func(t *testing.T) (session.Log, session.Feed)) {
	const writers, appends = 4, 5
	l, _ := newLog(t)
	ctx := context.Background()
	sid := newSessionID(t)
	create(t, l, sid, 0)

	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			// Half the writers append single records, half batches of two.
			for range appends {
				if err := casAppend(ctx, l, sid, 1+w%2); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := mustRead(t, l, sid, 0)
	if want := 1 + appends*(writers+writers/2); len(got) != want {
		t.Fatalf("got %d records, want %d", len(got), want)
	}
	ids := map[string]bool{}
	for _, s := range got[1:] {
		if ids[s.ID] {
			t.Fatalf("entry %s stored twice", s.ID)
		}
		ids[s.ID] = true
	}
}

// casAppend appends n entries under the session's last record, re-reading and
// retrying after each conflict.
func casAppend(ctx context.Context, l session.Log, sid string, n int) error {
	for attempt := 0; attempt < 200; attempt++ {
		recs, err := l.Read(ctx, sid, 0)
		if err != nil {
			return err
		}
		last := recs[len(recs)-1]
		parent := last.ID
		_, err = l.Append(ctx, sid, last.Seq, chain(parent, n))
		if err == nil || !errors.Is(err, wire.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("append to %s: still conflicting after 200 attempts", sid)
}

func testOversize(t *testing.T, newLog func(t *testing.T) (session.Log, session.Feed)) {
	l, _ := newLog(t)
	ctx := context.Background()
	big := make([]byte, oversize)
	for i := range big {
		big[i] = 'x'
	}

	sid := newSessionID(t)
	recs := append([]session.Record{header(sid)}, chain("", 4)...)
	recs[3].Data = big
	_, err := l.Append(ctx, sid, 0, recs)
	wantErr(t, "creation with an oversize record 3", err, wire.ErrTooLarge)
	_, err = l.Read(ctx, sid, 0)
	wantErr(t, "read after the refused creation", err, wire.ErrNotFound)

	recs, seqs := create(t, l, sid, 1)
	batch := chain(recs[1].ID, 4)
	batch[2].Data = big
	_, err = l.Append(ctx, sid, seqs[1], batch)
	wantErr(t, "batch with an oversize record 3", err, wire.ErrTooLarge)
	_, err = l.Append(ctx, sid, seqs[1], batch[2:3])
	wantErr(t, "single oversize record", err, wire.ErrTooLarge)
	sameStored(t, mustRead(t, l, sid, 0), sid, recs, seqs)
}

func testMaxBatch(t *testing.T, newLog func(t *testing.T) (session.Log, session.Feed)) {
	l, _ := newLog(t)
	max := l.MaxBatch()
	if max < 2 {
		t.Fatalf("MaxBatch %d: a log must carry at least a header and an entry", max)
	}
	sid := newSessionID(t)
	recs := append([]session.Record{header(sid)}, chain("", max)...)
	_, err := l.Append(context.Background(), sid, 0, recs)
	wantErr(t, fmt.Sprintf("append of MaxBatch+1 = %d records", len(recs)), err, wire.ErrTooLarge)
	_, err = l.Read(context.Background(), sid, 0)
	wantErr(t, "read after the refused batch", err, wire.ErrNotFound)

	seqs := mustAppend(t, l, sid, 0, recs[:max])
	sameStored(t, mustRead(t, l, sid, 0), sid, recs[:max], seqs)
}
