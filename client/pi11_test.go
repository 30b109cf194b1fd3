package client

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/nodetest"
)

// TestPi11Writes: a WithPi11 client stores a new session at its first user
// message, a default client (pi 0.73.1, this store's rule) at its first
// assistant message; a fork of a path without either stays pending until
// one arrives; a fork over a dropped label re-chains its path (pi 1.1:
// no orphan), its label written again at the end.
func TestPi11Writes(t *testing.T) {
	ctx := context.Background()
	n := nodetest.Start(t, nodetest.Options{})
	system := json.RawMessage(`{"role":"system","content":"","sections":{"preamble":"You are pi."},"timestamp":1796423021803}`)
	user := json.RawMessage(`{"role":"user","content":"why does the salt check fail?","timestamp":1796423021804}`)
	answer := json.RawMessage(`{"role":"assistant","content":[{"type":"text","text":"let me read auth.ts"}],"provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,"cost":{"input":0.5,"output":0.25,"cacheRead":0,"cacheWrite":0,"total":0.75}},"stopReason":"stop","timestamp":1796423021805}`)
	usage := json.RawMessage(`{"input":0,"output":0,"cacheRead":52000,"cacheWrite":0,"totalTokens":52000,"cost":{"input":0,"output":0,"cacheRead":0.0156,"cacheWrite":0,"total":0.0156}}`)
	for _, kind := range transportKinds {
		t.Run(kind, func(t *testing.T) {
			flushedAt := map[bool]string{}
			for _, pi11 := range []bool{false, true} {
				var opts []Option
				if pi11 {
					opts = append(opts, WithPi11())
				}
				s, err := dial(t, n, kind, opts...).Create(WithCwd("/home/dev/project"))
				if err != nil {
					t.Fatal(err)
				}
				steps := []struct {
					name string
					spec Spec
				}{{"system", Message(system)}, {"usage", Usage("cache_warm", "anthropic", "claude-sonnet-4-5", usage, "")}, {"user", Message(user)}, {"assistant", Message(answer)}}
				for _, st := range steps {
					if _, err := s.Append(ctx, st.spec); err != nil {
						t.Fatalf("pi11=%v %s: %v", pi11, st.name, err)
					}
					if s.Flushed() && flushedAt[pi11] == "" {
						flushedAt[pi11] = st.name
					}
				}
				if pi11 {
					testPi11Forks(t, ctx, s)
				}
			}
			if flushedAt[false] != "assistant" || flushedAt[true] != "user" {
				t.Errorf("stored at the first %s (default) and %s (WithPi11), want assistant and user", flushedAt[false], flushedAt[true])
			}
		})
	}
}

// testPi11Forks forks s (a WithPi11 session: system, usage, user,
// assistant) at its usage entry, and at an entry under a label.
func testPi11Forks(t *testing.T, ctx context.Context, s *Session) {
	t.Helper()
	path := s.BuildContext().Path
	f, err := s.Fork(ctx, path[1])
	if err != nil {
		t.Fatal(err)
	}
	if f.Flushed() {
		t.Error("a fork of a system message and a usage entry is stored: pi 1.1 writes it at a user or assistant message")
	}
	if _, err := f.AppendMessage(ctx, json.RawMessage(`{"role":"user","content":"again","timestamp":1796423021806}`)); err != nil {
		t.Fatal(err)
	}
	if !f.Flushed() {
		t.Error("the fork is not stored after its first user message")
	}

	// A label on the path, then a child of the label: pi 1.1's fork drops
	// the label and hangs the child under the answer.
	labelled, err := s.Label(ctx, path[3], "answer")
	if err != nil {
		t.Fatal(err)
	}
	child, err := s.AppendMessage(ctx, json.RawMessage(`{"role":"user","content":"and then?","timestamp":1796423021807}`))
	if err != nil {
		t.Fatal(err)
	}
	f, err = s.Fork(ctx, child.ID)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := f.Entry(child.ID)
	if !strings.Contains(string(raw), `"parentId":"`+path[3]+`"`) {
		t.Errorf("the child of the dropped label %s in the fork: %s", labelled.ID, raw)
	}
	if _, ok := f.Entry(labelled.ID); ok {
		t.Error("the fork holds the label entry of its path")
	}
	if l, _ := f.Labels()[path[3]]; l != "answer" {
		t.Errorf("the fork's labels: %v", f.Labels())
	}
	for _, id := range f.BuildContext().Path {
		e, _ := f.Entry(id)
		var p struct{ ParentID *string }
		if err := json.Unmarshal(e, &p); err != nil {
			t.Fatal(err)
		}
		if _, ok := f.Entry(derefOr(p.ParentID)); p.ParentID != nil && !ok {
			t.Errorf("fork entry %s is an orphan (parent %s)", id, *p.ParentID)
		}
	}
}

func derefOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestContextEditChecks: a context edit is refused as pi's
// appendContextEdit refuses it, naming targetId, and nothing is stored; a
// string replacing an assistant's content is stored as one text block, a
// user's as it is; the context then shows the edit.
func TestContextEditChecks(t *testing.T) {
	ctx := context.Background()
	n := nodetest.Start(t, nodetest.Options{})
	s, err := dial(t, n, "HTTP", WithPi11()).Create()
	if err != nil {
		t.Fatal(err)
	}
	q, err := s.AppendMessage(ctx, json.RawMessage(`{"role":"user","content":"q","timestamp":1}`))
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.AppendMessage(ctx, json.RawMessage(`{"role":"assistant","content":[{"type":"text","text":"a long answer"}],"provider":"p","model":"m","timestamp":2}`))
	if err != nil {
		t.Fatal(err)
	}
	note, err := s.AppendCustomEntry(ctx, "state", json.RawMessage(`{"x":1}`))
	if err != nil {
		t.Fatal(err)
	}
	// An entry on another branch.
	if err := s.Branch(ctx, q.ID); err != nil {
		t.Fatal(err)
	}
	other, err := s.AppendMessage(ctx, json.RawMessage(`{"role":"assistant","content":[],"provider":"p","model":"m","timestamp":3}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Branch(ctx, note.ID); err != nil {
		t.Fatal(err)
	}
	before := len(s.Entries())
	for _, c := range []struct {
		target  string
		content any
		want    string
	}{
		{other.ID, nil, "is not on the branch"},
		{note.ID, nil, "does not contribute editable model content"},
		{a.ID, json.RawMessage(`{"type":"text"}`), "replacement.content: must be a string or an array"},
	} {
		_, err := s.AppendContextEdit(ctx, c.target, c.content)
		var fe *FieldError
		if !errors.Is(err, ErrInvalid) || !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("edit of %s: %v, want invalid: %s", c.target, err, c.want)
		}
	}
	if _, err := s.AppendContextEdit(ctx, "nope0000", nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("edit of an unknown entry: %v, want not found", err)
	}
	if n := len(s.Entries()); n != before {
		t.Fatalf("refused edits wrote %d entries", n-before)
	}
	ea, err := s.AppendContextEdit(ctx, a.ID, "[elided]")
	if err != nil {
		t.Fatal(err)
	}
	eq, err := s.AppendContextEdit(ctx, q.ID, "the question")
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{ea.ID: `"replacement":{"content":[{"type":"text","text":"[elided]"}]}`, eq.ID: `"replacement":{"content":"the question"}`} {
		if e, _ := s.Entry(id); !strings.Contains(string(e), want) {
			t.Errorf("edit %s: %s, want %s", id, e, want)
		}
	}
	got, _ := json.Marshal(s.BuildContext().Messages)
	if !strings.Contains(string(got), `"content":"the question"`) || !strings.Contains(string(got), `[elided]`) || strings.Contains(string(got), "a long answer") {
		t.Errorf("the context does not show the edits: %s", got)
	}
}

// TestPi11Cwd: pi 1.1 stores its resolvePath of the cwd in the header
// ("/home/dev/code//api-server/" as "/home/dev/code/api-server"), and so
// does a WithPi11 client, for a session and its fork; a default client
// stores it as given, as pi 0.73.1.
func TestPi11Cwd(t *testing.T) {
	n := nodetest.Start(t, nodetest.Options{})
	const given = "/home/dev/code//api-server/"
	for pi11, want := range map[bool]string{false: given, true: "/home/dev/code/api-server"} {
		var opts []Option
		if pi11 {
			opts = append(opts, WithPi11())
		}
		s, err := dial(t, n, "HTTP", opts...).Create(WithCwd(given))
		if err != nil {
			t.Fatal(err)
		}
		w, err := s.AppendMessage(context.Background(), json.RawMessage(`{"role":"user","content":"q","timestamp":1}`))
		if err != nil {
			t.Fatal(err)
		}
		f, err := s.Fork(context.Background(), w.ID, WithCwd(given))
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range []json.RawMessage{s.Header(), f.Header()} {
			var head struct{ Cwd string }
			if err := json.Unmarshal(h, &head); err != nil || head.Cwd != want {
				t.Errorf("pi11=%v: header %s, want cwd %q", pi11, h, want)
			}
		}
	}
}
