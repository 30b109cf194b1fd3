package main

import (
	"bufio"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/pifleet/sessionlog/internal/termtext"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// Limits of the text transcript unless --full: enough to follow a session,
// not a whole file dump per tool call.
const (
	maxOutputLines = 12  // tool output, bash output
	maxThinking    = 6   // lines of a thinking block
	maxLineCols    = 200 // columns of one line of cut text
	maxArgsCols    = 300 // columns of a tool call's JSON arguments
)

// transcript writes context messages as readable text: a heading per
// message (number, role, what it is about, time) and its content.
type transcript struct {
	w    *bufio.Writer
	full bool
}

// message renders one AgentMessage (raw JSON, as pi returns it).
func (t *transcript) message(n int, raw []byte) {
	v, err := jsjson.ParseValue(raw)
	if err != nil || v.Kind != tree.KindObject {
		t.heading(n, "?", "")
		t.text(string(raw), 1, maxArgsCols)
		return
	}
	role := strOf(&v, "role")
	switch role {
	case "user":
		t.heading(n, "user", msgTime(&v))
		t.content(&v, 0)
	case "assistant":
		about := joinNonEmpty(" · ", modelName(&v, "model"), stopNote(strOf(&v, "stopReason")))
		t.heading(n, "assistant", joinNonEmpty(" · ", about, msgTime(&v)))
		t.content(&v, 0)
		if em := strOf(&v, "errorMessage"); em != "" {
			t.text("error: "+em, maxOutputLines, maxLineCols)
		}
	case "toolResult":
		about := tree.Printable(strOf(&v, "toolName"))
		if boolOf(&v, "isError") {
			about += " (error)"
		}
		t.heading(n, "toolResult", joinNonEmpty(" · ", about, msgTime(&v)))
		t.content(&v, maxOutputLines)
	case "system":
		// pi 1.1: a change of the system prompt, by section and tool.
		t.heading(n, "system", msgTime(&v))
		t.systemMessage(&v)
	case "bashExecution":
		t.heading(n, "bash", msgTime(&v))
		t.text("$ "+strOf(&v, "command"), 0, 0)
		if out := strOf(&v, "output"); out != "" {
			t.text(out, maxOutputLines, maxLineCols)
		} else {
			t.line("(no output)")
		}
		switch code := numOf(&v, "exitCode"); {
		case boolOf(&v, "cancelled"):
			t.line("(cancelled)")
		case code != "" && code != "0":
			t.line("(exit code " + code + ")")
		}
	case "custom":
		about := tree.Printable(strOf(&v, "customType"))
		if d, ok := v.Get("display"); ok && d.Kind == tree.KindBool && !d.Bool {
			about += " (not displayed)"
		}
		t.heading(n, "custom", joinNonEmpty(" · ", about, msgTime(&v)))
		t.content(&v, 0)
	case "branchSummary":
		t.heading(n, "branch summary", joinNonEmpty(" · ", "from "+tree.Printable(strOf(&v, "fromId")), msgTime(&v)))
		t.text(strOf(&v, "summary"), 0, 0)
	case "compactionSummary":
		t.heading(n, "compaction summary", joinNonEmpty(" · ", numOf(&v, "tokensBefore")+" tokens before", msgTime(&v)))
		t.text(strOf(&v, "summary"), 0, 0)
	default:
		t.heading(n, tree.Printable(role), msgTime(&v))
		t.text(string(v.AppendJSON(nil)), 1, maxArgsCols)
	}
}

// heading starts a message: "── 3. toolResult · read · 2026-…".
func (t *transcript) heading(n int, role, about string) {
	if n > 1 {
		t.w.WriteByte('\n')
	}
	t.line("── " + joinNonEmpty(" · ", strconv.Itoa(n)+". "+role, about))
}

// content renders "content": a string, or text, thinking, tool call and
// image blocks. maxLines cuts text blocks (tool output); 0 keeps them whole.
func (t *transcript) content(v *tree.Value, maxLines int) {
	c, ok := v.Get("content")
	if !ok {
		return
	}
	if c.Kind == tree.KindString {
		t.text(c.Str, maxLines, maxLineCols)
		return
	}
	if c.Kind != tree.KindArray {
		t.text(string(c.AppendJSON(nil)), 1, maxArgsCols)
		return
	}
	for k := range c.Arr {
		b := &c.Arr[k]
		switch strOf(b, "type") {
		case "text":
			t.text(strOf(b, "text"), maxLines, maxLineCols)
		case "thinking":
			t.text("(thinking) "+strOf(b, "thinking"), maxThinking, maxLineCols)
		case "toolCall":
			args := "{}"
			if a, ok := b.Get("arguments"); ok {
				args = string(a.AppendJSON(nil))
			}
			t.text("→ "+strOf(b, "name")+" "+args, 1, maxArgsCols)
		case "image":
			size := ""
			if d, ok := b.Get("data"); ok && d.Kind == tree.KindString {
				size = ", " + strconv.Itoa(len(d.Str)*3/4) + " bytes"
			}
			t.line("[image " + tree.Printable(strOf(b, "mimeType")) + size + "]")
		default:
			t.text(string(b.AppendJSON(nil)), 1, maxArgsCols)
		}
	}
}

// text writes s line by line, made printable. Unless --full, it keeps
// maxLines lines (0: all) of at most cols columns (0: any width) and says
// how much it left out.
func (t *transcript) text(s string, maxLines, cols int) {
	lines := strings.Split(strings.TrimRight(strings.ReplaceAll(s, "\r\n", "\n"), "\n"), "\n")
	if t.full {
		maxLines, cols = 0, 0
	}
	shown := lines
	if maxLines > 0 && len(lines) > maxLines {
		shown = lines[:maxLines]
	}
	for _, l := range shown {
		t.line(termtext.Cut(tree.Printable(l), cols))
	}
	if left := len(lines) - len(shown); left > 0 {
		t.line("… " + plural(left, "more line") + " (--full shows them)")
	}
}

func (t *transcript) line(s string) {
	t.w.WriteString(s)
	t.w.WriteByte('\n')
}

// msgTime is the message's "timestamp" (Unix milliseconds) in pi's ISO form.
func msgTime(v *tree.Value) string {
	ts, ok := v.Get("timestamp")
	if !ok || ts.Kind != tree.KindNumber || math.IsNaN(ts.Num) || math.IsInf(ts.Num, 0) {
		return ""
	}
	return tree.FormatTimestamp(time.UnixMilli(int64(ts.Num)))
}

// stopNote mentions a stop reason other than the usual "stop" and "toolUse".
func stopNote(reason string) string {
	switch reason {
	case "", "stop", "toolUse":
		return ""
	}
	return "stopped: " + tree.Printable(reason)
}

// systemMessage renders pi 1.1's system message: each section set (its
// text cut) or removed, the tools added and removed, and any content.
func (t *transcript) systemMessage(v *tree.Value) {
	if secs, ok := v.Get("sections"); ok && secs.Kind == tree.KindObject {
		for _, m := range secs.Obj {
			if m.Val.Kind != tree.KindString {
				t.line("section " + tree.Printable(m.Key) + " removed")
				continue
			}
			t.line("section " + tree.Printable(m.Key) + ":")
			t.text(m.Val.Str, maxThinking, maxLineCols)
		}
	}
	for _, k := range []struct{ key, sign string }{{"toolsAdded", "+"}, {"toolsRemoved", "-"}} {
		tools, ok := v.Get(k.key)
		if !ok || tools.Kind != tree.KindArray || len(tools.Arr) == 0 {
			continue
		}
		names := make([]string, 0, len(tools.Arr))
		for i := range tools.Arr {
			names = append(names, k.sign+tree.Printable(strOf(&tools.Arr[i], "name")))
		}
		t.line("tools " + strings.Join(names, " "))
	}
	if c := strOf(v, "content"); c != "" {
		t.text(c, maxOutputLines, maxLineCols)
	} else if c, ok := v.Get("content"); ok && c.Kind == tree.KindArray {
		t.content(v, maxOutputLines)
	}
}
