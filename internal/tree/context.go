package tree

import (
	"math"
	"strconv"

	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// Context is pi's buildSessionContext for one leaf: the path, the thinking
// level and model in effect, and the messages to send (AgentMessages). The
// messages are raw JSON: message entries contribute their "message" value
// untouched; summaries and custom messages are built as pi builds them.
type Context struct {
	LeafID   string   // "" with Null set for the state after resetLeaf
	Null     bool     // the leaf is null: empty context
	Path     []string // ids, root first
	Thinking []byte   // JSON value of the thinking level; nil when undefined
	Model    []byte   // JSON object {"provider","modelId"}, or nil for null
	Messages []Message
}

// Message is one AgentMessage of a context.
type Message struct {
	JSON []byte // the message as pi returns it
	Role Role
	src  *Entry // the entry it came from
}

var (
	jsonOff  = []byte(`"off"`)
	jsonNull = []byte(`null`)
)

// NullContext is the context of the null leaf (before the first entry).
func NullContext() Context {
	return Context{Null: true, Path: []string{}, Thinking: jsonOff}
}

// ContextAt builds the context for the entry at index leaf; a negative leaf
// is the null leaf. It costs O(depth) plus the size of the messages.
func (s *Session) ContextAt(leaf int) Context {
	if leaf < 0 || leaf >= len(s.entries) {
		return NullContext()
	}
	idx := s.PathIndices(leaf)
	c := Context{LeafID: s.entries[leaf].ID, Path: make([]string, len(idx)), Thinking: jsonOff}
	var model *Entry
	compaction := -1
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
		}
	}
	if model != nil {
		c.Model = modelJSON(model)
	}
	if compaction < 0 {
		c.Messages = make([]Message, 0, len(idx))
		for _, i := range idx {
			c.Messages = appendMessage(c.Messages, &s.entries[i])
		}
		return c
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
	// Messages before the compaction are kept from the first entry with the
	// id firstKeptEntryId on; none if it is not on the path before it.
	kept := at
	if firstKept, ok := comp.str(fCFirstKept); ok {
		for k, i := range idx[:at] {
			if s.entries[i].ID == firstKept {
				kept = k
				break
			}
		}
	}
	c.Messages = make([]Message, 1, len(idx)-kept)
	c.Messages[0] = Message{JSON: compactionSummaryJSON(comp), Role: roleCompactionSummary, src: comp}
	for _, i := range idx[kept:at] {
		c.Messages = appendMessage(c.Messages, &s.entries[i])
	}
	for _, i := range idx[at+1:] {
		c.Messages = appendMessage(c.Messages, &s.entries[i])
	}
	return c
}

// Roles of messages that only contexts create.
const (
	roleBranchSummary Role = 100 + iota
	roleCompactionSummary
)

func appendMessage(ms []Message, e *Entry) []Message {
	switch e.Kind {
	case KindMessage:
		raw := e.field(fMessage)
		if raw == nil {
			raw = jsonNull // pi pushes undefined; JSON.stringify writes null
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
	return newObj(len(e.Raw)).str("role", "custom").
		raw("customType", e.field(fCMCustomType)).
		raw("content", e.field(fCMContent)).
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
	LLM bool // messages converted by pi's convertToLlm
}

// AppendJSON appends {"leafId","path","thinkingLevel","model","messages"},
// the shape of the conformance vectors' contexts.
func (c *Context) AppendJSON(dst []byte, opt ContextOptions) []byte {
	dst = append(dst, `{"leafId":`...)
	if c.Null {
		dst = append(dst, "null"...)
	} else {
		dst = jsjson.AppendString(dst, c.LeafID)
	}
	dst = append(dst, `,"path":[`...)
	for k, id := range c.Path {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = jsjson.AppendString(dst, id)
	}
	dst = append(dst, ']')
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
