package jetstream

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// TestCatchUpByGets: reading on from the stream leader when no consumer can
// be made delivers every record in order, atomic batches whole, and stops
// at the stream's end.
func TestCatchUpByGets(t *testing.T) {
	s := runServer(t)
	c := connect(t, s.ClientURL())
	cfg := testConfig(1)
	provision(t, c.JS, cfg)
	l := NewLog(c.JS, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var last uint64
	for range 3 {
		sid := testutil.SessionID(t)
		seqs, err := l.Append(ctx, sid, 0, append([]session.Record{headerRec(sid)}, entryRecs("a", 4)...))
		if err != nil {
			t.Fatal(err)
		}
		if seqs, err = l.Append(ctx, sid, seqs[len(seqs)-1], entryRecs("b", 1)); err != nil {
			t.Fatal(err)
		}
		last = seqs[0]
	}
	var got [][]session.Stored
	next := uint64(1)
	if err := l.catchUpByGets(ctx, &next, func(recs []session.Stored) error {
		got = append(got, recs)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var n int
	var prev uint64
	for _, g := range got {
		for _, r := range g {
			if r.Seq <= prev {
				t.Fatalf("seq %d after %d", r.Seq, prev)
			}
			prev = r.Seq
			n++
		}
	}
	if n != 3*6 || next != last+1 {
		t.Fatalf("delivered %d records, next %d; want 18 and %d", n, next, last+1)
	}
	// Nothing more: a second catch-up delivers nothing.
	if err := l.catchUpByGets(ctx, &next, func([]session.Stored) error { t.Fatal("delivered past the end"); return nil }); err != nil {
		t.Fatal(err)
	}

	// A longer run is delivered as it is read, a group at a time, not all
	// at the end: on a loaded machine the gets of one catch-up took a
	// minute in which the Store applied nothing.
	sid := testutil.SessionID(t)
	seqs, err := l.Append(ctx, sid, 0, []session.Record{headerRec(sid)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if seqs, err = l.Append(ctx, sid, seqs[len(seqs)-1], entryRecs(fmt.Sprintf("c%d-", i), 5)); err != nil {
			t.Fatal(err)
		}
	}
	got = nil
	if err := l.catchUpByGets(ctx, &next, func(recs []session.Stored) error {
		got = append(got, recs)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	n = 0
	for _, g := range got {
		if len(g) > catchUpGroup+5 { // a group, and at most the rest of a batch of 5
			t.Fatalf("a group of %d records delivered at once", len(g))
		}
		n += len(g)
	}
	if n != 201 || len(got) < 201/(catchUpGroup+5) || next != seqs[len(seqs)-1]+1 {
		t.Fatalf("delivered %d records in %d groups, next %d; want 201 in %d groups or more, next %d", n, len(got), next, 201/(catchUpGroup+5), seqs[len(seqs)-1]+1)
	}
}
