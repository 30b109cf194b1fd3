package enginetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
	"github.com/pifleet/sessionlog/internal/writer"
)

// testCreateRace: writers that create the same session id at once — one
// wins, the others get ErrExists, and the log holds the winner's records.
// Each attempt may wait a scaled minute: the test is of the race, and
// through a pi-node under CI's load four creations at once took longer
// than the default attempt (500 ms) for 10 s on end, so every writer gave
// up unavailable.
func testCreateRace(t *testing.T, e WriterEnv) {
	ctx := ctxFor(t)
	opts := writer.Options{Retry: writer.RetryPolicy{AttemptTimeout: testutil.Scale(time.Minute)}}
	id := newSessionID(t)
	var wins, exists int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for k := range 4 {
		wg.Go(func() {
			w, err := writer.Create(e.Log, writer.CreateOptions{ID: id, Cwd: fmt.Sprint(k)}, opts)
			if err == nil {
				_, err = w.AppendMessage(ctx, AssistantMessage("a"))
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, wire.ErrExists):
				exists++
			default:
				t.Errorf("writer %d: %v", k, err)
			}
		})
	}
	wg.Wait()
	if wins != 1 || exists != 3 {
		t.Fatalf("want exactly one winner, got %d wins, %d ErrExists", wins, exists)
	}
	if recs := mustRead(t, e.Log, id, 0); len(recs) != 2 {
		t.Fatalf("want header + 1 entry, got %d", len(recs))
	}
}

// testConflictKeepsParent: a writer that missed another's append still
// appends where it was told — as a child of its own leaf — after reading
// what it missed; its sequence then tells where the session stands.
func testConflictKeepsParent(t *testing.T, e WriterEnv) {
	ctx := ctxFor(t)
	must := mustOK(t)
	w1 := newWriter(t, e.Log, writer.CreateOptions{})
	must(w1.AppendMessage(ctx, UserMessage("q")))
	a := must(w1.AppendMessage(ctx, AssistantMessage("a")))
	w2, err := writer.Open(ctx, e.Log, w1.ID(), writer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if w2.LeafID() != a || w2.LastSeq() != w1.LastSeq() {
		t.Fatalf("opened at leaf %q seq %d, want %q %d", w2.LeafID(), w2.LastSeq(), a, w1.LastSeq())
	}
	other := must(w1.AppendMessage(ctx, UserMessage("from w1")))
	otherSeq, _ := w1.Seq(other)
	mine := must(w2.AppendMessage(ctx, UserMessage("from w2, stale")))
	seq, _ := w2.Seq(mine)
	if seq <= otherSeq || w2.LastSeq() != seq {
		t.Fatalf("after the conflict: my seq %d, last %d; the other entry's %d", seq, w2.LastSeq(), otherSeq)
	}
	var parent string
	var hasOther bool
	w2.View(func(s *tree.Session, _ int) {
		e, _ := s.Get(mine)
		parent, hasOther = e.ParentID, s.Has(other)
	})
	if parent != a || !hasOther || w2.LeafID() != mine {
		t.Fatalf("my entry's parent %q (want %q), the other entry absorbed %v, leaf %q", parent, a, hasOther, w2.LeafID())
	}
	recs := mustRead(t, e.Log, w1.ID(), 0)
	if last := recs[len(recs)-1]; last.ID != mine || last.Parent != a {
		t.Fatalf("the log ends with %s (parent %s), want %s under %s", last.ID, last.Parent, mine, a)
	}
}

// testReadYourWrites: every append is in a read made right after it —
// through the Log itself and, with a Feed, in a Store that waited for the
// append's sequence.
func testReadYourWrites(t *testing.T, e WriterEnv) {
	ctx := ctxFor(t)
	var st *store.Store
	if e.Feed != nil {
		st = openStore(t, e)
	}
	w := newWriter(t, e.Log, writer.CreateOptions{})
	mustOK(t)(w.AppendMessage(ctx, AssistantMessage("a")))
	for i := range 20 {
		id := mustOK(t)(w.AppendMessage(ctx, UserMessage(fmt.Sprint(i))))
		seq, _ := w.Seq(id)
		recs := mustRead(t, e.Log, w.ID(), seq-1)
		if len(recs) != 1 || recs[0].ID != id || recs[0].Seq != seq {
			t.Fatalf("read after %d: %v, want %s at %d", seq-1, recordIDs(recs), id, seq)
		}
		if st == nil {
			continue
		}
		if err := st.WaitFor(ctx, seq); err != nil {
			t.Fatal(err)
		}
		err := st.View(ctx, w.ID(), func(d *store.Doc) error {
			if !d.Tree.Has(id) {
				return fmt.Errorf("entry %s (seq %d) missing after WaitFor", id, seq)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if st != nil {
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		if err := st.WaitFor(short, 1<<40); !errors.Is(err, wire.ErrTimeout) {
			t.Fatalf("want ErrTimeout, got %v", err)
		}
	}
}

// testForkPending: Writer.Fork is pi's createBranchedSession — a fork of a
// path without an assistant message stays in memory until one arrives,
// a fork of a path with one is stored at once; labels on the path come
// along, the source is untouched.
func testForkPending(t *testing.T, e WriterEnv) {
	ctx := ctxFor(t)
	must := mustOK(t)
	w := newWriter(t, e.Log, writer.CreateOptions{Cwd: "/src"})
	q := must(w.AppendMessage(ctx, UserMessage("q")))
	must(w.AppendLabel(ctx, q, ptr("start")))
	a := must(w.AppendMessage(ctx, AssistantMessage("a")))
	before := w.LastSeq()

	f1, err := w.Fork(ctx, q, writer.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f1.Flushed() || f1.Header().ParentSession != w.ID() || f1.Header().Cwd != "/src" {
		t.Fatalf("fork without an assistant message: flushed %v, header %+v", f1.Flushed(), f1.Header())
	}
	wantMissing(t, e.Log, f1.ID(), "a fork without an assistant message")
	r := must(f1.AppendMessage(ctx, AssistantMessage("answer in the fork")))
	recs := mustRead(t, e.Log, f1.ID(), 0)
	// header, q, the re-created label, the answer (child of the label: the leaf)
	if len(recs) != 4 || recs[1].ID != q || recs[2].Type != "label" || recs[3].ID != r || recs[3].Parent != recs[2].ID {
		t.Fatalf("fork stored as %v", recordIDs(recs))
	}

	f2, err := w.Fork(ctx, a, writer.CreateOptions{Cwd: "/elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	if !f2.Flushed() || f2.Header().Cwd != "/elsewhere" {
		t.Fatal("a fork with an assistant message must be stored at once")
	}
	recs = mustRead(t, e.Log, f2.ID(), 0)
	if len(recs) != 1+3 || recs[len(recs)-1].Seq != f2.LastSeq() || f2.LeafID() != recs[3].ID {
		t.Fatalf("fork stored as %v, last seq %d, leaf %s", recordIDs(recs), f2.LastSeq(), f2.LeafID())
	}
	if w.LastSeq() != before || w.LeafID() != a {
		t.Fatal("forking changed the source writer")
	}
	if _, err := w.Fork(ctx, "nope", writer.CreateOptions{}); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("fork of an unknown entry: %v", err)
	}
}
