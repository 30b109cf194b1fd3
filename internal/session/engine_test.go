package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/tree"
)

// backend is one implementation of the log the engine runs on. Every engine
// test runs against each (see backends_test.go).
type backend struct {
	log     session.Log
	feed    session.Feed
	cursors session.Cursors
	// load stores whole sessions as fast as the backend can (setup for
	// tests about what happens after); default: imports.
	load func(t *testing.T, files [][]byte) uint64
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func user(text string) []byte {
	b, _ := json.Marshal(map[string]any{"role": "user", "content": text, "timestamp": 1})
	return b
}

func assistant(text string) []byte {
	b, _ := json.Marshal(map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}},
		"provider": "anthropic", "model": "claude", "stopReason": "stop", "timestamp": 2})
	return b
}

func newID(t *testing.T) string {
	u, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	return u.String()
}

func mustID(t *testing.T) func(string, error) string {
	return func(id string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
}

func testDelayedFlush(t *testing.T, b backend) {
	ctx := ctxT(t)
	must := mustID(t)
	w, err := session.Create(b.log, session.CreateOptions{Cwd: "/p"}, session.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	must(w.AppendModelChange(ctx, "anthropic", "claude"))
	q := must(w.AppendMessage(ctx, user("why?")))
	must(w.AppendThinkingLevelChange(ctx, "high"))
	if _, err := b.log.Read(ctx, w.ID(), 0); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("before the first assistant message the log must hold nothing, got %v", err)
	}
	// The process "dies" here: a new writer for a new session; the first leaves no trace.
	if w.Flushed() {
		t.Fatal("flushed without an assistant message")
	}

	w2, _ := session.Create(b.log, session.CreateOptions{Cwd: "/p"}, session.WriterOptions{})
	a := must(w2.AppendMessage(ctx, user("hello")))
	must(w2.AppendLabel(ctx, a, ptr("q")))
	r := must(w2.AppendMessage(ctx, assistant("hi")))
	recs, err := b.log.Read(ctx, w2.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || !recs[0].IsHeader() || recs[1].ID != a || recs[3].ID != r {
		t.Fatalf("want header + 3 entries in order, got %v", types(recs))
	}
	for k := 1; k < len(recs); k++ {
		if recs[k].Seq != recs[k-1].Seq+1 {
			t.Fatalf("creation batch not contiguous: %v", seqsOf(recs))
		}
	}
	if _, err := b.log.Read(ctx, w.ID(), 0); !errors.Is(err, session.ErrNotFound) {
		t.Fatal("the abandoned session reached the log")
	}
	_ = q
	// After the flush every append is published at once.
	x := must(w2.AppendMessage(ctx, user("more")))
	if seq, _ := w2.Seq(x); seq == 0 || w2.LastSeq() != seq {
		t.Fatalf("append not published: seq %d last %d", seq, w2.LastSeq())
	}
}

func ptr[T any](v T) *T { return &v }

func types(recs []session.Stored) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Type+":"+r.ID)
	}
	return out
}

func seqsOf(recs []session.Stored) []uint64 {
	var out []uint64
	for _, r := range recs {
		out = append(out, r.Seq)
	}
	return out
}

func testFailedCreationLeavesNothing(t *testing.T, b backend) {
	ctx := ctxT(t)
	must := mustID(t)
	w, _ := session.Create(b.log, session.CreateOptions{}, session.WriterOptions{})
	q := must(w.AppendMessage(ctx, user("q")))
	huge := assistant(strings.Repeat("x", 9<<20)) // beyond the 8 MiB record limit
	if _, err := w.AppendMessage(ctx, huge); !errors.Is(err, session.ErrTooLarge) {
		t.Fatalf("want ErrTooLarge, got %v", err)
	}
	if _, err := b.log.Read(ctx, w.ID(), 0); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("a failed creation left records: %v", err)
	}
	if w.LeafID() != q || w.Flushed() {
		t.Fatal("a failed append changed the writer")
	}
	// Too many entries before the first assistant message: a clear error, nothing published.
	w2, _ := session.Create(b.log, session.CreateOptions{}, session.WriterOptions{})
	for range b.log.MaxBatch() {
		must(w2.AppendMessage(ctx, user("q")))
	}
	_, err := w2.AppendMessage(ctx, assistant("a"))
	if !errors.Is(err, session.ErrTooLarge) || !strings.Contains(err.Error(), "atomic batch") {
		t.Fatalf("want a clear ErrTooLarge, got %v", err)
	}
	if _, err := b.log.Read(ctx, w2.ID(), 0); !errors.Is(err, session.ErrNotFound) {
		t.Fatal("an oversize creation left records")
	}
}

