package api

import (
	"context"
	"fmt"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"

	"github.com/pifleet/sessionlog/internal/wire"
)

// The read operations: they answer from this node's Store, after the
// minSeq wait of call. Cursor operations are here too: cursors are read
// and written in the KV bucket, and a set checks the leaf against the Store.

func (s *Server) list(ctx context.Context, r *wire.ListRequest) (reply, error) {
	f, err := filter(r, principalOf(ctx).cwdPrefix)
	if err != nil {
		return reply{}, err
	}
	var infos []wire.Info
	var next string
	var fresh store.Freshness
	k, one := ctx.Value(fwdShardKey{}).(int)
	switch {
	case one: // a holder's part of another node's catalog
		all := s.svc.Store.All()
		if k < 0 || k >= len(all) {
			return reply{}, wire.Invalid(wire.HeaderFwdShard, fmt.Sprintf("this store has %d shard(s), not %d", len(all), k+1))
		}
		infos, next, fresh = store.List(store.Subset{all[k]}, f)
	case s.cfg.Holding != nil && s.cfg.Forward != nil && !forwarded(ctx):
		if infos, next, fresh, err = s.listShared(ctx, r, f); err != nil {
			return reply{}, err
		}
	default:
		infos, next, fresh = s.svc.List(f)
	}
	if infos == nil {
		infos = []wire.Info{}
	}
	return reply{value: wire.ListReply{Sessions: infos, Next: next}, fresh: &fresh}, nil
}

func (s *Server) get(ctx context.Context, r *wire.GetRequest) (reply, error) {
	if err := session.ValidSessionID(r.SessionID); err != nil {
		return reply{}, err
	}
	var usage bool
	switch r.Include {
	case "":
	case wire.GetIncludeUsage:
		usage = true
	default:
		return reply{}, wire.Invalid("include", fmt.Sprintf(`%q: must be "usage" (pi's usage breakdown) or absent`, r.Include))
	}
	d, f, err := s.svc.Get(ctx, r.SessionID, usage)
	if err != nil {
		return reply{}, err
	}
	return reply{value: d, fresh: &f}, nil
}

// maxEntriesLimit is the most entries one entries request returns.
const maxEntriesLimit = 10000

func (s *Server) entries(ctx context.Context, r *wire.EntriesRequest) (reply, error) {
	if err := session.ValidSessionID(r.SessionID); err != nil {
		return reply{}, err
	}
	if r.Limit < 0 {
		return reply{}, wire.Invalid("limit", "must be a positive integer")
	}
	// A client asking for more than one reply holds wants the most it
	// can get: the maximum, not an error.
	page, f, err := s.svc.Entries(ctx, r.SessionID, r.AfterSeq, min(r.Limit, maxEntriesLimit))
	if err != nil {
		return reply{}, err
	}
	if page.Entries == nil {
		page.Entries = []wire.SeqEntry{}
	}
	return reply{value: page, fresh: &f}, nil
}

func (s *Server) tree(ctx context.Context, r *wire.TreeRequest) (reply, error) {
	if err := session.ValidSessionID(r.SessionID); err != nil {
		return reply{}, err
	}
	if err := checkClient(r.Client, false); err != nil {
		return reply{}, err
	}
	entries, err := includeEntries(r.Include)
	if err != nil {
		return reply{}, err
	}
	flat, err := flatForm(r.Form)
	if err != nil {
		return reply{}, err
	}
	b, f, err := s.svc.TreeJSON(ctx, r.SessionID, leafOf(r.Leaf, r.Client), entries, flat)
	return reply{raw: b, ctype: wire.ContentTypeJSON, fresh: &f}, err
}

func (s *Server) contextJSON(ctx context.Context, r *wire.ContextRequest) (reply, error) {
	if err := session.ValidSessionID(r.SessionID); err != nil {
		return reply{}, err
	}
	if err := checkClient(r.Client, false); err != nil {
		return reply{}, err
	}
	llm, err := llmFormat(r.Format)
	if err != nil {
		return reply{}, err
	}
	b, f, err := s.svc.ContextJSON(ctx, r.SessionID, leafOf(r.Leaf, r.Client), llm)
	return reply{raw: b, ctype: wire.ContentTypeJSON, fresh: &f}, err
}

// contextBuild is context over the request's entries: nothing stored is
// read, so there is nothing to wait for or confine.
func (s *Server) contextBuild(_ context.Context, r *wire.ContextBuildRequest) (reply, error) {
	llm, err := llmFormat(r.Format)
	if err != nil {
		return reply{}, err
	}
	b, err := s.svc.BuildContextJSON(r.Entries, r.Leaf, llm)
	return reply{raw: b, ctype: wire.ContentTypeJSON}, err
}

func (s *Server) export(ctx context.Context, r *wire.ExportRequest) (reply, error) {
	if err := session.ValidSessionID(r.SessionID); err != nil {
		return reply{}, err
	}
	b, f, err := s.svc.Export(ctx, r.SessionID)
	return reply{raw: b, ctype: wire.ContentTypeJSONL, filename: r.SessionID + ".jsonl", fresh: &f}, err
}

func (s *Server) cursorGet(ctx context.Context, r *wire.CursorGetRequest) (reply, error) {
	if err := checkCursorKey(r.SessionID, r.Client); err != nil {
		return reply{}, err
	}
	c, err := s.svc.GetCursor(ctx, r.SessionID, r.Client)
	if err != nil {
		return reply{}, err
	}
	return jsonReply(c)
}

// cursorSet moves a cursor. leafId is required so that a body that forgot
// it cannot silently reset the client to the null leaf.
func (s *Server) cursorSet(ctx context.Context, r *wire.CursorSetRequest) (reply, error) {
	if err := checkCursorKey(r.SessionID, r.Client); err != nil {
		return reply{}, err
	}
	if !r.LeafID.Set {
		return reply{}, wire.Invalid("leafId", "required: an entry id, or null for the state before the first entry")
	}
	if r.LeafID.ID == "" && !r.LeafID.Null {
		return reply{}, wire.Invalid("leafId", `must be an entry id or null, not ""`)
	}
	c, err := s.svc.SetCursor(ctx, r.SessionID, r.Client, r.LeafID.ID, r.ExpectRevision)
	if err != nil {
		return reply{}, err
	}
	return jsonReply(c)
}

// cursorDelete removes a cursor: HTTP answers 204 without a body, NATS
// answers {} (a micro reply needs a body to be told from no reply).
func (s *Server) cursorDelete(ctx context.Context, r *wire.CursorDeleteRequest) (reply, error) {
	if err := checkCursorKey(r.SessionID, r.Client); err != nil {
		return reply{}, err
	}
	if err := s.svc.DeleteCursor(ctx, r.SessionID, r.Client); err != nil {
		return reply{}, err
	}
	return jsonReply(struct{}{})
}

func (s *Server) cursorList(ctx context.Context, r *wire.CursorListRequest) (reply, error) {
	if err := session.ValidSessionID(r.SessionID); err != nil {
		return reply{}, err
	}
	cs, f, err := s.svc.ListCursors(ctx, r.SessionID)
	if err != nil {
		return reply{}, err
	}
	if cs == nil {
		cs = []wire.CursorView{}
	}
	return reply{value: wire.CursorsReply{Cursors: cs}, fresh: &f}, nil
}
