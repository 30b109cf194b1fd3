package client

import (
	"context"
	"fmt"
)

// The single-entry appends below are pi's SessionManager methods. Each is
// Append with one Spec, and documents the same conflict semantics: when
// another worker appended meanwhile, the entry still lands as a child of
// this Session's leaf, the Session merges what it missed (Written.Merged),
// and Written.Seq is the session's version after the write. Before the
// session's first assistant message they store nothing (Written.Seq 0).

// AppendMessage appends an AgentMessage (see Message) as a child of the
// leaf. The first assistant message of a new session stores the session:
// header and every pending entry in one atomic creation, which fails with
// ErrExists if a session with this id is stored already, and with
// ErrTooLarge (storing nothing) if it would need more than one atomic
// batch. Conflicts: see Append.
func (s *Session) AppendMessage(ctx context.Context, msg any) (Written, error) {
	return s.Append(ctx, Message(msg))
}

// AppendModelChange records a switch of provider and model. Conflicts: see
// Append.
func (s *Session) AppendModelChange(ctx context.Context, provider, modelID string) (Written, error) {
	return s.Append(ctx, ModelChange(provider, modelID))
}

// AppendThinkingLevelChange records a new thinking level. Conflicts: see
// Append.
func (s *Session) AppendThinkingLevelChange(ctx context.Context, level string) (Written, error) {
	return s.Append(ctx, ThinkingLevelChange(level))
}

// AppendCompaction records a summary of the path before firstKeptEntryID
// (see Compaction). Conflicts: see Append.
func (s *Session) AppendCompaction(ctx context.Context, summary, firstKeptEntryID string, tokensBefore float64, details any, fromHook *bool) (Written, error) {
	return s.Append(ctx, Compaction(summary, firstKeptEntryID, tokensBefore, details, fromHook))
}

// AppendCompaction11 records a compaction as pi 1.1 does (see
// Compaction11): firstKeptEntryID "" keeps nothing before it. Conflicts:
// see Append.
func (s *Session) AppendCompaction11(ctx context.Context, summary, firstKeptEntryID string, tokensBefore float64, o CompactionOptions) (Written, error) {
	return s.Append(ctx, Compaction11(summary, firstKeptEntryID, tokensBefore, o))
}

// AppendContextEdit replaces what entry targetID contributes to the
// context from here on, or with nil content leaves it out (pi 1.1's
// appendContextEdit; see ContextEdit). An id this Session does not know
// yet is looked up on the log first; ErrNotFound if it is not there.
// Conflicts: see Append.
func (s *Session) AppendContextEdit(ctx context.Context, targetID string, content any) (Written, error) {
	return s.Append(ctx, ContextEdit(targetID, content))
}

// AppendUsage records tokens and cost spent outside a message (pi 1.1's
// appendUsage; see Usage). Conflicts: see Append.
func (s *Session) AppendUsage(ctx context.Context, kind, provider, model string, usage any, note string) (Written, error) {
	return s.Append(ctx, Usage(kind, provider, model, usage, note))
}

// AppendCustomEntry stores extension state (see CustomEntry). Conflicts:
// see Append.
func (s *Session) AppendCustomEntry(ctx context.Context, customType string, data any) (Written, error) {
	return s.Append(ctx, CustomEntry(customType, data))
}

// AppendCustomMessage injects an extension message into the context (see
// CustomMessage). Conflicts: see Append.
func (s *Session) AppendCustomMessage(ctx context.Context, customType string, content any, display bool, details any) (Written, error) {
	return s.Append(ctx, CustomMessage(customType, content, display, details))
}

// Label sets the label of entry targetID (pi's appendLabelChange), or
// clears it with "" (see LabelChange). The label is an entry of its own, a
// child of the leaf like any other; the last label of a target wins, on
// any branch. An id this Session does not know yet is looked up on the log
// first; ErrNotFound if it is not there. Conflicts: see Append.
func (s *Session) Label(ctx context.Context, targetID, label string) (Written, error) {
	var l *string
	if label != "" {
		l = &label
	}
	return s.Append(ctx, LabelChange(targetID, l))
}

// Rename names the session (pi's appendSessionInfo): the name is stored
// trimmed, and the last one wins. Conflicts: see Append — two workers that
// rename at once both succeed, and the one stored last names the session.
func (s *Session) Rename(ctx context.Context, name string) (Written, error) {
	return s.Append(ctx, SessionInfo(name))
}

// BranchWithSummary moves the leaf to fromID ("": before the first entry)
// and appends there a summary of the branch being left (pi's
// branchWithSummary); details and fromHook are optional. An unknown fromID
// is looked up on the log first; ErrNotFound if it is not there, and then
// nothing changes. Conflicts: see Append — the summary lands under fromID
// whatever other workers appended.
func (s *Session) BranchWithSummary(ctx context.Context, fromID, summary string, details any, fromHook *bool) (Written, error) {
	return s.BranchWithSummaryUsage(ctx, fromID, summary, details, nil, fromHook)
}

// BranchWithSummaryUsage is BranchWithSummary with what the summarizing
// call cost (pi-ai's Usage object; nil leaves it out), as pi 1.1 stores
// it. A WithPi11 client's summary names the leaf left behind as fromId, as
// pi 1.1's does (pi 0.73.1 named fromID).
func (s *Session) BranchWithSummaryUsage(ctx context.Context, fromID, summary string, details, usage any, fromHook *bool) (Written, error) {
	d, err := rawJSON("details", details)
	if err != nil {
		return Written{}, fmt.Errorf("branch with summary: %w", err)
	}
	u, err := rawJSON("usage", usage)
	if err != nil {
		return Written{}, fmt.Errorf("branch with summary: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if fromID != "" {
		if err := s.need(ctx, "branch with summary", fromID); err != nil {
			return Written{}, err
		}
	}
	return s.write(ctx, func() ([]string, error) {
		id, err := s.w.BranchWithSummaryUsage(ctx, fromID, summary, d, u, fromHook)
		return []string{id}, err
	})
}