func testConcurrentWriters(t *testing.T, b backend) {
	ctx := ctxT(t)
	must := mustID(t)
	w, _ := session.Create(b.log, session.CreateOptions{}, session.WriterOptions{})
	must(w.AppendMessage(ctx, user("q")))
	root := must(w.AppendMessage(ctx, assistant("a")))
	const n = 25
	writers := []*session.Writer{w}
	w2, err := session.Open(ctx, b.log, w.ID(), session.WriterOptions{Rand: rand.NewChaCha8([32]byte{7})})
	if err != nil {
		t.Fatal(err)
	}
	writers = append(writers, w2)
	var wg sync.WaitGroup
	ids := make([][]string, 2)
	for k, wr := range writers {
		wg.Go(func() {
			for i := range n {
				id, err := wr.AppendMessage(ctx, user(fmt.Sprintf("w%d-%d", k, i)))
				if err != nil {
					t.Errorf("writer %d: %v", k, err)
					return
				}
				ids[k] = append(ids[k], id)
			}
		})
	}
	wg.Wait()
	recs, err := b.log.Read(ctx, w.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3+2*n {
		t.Fatalf("want %d records, got %d", 3+2*n, len(recs))
	}
	seen := map[string]bool{}
	for _, r := range recs[1:] {
		if seen[r.ID] {
			t.Fatalf("duplicate id %s", r.ID)
		}
		seen[r.ID] = true
	}
	// Each writer's entries form its own chain under the shared root.
	for k, wr := range writers {
		if err := wr.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		var path []string
		wr.View(func(s *tree.Session, leaf int) { path = s.Path(s.Entry(leaf).ID) })
		if len(path) != 2+n || path[1] != root || path[len(path)-1] != ids[k][n-1] {
			t.Fatalf("writer %d path %v", k, path)
		}
	}
	// Both writers, and a Store, converge to the same tree.
	st := openStore(t, b)
	waitApplied(t, st, recs[len(recs)-1].Seq)
	want := exportOf(t, st, w.ID())
	for k, wr := range writers {
		var got []byte
		wr.View(func(s *tree.Session, _ int) { got = s.AppendJSONL(nil) })
		if string(got) != string(want) {
			t.Errorf("writer %d's view differs from the store's", k)
		}
	}
}

func testCreateRace(t *testing.T, b backend) {
	ctx := ctxT(t)
	id := newID(t)
	var wins, exists int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for k := range 4 {
		wg.Go(func() {
			w, _ := session.Create(b.log, session.CreateOptions{ID: id, Cwd: fmt.Sprint(k)}, session.WriterOptions{})
			_, err := w.AppendMessage(ctx, assistant("a"))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, session.ErrExists):
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
	recs, _ := b.log.Read(ctx, id, 0)
	if len(recs) != 2 {
		t.Fatalf("want header + 1 entry, got %d", len(recs))
	}
}

func testReadYourWrites(t *testing.T, b backend) {
	ctx := ctxT(t)
	st := openStore(t, b)
	w, _ := session.Create(b.log, session.CreateOptions{}, session.WriterOptions{})
	mustID(t)(w.AppendMessage(ctx, assistant("a")))
	for i := range 20 {
		id := mustID(t)(w.AppendMessage(ctx, user(fmt.Sprint(i))))
		seq, _ := w.Seq(id)
		if err := st.WaitFor(ctx, seq); err != nil {
			t.Fatal(err)
		}
		err := st.View(ctx, w.ID(), func(d *session.Doc) error {
			if !d.Tree.Has(id) {
				return fmt.Errorf("entry %s (seq %d) missing after WaitFor", id, seq)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := st.WaitFor(short, 1<<40); !errors.Is(err, session.ErrTimeout) {
		t.Fatalf("want ErrTimeout, got %v", err)
	}
}

func openStore(t *testing.T, b backend) *session.Store {
	t.Helper()
	st := session.NewStore(b.feed, session.StoreOptions{Log: b.log})
	if err := st.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func waitApplied(t *testing.T, st *session.Store, seq uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := st.WaitFor(ctx, seq); err != nil {
		t.Fatal(err)
	}
}

func exportOf(t *testing.T, st *session.Store, id string) []byte {
	t.Helper()
	var out []byte
	err := st.View(context.Background(), id, func(d *session.Doc) error {
		out = d.Tree.AppendJSONL(nil)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
