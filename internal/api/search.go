package api

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/pifleet/sessionlog/internal/search"
	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Search limits: hits per page.
const (
	searchDefaultLimit = 20
	searchMaxLimit     = 100
)

// search answers a full-text query: each shard's page from its index —
// here for the shards this node serves, from a holder for the others (as
// list fans out) — merged in ranking order.
func (s *Server) search(ctx context.Context, r *wire.SearchRequest) (reply, error) {
	if r.Query == "" {
		return reply{}, wire.Invalid("q", "required: what to search for (words, \"phrases\", prefix*, -excluded, filters such as role:user)")
	}
	q, err := search.Parse(r.Query)
	if err != nil {
		return reply{}, wire.Invalid("q", err.Error())
	}
	switch r.Branch {
	case "", wire.SearchBranchAll, wire.SearchBranchPath:
	default:
		return reply{}, wire.Invalid("branch", fmt.Sprintf(`%q: must be "all" (the default) or "path"`, r.Branch))
	}
	limit := r.Limit
	switch {
	case limit < 0:
		return reply{}, wire.Invalid("limit", "must be a positive integer")
	case limit == 0:
		limit = searchDefaultLimit
	}
	limit = min(limit, searchMaxLimit)
	var after *search.After
	if r.Cursor != "" {
		if after, err = service.DecodeSearchCursor(r.Cursor); err != nil {
			return reply{}, err
		}
	}
	cwdPrefix := principalOf(ctx).cwdPrefix
	// Waiting for an index is bounded as waiting for a Store is.
	wctx, cancel := context.WithTimeout(ctx, s.cfg.MinSeqTimeout)
	defer cancel()
	// What each shard's index must reach: what the request awaited of the
	// Store (minSeq, consistency, a forwarding node's writes), and every
	// write this node acknowledged on the shard — the Store may have
	// applied it already, the index not yet.
	b, _ := ctx.Value(barrierKey{}).(service.Barrier)
	waitOn := func(k int) uint64 { return max(b.On(k), s.svc.AckedOn(k)) }
	all := s.svc.Store.All()
	shardOf := func(k int) (service.SearchPage, store.Freshness, error) {
		return s.svc.SearchShard(wctx, all[k], waitOn(k), q, r.Branch, cwdPrefix, limit, after)
	}
	var pages []service.SearchPage
	var fresh []store.Freshness
	k, one := ctx.Value(fwdShardKey{}).(int)
	switch {
	case one: // a holder's part of another node's search
		if k < 0 || k >= len(all) {
			return reply{}, wire.Invalid(wire.HeaderFwdShard, fmt.Sprintf("this store has %d shard(s), not %d", len(all), k+1))
		}
		p, f, err := shardOf(k)
		if err != nil {
			return reply{}, err
		}
		rep := service.MergeSearch([]service.SearchPage{p}, limit)
		return reply{value: rep, fresh: &f}, nil
	default:
		shared := s.cfg.Holding != nil && s.cfg.Forward != nil && !forwarded(ctx)
		type part struct {
			page  service.SearchPage
			fresh store.Freshness
			err   error
		}
		parts := make([]part, len(all))
		var wg sync.WaitGroup
		for k, st := range all {
			wg.Go(func() {
				p := &parts[k]
				if shared && !s.cfg.Holding.Serves(k) {
					p.page, p.fresh, p.err = s.searchShard(wctx, r, k, st, shardOf)
					return
				}
				p.page, p.fresh, p.err = shardOf(k)
			})
		}
		wg.Wait()
		for k, p := range parts {
			if p.err != nil {
				if errors.Is(p.err, context.DeadlineExceeded) && ctx.Err() == nil {
					return reply{}, fmt.Errorf("searching shard %d: not answered within %v: %w", k, s.cfg.MinSeqTimeout, wire.ErrUnavailable)
				}
				return reply{}, p.err
			}
			pages = append(pages, p.page)
			fresh = append(fresh, p.fresh)
		}
	}
	f := store.Combine(fresh...)
	return reply{value: service.MergeSearch(pages, limit), fresh: &f}, nil
}

// searchShard is shard k's page from one of its holders (holderPage), its
// search waiting for the writes this node acknowledged on the shard
// (Pi-Fwd-Wait: read your writes); when none is up, this node's own Store
// of the shard answers if it follows the shard and indexes it (see
// listShard). ctx bounds every attempt (the request's MinSeqTimeout, below
// holderPage's own bound).
func (s *Server) searchShard(ctx context.Context, r *wire.SearchRequest, k int, own *store.Store,
	local func(int) (service.SearchPage, store.Freshness, error)) (service.SearchPage, store.Freshness, error) {
	out, fresh, none, err := holderPage[wire.SearchReply](ctx, s, shardAsk{k: k, req: r, wait: func() uint64 { return s.svc.AckedOn(k) }, verb: "searching", what: "hits"})
	switch {
	case none && own.Held() && own.Search() != nil:
		return local(k)
	case err != nil:
		return service.SearchPage{}, store.Freshness{}, err
	}
	page := service.SearchPage{Hits: out.Hits, Total: out.Total}
	if out.Next != "" {
		if page.End, err = service.DecodeSearchCursor(out.Next); err != nil {
			return service.SearchPage{}, store.Freshness{}, fmt.Errorf("shard %d's next page: %v: %w", k, err, wire.ErrUnavailable)
		}
	}
	return page, fresh, nil
}
