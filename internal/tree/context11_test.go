package tree_test

import (
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/conformance"
	"github.com/pifleet/sessionlog/internal/tree"
)

// TestContextPi11Corners: what pi 1.1's buildSessionProjection does that
// the vectors do not show — messages without content get their role's
// default, and an edit of a custom_message reaches the LLM messages.
func TestContextPi11Corners(t *testing.T) {
	file := `{"type":"session","version":3,"id":"01a22bdc-6ce8-7741-8406-3ad384bc1b94","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}
{"type":"message","id":"s1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"system","sections":{"a":"x"}}}
{"type":"message","id":"u1","parentId":"s1","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":null,"timestamp":1}}
{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"assistant","provider":"p","model":"m","timestamp":2}}
{"type":"custom_message","id":"c1","parentId":"a1","timestamp":"2026-01-01T00:00:00.000Z","customType":"k","content":"long","display":true}
{"type":"context_edit","id":"e1","parentId":"c1","timestamp":"2026-01-01T00:00:00.000Z","targetId":"c1","replacement":{"content":"short"}}
{"type":"context_edit","id":"e2","parentId":"e1","timestamp":"2026-01-01T00:00:00.000Z","targetId":"a1","replacement":{"content":"said"}}
`
	f, err := tree.Read([]byte(file), tree.ReadOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	c := f.ContextAt(f.Len() - 1)
	got := conformance.MustValue(t, c.AppendJSON(nil, tree.ContextOptions{EntryIDs: true}))
	want := conformance.MustValue(t, []byte(`{"leafId":"e2","path":["s1","u1","a1","c1","e1","e2"],"thinkingLevel":"off","model":{"provider":"p","modelId":"m"},
		"contextEntryIds":["s1","u1","a1","c1","e1","e2"],
		"messages":[{"role":"system","sections":{"a":"x"},"content":""},{"role":"user","content":[],"timestamp":1},
		{"role":"assistant","provider":"p","model":"m","timestamp":2,"content":[{"type":"text","text":"said"}]},
		{"role":"custom","customType":"k","content":"short","display":true,"timestamp":1767225600000}]}`))
	if d := conformance.Diff("context", got, want); d != "" {
		t.Error(d)
	}
	llm := string(c.AppendJSON(nil, tree.ContextOptions{LLM: true}))
	if !strings.Contains(llm, `{"role":"user","content":[{"type":"text","text":"short"}],"timestamp":1767225600000}`) {
		t.Errorf("LLM messages without the edited custom message: %s", llm)
	}
}
