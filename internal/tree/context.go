package tree

import (
	"math"
	"strconv"

	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// Context is pi's buildSessionContext for one leaf: the path, the thinking
// level and model in effect, and the messages to send (AgentMessages). The
// messages are raw JSON: message entries contribute their "message" value
// untouched unless an edit or a missing content changes it; summaries and
// custom messages are built as pi builds them.
type Context struct {
	LeafID   string   // "" with Null set for the state after resetLeaf
	Null     bool     // the leaf is null: empty context
	Path     []string // ids, root first
	Thinking []byte   // JSON value of the thinking level; nil when undefined
	Model    []byte   // JSON object {"provider","modelId"}, or nil for null
	Messages []Message
	// EntryIDs are pi 1.1's buildContextEntries: the entries selected for
	// the context (the latest compaction first, then what it keeps and
	// what follows it), before edits are applied.
	EntryIDs []string
}

// Message is one AgentMessage of a context.
type Message struct {
	JSON []byte // the message as pi returns it
	Role Role
	// edited: JSON is not what src holds (a context_edit or pi's default
	// content), so conversions read JSON, not src. Beside Role, so the
	// two share a word.
	edited bool
	src    *Entry // the entry it came from
}

var (
	jsonOff  = []byte(`"off"`)
	jsonNull = []byte(`null`)
)

// NullContext is the context of the null leaf (before the first entry).
func NullContext() Context {
	return Context{Null: true, Path: []string{}, Thinking: jsonOff, EntryIDs: []string{}}
}

// ContextAt builds the context for the entry at index leaf; a negative leaf
// is the null leaf. It costs O(depth) plus the size of the messages.
//
// One rule set serves pi 0.73.1's files and pi 1.1's: what 1.1 changed
// (system messages, context edits, a compaction's systemMessage, default
// content) concerns entries and fields 0.73.1 never writes, and the
// selection is 0.73.1's with system messages left out of a compaction's
// kept range.
func (s *Session) ContextAt(leaf int) Context {
	if leaf < 0 || leaf >= len(s.entries) {
		return NullContext()
	}
	idx := s.PathIndices(leaf)
	c := Context{LeafID: s.entries[leaf].ID, Path: make([]string, len(idx)), Thinking: jsonOff}
	var model *Entry
	compaction := -1
	edits := false
	for k, i := range idx {
		e := &s.entries[i]
		c.Path[k] = e.ID
		switch {
		case e.Kind == KindThinkingLevelChange:
			c.Thinking = e.field(fThinking)
		case e.Kind == KindModelChange, e.Kind == KindMessage && e.Role == RoleAssistant:
			model = e
		case e.Kind == KindCompaction:
			compaction = k
		case e.Kind == KindContextEdit:
			edits = true
		}
	}
	if model != nil {
		c.Model = modelJSON(model)
	}
	sel := s.selection(idx, compaction)
	c.EntryIDs = c.Path // without a compaction the selection is the path
	if compaction >= 0 {
		c.EntryIDs = make([]string, len(sel))
		for k, i := range sel {
			c.EntryIDs[k] = s.entries[i].ID
		}
	}
	// Only edits that are themselves selected count; for each target the
	// last one in selection order wins.
	var edit map[string]*Entry
	if edits {
		for _, i := range sel {
			if e := &s.entries[i]; e.Kind == KindContextEdit {
				if edit == nil {
					edit = make(map[string]*Entry)
				}
				if t, ok := e.str(fTarget); ok {
					edit[t] = e
				}
			}
		}
	}
	c.Messages = make([]Message, 0, len(sel)+1)
	for k, i := range sel {
		e := &s.entries[i]
		if e.Kind == KindCompaction && k > 0 {
			continue // only the first compaction of the selection speaks
		}
		n := len(c.Messages)
		if e.Kind == KindCompaction {
			c.Messages = appendCompaction(c.Messages, e)
		} else {
			c.Messages = appendMessage(c.Messages, e)
		}
		if ed := edit[e.ID]; ed != nil {
			c.Messages = applyEdit(c.Messages, n, ed)
		}
	}
	return c
}

// selection is pi 1.1's buildContextEntries over the path idx whose latest
// compaction is at idx[compaction] (-1: none): that compaction, then the
// path entries from its firstKeptEntryId up to it except system messages,
// then every entry after it. A firstKeptEntryId not on the path before it
// (pi 1.1's retain-none writes the compaction's own id) keeps nothing.
func (s *Session) selection(idx []int32, compaction int) []int32 {
	if compaction < 0 {
		return idx
	}
	comp := &s.entries[idx[compaction]]
	// pi looks the compaction up again by id: with repeated ids that can be an
	// earlier entry on the path.
	at := compaction
	for k, i := range idx {
		if e := &s.entries[i]; e.Kind == KindCompaction && e.ID == comp.ID {
			at = k
			break
		}
	}
	kept := at
	if firstKept, ok := comp.str(fCFirstKept); ok {
		for k, i := range idx[:at] {
			if s.entries[i].ID == firstKept {
				kept = k
				break
			}
		}
	}
	sel := make([]int32, 0, 1+len(idx)-kept)
	sel = append(sel, idx[compaction])
	for _, i := range idx[kept:at] {
		if e := &s.entries[i]; e.Kind != KindMessage || e.Role != RoleSystem {
			sel = append(sel, i)
		}
	}
	return append(sel, idx[at+1:]...)
}

// Roles of messages that only contexts create.
const (
	roleBranchSummary Role = 100 + iota
	roleCompactionSummary
)

// appendCompaction appends what a compaction at the head of a selection
// says: its systemMessage when it has one (pi 1.1's checkpoint of the
// system prompt), then its summary.
func appendCompaction(ms []Message, e *Entry) []Message {
	if sm := messageFields(e.Raw)["systemMessage"]; jsjson.Truthy(sm) {
		ms = append(ms, Message{JSON: sm, Role: roleOfMessage(sm), src: e, edited: true})
	}
	return append(ms, Message{JSON: compactionSummaryJSON(e), Role: roleCompactionSummary, src: e})
}

// roleOfMessage reads the role of a message object.
func roleOfMessage(raw []byte) Role {
	r := messageFields(raw)["role"]
	if len(r) == 0 || r[0] != '"' {
		return RoleNone
	}
	return roleOf(jsjson.ToString(r))
}

func appendMessage(ms []Message, e *Entry) []Message {
	switch e.Kind {
	case KindMessage:
		raw := e.field(fMessage)
		if raw == nil {
			raw = jsonNull // pi pushes undefined; JSON.stringify writes null
		}
		// pi 1.1 gives a message without content (absent or null) the
		// content its role's readers expect.
		if len(raw) > 0 && raw[0] == '{' {
			var def []byte
			switch e.Role {
			case RoleSystem:
				def = []byte(`""`)
			case RoleUser, RoleAssistant, RoleToolResult:
				def = []byte(`[]`)
			}
			if c := e.field(fMsgContent); def != nil && (c == nil || string(c) == "null") {
				return append(ms, Message{JSON: setMember(raw, "content", def), Role: e.Role, src: e, edited: true})
			}
		}
		return append(ms, Message{JSON: raw, Role: e.Role, src: e})
	case KindCustomMessage:
		return append(ms, Message{JSON: customMessageJSON(e), Role: RoleCustom, src: e})
	case KindBranchSummary:
		if jsjson.Truthy(e.field(fBSummary)) {
			return append(ms, Message{JSON: branchSummaryJSON(e), Role: roleBranchSummary, src: e})
		}
	}
	return ms
}

// applyEdit applies a context_edit to the messages ms[from:] of its
// target, as pi 1.1's projectContextEntry does: a null replacement drops
// them; otherwise the content of user, assistant, toolResult and custom
// messages is replaced, a string becoming one text block for assistant
// and toolResult.
func applyEdit(ms []Message, from int, ed *Entry) []Message {
	repl := messageFields(ed.Raw)["replacement"]
	if string(repl) == "null" {
		return ms[:from]
	}
	var content []byte
	if len(repl) > 0 && repl[0] == '{' {
		content = messageFields(repl)["content"]
	}
	for k := from; k < len(ms); k++ {
		m := &ms[k]
		switch m.Role {
		case RoleUser, RoleAssistant, RoleToolResult, RoleCustom:
		default:
			continue
		}
		c := content
		if (m.Role == RoleAssistant || m.Role == RoleToolResult) && len(c) > 0 && c[0] == '"' {
			c = textContent(jsjson.ToString(c))
		}
		// {...message, content}: undefined content leaves the key out.
		if c == nil {
			m.JSON = deleteMember(m.JSON, "content")
		} else {
			m.JSON = setMember(m.JSON, "content", c)
		}
		m.edited = true
	}
	return ms
}

// setMember returns a copy of the object raw with key set to v, as a
// spread with an override writes it: where raw has key (its first place:
// JSON.parse keeps one property of duplicate keys, at the first), else last.
func setMember(raw []byte, key string, v []byte) []byte {
	return rewriteMember(raw, key, v)
}

// deleteMember returns a copy of the object raw without key.
func deleteMember(raw []byte, key string) []byte { return rewriteMember(raw, key, nil) }

// rewriteMember copies the object raw with key's value v (nil: key left out).
func rewriteMember(raw []byte, key string, v []byte) []byte {
	out := append(make([]byte, 0, len(raw)+len(v)+len(key)+4), '{')
	done := false
	put := func(kraw, val []byte) {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, kraw...)
		out = append(out, ':')
		out = append(out, val...)
	}
	eachMember(raw, func(k string, kraw, val []byte) {
		if k != key {
			put(kraw, val)
		} else if !done && v != nil {
			put(kraw, v)
		}
		done = done || k == key
	})
	if !done && v != nil {
		put(jsjson.AppendString(nil, key), v)
	}
	return append(out, '}')
}

