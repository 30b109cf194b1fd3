package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/client"
	"github.com/pifleet/sessionlog/internal/nodetest"
)

// The examples talk to the pi-node whose HTTP API is at $PI_CTL_HTTP (e.g.
// http://127.0.0.1:8080) and whose NATS server is at $NATS_URL; under go
// test, TestMain starts one in-process and sets both.

// TestMain starts the pi-node the examples talk to.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "client-examples-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := nodetest.StartDir(ctx, dir, nodetest.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start pi-node:", err)
		return 1
	}
	defer n.Close()
	os.Setenv("PI_CTL_HTTP", n.HTTPURL)
	os.Setenv("NATS_URL", n.NATSURL)
	return m.Run()
}

// A worker with a pi-node URL: create a session, hold the question in
// memory until the model answers, then store both at once.
func Example() {
	ctx := context.Background()
	c, err := client.New(ctx, client.HTTP(os.Getenv("PI_CTL_HTTP")), client.WithToken(os.Getenv("PI_CTL_TOKEN")))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	s, err := c.Create(client.WithCwd("/home/dev/project"))
	if err != nil {
		log.Fatal(err)
	}
	s.AppendModelChange(ctx, "anthropic", "claude-sonnet-4")
	s.AppendMessage(ctx, map[string]any{"role": "user", "content": "Why does the salt check fail?", "timestamp": 1796028684626})
	fmt.Println("stored before the answer:", s.Flushed())

	w, err := s.AppendMessage(ctx, map[string]any{
		"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Line 23 skips the Base64 step."}},
		"provider": "anthropic", "model": "claude-sonnet-4", "stopReason": "stop", "timestamp": 1796028685626})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("stored after the answer:", s.Flushed(), w.Seq == s.LastSeq())

	ctxt := s.BuildContext()
	fmt.Println("model:", ctxt.Model.Provider+"/"+ctxt.Model.ModelID)
	fmt.Println("messages for the model:", len(s.LLMMessages()))
	// Output:
	// stored before the answer: false
	// stored after the answer: true true
	// model: anthropic/claude-sonnet-4
	// messages for the model: 2
}

// A worker with NATS credentials writes on JetStream directly: the same
// Session, without pi-node on the path.
func ExampleJetStreamURL() {
	ctx := context.Background()
	c, err := client.New(ctx, client.JetStreamURL(os.Getenv("NATS_URL")))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	s, _ := c.Create()
	if _, err := s.AppendMessage(ctx, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Hello."}},
		"provider": "anthropic", "model": "claude-sonnet-4", "timestamp": 1}); err != nil {
		log.Fatal(err)
	}

	// Any other worker, on any transport, can pick the session up.
	h, _ := client.New(ctx, client.HTTP(os.Getenv("PI_CTL_HTTP")))
	defer h.Close()
	same, err := h.Open(ctx, s.ID())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(same.Entries()), "entry,", same.LeafID() == s.LeafID())
	// Output: 1 entry, true
}

// An assistant message and its tool results go as one atomic append: all
// of them are stored, or none.
func ExampleSession_Append() {
	ctx := context.Background()
	c, _ := client.New(ctx, client.HTTP(os.Getenv("PI_CTL_HTTP")))
	defer c.Close()
	s, _ := c.Create()
	s.AppendMessage(ctx, map[string]any{"role": "user", "content": "What is in go.mod?", "timestamp": 1})
	w, err := s.Append(ctx,
		client.Message(map[string]any{"role": "assistant", "provider": "anthropic", "model": "claude-sonnet-4", "stopReason": "toolUse", "timestamp": 2,
			"content": []any{map[string]any{"type": "toolCall", "id": "call_1", "name": "read", "arguments": map[string]any{"path": "go.mod"}}}}),
		client.Message(map[string]any{"role": "toolResult", "toolCallId": "call_1", "toolName": "read", "isError": false, "timestamp": 3,
			"content": []any{map[string]any{"type": "text", "text": "module example.com/demo"}}}),
	)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(w.IDs), "entries in one write; the leaf is the last:", s.LeafID() == w.ID)
	for _, n := range s.Tree() {
		for ; n != nil; n = first(n.Children) {
			fmt.Println(n.Preview)
		}
	}
	// Output:
	// 2 entries in one write; the leaf is the last: true
	// user: What is in go.mod?
	// assistant: → read(go.mod)
	// toolResult read: module example.com/demo
}

func first(ns []*client.Node) *client.Node {
	if len(ns) == 0 {
		return nil
	}
	return ns[0]
}

