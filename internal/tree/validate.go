package tree

import (
	"strconv"
	"strings"

	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// This file checks entries against the shapes pi's own types give them
// (session-manager.ts, messages.ts, and pi-ai's types.ts), so that what a
// client stores is something pi and the context algorithms can read. A
// field is required when pi's type declares it non-optional and every file
// pi writes has it; the others are checked for their JSON type only when
// present. Unknown fields and unknown entry types pass untouched, as pi
// keeps them.
//
// Left optional although pi's types declare them: a message's timestamp
// (pi reads it with a typeof check; most hand-built messages lack it), an
// assistant message's api, usage and stopReason (no session algorithm reads
// them), a tool result's isError, and a compaction's firstKeptEntryId (pi's
// own migration of version-1 files leaves it out when the index pointed at
// the header).

// ShapeError is an entry whose fields do not have the shape pi gives its
// type. Path names the offending member from the entry's top
// ("message.content[1].type"); Reason says what it must be.
type ShapeError struct {
	Path   string
	Reason string
}

func (e *ShapeError) Error() string {
	if e.Path == "" {
		return e.Reason
	}
	return e.Path + ": " + e.Reason
}

// CheckLine parses an entry line and checks it (see CheckEntry). A line
// that is not JSON is a *ShapeError with an empty Path.
func CheckLine(line []byte) error {
	v, err := jsjson.ParseValue(line)
	if err != nil {
		return &ShapeError{Reason: "not valid JSON: " + err.Error()}
	}
	return CheckEntry(&v)
}

// CheckEntry checks a parsed entry against pi's type for its "type": nil,
// or a *ShapeError naming the first offending member. Only the entry's own
// fields are checked; id, parentId and timestamp may be absent (writers
// fill them in), but have their types when present.
func CheckEntry(v *Value) error {
	c := checker{}
	c.entry(v)
	if c.err != nil {
		return c.err
	}
	return nil
}

// checker records the first problem found; later checks are no-ops.
type checker struct{ err *ShapeError }

func (c *checker) fail(path, reason string) {
	if c.err == nil {
		c.err = &ShapeError{Path: path, Reason: reason}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// kindNoun names a JSON kind as a message does ("a string").
func kindNoun(k ValueKind) string {
	switch k {
	case KindNull:
		return "null"
	case KindBool:
		return "a boolean"
	case KindNumber:
		return "a number"
	case KindString:
		return "a string"
	case KindArray:
		return "an array"
	}
	return "an object"
}

// field checks obj[key] for kind k. A missing field fails when required;
// the field is returned when it is present with that kind.
func (c *checker) field(obj *Value, path, key string, k ValueKind, required bool) *Value {
	if c.err != nil {
		return nil
	}
	f, ok := obj.Get(key)
	switch {
	case !ok && required:
		c.fail(join(path, key), "required: "+kindNoun(k))
		return nil
	case !ok:
		return nil
	case f.Kind != k:
		c.fail(join(path, key), "must be "+kindNoun(k)+", not "+kindNoun(f.Kind))
		return nil
	}
	return f
}

func (c *checker) req(obj *Value, path, key string, k ValueKind) *Value {
	return c.field(obj, path, key, k, true)
}

func (c *checker) opt(obj *Value, path, key string, k ValueKind) *Value {
	return c.field(obj, path, key, k, false)
}

func (c *checker) entry(v *Value) {
	if v.Kind != KindObject {
		c.fail("", "an entry must be a JSON object, not "+kindNoun(v.Kind))
		return
	}
	t := c.req(v, "", "type", KindString)
	c.opt(v, "", "id", KindString)
	if p, ok := v.Get("parentId"); ok && p.Kind != KindString && p.Kind != KindNull {
		c.fail("parentId", "must be an entry id or null, not "+kindNoun(p.Kind))
	}
	c.opt(v, "", "timestamp", KindString)
	if c.err != nil {
		return
	}
	switch t.Str {
	case "context_edit":
		c.contextEdit(v)
		return
	case "usage":
		c.req(v, "", "kind", KindString)
		c.req(v, "", "provider", KindString)
		c.req(v, "", "model", KindString)
		c.req(v, "", "usage", KindObject)
		c.opt(v, "", "note", KindString)
		return
	}
	switch kindOf(t.Str) {
	case KindMessage:
		if m := c.req(v, "", "message", KindObject); m != nil {
			c.message(m, "message")
		}
	case KindCustomMessage:
		c.req(v, "", "customType", KindString)
		c.content(v, "", "custom_message", true, "text", "image")
		c.req(v, "", "display", KindBool)
	case KindCompaction:
		c.req(v, "", "summary", KindString)
		c.opt(v, "", "firstKeptEntryId", KindString)
		c.req(v, "", "tokensBefore", KindNumber)
		c.opt(v, "", "fromHook", KindBool)
		c.opt(v, "", "usage", KindObject)
		// pi 1.1's checkpoint of the system prompt, emitted before the
		// summary: a system message.
		if m := c.opt(v, "", "systemMessage", KindObject); m != nil {
			if r, ok := m.Get("role"); !ok || r.Kind != KindString || r.Str != "system" {
				c.fail("systemMessage.role", `must be "system"`)
				return
			}
			c.message(m, "systemMessage")
		}
	case KindBranchSummary:
		c.req(v, "", "summary", KindString)
		c.req(v, "", "fromId", KindString)
		c.opt(v, "", "fromHook", KindBool)
		c.opt(v, "", "usage", KindObject)
	case KindModelChange:
		c.req(v, "", "provider", KindString)
		c.req(v, "", "modelId", KindString)
	case KindThinkingLevelChange:
		c.req(v, "", "thinkingLevel", KindString)
	case KindLabel:
		c.req(v, "", "targetId", KindString)
		if l, ok := v.Get("label"); ok && l.Kind != KindString {
			c.fail("label", "must be a string, not "+kindNoun(l.Kind)+" (leave it out to clear the label)")
		}
	case KindSessionInfo:
		c.opt(v, "", "name", KindString)
	case KindCustom:
		c.req(v, "", "customType", KindString)
	}
}

// messageRoles are the roles pi writes, in pi's order, for messages.
var messageRoles = []string{"user", "assistant", "toolResult", "system", "bashExecution", "custom", "branchSummary", "compactionSummary"}

// message checks an AgentMessage: pi-ai's UserMessage, AssistantMessage,
// ToolResultMessage and SystemMessage, and the coding agent's own roles.
// Any other role passes unchecked: a newer pi may write roles this build
// does not know (pi 1.1 added "system"), and a store that validates must
// never refuse what pi writes.
func (c *checker) message(m *Value, path string) {
	r, ok := m.Get("role")
	switch {
	case !ok:
		c.fail(join(path, "role"), "required: a string such as "+strings.Join(messageRoles, ", "))
		return
	case r.Kind != KindString:
		c.fail(join(path, "role"), "must be a string (such as "+strings.Join(messageRoles, ", ")+"), not "+kindNoun(r.Kind))
		return
	}
	c.opt(m, path, "timestamp", KindNumber)
	switch r.Str {
	case "user":
		c.content(m, path, "user", true, "text", "image")
	case "assistant":
		c.content(m, path, "assistant", false, "text", "thinking", "toolCall")
		c.req(m, path, "provider", KindString)
		c.req(m, path, "model", KindString)
		c.opt(m, path, "api", KindString)
		c.opt(m, path, "usage", KindObject)
		c.opt(m, path, "stopReason", KindString)
		c.opt(m, path, "errorMessage", KindString)
		c.opt(m, path, "thinkingLevel", KindString)
		c.opt(m, path, "responseModel", KindString)
	case "toolResult":
		c.req(m, path, "toolCallId", KindString)
		c.req(m, path, "toolName", KindString)
		c.content(m, path, "toolResult", false, "text", "image")
		c.opt(m, path, "isError", KindBool)
		c.opt(m, path, "usage", KindObject)
	case "system":
		c.systemMessage(m, path)
	case "bashExecution":
		c.req(m, path, "command", KindString)
		c.req(m, path, "output", KindString)
		if e, ok := m.Get("exitCode"); ok && e.Kind != KindNumber && e.Kind != KindNull {
			c.fail(join(path, "exitCode"), "must be a number or null, not "+kindNoun(e.Kind))
		}
		c.opt(m, path, "cancelled", KindBool)
		c.opt(m, path, "truncated", KindBool)
		c.opt(m, path, "fullOutputPath", KindString)
		c.opt(m, path, "excludeFromContext", KindBool)
	case "custom":
		c.req(m, path, "customType", KindString)
		c.content(m, path, "custom", true, "text", "image")
		c.req(m, path, "display", KindBool)
	case "branchSummary":
		c.req(m, path, "summary", KindString)
		c.req(m, path, "fromId", KindString)
	case "compactionSummary":
		c.req(m, path, "summary", KindString)
		c.req(m, path, "tokensBefore", KindNumber)
	}
}

// systemMessage checks pi 1.1's SystemMessage: content a string (pi
// writes "") or an array, sections mapping names to text (null removes a
// section), and the tools added and removed, each an object with a name.
// Content may be missing: pi's context gives such a message content "".
func (c *checker) systemMessage(m *Value, path string) {
	if f, ok := m.Get("content"); ok && f.Kind != KindString && f.Kind != KindNull && f.Kind != KindArray {
		c.fail(join(path, "content"), "must be a string or an array, not "+kindNoun(f.Kind))
		return
	}
	if s := c.opt(m, path, "sections", KindObject); s != nil {
		for i := range s.Obj {
			if k := s.Obj[i].Val.Kind; k != KindString && k != KindNull {
				c.fail(join(join(path, "sections"), s.Obj[i].Key), "must be a string or null (to remove the section), not "+kindNoun(k))
				return
			}
		}
	}
	for _, key := range []string{"toolsAdded", "toolsRemoved"} {
		tools := c.opt(m, path, key, KindArray)
		if tools == nil {
			continue
		}
		for i := range tools.Arr {
			p := index(join(path, key), i)
			if tools.Arr[i].Kind != KindObject {
				c.fail(p, "a tool must be an object with a name, not "+kindNoun(tools.Arr[i].Kind))
				return
			}
			c.req(&tools.Arr[i], p, "name", KindString)
		}
	}
}

// contextEdit checks pi 1.1's context_edit as appendContextEdit does: a
// targetId, and a replacement that is null (the target's messages are
// left out) or {content} with string or array content. Whether the target
// exists, is on the branch and contributes model content depends on the
// session: see EditTargetError.
func (c *checker) contextEdit(v *Value) {
	c.req(v, "", "targetId", KindString)
	if c.err != nil {
		return
	}
	const want = "null or an object {content} whose content is a string or an array"
	r, ok := v.Get("replacement")
	switch {
	case !ok:
		c.fail("replacement", "required: "+want)
	case r.Kind == KindNull:
	case r.Kind != KindObject:
		c.fail("replacement", "must be "+want+", not "+kindNoun(r.Kind))
	default:
		content, ok := r.Get("content")
		switch {
		case !ok:
			c.fail("replacement.content", "required: a string or an array (the replacement must be "+want+")")
		case content.Kind != KindString && content.Kind != KindArray:
			c.fail("replacement.content", "must be a string or an array, not "+kindNoun(content.Kind))
		}
	}
}

// content checks obj.content: an array of blocks of the given types, or
// also a plain string when text is true.
func (c *checker) content(obj *Value, path, owner string, text bool, blocks ...string) {
	if c.err != nil {
		return
	}
	p := join(path, "content")
	want := "an array of " + strings.Join(blocks, ", ") + " blocks"
	if text {
		want = "a string or " + want
	}
	f, ok := obj.Get("content")
	switch {
	case !ok:
		c.fail(p, "required: "+want)
		return
	case f.Kind == KindString && text:
		return
	case f.Kind != KindArray:
		c.fail(p, "must be "+want+", not "+kindNoun(f.Kind))
		return
	}
	for i := range f.Arr {
		c.block(&f.Arr[i], index(p, i), owner, blocks)
		if c.err != nil {
			return
		}
	}
}

// block checks one content block: pi-ai's TextContent, ImageContent,
// ThinkingContent or ToolCall, where owner's type allows it.
func (c *checker) block(b *Value, path, owner string, allowed []string) {
	if b.Kind != KindObject {
		c.fail(path, "a content block must be an object, not "+kindNoun(b.Kind))
		return
	}
	t := c.req(b, path, "type", KindString)
	if t == nil {
		return
	}
	ok := false
	for _, a := range allowed {
		ok = ok || a == t.Str
	}
	if !ok {
		c.fail(join(path, "type"), strconv.Quote(t.Str)+" is not a block type of "+owner+" content (one of "+strings.Join(allowed, ", ")+")")
		return
	}
	switch t.Str {
	case "text":
		c.req(b, path, "text", KindString)
		c.opt(b, path, "textSignature", KindString)
	case "image":
		c.req(b, path, "data", KindString)
		c.req(b, path, "mimeType", KindString)
	case "thinking":
		c.req(b, path, "thinking", KindString)
		c.opt(b, path, "thinkingSignature", KindString)
		c.opt(b, path, "redacted", KindBool)
	case "toolCall":
		c.req(b, path, "id", KindString)
		c.req(b, path, "name", KindString)
		c.req(b, path, "arguments", KindObject)
		c.opt(b, path, "thoughtSignature", KindString)
	}
}

// Editable reports whether pi's appendContextEdit accepts e as the target
// of an edit: it contributes model content (a user, assistant or
// toolResult message, or a custom_message).
func (e *Entry) Editable() bool {
	switch e.Kind {
	case KindCustomMessage:
		return true
	case KindMessage:
		return e.Role == RoleUser || e.Role == RoleAssistant || e.Role == RoleToolResult
	}
	return false
}

// CheckEditTarget checks the target of a context_edit appended as a child
// of parent ("" for a root) as pi's appendContextEdit does: the target
// exists, is on the branch the edit ends (parent or one of its ancestors),
// and contributes model content. lookup finds an entry by id (nil when
// unknown). The error is a *ShapeError at "targetId".
func CheckEditTarget(target, parent string, lookup func(id string) *Entry) error {
	t := lookup(target)
	if t == nil {
		return &ShapeError{Path: "targetId", Reason: "unknown entry " + strconv.Quote(target)}
	}
	// Walk up from parent; seen guards against a cycle of parent ids,
	// which a file can hold and pi's loop would not survive.
	seen := map[string]bool{}
	for id := parent; id != "" && !seen[id]; {
		if id == target {
			if !t.Editable() {
				return &ShapeError{Path: "targetId", Reason: "entry " + strconv.Quote(target) + " does not contribute editable model content (edit a user, assistant or toolResult message or a custom_message)"}
			}
			return nil
		}
		seen[id] = true
		e := lookup(id)
		if e == nil {
			break
		}
		id = e.ParentID
	}
	return &ShapeError{Path: "targetId", Reason: "entry " + strconv.Quote(target) + " is not on the branch the edit is appended to"}
}
