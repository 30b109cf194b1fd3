package search

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	fastjson "github.com/segmentio/encoding/json"
)

// Doc is one entry as the index holds it: Text is what is tokenized, the
// rest are the fields a query filters on. Session, Cwd, Name and OnPath
// belong to the session, not the line: the caller fills them.
type Doc struct {
	Session   string
	Entry     string
	Type      string // the entry's type: message, custom_message, compaction…
	Role      string // a message's role (user, assistant, toolResult, system…)
	Tools     []string
	Model     string
	Timestamp string
	Cwd       string
	Name      string // the session's name
	Label     string // a label entry's label
	OnPath    bool   // on the session's default path (root to last entry)
	Text      string
}

// line is the union of the fields of pi's entries that Extract reads.
type line struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Timestamp string          `json:"timestamp"`
	Message   *message        `json:"message"`
	Content   json.RawMessage `json:"content"`    // custom_message
	Custom    string          `json:"customType"` // custom_message
	Summary   string          `json:"summary"`    // branch_summary, compaction
	Label     string          `json:"label"`      // label
	Name      string          `json:"name"`       // session_info
	Model     string          `json:"model"`      // usage (pi 1.1)
	Note      string          `json:"note"`       // usage (pi 1.1)
	ModelID   string          `json:"modelId"`    // model_change
	// context_edit (pi 1.1): the content that replaces the target's.
	Replacement *struct {
		Content json.RawMessage `json:"content"`
	} `json:"replacement"`
}

type message struct {
	Role     string          `json:"role"`
	Content  json.RawMessage `json:"content"`
	Model    string          `json:"model"`
	ToolName string          `json:"toolName"`
	// A pi 1.1 system message: the prompt by section, and the tools it
	// adds.
	Sections   json.RawMessage `json:"sections"`
	ToolsAdded []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"toolsAdded"`
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Extract returns the Doc of one entry line, and false for a line with
// nothing to search (a header, a model or thinking-level change, a usage
// row without a note) or one that is not JSON. Indexed: the text blocks of
// messages of every role (a string content too), thinking text but not its
// signature, tool calls' names and the string values of their arguments,
// tool results' output, custom_message content and customType, branch and
// compaction summaries, labels and session names; of pi 1.1's entries, a
// system message's sections and the names and descriptions of the tools
// it adds, a context_edit's replacement content, a usage row's note.
// Images are not.
func Extract(b []byte) (Doc, bool) { return extract(b, fastjson.Unmarshal) }

// unmarshalFunc decodes JSON as encoding/json does. Extract uses
// segmentio's decoder: encoding/json's was a fifth of the index's CPU on
// the production shape (docs/BENCHMARKS.md); TestExtractDecoders holds
// the two to the same results.
type unmarshalFunc func([]byte, any) error

func extract(b []byte, unmarshal unmarshalFunc) (Doc, bool) {
	var l line
	if err := unmarshal(b, &l); err != nil || l.ID == "" {
		return Doc{}, false
	}
	d := Doc{Entry: l.ID, Type: l.Type, Timestamp: l.Timestamp}
	var parts []string
	switch l.Type {
	case "message":
		if l.Message == nil {
			return Doc{}, false
		}
		m := l.Message
		d.Role, d.Model = m.Role, m.Model
		if m.ToolName != "" {
			d.Tools = []string{m.ToolName}
		}
		parts = content(m.Content, parts, &d, unmarshal)
		parts = stringsOf(m.Sections, parts, unmarshal)
		for _, t := range m.ToolsAdded {
			parts = append(parts, t.Name, t.Description)
		}
	case "context_edit":
		if l.Replacement != nil {
			parts = content(l.Replacement.Content, parts, &d, unmarshal)
		}
	case "usage":
		d.Model = l.Model
		parts = append(parts, l.Note)
	case "custom_message":
		d.Role = "custom"
		parts = append(parts, l.Custom)
		parts = content(l.Content, parts, &d, unmarshal)
	case "branch_summary", "compaction":
		parts = append(parts, l.Summary)
	case "label":
		d.Label = l.Label
		parts = append(parts, l.Label)
	case "session_info":
		d.Name = l.Name
		parts = append(parts, l.Name)
	}
	parts = slices.DeleteFunc(parts, func(s string) bool { return s == "" })
	if len(parts) == 0 {
		return Doc{}, false
	}
	d.Text = strings.Join(parts, "\n")
	return d, true
}

// content appends the text of a message content: a string, or blocks.
func content(raw json.RawMessage, parts []string, d *Doc, unmarshal unmarshalFunc) []string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return parts
	}
	if raw[0] == '"' {
		var s string
		if unmarshal(raw, &s) == nil {
			parts = append(parts, s)
		}
		return parts
	}
	var blocks []block
	if unmarshal(raw, &blocks) != nil {
		return parts
	}
	for _, bl := range blocks {
		switch bl.Type {
		case "text":
			parts = append(parts, bl.Text)
		case "thinking":
			parts = append(parts, bl.Thinking)
		case "toolCall":
			d.Tools = append(d.Tools, bl.Name)
			parts = append(parts, bl.Name)
			parts = stringsOf(bl.Arguments, parts, unmarshal)
		}
	}
	return parts
}

// stringsOf appends the string values in a JSON value: arrays in order,
// object members by key, so an entry always gives the same text.
func stringsOf(raw json.RawMessage, parts []string, unmarshal unmarshalFunc) []string {
	var v any
	if len(raw) == 0 || unmarshal(raw, &v) != nil {
		return parts
	}
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			parts = append(parts, v)
		case []any:
			for _, x := range v {
				walk(x)
			}
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				walk(v[k])
			}
		}
	}
	walk(v)
	return parts
}
