package tree

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// previewMaxRunes caps each text part of a preview, like pi's /tree (which
// looks at the first 200 characters), so a megabyte of tool output never
// becomes a megabyte of listing.
const previewMaxRunes = 200

// Preview returns a one-line description of the entry for tree listings in
// the spirit of pi's /tree:
//
//	user: first line of the text …
//	assistant: first line of the text → read(src/auth.ts), grep(hash, src)
//	toolResult read: first line of the output
//	bash: make test (exit 2)
//	[model anthropic/claude-3-7-sonnet]   [thinking high]
//	[compaction: 12k tokens] first line of the summary
//	[branch summary] first line of the summary
//	[label 84c91d9d: root_cause_found]    [name auth salt debugging]
//	[my-extension]: first line of a custom message   [custom my-state]
//
// "…" marks text left out. The result is safe to print on a terminal: no line
// breaks, control characters shown as Unicode control pictures (␛ for ESC),
// lone surrogates and invalid bytes as U+FFFD. It is not cut to any width;
// that is the caller's business.
func (e *Entry) Preview() string {
	v, err := jsjson.ParseValue(e.Raw)
	if err != nil || v.Kind != KindObject {
		return "[" + Printable(e.Type()) + "]" // unreachable for a parsed entry
	}
	switch e.Kind {
	case KindMessage:
		m, _ := v.Get("message")
		if m == nil || m.Kind != KindObject {
			return "[message]"
		}
		return messagePreview(m)
	case KindCustomMessage:
		return customPreview(&v)
	case KindCompaction:
		head := "[compaction]"
		if t, ok := v.Get("tokensBefore"); ok && t.Kind == KindNumber {
			head = "[compaction: " + jsjson.FormatNumber(jsRound(t.Num/1000)) + "k tokens]"
		}
		return head + " " + orEmpty(textLine(strField(&v, "summary")), "(empty summary)")
	case KindBranchSummary:
		return "[branch summary] " + orEmpty(textLine(strField(&v, "summary")), "(empty summary)")
	case KindModelChange:
		return "[model " + Printable(strField(&v, "provider")) + "/" + Printable(strField(&v, "modelId")) + "]"
	case KindThinkingLevelChange:
		return "[thinking " + Printable(strField(&v, "thinkingLevel")) + "]"
	case KindLabel:
		target := Printable(strField(&v, "targetId"))
		if l, ok := v.Get("label"); ok {
			if raw := l.AppendJSON(nil); jsjson.Truthy(raw) {
				return "[label " + target + ": " + clip(Printable(jsjson.ToString(raw))) + "]"
			}
		}
		return "[label " + target + " cleared]"
	case KindSessionInfo:
		return "[name " + orEmpty(clip(Printable(jsjson.Trim(strField(&v, "name")))), "cleared") + "]"
	case KindCustom:
		return "[custom " + Printable(strField(&v, "customType")) + "]"
	}
	return "[" + orEmpty(Printable(e.Type()), "unknown") + "]"
}

// messagePreview describes one AgentMessage by its role.
func messagePreview(m *Value) string {
	role := strField(m, "role")
	switch role {
	case "user":
		return "user: " + orEmpty(contentPreview(m), "(empty)")
	case "assistant":
		return "assistant: " + assistantPreview(m)
	case "toolResult":
		head := "toolResult " + orEmpty(Printable(strField(m, "toolName")), "tool")
		if isErr, ok := m.Get("isError"); ok && isErr.Kind == KindBool && isErr.Bool {
			head += " (error)"
		}
		return head + ": " + orEmpty(contentPreview(m), "(no output)")
	case "bashExecution":
		s := "bash: " + textLine(strField(m, "command"))
		if c, ok := m.Get("cancelled"); ok && c.Kind == KindBool && c.Bool {
			s += " (cancelled)"
		} else if code, ok := m.Get("exitCode"); ok && code.Kind == KindNumber && code.Num != 0 {
			s += " (exit " + jsjson.FormatNumber(code.Num) + ")"
		}
		return s
	case "custom", "hookMessage":
		return customPreview(m)
	case "":
		return "[message]"
	}
	text := contentPreview(m)
	if text == "" {
		return "[" + Printable(role) + "]"
	}
	return "[" + Printable(role) + "]: " + text
}

// customPreview describes a custom_message entry or a custom-role message.
func customPreview(v *Value) string {
	return "[" + orEmpty(Printable(strField(v, "customType")), "custom") + "]: " + orEmpty(contentPreview(v), "(empty)")
}

// assistantPreview shows the text, then the tool calls; without either, why
// the message is empty.
func assistantPreview(m *Value) string {
	var text, thinking strings.Builder
	var calls []string
	if c, ok := m.Get("content"); ok {
		switch c.Kind {
		case KindString:
			text.WriteString(c.Str)
		case KindArray:
			for k := range c.Arr {
				b := &c.Arr[k]
				switch strField(b, "type") {
				case "text":
					text.WriteString(strField(b, "text"))
					text.WriteByte('\n')
				case "thinking":
					thinking.WriteString(strField(b, "thinking"))
					thinking.WriteByte('\n')
				case "toolCall":
					args, _ := b.Get("arguments")
					calls = append(calls, toolCallPreview(strField(b, "name"), args))
				}
			}
		}
	}
	parts := make([]string, 0, 2)
	if t := textLine(text.String()); t != "" {
		parts = append(parts, t)
	}
	if len(calls) > maxCalls {
		calls = append(calls[:maxCalls], "+"+strconv.Itoa(len(calls)-maxCalls)+" more")
	}
	if len(calls) > 0 {
		parts = append(parts, "→ "+strings.Join(calls, ", "))
	}
	switch {
	case len(parts) > 0:
		return strings.Join(parts, " ")
	case strField(m, "stopReason") == "aborted":
		return "(aborted)"
	case strField(m, "errorMessage") != "":
		return "error: " + textLine(strField(m, "errorMessage"))
	case strings.TrimSpace(thinking.String()) != "":
		return "(thinking) " + textLine(thinking.String())
	}
	return "(no content)"
}

