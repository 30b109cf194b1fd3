package enginetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
)

// follower runs Feed.Follow on its own goroutine and hands each apply call's
// records to the test.
type follower struct {
	calls  chan []session.Stored
	done   chan error
	cancel context.CancelFunc
}

// startFollow starts Follow(from); the follower is stopped at cleanup.
func startFollow(t *testing.T, f session.Feed, from uint64) *follower {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	fw := &follower{calls: make(chan []session.Stored), done: make(chan error, 1), cancel: cancel}
	go func() {
		fw.done <- f.Follow(ctx, from, func(recs []session.Stored) error {
			select {
			case fw.calls <- recs:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-fw.done
	})
	return fw
}

// next returns the records of the next apply call.
func (fw *follower) next(t *testing.T) []session.Stored {
	t.Helper()
	select {
	case recs := <-fw.calls:
		if len(recs) == 0 {
			t.Fatal("follow: apply called with no records")
		}
		return recs
	case err := <-fw.done:
		t.Fatalf("follow ended early: %v", err)
	case <-time.After(waitTimeout):
		t.Fatalf("follow: nothing delivered within %v", waitTimeout)
	}
	return nil
}

// appended is one Append call the test made, to compare with deliveries.
type appended struct {
	sid  string
	recs []session.Record
	seqs []uint64
}

// checkDeliveries reads apply calls until every appended record has arrived,
// then checks order (strictly increasing, nothing repeated or skipped) and
// that each multi-record Append arrived whole in a single call.
func checkDeliveries(t *testing.T, fw *follower, want []appended) {
	t.Helper()
	callOf := map[uint64]int{} // seq -> index of the apply call that carried it
	byseq := map[uint64]session.Stored{}
	var prev uint64
	last := want[len(want)-1].seqs[len(want[len(want)-1].seqs)-1]
	for call := 0; prev < last; call++ {
		for _, s := range fw.next(t) {
			if s.Seq <= prev {
				t.Fatalf("follow delivered seq %d after %d", s.Seq, prev)
			}
			prev = s.Seq
			callOf[s.Seq] = call
			byseq[s.Seq] = s
		}
	}
	total := 0
	for _, a := range want {
		got := make([]session.Stored, 0, len(a.seqs))
		for _, seq := range a.seqs {
			s, ok := byseq[seq]
			if !ok {
				t.Fatalf("follow skipped seq %d of session %s", seq, a.sid)
			}
			if callOf[seq] != callOf[a.seqs[0]] {
				t.Fatalf("the %d records %v of one append arrived in different calls", len(a.seqs), a.seqs)
			}
			got = append(got, s)
		}
		sameStored(t, got, a.sid, a.recs, a.seqs)
		total += len(a.seqs)
	}
	if len(byseq) != total {
		t.Fatalf("follow delivered %d records, the test appended %d", len(byseq), total)
	}
}

// testFollowOrder starts following an empty log, then appends creations,
// single appends and batches to two sessions: everything arrives in order,
// batches whole, including what was appended after Follow started waiting.
func testFollowOrder(t *testing.T, newLog func(t *testing.T) (session.Log, session.Feed)) {
	l, f := newLog(t)
	fw := startFollow(t, f, lastSeq(t, f)+1)
	a, b := newSessionID(t), newSessionID(t)
	var want []appended
	add := func(sid string, expectLast uint64, recs []session.Record) uint64 {
		seqs := mustAppend(t, l, sid, expectLast, recs)
		want = append(want, appended{sid, recs, seqs})
		return seqs[len(seqs)-1]
	}
	lastA := add(a, 0, append([]session.Record{header(a)}, chain("", 3)...))
	lastB := add(b, 0, []session.Record{header(b)})
	checkDeliveries(t, fw, want)
	first := len(want)

	parentA, parentB := want[0].recs[3].ID, ""
	for i := range 4 {
		ra, rb := chain(parentA, 1+i%3), chain(parentB, 1)
		lastA = add(a, lastA, ra)
		lastB = add(b, lastB, rb)
		parentA, parentB = ra[len(ra)-1].ID, rb[0].ID
	}
	checkDeliveries(t, fw, want[first:])
}

// testFollowResume checks Follow from a given sequence: from a batch
// boundary, from the middle of a batch (its remaining records arrive
// together), and from past the end (it waits for the next append).
func testFollowResume(t *testing.T, newLog func(t *testing.T) (session.Log, session.Feed)) {
	l, f := newLog(t)
	sid := newSessionID(t)
	recs, seqs := create(t, l, sid, 3)
	more := chain(recs[3].ID, 3)
	moreSeqs := mustAppend(t, l, sid, seqs[3], more)

	checkDeliveries(t, startFollow(t, f, seqs[0]), []appended{{sid, recs, seqs}, {sid, more, moreSeqs}})
	checkDeliveries(t, startFollow(t, f, moreSeqs[0]), []appended{{sid, more, moreSeqs}})
	checkDeliveries(t, startFollow(t, f, seqs[2]), []appended{{sid, recs[2:], seqs[2:]}, {sid, more, moreSeqs}})

	fw := startFollow(t, f, moreSeqs[2]+1)
	late := chain(more[2].ID, 2)
	lateSeqs := mustAppend(t, l, sid, moreSeqs[2], late)
	checkDeliveries(t, fw, []appended{{sid, late, lateSeqs}})
}

// testFollowStops checks both ways out of Follow: an apply error is returned
// as is, and a done context returns ctx.Err() even while Follow waits.
func testFollowStops(t *testing.T, newLog func(t *testing.T) (session.Log, session.Feed)) {
	l, f := newLog(t)
	create(t, l, newSessionID(t), 1)

	errStop := errors.New("stop here")
	calls := 0
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	err := f.Follow(ctx, 1, func([]session.Stored) error { calls++; return errStop })
	if err != errStop || calls != 1 {
		t.Fatalf("follow with a failing apply: %v after %d calls, want %v after 1", err, calls, errStop)
	}

	fw := startFollow(t, f, lastSeq(t, f)+1)
	fw.cancel()
	select {
	case err := <-fw.done:
		fw.done <- err // for the cleanup
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("follow after cancel: %v, want context.Canceled", err)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("follow did not return within %v of its context's end", waitTimeout)
	}
}
