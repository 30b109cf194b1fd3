package client

import (
	"errors"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/nodetest"
)

// TestCursors: a client's cursor follows its writes and moves, resumes on
// another transport, and a cursor another writer moved is reported — with
// the write done — until the Session adopts or overwrites it.
func TestCursors(t *testing.T) {
	n := nodetest.Start(t, nodetest.Options{})
	ctx := ctxT(t)
	w7, err := dial(t, n, "HTTP").Create(WithClientID("worker-7"))
	if err != nil {
		t.Fatal(err)
	}
	q := must(t)(w7.AppendMessage(ctx, user("q"))).ID
	a1 := must(t)(w7.AppendMessage(ctx, assistant("a1"))).ID
	cur, err := w7.Cursor(ctx)
	if err != nil || cur == nil || cur.LeafID != a1 || cur.Client != "worker-7" || cur.Seq != w7.LastSeq() {
		t.Fatalf("cursor after the flush: %+v, %v", cur, err)
	}
	if err := w7.Branch(ctx, q); err != nil {
		t.Fatal(err)
	}
	if cur, _ := w7.Cursor(ctx); cur.LeafID != q {
		t.Fatalf("cursor after Branch: %+v", cur)
	}

	// The same client id resumes elsewhere, at the cursor.
	again, err := dial(t, n, "JetStream").Open(ctx, w7.ID(), WithClientID("worker-7"))
	if err != nil {
		t.Fatal(err)
	}
	if again.LeafID() != q {
		t.Fatalf("resumed at %q, want the cursor's %q", again.LeafID(), q)
	}
	if plain, _ := dial(t, n, "JetStream").Open(ctx, w7.ID()); plain.LeafID() != a1 {
		t.Fatalf("without a client id: leaf %q, want pi's default %q", plain.LeafID(), a1)
	}
	a2 := must(t)(again.AppendMessage(ctx, assistant("a2"))).ID

	// w7 did not see that: its write lands, its cursor move does not.
	w, err := w7.AppendMessage(ctx, user("stale"))
	var moved *CursorMovedError
	if !errors.As(err, &moved) || !errors.Is(err, ErrCursorMoved) || !errors.Is(err, ErrConflict) || moved.Cursor == nil || moved.Cursor.LeafID != a2 {
		t.Fatalf("append after another writer moved the cursor: %v", err)
	}
	if w.ID == "" || w.Seq == 0 || w7.LeafID() != w.ID {
		t.Fatalf("the append was not done: %+v", w)
	}
	if _, err := n.Log.Read(ctx, w7.ID(), w.Seq-1); err != nil {
		t.Fatal(err)
	}
	if err := w7.Branch(ctx, q); !errors.Is(err, ErrCursorMoved) || w7.LeafID() != q {
		t.Fatalf("Branch with a moved cursor: %v, leaf %q", err, w7.LeafID())
	}
	// Adopt: follow the other writer.
	if err := w7.AdoptCursor(ctx); err != nil || w7.LeafID() != a2 {
		t.Fatalf("adopt: %v, leaf %q", err, w7.LeafID())
	}
	a3 := must(t)(w7.AppendMessage(ctx, assistant("a3"))).ID
	if cur, _ := w7.Cursor(ctx); cur.LeafID != a3 {
		t.Fatalf("cursor after adopting: %+v", cur)
	}
	// Overwrite: the other Session takes it back.
	if err := again.Branch(ctx, a1); !errors.Is(err, ErrCursorMoved) {
		t.Fatalf("the other Session's move: %v", err)
	}
	if err := again.OverwriteCursor(ctx); err != nil {
		t.Fatal(err)
	}
	if cur, _ := w7.Cursor(ctx); cur.LeafID != a1 {
		t.Fatalf("cursor after overwriting: %+v", cur)
	}
	// A deleted cursor: reported as moved (Cursor nil), adopted as none.
	if err := n.Cursors.Delete(ctx, w7.ID(), "worker-7"); err != nil {
		t.Fatal(err)
	}
	if err := again.ResetLeaf(ctx); !errors.As(err, &moved) || moved.Cursor != nil {
		t.Fatalf("move after the cursor was deleted: %v", err)
	}
	if err := again.AdoptCursor(ctx); err != nil || again.LeafID() != a3 {
		t.Fatalf("adopting no cursor: %v, leaf %q (want the last entry %q)", err, again.LeafID(), a3)
	}
	if err := again.Branch(ctx, q); err != nil {
		t.Fatalf("first move after adopting no cursor: %v", err)
	}
	if _, err := (&Session{w: again.w, c: again.c}).Cursor(ctx); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Cursor without a client id: %v", err)
	}
}

// TestFork: pi's createBranchedSession on a Session — pending without an
// assistant message on the path, stored at once with one; labels come
// along; the cursor client carries over.
func TestFork(t *testing.T) {
	n := nodetest.Start(t, nodetest.Options{})
	for _, kind := range transportKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			s, err := dial(t, n, kind).Create(WithCwd("/src"), WithClientID("w"))
			if err != nil {
				t.Fatal(err)
			}
			q := must(t)(s.AppendMessage(ctx, user("q"))).ID
			must(t)(s.Label(ctx, q, "start"))
			a := must(t)(s.AppendMessage(ctx, assistant("a"))).ID

			f, err := s.Fork(ctx, q)
			if err != nil || f.Flushed() || f.ClientID() != "w" {
				t.Fatalf("fork at the question: %v, flushed %v", err, f.Flushed())
			}
			if labels := f.Labels(); labels[q] != "start" {
				t.Fatalf("the fork's labels: %v", labels)
			}
			if cur, _ := f.Cursor(ctx); cur != nil {
				t.Fatal("a pending fork has a cursor")
			}
			w := must(t)(f.AppendMessage(ctx, assistant("another answer")))
			if cur, err := f.Cursor(ctx); err != nil || cur == nil || cur.LeafID != w.ID {
				t.Fatalf("the fork's cursor: %+v %v", cur, err)
			}

			g, err := s.Fork(ctx, a, WithClientID("other"), WithCwd("/elsewhere"))
			if err != nil || !g.Flushed() || g.ClientID() != "other" {
				t.Fatalf("fork at the answer: %v", err)
			}
			stored, err := dial(t, n, "JetStream").Open(ctx, g.ID())
			if err != nil || string(stored.Export()) != string(g.Export()) || !containsAll(string(g.Header()), `"cwd":"/elsewhere"`, `"parentSession":"`+s.ID()+`"`) {
				t.Fatalf("the stored fork: %v\n%s", err, g.Header())
			}
			if _, err := s.Fork(ctx, "nope"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("fork at an unknown entry: %v", err)
			}
		})
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