// eachMember calls fn with each top-level member of the object raw: its
// decoded key, the key as written (quoted) and the raw value.
func eachMember(raw []byte, fn func(key string, kraw, val []byte)) {
	s := scanner{data: raw}
	s.ws()
	_ = s.members(func(key []byte, escaped bool, v int) (bool, error) {
		k := string(key)
		if escaped {
			k, _ = unquoteRaw(key)
		}
		if err := s.value(); err != nil {
			return true, err
		}
		// key is the text between the quotes, a slice of raw.
		ks := cap(raw) - cap(key)
		fn(k, raw[ks-1:ks+len(key)+1], raw[v:s.pos])
		return true, nil
	})
}

// obj builds a JSON object the way JSON.stringify writes a JS object literal:
// members whose value is undefined (nil) are left out.
type obj struct {
	b     []byte
	first bool
}

func newObj(capacity int) *obj { return &obj{b: append(make([]byte, 0, capacity), '{'), first: true} }

func (o *obj) raw(key string, v []byte) *obj {
	if v == nil {
		return o
	}
	if !o.first {
		o.b = append(o.b, ',')
	}
	o.first = false
	o.b = jsjson.AppendString(o.b, key)
	o.b = append(o.b, ':')
	o.b = append(o.b, v...)
	return o
}

