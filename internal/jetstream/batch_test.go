package jetstream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

func headerRec(sid string) session.Record {
	return session.Record{Type: "session", Data: fmt.Appendf(nil, `{"type":"session","version":3,"id":%q}`, sid)}
}

func entryRecs(prefix string, n int) []session.Record {
	recs := make([]session.Record, n)
	parent := ""
	for i := range recs {
		id := fmt.Sprintf("%s%04x", prefix, i)
		recs[i] = session.Record{Type: "message", ID: id, Parent: parent,
			Data: fmt.Appendf(nil, `{"type":"message","id":%q}`, id)}
		parent = id
	}
	return recs
}

// testFollowWholeBatches appends batches of 50 (and single records between
// them) to several sessions while a Follow runs, and checks that every apply
// call is exactly one whole batch or one single record: a follower never
// sees a batch prefix the server is still storing.
func testFollowWholeBatches(t *testing.T, conn *Conn, replicas int) {
	const sessions, batches, size = 3, 6, 50
	cfg := testConfig(replicas)
	provision(t, conn.JS, cfg)
	l := NewLog(conn.JS, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	groups := make(chan []session.Stored, 1024)
	followDone := make(chan error, 1)
	go func() {
		followDone <- l.Follow(ctx, 1, func(recs []session.Stored) error {
			groups <- recs
			return nil
		})
	}()

	// batchOf maps a record's (session, id) to its append, to check groups.
	batchOf := sync.Map{}
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for s := range sessions {
		sid := testutil.SessionID(t)
		wg.Go(func() {
			seqs, err := l.Append(ctx, sid, 0, []session.Record{headerRec(sid)})
			if err != nil {
				errs <- err
				return
			}
			last := seqs[0]
			for b := range batches {
				recs := entryRecs(fmt.Sprintf("%x%x", s, b), size)
				for _, r := range recs {
					batchOf.Store(sid+"/"+r.ID, b)
				}
				if seqs, err = l.Append(ctx, sid, last, recs); err != nil {
					errs <- err
					return
				}
				single := session.Record{Type: "label", ID: fmt.Sprintf("%x%xffff", s, b), Data: []byte(`{"type":"label"}`)}
				if seqs, err = l.Append(ctx, sid, seqs[len(seqs)-1], []session.Record{single}); err != nil {
					errs <- err
					return
				}
				last = seqs[0]
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("append: %v", err)
	}

	want := sessions * (1 + batches*(size+1))
	var got int
	var prev uint64
	for got < want {
		select {
		case recs := <-groups:
			got += len(recs)
			for _, r := range recs {
				if r.Seq <= prev {
					t.Fatalf("seq %d delivered after %d", r.Seq, prev)
				}
				prev = r.Seq
			}
			// Groups may hold several batches and single records, but a
			// batch is never split: its records come together, in one group.
			for i := 0; i < len(recs); {
				b, isBatch := batchOf.Load(recs[i].Session + "/" + recs[i].ID)
				if !isBatch {
					i++
					continue
				}
				if len(recs)-i < size {
					t.Fatalf("batch %v of session %s split: %d of its %d records in this group", b, recs[i].Session, len(recs)-i, size)
				}
				for _, r := range recs[i : i+size] {
					if rb, _ := batchOf.Load(r.Session + "/" + r.ID); rb != b || r.Session != recs[i].Session {
						t.Fatalf("batch %v interleaved with %s/%s", b, r.Session, r.ID)
					}
				}
				i += size
			}
		case err := <-followDone:
			t.Fatalf("follow ended: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatalf("follow: %d of %d records after 30s", got, want)
		}
	}
	if got != want {
		t.Fatalf("follow delivered %d records, want %d", got, want)
	}
}

// testCreateRace has two clients, each on its own connection (on a cluster,
// to different servers), race to create the same sessions with expectLast 0,
// by single publish and by batch: exactly one wins each race, the other
// gets ErrExists.
func testCreateRace(t *testing.T, a, b *Conn, replicas int) {
	cfg := testConfig(replicas)
	provision(t, a.JS, cfg)
	logs := [2]*Log{NewLog(a.JS, cfg), NewLog(b.JS, cfg)}
	ctx := context.Background()
	for round := range 20 {
		sid := testutil.SessionID(t)
		var errs [2]error
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, l := range logs {
			recs := []session.Record{headerRec(sid)}
			if round%2 == 1 {
				recs = append(recs, entryRecs(fmt.Sprintf("%02x%02x", round, i), 3)...)
			}
			wg.Go(func() {
				<-start
				_, errs[i] = l.Append(ctx, sid, 0, recs)
			})
		}
		close(start)
		wg.Wait()
		wins := 0
		for _, err := range errs {
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, wire.ErrExists):
				t.Fatalf("round %d: loser got %v, want ErrExists", round, err)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d winners (%v / %v)", round, wins, errs[0], errs[1])
		}
	}
}

// testAppendAfterAck appends to one session back to back, each append
// expecting the sequence the previous ack gave, singles and batches mixed:
// none may be refused. On a replicated stream the server acks a write
// before it clears the write's in-flight mark, so an append sent the moment
// the ack arrives was refused now and then (10164) as if another write had
// come first.
func testAppendAfterAck(t *testing.T, conn *Conn, replicas int) {
	cfg := testConfig(replicas)
	provision(t, conn.JS, cfg)
	l := NewLog(conn.JS, cfg)
	ctx := context.Background()
	sid := testutil.SessionID(t)
	recs := entryRecs("ab", 400)
	seqs, err := l.Append(ctx, sid, 0, []session.Record{headerRec(sid)})
	if err != nil {
		t.Fatal(err)
	}
	last := seqs[0]
	for i := 0; i < len(recs); {
		n := 1
		if i%10 == 9 {
			n = min(3, len(recs)-i)
		}
		seqs, err := l.Append(ctx, sid, last, recs[i:i+n])
		if err != nil {
			t.Fatalf("append %d after %d (%d acknowledged before it): %v", n, last, i, err)
		}
		last = seqs[len(seqs)-1]
		i += n
	}
}
