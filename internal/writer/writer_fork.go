package writer

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Fork starts a new session holding the path from the root to entry leafID
// (pi's createBranchedSession): the path's entries with their ids (with
// Options.Pi11 re-chained over the labels dropped, tree.Fork11), the
// labels of path entries written again as fresh label entries at the end,
// and a header whose parentSession names this session. It returns a Writer
// for the new session, its leaf on its last entry.
//
// Like pi, which writes the new file only once it holds an assistant
// message (with Options.Pi11: a user or assistant message), the new session is published at once (one atomic creation, or
// chunks that are purged again on failure) when the path holds an assistant
// message, and otherwise stays pending in the new Writer until its first
// assistant message is appended. The package-level Fork, an operator's
// action, always publishes.
//
// c.ID defaults to a new UUIDv7, c.Cwd to this session's working directory
// and c.ParentSession to this session's id. The source Writer is not
// changed. ErrNotFound if leafID is not an entry of this session.
func (w *Writer) Fork(ctx context.Context, leafID string, c CreateOptions) (*Writer, error) {
	if c.ID == "" {
		u, err := uuid.NewV7()
		if err != nil {
			return nil, fmt.Errorf("new session id: %w", err)
		}
		c.ID = u.String()
	}
	if err := session.ValidSessionID(c.ID); err != nil {
		return nil, err
	}
	w.mu.Lock()
	leaf, ok := w.s.Index(leafID)
	if !ok {
		w.mu.Unlock()
		return nil, fmt.Errorf("fork: entry %q: %w", leafID, wire.ErrNotFound)
	}
	if c.Cwd == "" {
		c.Cwd = w.s.Header.Cwd
	}
	if c.ParentSession == "" {
		c.ParentSession = w.s.Header.ID
	}
	h := tree.NewHeader(c.ID, tree.FormatTimestamp(w.opts.now()), w.opts.cwd(c.Cwd), c.ParentSession)
	fork := tree.Fork
	if w.opts.Pi11 {
		fork = tree.Fork11
	}
	s, err := fork(w.s, leaf, h, w.ids)
	w.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", wire.ErrInvalid, err)
	}
	if err := checkFork(s); err != nil {
		return nil, err
	}
	nw := newWriter(w.log, s, w.opts)
	nw.seqs = make([]uint64, s.Len())
	if !nw.flushes(s.Entries()) {
		return nw, nil // pending, as pi keeps an unanswered fork in memory
	}
	seqs, err := publishSession(ctx, w.log, s, w.opts.Retry)
	if err != nil {
		return nil, fmt.Errorf("fork: %w", err)
	}
	copy(nw.seqs, seqs[1:])
	nw.flushed, nw.lastSeq = true, seqs[len(seqs)-1]
	return nw, nil
}

// checkFork checks a fork's entries against pi's shapes before anything is
// published. They were checked when they were written, so a failure means
// the source holds an entry stored before checks existed (or by a writer
// that skips them): the fork refuses to copy it.
func checkFork(s *tree.Session) error {
	for i := range s.Len() {
		e := s.Entry(i)
		if err := tree.CheckLine(e.Raw); err != nil {
			return wire.Invalid("entryId", fmt.Sprintf("the path holds entry %q, which is not a valid %s entry (%v)", e.ID, e.Type(), err))
		}
	}
	return nil
}
