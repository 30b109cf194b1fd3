package writer

import (
	"github.com/pifleet/sessionlog/internal/tree"
)

// Spec describes one entry to append, before it has an id, a parent and a
// timestamp: the Writer supplies those (Meta) when it builds the line, and can
// build it again with a fresh id if another writer took the id meanwhile.
// The constructors below mirror pi's SessionManager append methods.
type Spec func(m tree.Meta) (tree.Entry, error)

// Message appends an AgentMessage (raw JSON object: user, assistant,
// toolResult, bashExecution, custom, ...). The first assistant message of a
// new session triggers its creation on the log.
func Message(message []byte) Spec {
	return func(m tree.Meta) (tree.Entry, error) { return tree.NewMessage(m, message) }
}

// ModelChange records a switch of provider and model.
func ModelChange(provider, modelID string) Spec {
	return func(m tree.Meta) (tree.Entry, error) { return tree.NewModelChange(m, provider, modelID) }
}

// ThinkingLevelChange records a new thinking level ("off", "low", "high", ...).
func ThinkingLevelChange(level string) Spec {
	return func(m tree.Meta) (tree.Entry, error) { return tree.NewThinkingLevelChange(m, level) }
}

// Compaction records a summary of everything before firstKeptEntryID on the
// path. details (raw JSON) and fromHook are optional.
func Compaction(summary, firstKeptEntryID string, tokensBefore float64, details []byte, fromHook *bool) Spec {
	return func(m tree.Meta) (tree.Entry, error) {
		return tree.NewCompaction(m, summary, firstKeptEntryID, tokensBefore, details, fromHook)
	}
}

// CustomEntry stores extension state (never part of the LLM context).
func CustomEntry(customType string, data []byte) Spec {
	return func(m tree.Meta) (tree.Entry, error) { return tree.NewCustomEntry(m, customType, data) }
}

// CustomMessage injects an extension message into the context. content is
// raw JSON: a string or an array of text/image blocks.
func CustomMessage(customType string, content []byte, display bool, details []byte) Spec {
	return func(m tree.Meta) (tree.Entry, error) {
		return tree.NewCustomMessage(m, customType, content, display, details)
	}
}

// SessionInfo names the session (stored trimmed, like pi).
func SessionInfo(name string) Spec {
	return func(m tree.Meta) (tree.Entry, error) { return tree.NewSessionInfo(m, name) }
}

// Label sets (or, with nil, clears) the label of targetID.
func Label(targetID string, label *string) Spec {
	return func(m tree.Meta) (tree.Entry, error) { return tree.NewLabel(m, targetID, label) }
}

// branchSummary is used by Writer.BranchWithSummary, which also moves the
// leaf. Without usage it is the line both pi versions write.
func branchSummary(fromID, summary string, details, usage []byte, fromHook *bool) Spec {
	return func(m tree.Meta) (tree.Entry, error) {
		return tree.NewBranchSummary11(m, fromID, summary, details, usage, fromHook)
	}
}

// ContextEdit (pi 1.1) replaces the content of entry targetID in the
// context from here on: content is raw JSON (a string or an array of
// blocks), nil leaves the target out. The Writer checks the target as pi
// does (on the branch, contributing model content) and stores a string
// for an assistant or toolResult message as one text block.
func ContextEdit(targetID string, content []byte) Spec {
	return func(m tree.Meta) (tree.Entry, error) { return tree.NewContextEdit(m, targetID, content) }
}

// Usage (pi 1.1) records tokens and cost spent outside a message: kind
// ("cache_warm", ...), provider, model, pi-ai's Usage object (raw JSON) and
// an optional note.
func Usage(kind, provider, model string, usage []byte, note string) Spec {
	return func(m tree.Meta) (tree.Entry, error) { return tree.NewUsage(m, kind, provider, model, usage, note) }
}

// Compaction11 records a compaction as pi 1.1 does: with its usage and a
// checkpoint of the system prompt (systemMessage); FirstKeptEntryID ""
// keeps nothing before it (retain-none).
func Compaction11(c tree.Compaction11) Spec {
	return func(m tree.Meta) (tree.Entry, error) { return tree.NewCompaction11(m, c) }
}

// SessionInfo11 names the session as pi 1.1 does: CR/LF runs folded into
// one space, then trimmed.
func SessionInfo11(name string) Spec {
	return func(m tree.Meta) (tree.Entry, error) { return tree.NewSessionInfo11(m, name) }
}
