package client

import (
	"encoding/json"

	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// The reads below are pi's SessionManager getters, answered from the
// Session's memory: stored entries, pending ones, and what other writers
// appended as far as this Session has seen it (Sync, or any write that ran
// into them). They never touch the network.

// Context is what pi sends the model at a leaf (its buildSessionContext).
type Context struct {
	// LeafID is the leaf ("" before the first entry).
	LeafID string
	// Path lists the entry ids from the root to the leaf.
	Path []string
	// ThinkingLevel is the last thinking_level_change on the path, "off"
	// without one.
	ThinkingLevel string
	// Model is the last model_change or assistant message's model on the
	// path; nil without one.
	Model *Model
	// Messages are pi's AgentMessages for the model, as stored (the
	// compaction and branch summaries on the path included, as pi builds
	// them).
	Messages []json.RawMessage
}

// Model names a provider's model.
type Model struct {
	Provider string `json:"provider"`
	ModelID  string `json:"modelId"`
}

// BuildContext returns pi's context at the leaf.
func (s *Session) BuildContext() Context {
	c := s.w.Context()
	out := Context{LeafID: c.LeafID, Path: c.Path, ThinkingLevel: "off", Messages: make([]json.RawMessage, len(c.Messages))}
	if c.Thinking != nil {
		out.ThinkingLevel = jsjson.ToString(c.Thinking) // a string as it is
	}
	if c.Model != nil {
		var m Model
		if json.Unmarshal(c.Model, &m) == nil {
			out.Model = &m
		}
	}
	for i, m := range c.Messages {
		out.Messages[i] = json.RawMessage(m.JSON)
	}
	return out
}

// LLMMessages returns the context's messages as pi's convertToLlm turns
// them into what a provider takes: bash executions and custom messages as
// user messages, summaries wrapped in their tags, and nothing the model
// must not see.
func (s *Session) LLMMessages() []json.RawMessage {
	c := s.w.Context()
	ms := c.LLMMessages()
	out := make([]json.RawMessage, len(ms))
	for i, m := range ms {
		out[i] = json.RawMessage(m.JSON)
	}
	return out
}

// Node is one entry of the session tree.
type Node struct {
	ID   string
	Type string // the entry type: message, model_change, label, ...
	// Label is the entry's label ("" without one).
	Label string
	// Preview is a one-line description for listings, as pi's /tree shows
	// it: "user: …", "assistant: … → read(src/auth.ts)", "[model …]".
	Preview string
	// Children are in pi's order: by timestamp, oldest first.
	Children []*Node
}

// Tree returns pi's getTree: the roots in log order (an entry is a root
// when its parent is null or unknown), each with its descendants.
func (s *Session) Tree() []*Node {
	var roots []*Node
	s.w.View(func(t *tree.Session, _ int) {
		var stack []*Node // stack[d] is the last node seen at depth d
		for _, n := range t.Tree() {
			e := t.Entry(n.Index)
			label, _ := t.Label(e.ID)
			node := &Node{ID: e.ID, Type: e.Type(), Label: label, Preview: e.Preview()}
			stack = append(stack[:n.Depth], node)
			if n.Depth == 0 {
				roots = append(roots, node)
			} else {
				parent := stack[n.Depth-1]
				parent.Children = append(parent.Children, node)
			}
		}
	})
	return roots
}

// Path returns the entry ids from the root to id, root first (pi's
// getBranch); "" means the leaf. Unknown ids give an empty path.
func (s *Session) Path(id string) []string {
	var p []string
	s.w.View(func(t *tree.Session, leaf int) {
		if id == "" {
			if leaf < 0 {
				return
			}
			id = t.Entry(leaf).ID
		}
		p = t.Path(id)
	})
	return p
}

// Children returns the ids of id's children in tree order.
func (s *Session) Children(id string) []string {
	var out []string
	s.w.View(func(t *tree.Session, _ int) { out = t.Children(id) })
	return out
}

// Entry returns the line of entry id, as stored.
func (s *Session) Entry(id string) (json.RawMessage, bool) {
	var out json.RawMessage
	s.w.View(func(t *tree.Session, _ int) {
		if e, ok := t.Get(id); ok {
			out = json.RawMessage(e.Raw)
		}
	})
	return out, out != nil
}

// Entries returns every entry line in log order (pi's getEntries).
func (s *Session) Entries() []json.RawMessage {
	var out []json.RawMessage
	s.w.View(func(t *tree.Session, _ int) {
		out = make([]json.RawMessage, t.Len())
		for i := range out {
			out[i] = json.RawMessage(t.Entry(i).Raw)
		}
	})
	return out
}

// Labels returns every entry's label, by entry id.
func (s *Session) Labels() map[string]string {
	var out map[string]string
	s.w.View(func(t *tree.Session, _ int) { out = t.Labels() })
	return out
}

// Name returns the session's name (pi's getSessionName): the last
// session_info's, trimmed; false without one.
func (s *Session) Name() (string, bool) {
	var name string
	var ok bool
	s.w.View(func(t *tree.Session, _ int) { name, ok = t.Name() })
	return name, ok
}

// Export returns the session as pi's JSONL file: the header line, then
// every entry line, each ending in a newline — what pi would have written,
// byte for byte. For a pending session it is what pi holds in memory.
func (s *Session) Export() []byte {
	var out []byte
	s.w.View(func(t *tree.Session, _ int) { out = t.AppendJSONL(nil) })
	return out
}

// UsageTotal is one row of UsageBreakdown: the cost (the sum of
// usage.cost.total) and tokens (input, output, cache reads and writes)
// spent under a key, "provider/model" or "Tools/summaries".
type UsageTotal = tree.UsageTotal

// UsageBreakdown is pi 1.1's getUsageCostBreakdown over every entry of the
// session, on any branch: assistant messages under their provider and
// model (responseModel when set), usage entries under theirs, tool results,
// branch summaries and compactions under "Tools/summaries"; rows with
// neither cost nor tokens left out, the costliest first.
func (s *Session) UsageBreakdown() []UsageTotal {
	var out []UsageTotal
	s.w.View(func(t *tree.Session, _ int) { out = t.UsageBreakdown() })
	return out
}