func (o *obj) str(key, v string) *obj { return o.raw(key, jsjson.AppendString(nil, v)) }

func (o *obj) done() []byte { return append(o.b, '}') }

// millisJSON writes a Date's getTime() as JSON.stringify would (NaN → null).
func millisJSON(ms float64) []byte {
	if math.IsNaN(ms) {
		return jsonNull
	}
	return strconv.AppendInt(nil, int64(ms), 10)
}

func modelJSON(e *Entry) []byte {
	if e.Kind == KindModelChange {
		return newObj(64).raw("provider", e.field(fProvider)).raw("modelId", e.field(fModelID)).done()
	}
	return newObj(64).raw("provider", e.field(fMsgProvider)).raw("modelId", e.field(fMsgModel)).done()
}

func customMessageJSON(e *Entry) []byte {
	content := e.field(fCMContent)
	if content == nil || string(content) == "null" {
		content = []byte(`[]`) // pi 1.1: entry.content ?? []
	}
	return newObj(len(e.Raw)).str("role", "custom").
		raw("customType", e.field(fCMCustomType)).
		raw("content", content).
		raw("display", e.field(fCMDisplay)).
		raw("details", e.field(fCMDetails)).
		raw("timestamp", millisJSON(e.ms)).done()
}

func branchSummaryJSON(e *Entry) []byte {
	return newObj(len(e.Raw)).str("role", "branchSummary").
		raw("summary", e.field(fBSummary)).
		raw("fromId", e.field(fBFromID)).
		raw("timestamp", millisJSON(e.ms)).done()
}

