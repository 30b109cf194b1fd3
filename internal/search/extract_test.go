package search

import (
	"slices"
	"testing"
)

// TestExtract: what each kind of pi line puts in the index, and what it
// keeps out (thinking signatures, images, numbers in tool arguments,
// lines with nothing to search).
func TestExtract(t *testing.T) {
	for _, c := range []struct {
		name, line string
		ok         bool
		want       Doc
	}{
		{"user, string content", `{"type":"message","id":"u1","timestamp":"t","message":{"role":"user","content":"why does the salt check fail"}}`,
			true, Doc{Entry: "u1", Type: "message", Role: "user", Timestamp: "t", Text: "why does the salt check fail"}},
		{"assistant: text, thinking without its signature, a tool call's name and string arguments (members by key), no image", `{"type":"message","id":"a1","message":{"role":"assistant","model":"claude-sonnet-4-5","content":[` +
			`{"type":"thinking","thinking":"look at auth.ts","thinkingSignature":"SIGNATURE"},{"type":"text","text":"Reading it."},` +
			`{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"src/auth.ts","offset":40,"opts":["verbose"]}},{"type":"image","data":"iVBOR","mimeType":"image/png"}]}}`,
			true, Doc{Entry: "a1", Type: "message", Role: "assistant", Model: "claude-sonnet-4-5", Tools: []string{"read"}, Text: "look at auth.ts\nReading it.\nread\nverbose\nsrc/auth.ts"}},
		{"tool result", `{"type":"message","id":"r1","message":{"role":"toolResult","toolName":"read","content":[{"type":"text","text":"export function verifySalt"}]}}`,
			true, Doc{Entry: "r1", Type: "message", Role: "toolResult", Tools: []string{"read"}, Text: "export function verifySalt"}},
		{"custom_message", `{"type":"custom_message","id":"c1","customType":"notes","content":"remember the salt","display":true}`,
			true, Doc{Entry: "c1", Type: "custom_message", Role: "custom", Text: "notes\nremember the salt"}},
		{"compaction summary", `{"type":"compaction","id":"k1","summary":"## Goal\nfix the salt","firstKeptEntryId":"u1","tokensBefore":10}`,
			true, Doc{Entry: "k1", Type: "compaction", Text: "## Goal\nfix the salt"}},
		{"branch summary", `{"type":"branch_summary","id":"b1","fromId":"a1","summary":"tried base64"}`,
			true, Doc{Entry: "b1", Type: "branch_summary", Text: "tried base64"}},
		{"label", `{"type":"label","id":"l1","targetId":"a1","label":"root_cause_found"}`,
			true, Doc{Entry: "l1", Type: "label", Label: "root_cause_found", Text: "root_cause_found"}},
		{"session name", `{"type":"session_info","id":"n1","name":"auth salt debugging"}`,
			true, Doc{Entry: "n1", Type: "session_info", Name: "auth salt debugging", Text: "auth salt debugging"}},
		{"pi 1.1 system message: its sections (by key) and the tools it adds", `{"type":"message","id":"s1","message":{"role":"system","content":"","sections":{"preamble":"You are pi","cwd":"Current working directory: /w"},"toolsAdded":[{"name":"read","description":"Read a file","parameters":{"type":"object"}}]}}`,
			true, Doc{Entry: "s1", Type: "message", Role: "system", Text: "Current working directory: /w\nYou are pi\nread\nRead a file"}},
		{"pi 1.1 context_edit: the replacement", `{"type":"context_edit","id":"e1","targetId":"a1","replacement":{"content":[{"type":"text","text":"[elided] salt"}]}}`,
			true, Doc{Entry: "e1", Type: "context_edit", Text: "[elided] salt"}},
		{"pi 1.1 context_edit leaving the target out has nothing to search", `{"type":"context_edit","id":"e2","targetId":"a1","replacement":null}`, false, Doc{}},
		{"pi 1.1 usage with a note", `{"type":"usage","id":"g1","kind":"cache_warm","provider":"openai","model":"gpt-5","usage":{"input":1},"note":"warming the cache"}`,
			true, Doc{Entry: "g1", Type: "usage", Model: "gpt-5", Text: "warming the cache"}},
		{"pi 1.1 usage without a note has nothing to search", `{"type":"usage","id":"g2","kind":"x","provider":"p","model":"m","usage":{"input":1}}`, false, Doc{}},
		{"a model change has nothing to search", `{"type":"model_change","id":"m1","provider":"anthropic","modelId":"claude"}`, false, Doc{}},
		{"a cleared label has nothing to search", `{"type":"label","id":"l2","targetId":"a1"}`, false, Doc{}},
		{"the header is no entry", `{"type":"session","version":3,"id":"01a2","cwd":"/x"}`, false, Doc{}},
		{"an image alone has nothing to search", `{"type":"message","id":"u2","message":{"role":"user","content":[{"type":"image","data":"x","mimeType":"image/png"}]}}`, false, Doc{}},
		{"not JSON", `{"type":"message","id":`, false, Doc{}},
	} {
		got, ok := Extract([]byte(c.line))
		if ok != c.ok || got.Entry != c.want.Entry || got.Type != c.want.Type || got.Role != c.want.Role || got.Model != c.want.Model ||
			!slices.Equal(got.Tools, c.want.Tools) || got.Label != c.want.Label || got.Name != c.want.Name || got.Text != c.want.Text || got.Timestamp != c.want.Timestamp {
			t.Errorf("%s:\n got %v %+v\nwant %v %+v", c.name, ok, got, c.ok, c.want)
		}
	}
}
