package client

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/tree/jsjson"
	"github.com/pifleet/sessionlog/internal/writer"
)

// Spec is one entry to append, before it has an id, a parent and a
// timestamp: the Session supplies those when it writes it (and draws a new
// id if another writer took the one it drew). Make Specs with Message,
// ModelChange, ThinkingLevelChange, Compaction, CustomEntry, CustomMessage,
// SessionInfo and LabelChange — pi's SessionManager append methods — and
// write several at once with Session.Append.
type Spec struct {
	spec writer.Spec
	pi11 writer.Spec // what a WithPi11 client writes instead, if it differs
	// target is an entry that must exist: a label's or a context edit's
	// (targetOf says which).
	target, targetOf string
	err              error // an argument that is not JSON
}

// rawJSON turns a JSON argument into the bytes pi would write for it:
// []byte and json.RawMessage are JSON text, anything else goes through
// encoding/json; either way the result is what JavaScript's JSON.stringify
// writes for that value (no whitespace, "<" unescaped, numbers as JS
// prints them). nil stays nil: an undefined argument, left out.
func rawJSON(name string, v any) ([]byte, error) {
	var b []byte
	switch v := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		b = v
	case []byte:
		b = v
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, &FieldError{Field: name, Reason: err.Error()}
		}
	}
	val, err := jsjson.ParseValue(b)
	if err != nil {
		return nil, &FieldError{Field: name, Reason: "not valid JSON: " + err.Error()}
	}
	return val.AppendJSON(nil), nil
}

// specOf builds a Spec whose JSON arguments are converted first.
func specOf(build func(raw [][]byte) writer.Spec, args ...namedArg) Spec {
	raw := make([][]byte, len(args))
	for i, a := range args {
		var err error
		if raw[i], err = rawJSON(a.name, a.v); err != nil {
			return Spec{err: err}
		}
	}
	return Spec{spec: build(raw)}
}

type namedArg struct {
	name string
	v    any
}

// Message is an AgentMessage entry: a JSON object with a "role" (user,
// assistant, toolResult, bashExecution, custom, ...), as pi's agent builds
// them. The first assistant message of a new session stores it.
func Message(msg any) Spec {
	return specOf(func(r [][]byte) writer.Spec { return writer.Message(r[0]) }, namedArg{"message", msg})
}

// ModelChange records a switch of provider and model.
func ModelChange(provider, modelID string) Spec {
	return Spec{spec: writer.ModelChange(provider, modelID)}
}

// ThinkingLevelChange records a new thinking level ("off", "low", "high",
// ...).
func ThinkingLevelChange(level string) Spec { return Spec{spec: writer.ThinkingLevelChange(level)} }

// Compaction records a summary of everything on the path before
// firstKeptEntryID, which the context then starts from. details (any JSON
// value) and fromHook are optional (nil: left out).
func Compaction(summary, firstKeptEntryID string, tokensBefore float64, details any, fromHook *bool) Spec {
	return specOf(func(r [][]byte) writer.Spec {
		return writer.Compaction(summary, firstKeptEntryID, tokensBefore, r[0], fromHook)
	}, namedArg{"details", details})
}

// CustomEntry stores an extension's state under customType; it never
// reaches the LLM context.
func CustomEntry(customType string, data any) Spec {
	return specOf(func(r [][]byte) writer.Spec { return writer.CustomEntry(customType, r[0]) }, namedArg{"data", data})
}

// CustomMessage injects an extension's message into the context: content
// is a string or an array of text/image blocks, details optional (nil).
func CustomMessage(customType string, content any, display bool, details any) Spec {
	return specOf(func(r [][]byte) writer.Spec {
		return writer.CustomMessage(customType, r[0], display, r[1])
	}, namedArg{"content", content}, namedArg{"details", details})
}

// SessionInfo names the session (stored trimmed, like pi; the last one
// wins).
func SessionInfo(name string) Spec {
	return Spec{spec: writer.SessionInfo(name), pi11: writer.SessionInfo11(name)}
}

// LabelChange sets the label of entry targetID (pi's appendLabelChange):
// nil clears it (the label is left out of the entry, as pi's UI clears),
// and so does a pointer to "" (stored as ""). The target must exist.
func LabelChange(targetID string, label *string) Spec {
	return Spec{spec: writer.Label(targetID, label), target: targetID, targetOf: "label"}
}

// ContextEdit (pi 1.1) replaces what entry targetID contributes to the
// context from here on (pi's appendContextEdit): content is a string or an
// array of text/image blocks; nil leaves the target out of the context.
// The target must be on the branch the edit is appended to and contribute
// model content (a user, assistant or toolResult message, or a custom
// message), else ErrInvalid naming targetId; a string replacing an
// assistant's or a tool result's content is stored as one text block, as
// pi stores it.
func ContextEdit(targetID string, content any) Spec {
	sp := specOf(func(r [][]byte) writer.Spec { return writer.ContextEdit(targetID, r[0]) }, namedArg{"replacement.content", content})
	sp.target, sp.targetOf = targetID, "context edit"
	return sp
}

