package tree

import (
	"bytes"
	"fmt"
	"math"
	"unsafe"

	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// Kind is an entry's type, decoded once when the line is read.
type Kind uint8

// The entry types of pi v3 (nine in pi 0.73.1; context_edit and usage
// since pi 1.1), and Unknown for any other type (kept and passed through
// untouched, like pi does).
const (
	KindUnknown Kind = iota
	KindMessage
	KindCustomMessage
	KindCompaction
	KindBranchSummary
	KindModelChange
	KindThinkingLevelChange
	KindLabel
	KindSessionInfo
	KindCustom
	KindContextEdit
	KindUsage
)

var kindNames = [...]string{
	KindUnknown:             "",
	KindMessage:             "message",
	KindCustomMessage:       "custom_message",
	KindCompaction:          "compaction",
	KindBranchSummary:       "branch_summary",
	KindModelChange:         "model_change",
	KindThinkingLevelChange: "thinking_level_change",
	KindLabel:               "label",
	KindSessionInfo:         "session_info",
	KindCustom:              "custom",
	KindContextEdit:         "context_edit",
	KindUsage:               "usage",
}

func (k Kind) String() string {
	if k == KindUnknown {
		return "unknown"
	}
	return kindNames[k]
}

func kindOf(name string) Kind {
	for k, n := range kindNames {
		if k != 0 && n == name {
			return Kind(k)
		}
	}
	return KindUnknown
}

// Role is the role of a message entry's message.
type Role uint8

// Message roles pi knows; RoleOther for anything else (dropped from LLM context).
const (
	RoleNone Role = iota // not a message entry, or no string role
	RoleUser
	RoleAssistant
	RoleToolResult
	RoleBashExecution
	RoleCustom
	RoleOther
	RoleSystem // pi 1.1
)

func roleOf(name string) Role {
	switch name {
	case "user":
		return RoleUser
	case "assistant":
		return RoleAssistant
	case "toolResult":
		return RoleToolResult
	case "bashExecution":
		return RoleBashExecution
	case "custom":
		return RoleCustom
	case "system":
		return RoleSystem
	}
	return RoleOther
}

// Entry is one session entry: its line kept byte for byte, plus the few
// decoded fields the tree and context algorithms need. Entries own Raw: the
// strings ID and ParentID share its memory, so Raw must never be modified.
type Entry struct {
	Raw      []byte
	ID       string
	ParentID string  // "" when parentId is null, absent, not a string, or ""
	ms       float64 // timestamp as JavaScript's new Date(ts).getTime(); NaN if invalid
	f        [4]span // kind-specific field values, see field* constants
	parent   int32   // index of the resolved parent in its Session, -1 for none
	// Last, so they share parent's word: 104 bytes an entry, not 112.
	Kind Kind
	Role Role // for KindMessage
}

// Field slots in Entry.f, by kind.
const (
	// KindMessage
	fMessage, fMsgProvider, fMsgModel, fMsgContent = 0, 1, 2, 3
	// KindCustomMessage
	fCMCustomType, fCMContent, fCMDisplay, fCMDetails = 0, 1, 2, 3
	// KindCompaction
	fCSummary, fCFirstKept, fCTokens = 0, 1, 2
	// KindBranchSummary
	fBSummary, fBFromID = 0, 1
	// KindContextEdit: fTarget, as a label's. Its replacement, a
	// compaction's systemMessage and a usage entry's fields are read
	// from the line when needed: rare entries, and every line read would
	// carry their spans meanwhile.
	// KindModelChange
	fProvider, fModelID = 0, 1
	// KindThinkingLevelChange
	fThinking = 0
	// KindLabel
	fTarget, fLabel = 0, 1
	// KindSessionInfo
	fName = 0
	// KindUnknown, KindCustom: the raw "type" value, and customType
	fType, fCustomType = 0, 1
)

// Type returns the entry's "type" string (for unknown types, as written).
func (e *Entry) Type() string {
	if e.Kind != KindUnknown {
		return kindNames[e.Kind]
	}
	if s, ok := decodeString(e.Raw, e.f[fType]); ok {
		return s
	}
	return ""
}

// TimeMillis returns the entry timestamp in Unix milliseconds as JavaScript's
// new Date(timestamp).getTime() computes it; ok is false for an invalid date.
func (e *Entry) TimeMillis() (ms int64, ok bool) {
	if math.IsNaN(e.ms) {
		return 0, false
	}
	return int64(e.ms), true
}

// field returns the raw JSON value of slot i (nil when absent).
func (e *Entry) field(i int) []byte {
	if !e.f[i].ok() {
		return nil
	}
	return e.f[i].of(e.Raw)
}

// str decodes slot i as a string; ok is false when it is absent or not a string.
func (e *Entry) str(i int) (string, bool) { return decodeString(e.Raw, e.f[i]) }

// Header is the session line {"type":"session",...}.
type Header struct {
	Raw           []byte
	ID            string
	Version       int // 1 when the header has none (pi v1)
	Timestamp     string
	Cwd           string
	ParentSession string
}

// lineFields collects the spans of every member any algorithm reads.
type lineFields struct {
	typ, id, parentID, timestamp                      span
	message, role, msgProvider, msgModel, msgContent  span
	customType, content, display, details             span
	summary, firstKept, tokensBefore, fromID          span
	provider, modelID, thinkingLevel, targetID, label span
	name, version, cwd, parentSession                 span
}

// scanLine validates one line and collects its fields. It refuses anything
// but an object (pi would keep e.g. a bare number as an "entry"; no algorithm
// of pi can use one, so we report it as an invalid line instead), and
// nesting deeper than MaxDepth (a *DepthError).
func scanLine(line []byte) (lineFields, error) {
	var lf lineFields
	s := scanner{data: line, bounded: true}
	s.ws()
	if s.pos >= len(line) || line[s.pos] != '{' {
		return lf, &syntaxError{s.pos, "not a JSON object"}
	}
	err := s.members(func(key []byte, escaped bool, v int) (bool, error) {
		k := string(key) // no allocation: used only in the switch
		if escaped {
			var ok bool
			if k, ok = unquoteRaw(key); !ok {
				return false, s.fail("bad key")
			}
		}
		var dst *span
		switch k {
		case "type":
			dst = &lf.typ
		case "id":
			dst = &lf.id
		case "parentId":
			dst = &lf.parentID
		case "timestamp":
			dst = &lf.timestamp
		case "message":
			if s.data[v] == '{' {
				// Read the message's role, provider, model and content
				// (whether it has one: pi 1.1 supplies a default) in the
				// same pass.
				lf.role, lf.msgProvider, lf.msgModel, lf.msgContent = span{}, span{}, span{}, span{}
				err := s.members(func(key []byte, escaped bool, v2 int) (bool, error) {
					switch {
					case keyIs(key, escaped, "role"):
						return true, s.capture(&lf.role, v2)
					case keyIs(key, escaped, "provider"):
						return true, s.capture(&lf.msgProvider, v2)
					case keyIs(key, escaped, "model"):
						return true, s.capture(&lf.msgModel, v2)
					case keyIs(key, escaped, "content"):
						return true, s.capture(&lf.msgContent, v2)
					}
					return false, nil
				})
				lf.message = mkspan(v, s.pos)
				return true, err
			}
			lf.role, lf.msgProvider, lf.msgModel, lf.msgContent = span{}, span{}, span{}, span{}
			dst = &lf.message
		case "customType":
			dst = &lf.customType
		case "content":
			dst = &lf.content
		case "display":
			dst = &lf.display
		case "details":
			dst = &lf.details
		case "summary":
			dst = &lf.summary
		case "firstKeptEntryId":
			dst = &lf.firstKept
		case "tokensBefore":
			dst = &lf.tokensBefore
		case "fromId":
			dst = &lf.fromID
		case "provider":
			dst = &lf.provider
		case "modelId":
			dst = &lf.modelID
		case "thinkingLevel":
			dst = &lf.thinkingLevel
		case "targetId":
			dst = &lf.targetID
		case "label":
			dst = &lf.label
		case "name":
			dst = &lf.name
		case "version":
			dst = &lf.version
		case "cwd":
			dst = &lf.cwd
		case "parentSession":
			dst = &lf.parentSession
		default:
			return false, nil
		}
		// JSON.parse keeps the last of duplicate keys.
		return true, s.capture(dst, v)
	})
	if err != nil {
		return lf, err
	}
	s.ws()
	if s.pos != len(line) {
		return lf, s.fail("data after the object")
	}
	return lf, nil
}

// capture scans the value at v and records its span.
func (s *scanner) capture(dst *span, v int) error {
	if err := s.value(); err != nil {
		return err
	}
	*dst = mkspan(v, s.pos)
	return nil
}

// isHeaderLine reports whether the line's type is "session".
func (lf *lineFields) isHeader(line []byte) bool {
	t, ok := decodeString(line, lf.typ)
	return ok && t == "session"
}

// newHeader builds a Header from a scanned header line.
func newHeader(line []byte, lf *lineFields) (Header, error) {
	h := Header{Raw: line, Version: 1}
	id, ok := decodeString(line, lf.id)
	if !ok {
		return h, fmt.Errorf("session header has no string \"id\"")
	}
	h.ID = id
	if lf.version.ok() {
		v := lf.version.of(line)
		f, ok := jsjson.ParseNumber(v)
		if !ok || f != math.Trunc(f) {
			return h, fmt.Errorf("session header \"version\" is %s, want 1, 2 or 3", v)
		}
		if f > CurrentVersion {
			return h, fmt.Errorf("unsupported session version %s (this build reads versions 1 to %d)", v, CurrentVersion)
		}
		if f >= 1 {
			h.Version = int(f)
		}
	}
	h.Timestamp, _ = decodeString(line, lf.timestamp)
	h.Cwd, _ = decodeString(line, lf.cwd)
	h.ParentSession, _ = decodeString(line, lf.parentSession)
	return h, nil
}

// CurrentVersion is the session format version this package writes.
const CurrentVersion = 3

// newEntry builds an Entry from a scanned entry line.
func newEntry(line []byte, lf *lineFields) (Entry, error) {
	e := Entry{Raw: line, parent: -1}
	id, ok := decodeString(line, lf.id)
	if !ok || id == "" {
		return e, fmt.Errorf("entry has no string \"id\"")
	}
	e.ID = id
	e.ParentID, _ = decodeString(line, lf.parentID)
	e.ms = jsjson.DateMillis(lf.timestamp.of(line))
	if t, ok := decodeString(line, lf.typ); ok {
		e.Kind = kindOf(t)
	}
	switch e.Kind {
	case KindMessage:
		e.f[fMessage] = lf.message
		if r, ok := decodeString(line, lf.role); ok {
			e.Role = roleOf(r)
		}
		e.f[fMsgProvider], e.f[fMsgModel], e.f[fMsgContent] = lf.msgProvider, lf.msgModel, lf.msgContent
	case KindCustomMessage:
		e.f = [4]span{lf.customType, lf.content, lf.display, lf.details}
	case KindCompaction:
		e.f[fCSummary], e.f[fCFirstKept], e.f[fCTokens] = lf.summary, lf.firstKept, lf.tokensBefore
	case KindBranchSummary:
		e.f[fBSummary], e.f[fBFromID] = lf.summary, lf.fromID
	case KindModelChange:
		e.f[fProvider], e.f[fModelID] = lf.provider, lf.modelID
	case KindThinkingLevelChange:
		e.f[fThinking] = lf.thinkingLevel
	case KindLabel:
		e.f[fTarget], e.f[fLabel] = lf.targetID, lf.label
	case KindSessionInfo:
		e.f[fName] = lf.name
	case KindContextEdit:
		e.f[fTarget] = lf.targetID
	case KindCustom, KindUnknown:
		e.f[fType], e.f[fCustomType] = lf.typ, lf.customType
	}
	return e, nil
}

// ParseEntry decodes one entry line (no trailing newline). The Entry keeps
// line as its Raw bytes; the caller must not modify line afterwards.
func ParseEntry(line []byte) (Entry, error) {
	lf, err := scanLine(line)
	if err != nil {
		return Entry{}, err
	}
	if lf.isHeader(line) {
		return Entry{}, fmt.Errorf("a session header is not an entry")
	}
	return newEntry(line, &lf)
}

// ParseHeader decodes a session header line.
func ParseHeader(line []byte) (Header, error) {
	lf, err := scanLine(line)
	if err != nil {
		return Header{}, err
	}
	if !lf.isHeader(line) {
		return Header{}, fmt.Errorf("not a session header (\"type\" is not \"session\")")
	}
	return newHeader(line, &lf)
}

// decodeString returns the string value at sp. Strings without escapes share
// line's memory (no allocation; lines are immutable once read).
func decodeString(line []byte, sp span) (string, bool) {
	if !sp.isString(line) {
		return "", false
	}
	raw := sp.of(line)
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		if len(inner) == 0 {
			return "", true
		}
		return unsafe.String(&inner[0], len(inner)), true
	}
	return jsjson.Unquote(raw)
}