// Backtracking only moves the leaf: the next turn becomes a sibling, and
// the tree keeps both branches.
func ExampleSession_Branch() {
	ctx := context.Background()
	c, _ := client.New(ctx, client.HTTP(os.Getenv("PI_CTL_HTTP")))
	defer c.Close()
	s, _ := c.Create()
	q, _ := s.AppendMessage(ctx, map[string]any{"role": "user", "content": "Fix the test.", "timestamp": 1})
	a, _ := s.AppendMessage(ctx, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Done."}},
		"provider": "anthropic", "model": "claude-sonnet-4", "timestamp": 2})
	s.Label(ctx, a.ID, "first try")

	if err := s.Branch(ctx, q.ID); err != nil { // back to the question
		log.Fatal(err)
	}
	s.AppendMessage(ctx, map[string]any{"role": "user", "content": "Fix it without mocks.", "timestamp": 3})

	fmt.Println("children of the question:", len(s.Children(q.ID)))
	fmt.Println("path to the leaf:", len(s.Path("")), "entries")
	fmt.Println("labels:", s.Labels()[a.ID])
	// Output:
	// children of the question: 2
	// path to the leaf: 2 entries
	// labels: first try
}

// Two workers share a client id: the one whose cursor was moved under it
// is told so — its entry is stored — and decides whom to follow.
func ExampleCursorMovedError() {
	ctx := context.Background()
	c, _ := client.New(ctx, client.HTTP(os.Getenv("PI_CTL_HTTP")))
	defer c.Close()
	a, _ := c.Create(client.WithClientID("worker-7"))
	a.AppendMessage(ctx, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Ready."}},
		"provider": "anthropic", "model": "claude-sonnet-4", "timestamp": 1})

	b, _ := c.Open(ctx, a.ID(), client.WithClientID("worker-7")) // resumes at the cursor
	b.AppendMessage(ctx, map[string]any{"role": "user", "content": "from b", "timestamp": 2})

	w, err := a.AppendMessage(ctx, map[string]any{"role": "user", "content": "from a", "timestamp": 3})
	var moved *client.CursorMovedError
	if errors.As(err, &moved) {
		fmt.Println("stored anyway:", w.Seq > 0)
		fmt.Println("the cursor is at b's entry:", moved.Cursor.LeafID == b.LeafID())
		a.AdoptCursor(ctx) // follow b (or OverwriteCursor to take it back)
	}
	fmt.Println("a stands where b does:", a.LeafID() == b.LeafID())
	// Output:
	// stored anyway: true
	// the cursor is at b's entry: true
	// a stands where b does: true
}

// A fork of a path without an answer stays in memory, as in pi.
func ExampleSession_Fork() {
	ctx := context.Background()
	c, _ := client.New(ctx, client.HTTP(os.Getenv("PI_CTL_HTTP")))
	defer c.Close()
	s, _ := c.Create()
	q, _ := s.AppendMessage(ctx, map[string]any{"role": "user", "content": "Plan the migration.", "timestamp": 1})
	s.AppendMessage(ctx, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Step one: ..."}},
		"provider": "anthropic", "model": "claude-sonnet-4", "timestamp": 2})

	f, _ := s.Fork(ctx, q.ID)
	fmt.Println("fork stored:", f.Flushed())
	f.AppendMessage(ctx, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Another plan: ..."}},
		"provider": "anthropic", "model": "claude-sonnet-4", "timestamp": 3})
	fmt.Println("fork stored:", f.Flushed())
	// Output:
	// fork stored: false
	// fork stored: true
}

// Search finds entries across sessions, on abandoned branches too: OnPath
// tells them apart, and the snippet marks what matched.
func ExampleClient_Search() {
	ctx := context.Background()
	c, _ := client.New(ctx, client.HTTP(os.Getenv("PI_CTL_HTTP")))
	defer c.Close()
	s, _ := c.Create(client.WithCwd("/home/dev/search-example"))
	q, _ := s.AppendMessage(ctx, map[string]any{"role": "user", "content": "Why does the salt check fail?", "timestamp": 1})
	answer := func(text string) (client.Written, error) {
		return s.AppendMessage(ctx, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}},
			"provider": "anthropic", "model": "claude-sonnet-4", "timestamp": 2})
	}
	answer("The salt is not Base64.")
	s.Branch(ctx, q.ID) // that answer is left behind
	w, _ := answer("Let me read auth.ts first.")

	r, err := c.Search(ctx, "base64 cwd:/home/dev/search-example", client.SearchMinSeq(w.Seq))
	if err != nil {
		log.Fatal(err)
	}
	for _, h := range r.Hits {
		fmt.Print(h.Role, " on the path: ", h.OnPath, ": ")
		for _, p := range h.Snippet {
			if p.Match {
				p.Text = "[" + p.Text + "]"
			}
			fmt.Print(p.Text)
		}
		fmt.Println()
	}
	r, _ = c.Search(ctx, "base64 cwd:/home/dev/search-example", client.SearchPathOnly())
	fmt.Println("on the path only:", len(r.Hits), "hits")
	// Output:
	// assistant on the path: false: The salt is not [Base64].
	// on the path only: 0 hits
}
