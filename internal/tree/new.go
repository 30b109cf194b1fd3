package tree

import (
	"errors"
	"fmt"
	"time"

	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// Constructors for new lines, byte-compatible with pi's SessionManager: the
// same keys in the same order, undefined values left out, JSON.stringify's
// escaping. Time is an input (no clock in this package).

// FormatTimestamp formats t as JavaScript's Date.prototype.toISOString.
func FormatTimestamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// Meta is what every entry carries: its id, its parent ("" = null: a root)
// and its ISO timestamp (see FormatTimestamp).
type Meta struct {
	ID        string
	ParentID  string
	Timestamp string
	// Checkpoint, when set, gives the system prompt in force at the
	// parent (Session.SystemMessageAt): NewCompaction11 stores it when its
	// caller passes none, as pi 1.1's appendCompaction does.
	Checkpoint func() []byte
}

// NewHeader builds a version-3 session header line.
func NewHeader(id, timestamp, cwd, parentSession string) Header {
	o := newObj(128).str("type", "session").raw("version", []byte("3")).str("id", id).str("timestamp", timestamp).str("cwd", cwd)
	if parentSession != "" {
		o.str("parentSession", parentSession)
	}
	return Header{Raw: o.done(), ID: id, Version: CurrentVersion, Timestamp: timestamp, Cwd: cwd, ParentSession: parentSession}
}

// errNotObject is returned when a JSON argument that must be an object is not.
var errNotObject = errors.New("must be a JSON object")

func (m Meta) head(o *obj) *obj {
	o.str("id", m.ID)
	if m.ParentID == "" {
		o.raw("parentId", jsonNull)
	} else {
		o.str("parentId", m.ParentID)
	}
	return o.str("timestamp", m.Timestamp)
}

func build(o *obj) (Entry, error) { return ParseEntry(o.done()) }

// jsonArg checks an optional raw JSON argument (nil = undefined).
func jsonArg(name string, raw []byte) error {
	if raw != nil && !Valid(raw) {
		return fmt.Errorf("%s is not valid JSON", name)
	}
	return nil
}

// NewMessage builds a "message" entry; message is the AgentMessage object.
func NewMessage(m Meta, message []byte) (Entry, error) {
	if err := jsonArg("message", message); err != nil {
		return Entry{}, err
	}
	if message == nil || !isObject(message) {
		return Entry{}, fmt.Errorf("message %w", errNotObject)
	}
	return build(m.head(newObj(len(message)+96).str("type", "message")).raw("message", message))
}

// NewThinkingLevelChange builds a "thinking_level_change" entry.
func NewThinkingLevelChange(m Meta, level string) (Entry, error) {
	return build(m.head(newObj(128).str("type", "thinking_level_change")).str("thinkingLevel", level))
}

// NewModelChange builds a "model_change" entry.
func NewModelChange(m Meta, provider, modelID string) (Entry, error) {
	return build(m.head(newObj(160).str("type", "model_change")).str("provider", provider).str("modelId", modelID))
}

// NewCompaction builds a "compaction" entry. details (raw JSON) and fromHook
// are optional (nil = left out).
func NewCompaction(m Meta, summary, firstKeptEntryID string, tokensBefore float64, details []byte, fromHook *bool) (Entry, error) {
	if err := jsonArg("details", details); err != nil {
		return Entry{}, err
	}
	o := m.head(newObj(len(summary)+len(details)+160).str("type", "compaction")).
		str("summary", summary).str("firstKeptEntryId", firstKeptEntryID).
		raw("tokensBefore", []byte(jsjson.FormatNumber(tokensBefore))).raw("details", details)
	return build(o.raw("fromHook", boolJSON(fromHook)))
}

// NewCustomEntry builds a "custom" entry (extension state, never in context).
// data is optional raw JSON.
func NewCustomEntry(m Meta, customType string, data []byte) (Entry, error) {
	if err := jsonArg("data", data); err != nil {
		return Entry{}, err
	}
	o := newObj(len(data)+128).str("type", "custom").str("customType", customType).raw("data", data)
	return build(m.head(o))
}

// NewSessionInfo builds a "session_info" entry; like pi, it stores the name trimmed.
func NewSessionInfo(m Meta, name string) (Entry, error) {
	return build(m.head(newObj(len(name)+128).str("type", "session_info")).str("name", jsjson.Trim(name)))
}

// NewCustomMessage builds a "custom_message" entry. content is raw JSON (a
// string or an array of text/image blocks); details is optional raw JSON.
func NewCustomMessage(m Meta, customType string, content []byte, display bool, details []byte) (Entry, error) {
	if err := jsonArg("content", content); err != nil {
		return Entry{}, err
	}
	if err := jsonArg("details", details); err != nil {
		return Entry{}, err
	}
	o := newObj(len(content)+len(details)+160).str("type", "custom_message").str("customType", customType).
		raw("content", content).raw("display", boolJSON(&display)).raw("details", details)
	return build(m.head(o))
}

// NewLabel builds a "label" entry; a nil label clears the target's label.
func NewLabel(m Meta, targetID string, label *string) (Entry, error) {
	o := m.head(newObj(160).str("type", "label")).str("targetId", targetID)
	if label != nil {
		o.str("label", *label)
	}
	return build(o)
}

// NewBranchSummary builds a "branch_summary" entry. fromID is the entry the
// branch left, or "root"; details and fromHook are optional.
func NewBranchSummary(m Meta, fromID, summary string, details []byte, fromHook *bool) (Entry, error) {
	if err := jsonArg("details", details); err != nil {
		return Entry{}, err
	}
	o := m.head(newObj(len(summary)+len(details)+160).str("type", "branch_summary")).
		str("fromId", fromID).str("summary", summary).raw("details", details)
	return build(o.raw("fromHook", boolJSON(fromHook)))
}

// isObject reports whether valid JSON raw is an object.
func isObject(raw []byte) bool {
	s := scanner{data: raw}
	s.ws()
	return s.pos < len(raw) && raw[s.pos] == '{'
}

func boolJSON(b *bool) []byte {
	switch {
	case b == nil:
		return nil
	case *b:
		return []byte("true")
	}
	return []byte("false")
}
