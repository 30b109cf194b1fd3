package tree

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestPreview(t *testing.T) {
	const head = `"id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z"`
	long := strings.Repeat("é", 250)
	for _, tc := range []struct{ line, want string }{
		{`{"type":"message",` + head + `,"message":{"role":"user","content":"  why?\n\nmore","timestamp":1}}`, "user: why? …"},
		{`{"type":"message",` + head + `,"message":{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","data":"","mimeType":"image/png"},{"type":"image"}]}}`, "user: look [2 images]"},
		{`{"type":"message",` + head + `,"message":{"role":"user","content":""}}`, "user: (empty)"},
		{`{"type":"message",` + head + `,"message":{"role":"user","content":"` + long + `"}}`, "user: " + strings.Repeat("é", 199) + "…"},
		{`{"type":"message",` + head + `,"message":{"role":"assistant","content":[{"type":"text","text":"Reading."},{"type":"toolCall","id":"c","name":"read","arguments":{"path":"src/auth.ts","limit":5}}]}}`, "assistant: Reading. → read(src/auth.ts)"},
		{`{"type":"message",` + head + `,"message":{"role":"assistant","content":[{"type":"toolCall","name":"grep","arguments":{"path":"src","pattern":"function hash"}},{"type":"toolCall","name":"noop","arguments":{}},{"type":"toolCall","name":"calc","arguments":{"x":1}}]}}`, `assistant: → grep(function hash, src), noop(), calc({"x":1})`},
		{`{"type":"message",` + head + `,"message":{"role":"assistant","content":[{"type":"toolCall","name":"mcp","arguments":{"n":2,"title":"t\nu"}}]}}`, "assistant: → mcp(t …)"},
		{`{"type":"message",` + head + `,"message":{"role":"assistant","content":[{"type":"toolCall","name":"a"},{"type":"toolCall","name":"b"},{"type":"toolCall","name":"c"},{"type":"toolCall","name":"d"},{"type":"toolCall","name":"e"}]}}`, "assistant: → a(), b(), c(), +2 more"},
		{`{"type":"message",` + head + `,"message":{"role":"assistant","content":[],"stopReason":"aborted"}}`, "assistant: (aborted)"},
		{`{"type":"message",` + head + `,"message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"fetch failed"}}`, "assistant: error: fetch failed"},
		{`{"type":"message",` + head + `,"message":{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"}]}}`, "assistant: (thinking) hmm"},
		{`{"type":"message",` + head + `,"message":{"role":"assistant","content":[]}}`, "assistant: (no content)"},
		{`{"type":"message",` + head + `,"message":{"role":"toolResult","toolName":"edit","isError":true,"content":[{"type":"text","text":"oldText not found"}]}}`, "toolResult edit (error): oldText not found"},
		{`{"type":"message",` + head + `,"message":{"role":"toolResult","toolName":"bash","content":[]}}`, "toolResult bash: (no output)"},
		{`{"type":"message",` + head + `,"message":{"role":"bashExecution","command":"make","exitCode":2}}`, "bash: make (exit 2)"},
		{`{"type":"message",` + head + `,"message":{"role":"bashExecution","command":"sleep 9","exitCode":null,"cancelled":true}}`, "bash: sleep 9 (cancelled)"},
		{`{"type":"message",` + head + `,"message":{"role":"hookMessage","customType":"ext","content":"hi"}}`, "[ext]: hi"},
		{`{"type":"message",` + head + `,"message":{"role":"robot","content":"beep"}}`, "[robot]: beep"},
		{`{"type":"message",` + head + `,"message":{"content":"x"}}`, "[message]"},
		{`{"type":"custom_message",` + head + `,"customType":"plan","content":[{"type":"text","text":"step 1"}],"display":true}`, "[plan]: step 1"},
		{`{"type":"compaction",` + head + `,"summary":"## Goal\nfix","firstKeptEntryId":"a0","tokensBefore":12500}`, "[compaction: 13k tokens] ## Goal …"},
		{`{"type":"compaction",` + head + `,"summary":"","tokensBefore":1499}`, "[compaction: 1k tokens] (empty summary)"},
		{`{"type":"branch_summary",` + head + `,"fromId":"root","summary":"tried X"}`, "[branch summary] tried X"},
		{`{"type":"model_change",` + head + `,"provider":"anthropic","modelId":"claude-3-7-sonnet"}`, "[model anthropic/claude-3-7-sonnet]"},
		{`{"type":"thinking_level_change",` + head + `,"thinkingLevel":"high"}`, "[thinking high]"},
		{`{"type":"label",` + head + `,"targetId":"b2","label":"root_cause_found"}`, "[label b2: root_cause_found]"},
		{`{"type":"label",` + head + `,"targetId":"b2","label":""}`, "[label b2 cleared]"},
		{`{"type":"label",` + head + `,"targetId":"b2"}`, "[label b2 cleared]"},
		{`{"type":"session_info",` + head + `,"name":"\u3000 auth \ufeff"}`, "[name auth]"},
		{`{"type":"session_info",` + head + `,"name":" "}`, "[name cleared]"},
		{`{"type":"custom",` + head + `,"customType":"todo","data":{}}`, "[custom todo]"},
		{`{"type":"future_thing",` + head + `}`, "[future_thing]"},
		// Terminal safety: ESC, tabs, lone surrogates, U+2028 as a line break.
		{`{"type":"message",` + head + `,"message":{"role":"user","content":"\u001b[31mred\tx \ud83d"}}`, "user: ␛[31mred x \uFFFD"},
		{`{"type":"message",` + head + `,"message":{"role":"user","content":"one\u2028two"}}`, "user: one …"},
	} {
		e, err := ParseEntry([]byte(tc.line))
		if err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		if got := e.Preview(); got != tc.want {
			t.Errorf("Preview(%.70s…)\n got %q\nwant %q", tc.line, got, tc.want)
		}
	}
}

