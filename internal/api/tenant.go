package api

import (
	"context"
	"fmt"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// confine applies a tenant token's cwdPrefix (docs/API.md, Auth) to a
// request, after its read-your-writes wait: list only shows the tenant's
// sessions; any other session is 404 as if it did not exist (a 403 would
// tell that it does); a create or import with a cwd outside is 403. Session
// ids are global, so a create or import under the prefix with another
// tenant's id is the 409 of any existing id: that an id exists is told
// (docs/API.md), nothing of its session. Tokens without a prefix, and the
// NATS transport, are not confined.
func (s *Server) confine(ctx context.Context, o wire.Op, req any) error {
	prefix := principalOf(ctx).cwdPrefix
	if prefix == "" {
		return nil
	}
	switch r := req.(type) {
	case *wire.ListRequest, *wire.SearchRequest, *wire.StatusRequest:
		return nil // list and search read the prefix themselves
	case *wire.CreateRequest:
		h, err := s.svc.Header(r.Header)
		if err != nil {
			return err
		}
		return checkCwd(h.Cwd, prefix, "header.cwd")
	case *wire.ImportRequest:
		f, err := tree.Read(r.File, tree.ReadOptions{Strict: r.Strict, Validate: true})
		if err != nil {
			return nil // the import fails the same way
		}
		return checkCwd(f.Header.Cwd, prefix, "cwd")
	}
	if perSession(o) {
		return s.confineSession(ctx, prefix, paramsOf(req).SessionID)
	}
	// Admin operations without a session: a tenant token cannot be admin
	// (ParseTokens), so this is not reached.
	return fmt.Errorf("operation %s is not for a token confined to %s: %w", o.Name, prefix, wire.ErrForbidden)
}

// confineSession is nil when session sid is the tenant's, and the error of
// a missing session otherwise.
func (s *Server) confineSession(ctx context.Context, prefix, sid string) error {
	if err := session.ValidSessionID(sid); err != nil {
		return err
	}
	var cwd string
	_, err := s.svc.Store.For(sid).ViewOrRead(ctx, s.svc.Reads(), sid, func(d *store.Doc) error {
		cwd = d.Info().Cwd
		return nil
	})
	if err != nil {
		return err
	}
	if !store.CwdUnder(cwd, prefix) {
		// The very error of a session that does not exist.
		return fmt.Errorf("session %s: %w", sid, wire.ErrNotFound)
	}
	return nil
}

func checkCwd(cwd, prefix, field string) error {
	if store.CwdUnder(cwd, prefix) {
		return nil
	}
	return wire.Field(field, fmt.Errorf("cwd %q is not under this token's cwdPrefix %q: %w", cwd, prefix, wire.ErrForbidden))
}
