package archive_test

import (
	"context"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/archive"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/writer"
)

// TestForksOutliveTheirParent forks by reference (a fork, a fork of it
// with an entry of its own, a fork of another parent), then erases the
// first parent and archives the second: each fork gets its path first, so
// it reads the same afterwards — in the Store that applied it, in a Store
// rebuilt from the log, through a Writer over the bare log — and the
// registry forgets the parents. The erased parent is gone everywhere.
func TestForksOutliveTheirParent(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.svc.Forks = f.arch
	p1, p2 := f.create(6), f.create(4)
	fork := func(sid, entry string) string {
		t.Helper()
		id, last, err := f.svc.Fork(ctx, sid, entry, false)
		if err != nil {
			t.Fatal(err)
		}
		f.wait(f.store, last)
		return id
	}
	f1 := fork(p1.SessionID, p1.Entries[3].ID)
	f.appendOne(f1, "the fork's own")
	f2 := fork(f1, p1.Entries[2].ID)
	f3 := fork(p2.SessionID, p2.Entries[3].ID)
	forks := []string{f1, f2, f3}
	want := map[string]string{}
	for _, id := range forks {
		want[id] = f.export(f.store, id)
	}
	if recs, err := f.log.Read(ctx, f1, 0); err != nil || len(recs) != 2 || recs[0].Fork == nil {
		t.Fatalf("fork %s stored %d records (want its header and its own entry), err %v", f1, len(recs), err)
	}
	if fs, err := f.arch.Forks(ctx, p1.SessionID); err != nil || len(fs) != 1 || fs[0] != f1 {
		t.Fatalf("registry of %s: %v %v", p1.SessionID, fs, err)
	}

	if _, err := f.a.Erase(ctx, p1.SessionID, 0, "test"); err != nil {
		t.Fatal(err)
	}
	f.clock.advance(2 * time.Hour)
	if out, _, err := f.a.Archive(ctx, p2.SessionID, f.clock.Now().Add(-time.Hour)); err != nil || out != archive.Archived {
		t.Fatalf("archive %s: %v %v", p2.SessionID, out, err)
	}
	f.wait(f.store, f.logEnd())
	if err := gone(ctx, f, p1.SessionID); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{p1.SessionID, p2.SessionID} {
		if fs, err := f.arch.Forks(ctx, p); err != nil || len(fs) != 0 {
			t.Fatalf("the registry keeps %v for %s (%v)", fs, p, err)
		}
	}
	fresh := store.New(f.log, store.Options{Log: f.log})
	if err := fresh.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	f.wait(fresh, f.logEnd())
	for _, id := range forks {
		if got := f.export(f.store, id); got != want[id] {
			t.Errorf("fork %s in the Store after its parent went:\n%s\nwant\n%s", id, got, want[id])
		}
		if got := f.export(fresh, id); got != want[id] {
			t.Errorf("fork %s in a rebuilt Store:\n%s\nwant\n%s", id, got, want[id])
		}
		w, err := writer.Open(ctx, f.log, id, writer.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := writerExport(w); got != want[id] {
			t.Errorf("fork %s through a Writer:\n%s\nwant\n%s", id, got, want[id])
		}
	}
	// f1 holds its path now; f2 still reads its own from f1.
	recs, err := f.log.Read(ctx, f2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := session.Inherited(recs); ok {
		t.Errorf("fork %s of a live fork got inherited lines", f2)
	}
}

func writerExport(w *writer.Writer) string {
	var out []byte
	w.View(func(s *tree.Session, _ int) { out = s.AppendJSONL(nil) })
	return string(out)
}