// TestPreviewConformance previews every entry of every conformance file:
// one printable line of bounded length, whatever the entry holds.
func TestPreviewConformance(t *testing.T) {
	// Every set but pi 1.1's refused files (p13: no session to preview).
	var files []string
	for _, set := range []string{"pi-v1", "pi-v2", "pi-v3", "pi-v3-1.1"} {
		more, _ := filepath.Glob(filepath.Join(conformanceDir(t), set, "*", "*.jsonl"))
		for _, p := range more {
			if filepath.Base(filepath.Dir(p)) != "p13-refused-files" {
				files = append(files, p)
			}
		}
	}
	if len(files) == 0 {
		t.Fatal("no conformance session files")
	}
	n := 0
	for _, path := range files {
		f, err := Read(mustRead(t, path), ReadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for i := range f.Len() {
			p := f.Entry(i).Preview()
			n++
			switch {
			case p == "":
				t.Errorf("%s entry %d: empty preview", path, i)
			case !utf8.ValidString(p):
				t.Errorf("%s entry %d: invalid UTF-8 %q", path, i, p)
			case strings.IndexFunc(p, func(r rune) bool { return unicode.IsControl(r) || isLineBreak(r) }) >= 0:
				t.Errorf("%s entry %d: control character in %q", path, i, p)
			case utf8.RuneCountInString(p) > 3*previewMaxRunes:
				t.Errorf("%s entry %d: preview of %d runes", path, i, utf8.RuneCountInString(p))
			}
		}
	}
	if n < 1000 {
		t.Errorf("only %d entries previewed", n)
	}
}

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain 中文 👍":    "plain 中文 👍",
		"a\tb":          "a b",
		"\x00\x1b\x7f":  "␀␛␡",
		"\u0085x\u2028": "␤x␤",
		"\u009bx":       "\uFFFDx",
		"bad\xffbyte":   "bad\uFFFDbyte",
		"\xed\xa0\xbd":  "\uFFFD", // WTF-8 of a lone surrogate
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
