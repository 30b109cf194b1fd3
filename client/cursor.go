package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/tree"
)

// Cursor is where one client stands in a session: its leaf, stored beside
// the log so that any worker, and pi-node's reads by client, can resume
// there.
type Cursor struct {
	Client string
	// LeafID is the client's leaf ("": before the first entry).
	LeafID string
	// Seq is the session's last sequence when the cursor was set: a reader
	// that has applied it holds the leaf.
	Seq uint64
	// Revision is the cursor's version; every move is a compare-and-swap
	// on it.
	Revision  uint64
	UpdatedAt time.Time
}

func cursorOf(e session.CursorEntry) *Cursor {
	return &Cursor{Client: e.Client, LeafID: e.LeafID, Seq: e.Seq, Revision: e.Revision, UpdatedAt: e.UpdatedAt}
}

// Branch moves the leaf to entry id (pi's branch): the next append becomes
// its child; nothing is written to the session. An id this Session does
// not know yet is looked up on the log first (another worker may have just
// written it); ErrNotFound if it is not there either.
//
// With a cursor (WithClientID) the cursor moves too, as a compare-and-swap
// on its revision. If another writer moved it since this Session last did,
// the leaf still moves, but the cursor does not, and Branch returns a
// *CursorMovedError (ErrCursorMoved).
func (s *Session) Branch(ctx context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.need(ctx, "branch", id); err != nil {
		return err
	}
	if err := s.w.Branch(id); err != nil {
		return err
	}
	return s.moveCursor(ctx)
}

// ResetLeaf moves the leaf before the first entry (pi's resetLeaf): the
// next append is a new root. Cursors move as with Branch, and conflict the
// same way.
func (s *Session) ResetLeaf(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w.ResetLeaf()
	return s.moveCursor(ctx)
}

// moveCursor writes the Session's leaf to its cursor, if it has one and the
// session is stored (a pending session has no cursor yet: the first
// assistant message stores the session, and then its cursor). The caller
// holds s.mu.
func (s *Session) moveCursor(ctx context.Context) error {
	if s.client == "" || !s.w.Flushed() {
		return nil
	}
	leaf := s.w.LeafID()
	c := session.Cursor{LeafID: leaf, Seq: s.w.LastSeq(), UpdatedAt: s.c.writer.Now()}
	rev, err := s.c.cursors.Update(ctx, s.ID(), s.client, c, s.rev)
	if err == nil {
		s.rev = rev
		return nil
	}
	if !errors.Is(err, ErrConflict) {
		return fmt.Errorf("move cursor %s of session %s: %w", s.client, s.ID(), err)
	}
	cur, err := s.storedCursor(ctx)
	if err != nil {
		return err
	}
	if cur != nil && cur.LeafID == leaf {
		// Our own earlier update whose reply was lost, or another writer
		// that put the cursor where we are: either way it is right.
		s.rev = cur.Revision
		return nil
	}
	return &CursorMovedError{Session: s.ID(), Client: s.client, Cursor: cur}
}

// storedCursor reads the client's cursor; nil when it has none.
func (s *Session) storedCursor(ctx context.Context) (*Cursor, error) {
	e, err := s.c.cursors.Get(ctx, s.ID(), s.client)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read cursor %s of session %s: %w", s.client, s.ID(), err)
	}
	return cursorOf(e), nil
}

// Cursor returns this client's cursor as stored now (nil when it has none:
// the session is pending, or nothing moved it yet, or it was deleted).
// ErrInvalid without WithClientID.
func (s *Session) Cursor(ctx context.Context) (*Cursor, error) {
	if s.client == "" {
		return nil, fmt.Errorf("%w: the session has no cursor (open it WithClientID)", ErrInvalid)
	}
	if !s.w.Flushed() {
		return nil, nil
	}
	return s.storedCursor(ctx)
}

// AdoptCursor moves this Session to where its cursor is now — the answer to
// a CursorMovedError that says "follow the other writer": the leaf goes to
// the cursor's leaf (read from the log first if this Session has not seen
// it), and later moves compare against the cursor's current revision. A
// deleted cursor is adopted as none: the leaf goes to pi's default, the
// last entry, and the next move creates the cursor again.
func (s *Session) AdoptCursor(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.Cursor(ctx)
	if err != nil {
		return err
	}
	if cur == nil {
		if err := s.w.Sync(ctx); err != nil {
			return err
		}
		var last string
		s.w.View(func(t *tree.Session, _ int) { last = t.LeafID() })
		if last == "" {
			s.w.ResetLeaf()
		} else if err := s.w.Branch(last); err != nil {
			return err
		}
		s.rev = 0
		return nil
	}
	s.c.seen(s.ID(), cur.Seq)
	if cur.LeafID == "" {
		s.w.ResetLeaf()
	} else {
		if err := s.need(ctx, "adopt cursor", cur.LeafID); err != nil {
			return err
		}
		if err := s.w.Branch(cur.LeafID); err != nil {
			return err
		}
	}
	s.rev = cur.Revision
	return nil
}

// OverwriteCursor puts the cursor back on this Session's leaf — the answer
// to a CursorMovedError that says "this worker owns the client id": a
// compare-and-swap against the cursor's current revision, so a writer that
// moves it again in between is reported again (*CursorMovedError).
func (s *Session) OverwriteCursor(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.Cursor(ctx)
	if err != nil || !s.w.Flushed() {
		return err
	}
	s.rev = 0
	if cur != nil {
		s.rev = cur.Revision
	}
	return s.moveCursor(ctx)
}