// Usage (pi 1.1's appendUsage) records tokens and cost spent outside a
// message — a cache warm-up, a sub-agent's call: kind names it, usage is
// pi-ai's Usage object ({input, output, cacheRead, cacheWrite,
// totalTokens, cost}); an empty note is left out. Usage entries never
// reach the model; Session.UsageBreakdown counts them.
func Usage(kind, provider, model string, usage any, note string) Spec {
	return specOf(func(r [][]byte) writer.Spec { return writer.Usage(kind, provider, model, r[0], note) }, namedArg{"usage", usage})
}

// CompactionOptions are pi 1.1's optional fields of a compaction: nil
// (or a nil FromHook) leaves one out.
type CompactionOptions struct {
	Details any
	// Usage is what the summarizing call cost (pi-ai's Usage object).
	Usage    any
	FromHook *bool
	// SystemMessage checkpoints the system prompt and tools at the
	// compaction (a "system" message object): the context after it starts
	// with it, before the summary. nil stores the one pi 1.1 computes:
	// the system messages on the path folded from the last checkpoint on
	// (none when there are none).
	SystemMessage any
}

// Compaction11 is a compaction as pi 1.1 writes it: firstKeptEntryID ""
// keeps nothing before it (retain-none: pi stores the compaction's own id
// there), and o carries its usage and system-prompt checkpoint.
func Compaction11(summary, firstKeptEntryID string, tokensBefore float64, o CompactionOptions) Spec {
	return specOf(func(r [][]byte) writer.Spec {
		return writer.Compaction11(tree.Compaction11{Summary: summary, FirstKeptEntryID: firstKeptEntryID, TokensBefore: tokensBefore,
			Details: r[0], Usage: r[1], FromHook: o.FromHook, SystemMessage: r[2]})
	}, namedArg{"details", o.Details}, namedArg{"usage", o.Usage}, namedArg{"systemMessage", o.SystemMessage})
}

// Written says where a write landed.
type Written struct {
	// ID is the (last) new entry's id; IDs lists every new entry's, in order.
	ID  string
	IDs []string
	// Seq is the log sequence of the last new entry: the session's version
	// right after the write, usable as minSeq to read it back from any
	// pi-node. 0 while the session is pending (before its first assistant
	// message nothing is stored).
	Seq uint64
	// Merged counts the entries other writers had appended that this write
	// ran into (a conflict) and merged into the Session's view: they are in
	// Tree and Path now. 0 when nobody else wrote.
	Merged int
}

// Append writes specs as one atomic chain: the first a child of the leaf,
// each next one a child of the previous, the leaf moved to the last — an
// assistant message and its tool results, say. Either all of them are
// stored or none, and on error the Session is unchanged.
//
// Conflicts: if another worker appended to the session since this Session
// last wrote or read, the chain is still stored under the same parent (it
// does not follow the other worker's entries); the Session merges what it
// missed, draws new ids for any the other worker took, and tries again,
// within its RetryPolicy. Written.Seq tells where the session stands
// afterwards, Written.Merged how much was missed. With a cursor, a cursor
// another writer moved is reported as a *CursorMovedError alongside a
// valid Written: the entries are stored, only the cursor stayed behind.
func (s *Session) Append(ctx context.Context, specs ...Spec) (Written, error) {
	if len(specs) == 0 {
		return Written{}, fmt.Errorf("%w: nothing to append", ErrInvalid)
	}
	ss := make([]writer.Spec, len(specs))
	for i, sp := range specs {
		switch {
		case sp.err != nil:
			return Written{}, fmt.Errorf("append: %w", sp.err)
		case sp.spec == nil:
			return Written{}, fmt.Errorf("%w: append: the zero Spec", ErrInvalid)
		}
		ss[i] = sp.spec
		if sp.pi11 != nil && s.c.writer.Pi11 {
			ss[i] = sp.pi11
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sp := range specs {
		if sp.target != "" {
			if err := s.need(ctx, sp.targetOf, sp.target); err != nil {
				return Written{}, err
			}
		}
	}
	return s.write(ctx, func() ([]string, error) { return s.w.Append(ctx, ss...) })
}

// write runs fn, which writes through the Writer, and moves the cursor.
// The caller holds s.mu.
func (s *Session) write(ctx context.Context, fn func() ([]string, error)) (Written, error) {
	before := s.count()
	ids, err := fn()
	if err != nil {
		return Written{}, err
	}
	res := Written{ID: ids[len(ids)-1], IDs: ids}
	res.Seq, _ = s.w.Seq(res.ID)
	res.Merged = max(s.count()-before-len(ids), 0)
	return res, s.moveCursor(ctx)
}

func (s *Session) count() (n int) {
	s.w.View(func(t *tree.Session, _ int) { n = t.Len() })
	return n
}
