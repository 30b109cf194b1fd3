package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pifleet/sessionlog/internal/enginetest"
	"github.com/pifleet/sessionlog/internal/nodetest"
	"github.com/pifleet/sessionlog/internal/tree"
)

// TestWriterContract runs the session engine's writer contract over each
// of the client's transports, on one in-process pi-node: the same
// writer.Writer, the delayed flush and CAS loop written once, behind the
// JetStream log and behind the API's.
func TestWriterContract(t *testing.T) {
	n := nodetest.Start(t, nodetest.Options{})
	for _, kind := range transportKinds {
		t.Run(kind, func(t *testing.T) {
			enginetest.TestWriter(t, func(t *testing.T) enginetest.WriterEnv {
				c := dial(t, n, kind)
				return enginetest.WriterEnv{Log: c.log, Feed: n.Log}
			})
		})
	}
	// The same over a store of three shards: the JetStream transport
	// finds the shard map, the API routes each session to its stream.
	ns := nodetest.Start(t, nodetest.Options{Shards: 3})
	for _, kind := range transportKinds {
		t.Run(kind+"/shards=3", func(t *testing.T) {
			enginetest.TestWriter(t, func(t *testing.T) enginetest.WriterEnv {
				return enginetest.WriterEnv{Log: dial(t, ns, kind).log}
			})
		})
	}
}

// transportKinds name the transports for dial.
var transportKinds = []string{"JetStream", "HTTP", "NodeNATS"}

// dial connects a Client of the given transport to node n, closed at
// cleanup.
func dial(t *testing.T, n *nodetest.Node, kind string, opts ...Option) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var tr Transport
	switch kind {
	case "JetStream":
		tr = JetStreamURL(n.NATSURL)
	case "HTTP":
		tr = HTTP(n.HTTPURL)
	case "NodeNATS":
		nc, err := nats.Connect(n.NATSURL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		tr = NodeNATS(nc)
	}
	c, err := New(ctx, tr, append([]Option{WithToken(n.Token)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func user(text string) map[string]any {
	return map[string]any{"role": "user", "content": text, "timestamp": 1}
}

func assistant(text string) map[string]any {
	return map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}},
		"provider": "fake", "model": "echo", "stopReason": "stop", "timestamp": 2}
}

func must(t *testing.T) func(Written, error) Written {
	return func(w Written, err error) Written {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
}

// TestKilledWorkerLeavesNothing: a worker that dies before its first
// assistant message leaves no session and no cursor, on any transport.
func TestKilledWorkerLeavesNothing(t *testing.T) {
	n := nodetest.Start(t, nodetest.Options{})
	for _, kind := range transportKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			c := dial(t, n, kind)
			s, err := c.Create(WithCwd("/repo"), WithClientID("worker-1"))
			if err != nil {
				t.Fatal(err)
			}
			must(t)(s.AppendModelChange(ctx, "fake", "echo"))
			w := must(t)(s.AppendMessage(ctx, user("why?")))
			if w.Seq != 0 || s.Flushed() || s.LastSeq() != 0 || len(s.Entries()) != 2 {
				t.Fatalf("pending session: %+v, flushed %v", w, s.Flushed())
			}
			if cur, err := s.Cursor(ctx); cur != nil || err != nil {
				t.Fatalf("a pending session has a cursor: %v %v", cur, err)
			}
			_ = c.Close() // the worker dies
			other := dial(t, n, "JetStream")
			if _, err := other.Open(ctx, s.ID()); !errors.Is(err, ErrNotFound) {
				t.Fatalf("open of the dead worker's session: %v", err)
			}
			if _, err := n.Log.Read(ctx, s.ID(), 0); !errors.Is(err, ErrNotFound) {
				t.Fatalf("the log holds the dead worker's session: %v", err)
			}
			if cs, err := n.Cursors.List(ctx, s.ID()); err != nil || len(cs) != 0 {
				t.Fatalf("cursors of the dead worker: %v %v", cs, err)
			}
		})
	}
}

