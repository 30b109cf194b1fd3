package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/pifleet/sessionlog/internal/jetstream/embedded/embeddedtest"
	"github.com/pifleet/sessionlog/internal/nodetest"
)

// TestEntryTypes writes every entry type with pi's single-entry methods
// and reads them back as pi's getters and buildSessionContext see them.
func TestEntryTypes(t *testing.T) {
	n := nodetest.Start(t, nodetest.Options{})
	ctx := ctxT(t)
	s, err := dial(t, n, "NodeNATS").Create(WithParentSession("01a22ba6-0000-7000-8000-000000000001"))
	if err != nil {
		t.Fatal(err)
	}
	m := must(t)
	m(s.AppendModelChange(ctx, "fake", "echo"))
	m(s.AppendThinkingLevelChange(ctx, "high"))
	q := m(s.AppendMessage(ctx, user("q"))).ID
	m(s.AppendCustomEntry(ctx, "my-state", map[string]int{"n": 1}))
	m(s.AppendCustomMessage(ctx, "note", "remember the tests", true, nil))
	m(s.AppendMessage(ctx, assistant("a")))
	m(s.AppendCompaction(ctx, "we talked", q, 1234, json.RawMessage(`{"files":[]}`), nil))
	m(s.Rename(ctx, "  entry types  "))
	b := m(s.BranchWithSummary(ctx, "", "left the first branch", nil, nil))

	if name, ok := s.Name(); !ok || name != "entry types" {
		t.Fatalf("name %q %v", name, ok)
	}
	if p := s.Path(""); len(p) != 1 || p[0] != b.ID {
		t.Fatalf("after a branch summary from the root the path is %v", p)
	}
	var types []string
	for _, line := range s.Entries() {
		var e struct{ Type string }
		_ = json.Unmarshal(line, &e)
		types = append(types, e.Type)
	}
	want := "model_change thinking_level_change message custom custom_message message compaction session_info branch_summary"
	if got := strings.Join(types, " "); got != want {
		t.Fatalf("entry types %s", got)
	}
	if !strings.Contains(string(s.Header()), `"parentSession":"01a22ba6-0000-7000-8000-000000000001"`) {
		t.Fatalf("header %s", s.Header())
	}
	if err := s.Branch(ctx, q); err != nil {
		t.Fatal(err)
	}
	c := s.BuildContext()
	if c.ThinkingLevel != "high" || c.Model == nil || c.Model.ModelID != "echo" || len(c.Messages) != 1 || c.LeafID != q {
		t.Fatalf("context at the question: %+v", c)
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	stored, err := dial(t, n, "JetStream").Open(ctx, s.ID(), WithMinSeq(s.LastSeq()))
	if err != nil || string(stored.Export()) != string(s.Export()) {
		t.Fatalf("the stored session differs: %v", err)
	}
	if err := stored.ResetLeaf(ctx); err != nil || stored.LeafID() != "" || len(stored.BuildContext().Messages) != 0 {
		t.Fatalf("reset leaf: %v", err)
	}
	moved := &CursorMovedError{Session: "s", Client: "c"}
	if !strings.Contains(moved.Error(), "deleted") || !errors.Is(moved, ErrConflict) {
		t.Fatalf("%v", moved)
	}
}

// TestJetStreamProvision: on a bare JetStream server a Client fails
// clearly, unless it provisions the stream and bucket itself.
func TestJetStreamProvision(t *testing.T) {
	ctx := ctxT(t)
	srv := embeddedtest.RunServer(t, false)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := New(ctx, JetStream(nc)); err == nil || !strings.Contains(err.Error(), "provisioned") {
		t.Fatalf("a bare server: %v", err)
	}
	c, err := New(ctx, JetStream(nc), WithProvision(1), WithNames("DEV", "dev.sess", "DEV_CURSORS"),
		WithRetry(RetryPolicy{Attempts: 5}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, _ := c.Create(WithClientID("dev"))
	must(t)(s.AppendMessage(ctx, assistant("hi")))
	if cur, err := s.Cursor(ctx); err != nil || cur == nil {
		t.Fatalf("cursor: %v %v", cur, err)
	}
	for _, tr := range []Transport{{}, JetStream(nil), HTTP("ftp://x"), NodeNATS(nil)} {
		if _, err := New(ctx, tr); !errors.Is(err, ErrInvalid) {
			t.Fatalf("no transport: %v", err)
		}
	}
	if _, err := New(ctx, JetStreamURL("nats://127.0.0.1:1")); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("no server: %v", err)
	}
}

// TestOpenLatest: a worker opening a session WithLatest through a pi-node
// (the node's consistency=strong path, on both API transports) sees every
// write another worker made a moment before straight to JetStream. (That
// the node waits for a write it has not applied is internal/api's
// TestStrongRead, with a Store held back.)
func TestOpenLatest(t *testing.T) {
	n := nodetest.Start(t, nodetest.Options{})
	ctx := ctxT(t)
	w := dial(t, n, "JetStream")
	s, err := w.Create()
	if err != nil {
		t.Fatal(err)
	}
	m := must(t)
	m(s.AppendMessage(ctx, user("q")))
	for _, kind := range []string{"HTTP", "NodeNATS"} {
		r := dial(t, n, kind)
		for i := range 30 {
			m(s.AppendMessage(ctx, assistant(fmt.Sprintf("a%d", i))))
			got, err := r.Open(ctx, s.ID(), WithLatest())
			if err != nil || got.LastSeq() != s.LastSeq() {
				t.Fatalf("%s, write %d: Open WithLatest reflects seq %d (%v), the writer is at %d", kind, i, got.LastSeq(), err, s.LastSeq())
			}
		}
	}
}