func compactionSummaryJSON(e *Entry) []byte {
	return newObj(len(e.Raw)).str("role", "compactionSummary").
		raw("summary", e.field(fCSummary)).
		raw("tokensBefore", e.field(fCTokens)).
		raw("timestamp", millisJSON(e.ms)).done()
}

// ContextOptions select the shape AppendJSON writes.
type ContextOptions struct {
	LLM      bool // messages converted by pi's convertToLlm
	EntryIDs bool // add "contextEntryIds" (pi 1.1's buildContextEntries)
}

// AppendJSON appends {"leafId","path","thinkingLevel","model","messages"}
// (and "contextEntryIds" when asked), the shape of the conformance
// vectors' contexts.
func (c *Context) AppendJSON(dst []byte, opt ContextOptions) []byte {
	dst = append(dst, `{"leafId":`...)
	if c.Null {
		dst = append(dst, "null"...)
	} else {
		dst = jsjson.AppendString(dst, c.LeafID)
	}
	dst = appendIDs(append(dst, `,"path":`...), c.Path)
	if c.Thinking != nil {
		dst = append(dst, `,"thinkingLevel":`...)
		dst = append(dst, c.Thinking...)
	}
	dst = append(dst, `,"model":`...)
	if c.Model == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, c.Model...)
	}
	if opt.EntryIDs {
		dst = appendIDs(append(dst, `,"contextEntryIds":`...), c.EntryIDs)
	}
	dst = append(dst, `,"messages":`...)
	if opt.LLM {
		dst = AppendMessagesJSON(dst, c.LLMMessages())
	} else {
		dst = AppendMessagesJSON(dst, c.Messages)
	}
	return append(dst, '}')
}

// SizeHint is about the length of AppendJSON's output without LLM
// conversion (exactly, for ids and messages without escapes): a buffer of
// this capacity is written in one go, not regrown and copied for every
// doubling of a context that may be megabytes.
func (c *Context) SizeHint() int {
	n := 96 + len(c.Thinking) + len(c.Model) + len(c.LeafID) // 96: the keys and brackets
	for _, id := range c.Path {
		n += len(id) + 3
	}
	for k := range c.Messages {
		n += len(c.Messages[k].JSON) + 1
	}
	return n
}

// AppendMessagesJSON appends ms as a JSON array.
func AppendMessagesJSON(dst []byte, ms []Message) []byte {
	dst = append(dst, '[')
	for k := range ms {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, ms[k].JSON...)
	}
	return append(dst, ']')
}

// appendIDs appends ids as a JSON array of strings.
func appendIDs(dst []byte, ids []string) []byte {
	dst = append(dst, '[')
	for k, id := range ids {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = jsjson.AppendString(dst, id)
	}
	return append(dst, ']')
}
