package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/wire"
)

func cursorView(e session.CursorEntry) wire.CursorView {
	v := wire.CursorView{Client: e.Client, Seq: e.Seq, Revision: e.Revision, UpdatedAt: e.UpdatedAt.UTC().Format("2006-01-02T15:04:05.000Z")}
	if e.LeafID != "" {
		l := e.LeafID
		v.LeafID = &l
	}
	return v
}

// GetCursor returns one client's cursor (ErrNotFound without one).
func (s *Service) GetCursor(ctx context.Context, sid, client string) (wire.CursorView, error) {
	if err := session.ValidSessionID(sid); err != nil {
		return wire.CursorView{}, err
	}
	e, err := s.Cursors.Get(ctx, sid, client)
	if err != nil {
		return wire.CursorView{}, err
	}
	return cursorView(e), nil
}

// ListCursors returns the session's cursors by client id, and the
// freshness of the Store's look at the session.
func (s *Service) ListCursors(ctx context.Context, sid string) ([]wire.CursorView, store.Freshness, error) {
	// A session that does not exist has no cursors: 404, like every other
	// per-session operation, not an empty list.
	f, err := s.doc(ctx, sid, func(*store.Doc) error { return nil })
	if err != nil {
		return nil, f, err
	}
	es, err := s.Cursors.List(ctx, sid)
	if err != nil {
		return nil, f, err
	}
	out := make([]wire.CursorView, len(es))
	for k, e := range es {
		out[k] = cursorView(e)
	}
	return out, f, nil
}

// SetCursor moves a client's cursor to leafID ("" = null). With expectRev it
// is a CAS on the cursor's revision (0: only if the client has none).
func (s *Service) SetCursor(ctx context.Context, sid, client, leafID string, expectRev *uint64) (wire.CursorView, error) {
	if err := session.ValidClientID(client); err != nil {
		return wire.CursorView{}, err
	}
	var seq uint64
	_, err := s.doc(ctx, sid, func(d *store.Doc) error {
		if leafID != "" && !d.Tree.Has(leafID) {
			return wire.Invalid("leafId", fmt.Sprintf("entry %q is not in session %s", leafID, sid))
		}
		seq = d.LastSeq
		return nil
	})
	if err != nil {
		return wire.CursorView{}, err
	}
	c := session.Cursor{LeafID: leafID, Seq: seq, UpdatedAt: s.now()}
	var rev uint64
	if expectRev != nil {
		rev, err = s.Cursors.Update(ctx, sid, client, c, *expectRev)
		if errors.Is(err, wire.ErrConflict) {
			return wire.CursorView{}, s.revisionConflict(ctx, sid, client, *expectRev, err)
		}
	} else {
		rev, err = s.Cursors.Put(ctx, sid, client, c)
	}
	if err != nil {
		return wire.CursorView{}, err
	}
	return cursorView(session.CursorEntry{Session: sid, Client: client, Revision: rev, Cursor: c}), nil
}

// revisionConflict is the error of a cursor.set whose expectRevision is
// stale: it carries the cursor's revision now (0: none), to retry with.
func (s *Service) revisionConflict(ctx context.Context, sid, client string, expect uint64, err error) error {
	var now uint64
	cur, gerr := s.Cursors.Get(ctx, sid, client)
	switch {
	case gerr == nil:
		now = cur.Revision
	case !errors.Is(gerr, wire.ErrNotFound):
		return err // the revision is unknown; the conflict stands
	}
	reason := fmt.Sprintf("the cursor of %s is at revision %d, not %d", client, now, expect)
	if now == 0 {
		reason = fmt.Sprintf("%s has no cursor (expectRevision 0 creates one), not revision %d", client, expect)
	}
	return wire.Field("expectRevision", &wire.ConflictError{Revision: &now, Reason: reason})
}

// DeleteCursor removes a client's cursor.
func (s *Service) DeleteCursor(ctx context.Context, sid, client string) error {
	if err := session.ValidSessionID(sid); err != nil {
		return err
	}
	if err := session.ValidClientID(client); err != nil {
		return err
	}
	return s.Cursors.Delete(ctx, sid, client)
}