// maxCalls is how many tool calls of one message a preview names.
const maxCalls = 3

// toolArgKeys are the arguments that say most about a call, best first:
// bash's command, grep's and find's pattern, a file tool's path, a search
// query, a fetched URL.
var toolArgKeys = []string{"command", "pattern", "path", "file_path", "query", "url"}

// toolCallPreview renders a call as name(arg, arg): up to two of the telling
// string arguments, else the first string argument, else compact JSON.
func toolCallPreview(name string, args *Value) string {
	name = orEmpty(clipN(Printable(name), 40), "tool")
	if args == nil || args.Kind != KindObject || len(args.Obj) == 0 {
		return name + "()"
	}
	var shown []string
	for _, k := range toolArgKeys {
		if a, ok := args.Get(k); ok && a.Kind == KindString && len(shown) < 2 {
			shown = append(shown, clipN(textLine(a.Str), 60))
		}
	}
	if len(shown) == 0 {
		for _, m := range args.Obj {
			if m.Val.Kind == KindString {
				shown = append(shown, clipN(textLine(m.Val.Str), 60))
				break
			}
		}
	}
	if len(shown) == 0 {
		shown = append(shown, clipN(Printable(string(args.AppendJSON(nil))), 40))
	}
	return name + "(" + strings.Join(shown, ", ") + ")"
}

// contentPreview is the first line of a message's content (a string or an
// array of text and image blocks), followed by a note of any images.
func contentPreview(m *Value) string {
	c, ok := m.Get("content")
	if !ok {
		return ""
	}
	var text strings.Builder
	images := 0
	switch c.Kind {
	case KindString:
		text.WriteString(c.Str)
	case KindArray:
		for k := range c.Arr {
			switch strField(&c.Arr[k], "type") {
			case "text":
				text.WriteString(strField(&c.Arr[k], "text"))
				text.WriteByte('\n')
			case "image":
				images++
			}
		}
	}
	s := textLine(text.String())
	if images > 0 {
		note := "[image]"
		if images > 1 {
			note = "[" + strconv.Itoa(images) + " images]"
		}
		s = strings.TrimSpace(s + " " + note)
	}
	return s
}

// strField returns v[key] if it is a string, else "".
func strField(v *Value, key string) string {
	if f, ok := v.Get(key); ok && f.Kind == KindString {
		return f.Str
	}
	return ""
}

func orEmpty(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// jsRound is JavaScript's Math.round: halves round towards +Infinity.
func jsRound(f float64) float64 {
	r := math.Floor(f)
	if f-r >= 0.5 {
		r++
	}
	return r
}

// isLineBreak reports the characters that end a line on a terminal or in an
// editor: LF, VT, FF, CR, NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR.
func isLineBreak(r rune) bool {
	return r == '\n' || r == '\v' || r == '\f' || r == '\r' || r == 0x85 || r == 0x2028 || r == 0x2029
}

// textLine returns the first non-blank line of s, trimmed, printable and
// clipped, with " …" when more text follows.
func textLine(s string) string {
	rest := strings.TrimLeftFunc(s, func(r rune) bool { return jsjson.IsWhitespace(r) || isLineBreak(r) })
	line := rest
	if i := strings.IndexFunc(rest, isLineBreak); i >= 0 {
		line, rest = rest[:i], rest[i:]
	} else {
		rest = ""
	}
	out := clip(Printable(jsjson.Trim(line)))
	if jsjson.Trim(rest) != "" && !strings.HasSuffix(out, "…") {
		out += " …"
	}
	return out
}

// clip cuts s to previewMaxRunes runes, marking the cut with "…".
func clip(s string) string { return clipN(s, previewMaxRunes) }

func clipN(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	k := 0
	for i := range s {
		if k == n-1 {
			return s[:i] + "…"
		}
		k++
	}
	return s
}

// Printable makes s safe to print on one line of a terminal: invalid UTF-8
// (including the WTF-8 of lone surrogates) becomes U+FFFD, a tab a space, and
// every other control character its Unicode control picture (␛ for ESC, ␊
// for LF, ␤ for NEL and U+2028/U+2029), so an escape sequence in a message
// cannot drive the operator's terminal. Preview applies it; callers printing other session text (ids,
// labels, lines of a transcript) should too.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || r < 0x20 || (r >= 0x7f && r < 0xa0) || r == 0x2028 || r == 0x2029 {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '\t':
			b.WriteByte(' ')
		case r < 0x20:
			b.WriteRune(0x2400 + r) // ␀ … ␟
		case r == 0x7f:
			b.WriteRune(0x2421) // ␡
		case r == 0x85 || r == 0x2028 || r == 0x2029:
			b.WriteRune(0x2424) // ␤: a line break that must not break the line
		case r >= 0x80 && r < 0xa0:
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
