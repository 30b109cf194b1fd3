package tree

import (
	"errors"
	"regexp"

	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// Constructors of what pi 1.1.0's SessionManager writes (keys in its
// order, undefined values left out), beside new.go's of 0.73.1.

// NewContextEdit builds pi 1.1's "context_edit": replacement is the raw
// JSON content that replaces the target's (a string or an array), stored
// as {"content":…}; nil stores null (the target's messages are left out).
func NewContextEdit(m Meta, targetID string, content []byte) (Entry, error) {
	if err := jsonArg("content", content); err != nil {
		return Entry{}, err
	}
	repl := jsonNull
	if content != nil {
		repl = newObj(len(content)+16).raw("content", content).done()
	}
	return build(m.head(newObj(len(repl)+160).str("type", "context_edit")).str("targetId", targetID).raw("replacement", repl))
}

// NewUsage builds pi 1.1's "usage" entry: tokens and cost spent outside a
// message (usage is pi-ai's Usage object); an empty note is left out, as
// pi leaves it out.
func NewUsage(m Meta, kind, provider, model string, usage []byte, note string) (Entry, error) {
	if err := jsonArg("usage", usage); err != nil {
		return Entry{}, err
	}
	if usage == nil {
		return Entry{}, errors.New("usage is required")
	}
	o := m.head(newObj(len(usage)+len(note)+192).str("type", "usage")).
		str("kind", kind).str("provider", provider).str("model", model).raw("usage", usage)
	if note != "" {
		o.str("note", note)
	}
	return build(o)
}

// Compaction11 is pi 1.1's appendCompaction: FirstKeptEntryID "" keeps
// nothing (retain-none: pi stores the compaction's own id); Details,
// Usage and SystemMessage are raw JSON, nil left out, as is a nil
// FromHook — but a nil SystemMessage is Meta.Checkpoint's when it gives
// one (pi computes the checkpoint itself).
type Compaction11 struct {
	Summary          string
	FirstKeptEntryID string
	TokensBefore     float64
	Details, Usage   []byte
	FromHook         *bool
	SystemMessage    []byte
}

// NewCompaction11 builds a "compaction" entry as pi 1.1 writes it.
func NewCompaction11(m Meta, c Compaction11) (Entry, error) {
	for _, a := range []struct {
		name string
		raw  []byte
	}{{"details", c.Details}, {"usage", c.Usage}, {"systemMessage", c.SystemMessage}} {
		if err := jsonArg(a.name, a.raw); err != nil {
			return Entry{}, err
		}
	}
	if c.SystemMessage == nil && m.Checkpoint != nil {
		c.SystemMessage = m.Checkpoint()
	}
	kept := c.FirstKeptEntryID
	if kept == "" {
		kept = m.ID
	}
	o := m.head(newObj(len(c.Summary)+len(c.Details)+len(c.Usage)+len(c.SystemMessage)+192).str("type", "compaction")).
		str("summary", c.Summary).str("firstKeptEntryId", kept).
		raw("tokensBefore", []byte(jsjson.FormatNumber(c.TokensBefore))).raw("details", c.Details).raw("usage", c.Usage)
	return build(o.raw("fromHook", boolJSON(c.FromHook)).raw("systemMessage", c.SystemMessage))
}

// NewBranchSummary11 builds a "branch_summary" entry as pi 1.1 writes it:
// usage (raw JSON, nil left out) after details.
func NewBranchSummary11(m Meta, fromID, summary string, details, usage []byte, fromHook *bool) (Entry, error) {
	if err := jsonArg("details", details); err != nil {
		return Entry{}, err
	}
	if err := jsonArg("usage", usage); err != nil {
		return Entry{}, err
	}
	o := m.head(newObj(len(summary)+len(details)+len(usage)+160).str("type", "branch_summary")).
		str("fromId", fromID).str("summary", summary).raw("details", details).raw("usage", usage)
	return build(o.raw("fromHook", boolJSON(fromHook)))
}

// lineBreaks are the runs pi 1.1's appendSessionInfo folds into a space.
var lineBreaks = regexp.MustCompile(`[\r\n]+`)

// NewSessionInfo11 builds a "session_info" entry as pi 1.1 does: each run
// of CR/LF becomes one space, then the name is trimmed.
func NewSessionInfo11(m Meta, name string) (Entry, error) {
	return NewSessionInfo(m, lineBreaks.ReplaceAllString(name, " "))
}

// EditTarget is a context_edit's targetId ("" for another entry).
func (e *Entry) EditTarget() string {
	if e.Kind != KindContextEdit {
		return ""
	}
	t, _ := e.str(fTarget)
	return t
}

// ContextEditFor is edit as pi 1.1's appendContextEdit stores it for
// target: a string replacing an assistant or toolResult message's content
// becomes one text block (their content is an array); any other edit is
// edit itself.
func ContextEditFor(edit Entry, target *Entry) (Entry, error) {
	if target.Kind != KindMessage || (target.Role != RoleAssistant && target.Role != RoleToolResult) {
		return edit, nil
	}
	v, err := jsjson.ParseValue(edit.Raw)
	if err != nil {
		return edit, err
	}
	r, ok := v.Get("replacement")
	if !ok || r.Kind != KindObject {
		return edit, nil
	}
	c, ok := r.Get("content")
	if !ok || c.Kind != KindString {
		return edit, nil
	}
	block := Value{Kind: KindObject}
	block.Set("type", Value{Kind: KindString, Str: "text"})
	block.Set("text", *c)
	r.Set("content", Value{Kind: KindArray, Arr: []Value{block}})
	return ParseEntry(v.AppendJSON(nil))
}
