package tree

import (
	"strings"

	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// The summary wrappers of pi's convertToLlm. Note the asymmetry: a compaction
// summary ends in "\n</summary>", a branch summary in "</summary>".
const (
	compactionPrefix = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
	compactionSuffix = "\n</summary>"
	branchPrefix     = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
	branchSuffix     = "</summary>"
)

// LLMMessages converts the context's messages as pi's convertToLlm does:
// user, assistant, toolResult and (pi 1.1) system pass through; bashExecution becomes a user
// text message (or is dropped when excludeFromContext); custom messages and
// summaries become user messages; anything else is dropped.
func (c *Context) LLMMessages() []Message {
	out := make([]Message, 0, len(c.Messages))
	for _, m := range c.Messages {
		switch m.Role {
		case RoleUser, RoleAssistant, RoleToolResult, RoleSystem:
			out = append(out, m)
		case RoleBashExecution:
			f := messageFields(m.JSON)
			if jsjson.Truthy(f["excludeFromContext"]) {
				continue
			}
			out = append(out, userText(bashExecutionText(f), f["timestamp"], m.src))
		case RoleCustom:
			var content, ts []byte
			if m.src.Kind == KindCustomMessage && !m.edited {
				content, ts = m.src.field(fCMContent), millisJSON(m.src.ms)
				if content == nil || string(content) == "null" {
					content = []byte(`[]`) // as customMessageJSON
				}
			} else {
				f := messageFields(m.JSON)
				content, ts = f["content"], f["timestamp"]
			}
			if len(content) > 0 && content[0] == '"' {
				content = textContent(jsjson.ToString(content))
			}
			out = append(out, Message{JSON: newObj(len(content)+64).str("role", "user").raw("content", content).raw("timestamp", ts).done(), Role: RoleUser, src: m.src})
		case roleBranchSummary:
			text := branchPrefix + jsjson.ToString(m.src.field(fBSummary)) + branchSuffix
			out = append(out, userText(text, millisJSON(m.src.ms), m.src))
		case roleCompactionSummary:
			text := compactionPrefix + jsjson.ToString(m.src.field(fCSummary)) + compactionSuffix
			out = append(out, userText(text, millisJSON(m.src.ms), m.src))
		}
	}
	return out
}

// textContent is [{"type":"text","text":s}].
func textContent(s string) []byte {
	b := append(make([]byte, 0, len(s)+32), `[{"type":"text","text":`...)
	b = jsjson.AppendString(b, s)
	return append(b, "}]"...)
}

func userText(text string, ts []byte, src *Entry) Message {
	return Message{JSON: newObj(len(text)+64).str("role", "user").raw("content", textContent(text)).raw("timestamp", ts).done(), Role: RoleUser, src: src}
}

// bashExecutionText is pi's bashExecutionToText, with JavaScript's
// conversions of whatever values the message holds.
func bashExecutionText(f map[string][]byte) string {
	var b strings.Builder
	b.WriteString("Ran `")
	b.WriteString(jsjson.ToString(f["command"]))
	b.WriteString("`\n")
	if out := f["output"]; jsjson.Truthy(out) {
		b.WriteString("```\n")
		b.WriteString(jsjson.ToString(out))
		b.WriteString("\n```")
	} else {
		b.WriteString("(no output)")
	}
	if jsjson.Truthy(f["cancelled"]) {
		b.WriteString("\n\n(command cancelled)")
	} else if code := f["exitCode"]; code != nil && string(code) != "null" && !isJSZero(code) {
		b.WriteString("\n\nCommand exited with code ")
		b.WriteString(jsjson.ToString(code))
	}
	if jsjson.Truthy(f["truncated"]) && jsjson.Truthy(f["fullOutputPath"]) {
		b.WriteString("\n\n[Output truncated. Full output: ")
		b.WriteString(jsjson.ToString(f["fullOutputPath"]))
		b.WriteString("]")
	}
	return b.String()
}

// isJSZero reports whether raw is the number 0 (x !== 0 is false for it).
func isJSZero(raw []byte) bool {
	f, ok := jsjson.ParseNumber(raw)
	return ok && f == 0
}

// messageFields returns the top-level members of a message object, raw.
// Only used for the rare roles convertToLlm rewrites.
func messageFields(raw []byte) map[string][]byte {
	m := make(map[string][]byte)
	eachMember(raw, func(k string, _, val []byte) { m[k] = val })
	return m
}
