package enginetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/tree/jsjson"
	"github.com/pifleet/sessionlog/internal/wire"
	"github.com/pifleet/sessionlog/internal/writer"
)

// WriterEnv is one transport that writer.Writers write through, for
// TestWriter.
type WriterEnv struct {
	// Log is what the Writers under test write through, and what the
	// tests read back with. Its reads must include every append made
	// through it and everything a conflict it reported was about (the
	// JetStream log reads from the stream leader; the API's Log passes
	// minSeq).
	Log session.Log
	// Feed, when set, is the log underneath Log (the same records): a
	// Store fed by it must converge with the writers and serve
	// read-your-writes with WaitFor.
	Feed session.Feed
}

// TestWriter is the writer contract: what a writer.Writer guarantees over
// any transport — the delayed flush (nothing stored before the first
// assistant message, then one atomic creation), failed creations that leave
// nothing, concurrent writers that converge without losing or duplicating
// an entry, exclusive creation, reconciliation after a conflict, reads of
// one's own writes, and forks that stay pending like pi's. newEnv must
// return a fresh transport (an empty log is not required) for each call.
func TestWriter(t *testing.T, newEnv func(t *testing.T) WriterEnv) {
	t.Run("DelayedFlush", func(t *testing.T) { testDelayedFlush(t, newEnv(t)) })
	t.Run("FailedCreationLeavesNothing", func(t *testing.T) { testFailedCreation(t, newEnv(t)) })
	t.Run("ConcurrentWriters", func(t *testing.T) { testConcurrentWritersConverge(t, newEnv(t)) })
	t.Run("CreateRace", func(t *testing.T) { testCreateRace(t, newEnv(t)) })
	t.Run("ConflictKeepsParent", func(t *testing.T) { testConflictKeepsParent(t, newEnv(t)) })
	t.Run("ReadYourWrites", func(t *testing.T) { testReadYourWrites(t, newEnv(t)) })
	t.Run("ForkPendingLikePi", func(t *testing.T) { testForkPending(t, newEnv(t)) })
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// UserMessage and AssistantMessage are pi AgentMessages for tests.
func UserMessage(text string) []byte {
	return fmt.Appendf(nil, `{"role":"user","content":%s,"timestamp":1}`, jsjson.AppendString(nil, text))
}

// AssistantMessage is an assistant reply with one text block.
func AssistantMessage(text string) []byte {
	return fmt.Appendf(nil, `{"role":"assistant","content":[{"type":"text","text":%s}],"provider":"anthropic","model":"claude","stopReason":"stop","timestamp":2}`,
		jsjson.AppendString(nil, text))
}

func mustOK(t *testing.T) func(string, error) string {
	return func(id string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
}

func newWriter(t *testing.T, l session.Log, c writer.CreateOptions) *writer.Writer {
	t.Helper()
	w, err := writer.Create(l, c, writer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func wantMissing(t *testing.T, l session.Log, sid, what string) {
	t.Helper()
	if recs, err := l.Read(context.Background(), sid, 0); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("%s: want nothing on the log, got %d records, err %v", what, len(recs), err)
	}
}

func testDelayedFlush(t *testing.T, e WriterEnv) {
	ctx := ctxFor(t)
	must := mustOK(t)
	w := newWriter(t, e.Log, writer.CreateOptions{Cwd: "/p"})
	must(w.AppendModelChange(ctx, "anthropic", "claude"))
	must(w.AppendMessage(ctx, UserMessage("why?")))
	must(w.AppendThinkingLevelChange(ctx, "high"))
	wantMissing(t, e.Log, w.ID(), "before the first assistant message")
	// The process "dies" here: a new writer for a new session; the first
	// leaves no trace.
	if w.Flushed() || w.LastSeq() != 0 {
		t.Fatal("flushed without an assistant message")
	}

	w2 := newWriter(t, e.Log, writer.CreateOptions{Cwd: "/p"})
	a := must(w2.AppendMessage(ctx, UserMessage("hello <&> \u2028")))
	must(w2.AppendLabel(ctx, a, ptr("q")))
	r := must(w2.AppendMessage(ctx, AssistantMessage("hi")))
	recs, err := e.Log.Read(ctx, w2.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || !recs[0].IsHeader() || recs[1].ID != a || recs[3].ID != r {
		t.Fatalf("want header + 3 entries in order, got %v", recordIDs(recs))
	}
	for k := 1; k < len(recs); k++ {
		if recs[k].Seq != recs[k-1].Seq+1 {
			t.Fatalf("creation batch not contiguous: %v", storedSeqs(recs))
		}
	}
	// The log holds the very bytes the writer built, header included.
	var local []byte
	w2.View(func(s *tree.Session, _ int) { local = s.AppendJSONL(nil) })
	if got := jsonl(recs); got != string(local) {
		t.Fatalf("stored lines differ from the writer's:\n got %s\nwant %s", got, local)
	}
	wantMissing(t, e.Log, w.ID(), "the abandoned session")
	// After the flush every append is published at once.
	x := must(w2.AppendMessage(ctx, UserMessage("more")))
	if seq, _ := w2.Seq(x); seq == 0 || w2.LastSeq() != seq {
		t.Fatalf("append not published: seq %d last %d", seq, w2.LastSeq())
	}
}

func ptr[T any](v T) *T { return &v }

func recordIDs(recs []session.Stored) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Type+":"+r.ID)
	}
	return out
}

func jsonl(recs []session.Stored) string {
	var b strings.Builder
	for _, r := range recs {
		b.Write(r.Data)
		b.WriteByte('\n')
	}
	return b.String()
}

func testFailedCreation(t *testing.T, e WriterEnv) {
	ctx := ctxFor(t)
	must := mustOK(t)
	w := newWriter(t, e.Log, writer.CreateOptions{})
	q := must(w.AppendMessage(ctx, UserMessage("q")))
	huge := AssistantMessage(strings.Repeat("x", 9<<20)) // beyond the 8 MiB record limit
	if _, err := w.AppendMessage(ctx, huge); !errors.Is(err, wire.ErrTooLarge) {
		t.Fatalf("want ErrTooLarge, got %v", err)
	}
	wantMissing(t, e.Log, w.ID(), "a failed creation")
	if w.LeafID() != q || w.Flushed() {
		t.Fatal("a failed append changed the writer")
	}
	// Too many entries before the first assistant message: a clear error,
	// nothing published.
	w2 := newWriter(t, e.Log, writer.CreateOptions{})
	for range e.Log.MaxBatch() {
		must(w2.AppendMessage(ctx, UserMessage("q")))
	}
	_, err := w2.AppendMessage(ctx, AssistantMessage("a"))
	if !errors.Is(err, wire.ErrTooLarge) || !strings.Contains(err.Error(), "atomic batch") {
		t.Fatalf("want a clear ErrTooLarge, got %v", err)
	}
	wantMissing(t, e.Log, w2.ID(), "an oversize creation")
}

// testConcurrentWritersConverge runs two writers of one session in
// parallel: no entry is lost or stored twice, each writer's entries form
// its own chain under the shared root, and every view agrees.
func testConcurrentWritersConverge(t *testing.T, e WriterEnv) {
	ctx := ctxFor(t)
	must := mustOK(t)
	w := newWriter(t, e.Log, writer.CreateOptions{})
	must(w.AppendMessage(ctx, UserMessage("q")))
	root := must(w.AppendMessage(ctx, AssistantMessage("a")))
	const n = 25
	w2, err := writer.Open(ctx, e.Log, w.ID(), writer.Options{Rand: rand.NewChaCha8([32]byte{7})})
	if err != nil {
		t.Fatal(err)
	}
	writers := []*writer.Writer{w, w2}
	var wg sync.WaitGroup
	ids := make([][]string, 2)
	for k, wr := range writers {
		wg.Go(func() {
			for i := range n {
				id, err := wr.AppendMessage(ctx, UserMessage(fmt.Sprintf("w%d-%d", k, i)))
				if err != nil {
					t.Errorf("writer %d: %v", k, err)
					return
				}
				ids[k] = append(ids[k], id)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	recs, err := e.Log.Read(ctx, w.ID(), 0)
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
	want := jsonl(recs)
	if e.Feed != nil {
		st := openStore(t, e)
		if err := st.WaitFor(ctx, recs[len(recs)-1].Seq); err != nil {
			t.Fatal(err)
		}
		err := st.View(ctx, w.ID(), func(d *store.Doc) error {
			if got := string(d.Tree.AppendJSONL(nil)); got != want {
				return fmt.Errorf("the store's copy differs from the log:\n%s\nwant\n%s", got, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for k, wr := range writers {
		var got []byte
		wr.View(func(s *tree.Session, _ int) { got = s.AppendJSONL(nil) })
		if string(got) != want {
			t.Errorf("writer %d's view differs from the log's", k)
		}
	}
}

func openStore(t *testing.T, e WriterEnv) *store.Store {
	t.Helper()
	st := store.New(e.Feed, store.Options{})
	if err := st.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}
