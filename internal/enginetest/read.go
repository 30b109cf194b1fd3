package enginetest

import (
	"context"
	"errors"
	"testing"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// testDuplicateID checks that a record whose id is already stored (or
// repeated within the call) fails the whole call and leaves no trace: the
// fresh record of a refused batch can be appended afterwards.
func testDuplicateID(t *testing.T, newLog func(t *testing.T) (session.Log, session.Feed)) {
	l, _ := newLog(t)
	ctx := context.Background()
	sid := newSessionID(t)
	recs, seqs := create(t, l, sid, 2)
	last := seqs[len(seqs)-1]
	a := recs[1]
	c := entry(newEntryID(), recs[2].ID)

	for _, tc := range []struct {
		name string
		recs []session.Record
		want error
	}{
		{"stored entry in a batch", []session.Record{c, a}, wire.ErrConflict},
		{"stored entry alone", []session.Record{a}, wire.ErrConflict},
		{"entry twice in a batch", []session.Record{c, c}, wire.ErrConflict},
		{"stored header alone", []session.Record{header(sid)}, wire.ErrExists},
		{"stored header in a batch", []session.Record{c, header(sid)}, wire.ErrExists},
	} {
		_, err := l.Append(ctx, sid, last, tc.recs)
		wantErr(t, tc.name, err, tc.want)
	}
	sameStored(t, mustRead(t, l, sid, 0), sid, recs, seqs)

	seq := mustAppend(t, l, sid, last, []session.Record{c})
	_, err := l.Append(ctx, sid, last, []session.Record{c})
	wantErr(t, "retry of an append that was stored", err, wire.ErrConflict)
	_, err = l.Append(ctx, sid, seq[0], []session.Record{c})
	wantErr(t, "retry of an append that was stored, with its own sequence", err, wire.ErrConflict)
	sameStored(t, mustRead(t, l, sid, 0), sid, append(recs, c), append(seqs, seq...))
}

func testInvalidInput(t *testing.T, newLog func(t *testing.T) (session.Log, session.Feed)) {
	l, _ := newLog(t)
	ctx := context.Background()
	for _, bad := range []string{"", "not-a-uuid", "01a22ba6-d94f-735d-ac17-131011d6d05b.x", "01a22ba6-d94f-735d-ac17-13101*d6d05b"} {
		_, err := l.Append(ctx, bad, 0, []session.Record{header(bad)})
		wantErr(t, "append to session "+bad, err, wire.ErrInvalid)
		_, err = l.Read(ctx, bad, 0)
		wantErr(t, "read of session "+bad, err, wire.ErrInvalid)
		wantErr(t, "purge of session "+bad, l.Purge(ctx, bad), wire.ErrInvalid)
	}
	sid := newSessionID(t)
	_, err := l.Append(ctx, sid, 0, nil)
	wantErr(t, "append of no records", err, wire.ErrInvalid)
	_, err = l.Append(ctx, sid, 0, []session.Record{header(sid), entry("", "")})
	wantErr(t, "append of an entry without id", err, wire.ErrInvalid)
	_, err = l.Read(ctx, sid, 0)
	wantErr(t, "read after refused appends", err, wire.ErrNotFound)
}

func testReadAfter(t *testing.T, newLog func(t *testing.T) (session.Log, session.Feed)) {
	l, _ := newLog(t)
	sid, other := newSessionID(t), newSessionID(t)
	recs, seqs := create(t, l, sid, 3)
	create(t, l, other, 2)
	more := chain(recs[3].ID, 2)
	seqs = append(seqs, mustAppend(t, l, sid, seqs[3], more)...)
	recs = append(recs, more...)

	for i := range seqs {
		sameStored(t, mustRead(t, l, sid, seqs[i]), sid, recs[i+1:], seqs[i+1:])
	}
	sameStored(t, mustRead(t, l, sid, seqs[0]-1), sid, recs, seqs)
	if got := mustRead(t, l, sid, seqs[len(seqs)-1]+1000); len(got) != 0 {
		t.Fatalf("read after a sequence past the end: got %v, want none", storedSeqs(got))
	}
}

func testReadMissing(t *testing.T, newLog func(t *testing.T) (session.Log, session.Feed)) {
	l, _ := newLog(t)
	ctx := context.Background()
	_, err := l.Read(ctx, newSessionID(t), 0)
	wantErr(t, "read of a missing session in an empty log", err, wire.ErrNotFound)
	create(t, l, newSessionID(t), 1)
	_, err = l.Read(ctx, newSessionID(t), 0)
	wantErr(t, "read of a missing session", err, wire.ErrNotFound)
}

// testPurge checks that a purged session is gone for Read and Follow, that
// others are untouched, that sequences are not reused, and that the purge
// leaves a notice (session.PurgeRecord on session.PurgeToken) in the feed,
// once: purging a missing session appends none.
func testPurge(t *testing.T, newLog func(t *testing.T) (session.Log, session.Feed)) {
	l, f := newLog(t)
	ctx := context.Background()
	a, b := newSessionID(t), newSessionID(t)
	create(t, l, a, 2)
	recsB, seqsB := create(t, l, b, 2)
	more := chain(recsB[2].ID, 1)
	seqsB = append(seqsB, mustAppend(t, l, b, seqsB[2], more)...)
	recsB = append(recsB, more...)
	last := lastSeq(t, f)

	if err := l.Purge(ctx, a); err != nil {
		t.Fatalf("purge: %v", err)
	}
	_, err := l.Read(ctx, a, 0)
	wantErr(t, "read of a purged session", err, wire.ErrNotFound)
	sameStored(t, mustRead(t, l, b, 0), b, recsB, seqsB)
	if err := l.Purge(ctx, a); err != nil {
		t.Fatalf("second purge: %v", err)
	}
	if err := l.Purge(ctx, newSessionID(t)); err != nil {
		t.Fatalf("purge of a missing session: %v", err)
	}
	if got := lastSeq(t, f); got != last+1 {
		t.Fatalf("last seq after purges: %d, want %d (one notice; sequences are never reused)", got, last+1)
	}

	feedEndsWithNotice(t, f, last, b, recsB, seqsB, "purge", session.PurgeRecord(a, last))
}

// feedEndsWithNotice follows f from the start to sequence last+1: what
// it delivers before is session b's records alone (the other session is
// gone), and last+1 is the notice want, on session.PurgeToken.
func feedEndsWithNotice(t *testing.T, f session.Feed, last uint64, b string, recsB []session.Record, seqsB []uint64, what string, want session.Record) {
	t.Helper()
	fw := startFollow(t, f, 1)
	var got []session.Stored
	for len(got) == 0 || got[len(got)-1].Seq < last+1 {
		got = append(got, fw.next(t)...)
	}
	sameStored(t, got[:len(got)-1], b, recsB, seqsB)
	notice := got[len(got)-1]
	if notice.Session != session.PurgeToken || notice.Seq != last+1 || notice.Type != want.Type ||
		notice.ID != want.ID || string(notice.Data) != string(want.Data) {
		t.Fatalf("%s notice: got %+v (data %s), want seq %d %+v (data %s)", what, notice, notice.Data, last+1, want, want.Data)
	}
}

// testErase checks session.Eraser, for a Log that is one: a stale
// expectLast is a conflict naming the last sequence and erases nothing;
// an erasure removes every record of the session (and only its), reports
// how many and up to which sequence, appends the erasure notice
// (session.EraseRecord) to the feed, and leaves the session not found to
// reads and to a second Erase.
func testErase(t *testing.T, newLog func(t *testing.T) (session.Log, session.Feed)) {
	l, f := newLog(t)
	e, ok := l.(session.Eraser)
	if !ok {
		t.Skipf("%T cannot erase (not a session.Eraser)", l)
	}
	ctx := context.Background()
	a, b := newSessionID(t), newSessionID(t)
	_, seqsA := create(t, l, a, 2)
	recsB, seqsB := create(t, l, b, 2)
	lastA := seqsA[len(seqsA)-1]

	_, err := e.Erase(ctx, a, seqsA[0])
	var ce *wire.ConflictError
	if !errors.As(err, &ce) || ce.LastSeq != lastA {
		t.Fatalf("erase with a stale expectLast: %v, want a conflict at %d", err, lastA)
	}
	if got := mustRead(t, l, a, 0); len(got) != 3 {
		t.Fatalf("after a refused erasure: %d records, want 3", len(got))
	}
	last := lastSeq(t, f)
	res, err := e.Erase(ctx, a, lastA)
	if err != nil || res.Records != 3 || res.LastSeq != lastA {
		t.Fatalf("erase: %+v %v, want 3 records up to %d", res, err, lastA)
	}
	_, err = l.Read(ctx, a, 0)
	wantErr(t, "read of an erased session", err, wire.ErrNotFound)
	_, err = l.SessionLastSeq(ctx, a)
	wantErr(t, "last seq of an erased session", err, wire.ErrNotFound)
	sameStored(t, mustRead(t, l, b, 0), b, recsB, seqsB)
	_, err = e.Erase(ctx, a, 0)
	wantErr(t, "second erasure", err, wire.ErrNotFound)
	_, err = e.Erase(ctx, newSessionID(t), 0)
	wantErr(t, "erasure of a missing session", err, wire.ErrNotFound)
	if got := lastSeq(t, f); got != last+1 {
		t.Fatalf("last seq after the erasures: %d, want %d (one notice)", got, last+1)
	}

	feedEndsWithNotice(t, f, last, b, recsB, seqsB, "erasure", session.EraseRecord(a, lastA))
}

func testLastSeq(t *testing.T, newLog func(t *testing.T) (session.Log, session.Feed)) {
	l, f := newLog(t)
	if got := lastSeq(t, f); got != 0 {
		t.Fatalf("last seq of an empty log: %d", got)
	}
	a, b := newSessionID(t), newSessionID(t)
	_, seqs := create(t, l, a, 2)
	if got := lastSeq(t, f); got != seqs[2] {
		t.Fatalf("last seq: %d, want %d", got, seqs[2])
	}
	_, seqsB := create(t, l, b, 0)
	_, err := l.Append(context.Background(), a, seqs[0], chain("", 1))
	wantErr(t, "stale append", err, wire.ErrConflict)
	if got := lastSeq(t, f); got != seqsB[0] {
		t.Fatalf("last seq after another session and a refused append: %d, want %d", got, seqsB[0])
	}
}

// testSessionLastSeq: a session's last sequence, as of every acknowledged
// append, and not-found for a session with no records (also after a purge).
func testSessionLastSeq(t *testing.T, newLog func(t *testing.T) (session.Log, session.Feed)) {
	l, _ := newLog(t)
	ctx := context.Background()
	a, b := newSessionID(t), newSessionID(t)
	_, err := l.SessionLastSeq(ctx, a)
	wantErr(t, "last seq of a missing session", err, wire.ErrNotFound)
	_, seqs := create(t, l, a, 2)
	_, seqsB := create(t, l, b, 1)
	more := mustAppend(t, l, a, seqs[2], chain("", 1))
	for sid, want := range map[string]uint64{a: more[0], b: seqsB[1]} {
		got, err := l.SessionLastSeq(ctx, sid)
		if err != nil || got != want {
			t.Fatalf("last seq of %s: %d, %v; want %d", sid, got, err, want)
		}
	}
	if err := l.Purge(ctx, a); err != nil {
		t.Fatal(err)
	}
	_, err = l.SessionLastSeq(ctx, a)
	wantErr(t, "last seq of a purged session", err, wire.ErrNotFound)
	_, err = l.SessionLastSeq(ctx, "not-a-session")
	wantErr(t, "last seq of an invalid id", err, wire.ErrInvalid)
}