// TestTwoTransportsConverge: workers on one session through different
// transports append at once; nothing is lost or doubled, each keeps its
// own branch, and all of them — and pi-node — end with the same file.
func TestTwoTransportsConverge(t *testing.T) {
	n := nodetest.Start(t, nodetest.Options{})
	ctx := ctxT(t)
	first, err := dial(t, n, "HTTP").Create(WithCwd("/repo"))
	if err != nil {
		t.Fatal(err)
	}
	must(t)(first.AppendMessage(ctx, user("q")))
	root := must(t)(first.AppendMessage(ctx, assistant("a"))).ID
	sessions := []*Session{first}
	for _, kind := range []string{"JetStream", "NodeNATS"} {
		s, err := dial(t, n, kind).Open(ctx, first.ID())
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, s)
	}
	const each = 15
	var wg sync.WaitGroup
	for k, s := range sessions {
		wg.Go(func() {
			for i := range each {
				if _, err := s.AppendMessage(ctx, user(fmt.Sprintf("worker %d, turn %d", k, i))); err != nil {
					t.Errorf("worker %d: %v", k, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	var last uint64
	for _, s := range sessions {
		last = max(last, s.LastSeq())
	}
	want := ""
	for k, s := range sessions {
		// The workers hand each other their last sequences: over the API
		// transports a plain Sync reads what the node has applied so far.
		if err := s.SyncTo(ctx, last); err != nil {
			t.Fatal(err)
		}
		if p := s.Path(""); len(p) != 2+each || p[1] != root {
			t.Fatalf("worker %d's path: %v", k, p)
		}
		if got := string(s.Export()); k == 0 {
			want = got
		} else if got != want {
			t.Fatalf("worker %d's file differs from worker 0's", k)
		}
	}
	if len(sessions[0].Entries()) != 2+3*each || len(sessions[0].Children(root)) != 3 {
		t.Fatalf("%d entries, %d branches under the root", len(sessions[0].Entries()), len(sessions[0].Children(root)))
	}
	if err := n.Store.WaitFor(ctx, sessions[0].LastSeq()); err != nil {
		t.Fatal(err)
	}
	exported, err := n.Log.Read(ctx, first.ID(), 0)
	if err != nil || len(exported) != 1+2+3*each {
		t.Fatalf("the log holds %d records: %v", len(exported), err)
	}
}

// TestConflictSemantics: a Session that missed other writers' entries
// still appends under its own leaf, learns what it missed, and says so.
func TestConflictSemantics(t *testing.T) {
	n := nodetest.Start(t, nodetest.Options{})
	for _, kind := range transportKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			a, err := dial(t, n, kind).Create()
			if err != nil {
				t.Fatal(err)
			}
			must(t)(a.AppendMessage(ctx, assistant("hello")))
			b, err := dial(t, n, "JetStream").Open(ctx, a.ID())
			if err != nil {
				t.Fatal(err)
			}
			leaf := a.LeafID()
			for i := range 3 {
				must(t)(b.AppendMessage(ctx, user(fmt.Sprint(i))))
			}
			w := must(t)(a.AppendMessage(ctx, user("mine")))
			if w.Merged != 3 || w.Seq != a.LastSeq() || w.Seq <= b.LastSeq() || a.LeafID() != w.ID {
				t.Fatalf("written %+v; last seq %d, the other's %d", w, a.LastSeq(), b.LastSeq())
			}
			line, _ := a.Entry(w.ID)
			e, err := tree.ParseEntry(line)
			if err != nil || e.ParentID != leaf {
				t.Fatalf("my entry's parent is %q, want %q", e.ParentID, leaf)
			}
			if len(a.Entries()) != 5 {
				t.Fatalf("the merged view holds %d entries", len(a.Entries()))
			}
		})
	}
}

// TestArguments: JSON arguments of any Go type are stored as pi writes
// them; bad ones are errors that name them, and store nothing.
func TestArguments(t *testing.T) {
	n := nodetest.Start(t, nodetest.Options{})
	ctx := ctxT(t)
	s, err := dial(t, n, "HTTP").Create()
	if err != nil {
		t.Fatal(err)
	}
	w := must(t)(s.AppendMessage(ctx, map[string]any{"role": "user", "content": "<a & b>", "n": 1.50}))
	line, _ := s.Entry(w.ID)
	if !strings.Contains(string(line), `"message":{"content":"<a & b>","n":1.5,"role":"user"}`) {
		t.Fatalf("a map was stored as %s", line)
	}
	w = must(t)(s.AppendMessage(ctx, []byte(` { "role" : "assistant", "content" : [], "provider" : "p", "model" : "m" } `)))
	if line, _ := s.Entry(w.ID); !strings.Contains(string(line), `"message":{"role":"assistant","content":[],"provider":"p","model":"m"}`) {
		t.Fatalf("raw JSON was stored as %s", line)
	}
	var fe *FieldError
	if _, err := s.AppendMessage(ctx, []byte(`{"role":`)); !errors.As(err, &fe) || fe.Field != "message" || !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad JSON: %v", err)
	}
	if _, err := s.AppendMessage(ctx, "just a string"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a message that is not an object: %v", err)
	}
	if _, err := s.Label(ctx, "nope", "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("label of an unknown entry: %v", err)
	}
	if _, err := s.Append(ctx); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty append: %v", err)
	}
	if _, err := s.Append(ctx, Spec{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("zero Spec: %v", err)
	}
	if err := s.Branch(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("branch to an unknown entry: %v", err)
	}
	if _, err := dial(t, n, "HTTP").Create(WithClientID("no.dots")); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad client id: %v", err)
	}
	// Session ids are canonical lower-case UUIDs, over every transport.
	for _, kind := range transportKinds {
		c := dial(t, n, kind)
		upper := strings.ToUpper(s.ID())
		if _, err := c.Create(WithSessionID(strings.ToUpper("01a22bdc-6ce8-7741-8406-00000000abcd"))); !errors.As(err, &fe) || fe.Field != "sessionId" || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "lower-case") {
			t.Fatalf("%s: Create WithSessionID of an upper-case id: %v", kind, err)
		}
		if _, err := c.Open(ctx, upper); !errors.As(err, &fe) || fe.Field != "sessionId" || !errors.Is(err, ErrInvalid) {
			t.Fatalf("%s: Open of an upper-case id: %v", kind, err)
		}
		if _, err := s.Fork(ctx, w.ID, WithSessionID(upper)); !errors.Is(err, ErrInvalid) {
			t.Fatalf("%s: Fork WithSessionID of an upper-case id: %v", kind, err)
		}
	}
	if _, err := dial(t, n, "HTTP").Open(ctx, strings.ToLower("01A22BDC-6CE8-7741-8406-00000000ABCD")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the refused create stored a session under the lower-case id: %v", err)
	}
	if len(s.Entries()) != 2 {
		t.Fatalf("failed appends left %d entries", len(s.Entries()))
	}
}
