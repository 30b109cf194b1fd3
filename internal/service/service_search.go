package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/pifleet/sessionlog/internal/search"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/wire"
)

// SearchPage is one shard's part of a search: its hits in ranking order,
// and how far down the ranking it looked.
type SearchPage struct {
	Hits  []wire.SearchHit
	Total int
	// End is where the page stopped, nil at the ranking's end: its last
	// hit when it filled up, or beyond when it stopped short
	// (search.Page's Cut, or searchExamined hits left out). Everything
	// ranked up to End is in Hits.
	End *search.After
}

// searchExamined is how many hits one page of a shard looks at before it
// stops short (hits off the path with branch=path, or of sessions gone).
const searchExamined = 4096

// HitKey is a hit's position in the ranking (search.After).
func HitKey(h *wire.SearchHit) search.After {
	return search.After{Score: h.Score, ID: search.DocID(h.SessionID, h.EntryID)}
}

// SearchShard answers q over one shard: the hits of its index after
// `after`, each checked against the Store as it is now (the session
// visible, under cwdPrefix, on the default path for branch "path") and
// filled from it (name, cwd, type, role, timestamp, snippet). It first
// waits, within ctx, for the index to have caught up once and to reach
// wait (a minSeq, this node's own writes: read your writes as every read);
// otherwise it answers what is indexed, and the freshness says how far
// that is behind.
func (s *Service) SearchShard(ctx context.Context, st *store.Store, wait uint64, q *search.Query, branch, cwdPrefix string, limit int, after *search.After) (SearchPage, store.Freshness, error) {
	idx := st.Search()
	if idx == nil || !st.Held() {
		return SearchPage{}, store.Freshness{}, fmt.Errorf("this node has no search index of the shard: %w", wire.ErrUnavailable)
	}
	if err := idx.WaitFor(ctx, wait); err != nil {
		return SearchPage{}, store.Freshness{}, err
	}
	fresh := st.Freshness()
	if a := idx.Applied(); a < fresh.Applied {
		// The index is behind the Store: the reply is as fresh as it.
		fresh.Applied, fresh.CaughtUpAt = a, time.Time{}
	}
	var page SearchPage
	paths := map[string]map[string]bool{} // session → the entries on its default path
	size := limit + 1
	examined := 0
	for {
		p, err := idx.Search(ctx, q, st, cwdPrefix, size, after)
		if err != nil {
			return SearchPage{}, store.Freshness{}, err
		}
		if page.Total == 0 {
			page.Total = int(p.Total)
		}
		for i := range p.Hits {
			h := &p.Hits[i]
			if len(page.Hits) == limit {
				page.End = after // the last hit's
				return page, fresh, nil
			}
			k := h.Key()
			after = &k
			examined++
			hit, ok := s.hit(ctx, st, q, h, cwdPrefix, paths)
			if ok && (branch != wire.SearchBranchPath || hit.OnPath) {
				page.Hits = append(page.Hits, hit)
			} else if examined >= searchExamined && (i+1 < len(p.Hits) || len(p.Hits) == size || p.Cut != nil) {
				page.End = after
				return page, fresh, nil
			}
		}
		if p.Cut != nil {
			if len(page.Hits) == limit {
				page.End = after
			} else {
				page.End = p.Cut
			}
			return page, fresh, nil
		}
		if len(p.Hits) < size {
			return page, fresh, nil
		}
		// Hits left out (off the path, or of a session gone since):
		// the next ones, in bigger steps.
		size = min(4*size, 1000)
	}
}

// hit fills h from the Store; false when the Store does not show it (a
// session archived, or not whole yet) or it is outside cwdPrefix.
func (s *Service) hit(ctx context.Context, st *store.Store, q *search.Query, h *search.Hit, cwdPrefix string, paths map[string]map[string]bool) (wire.SearchHit, bool) {
	out := wire.SearchHit{SessionID: h.Session, EntryID: h.Entry, Score: h.Score}
	found := false
	err := st.View(ctx, h.Session, func(d *store.Doc) error {
		in := d.Info()
		if cwdPrefix != "" && !store.CwdUnder(in.Cwd, cwdPrefix) {
			return nil
		}
		i, ok := d.Tree.Index(h.Entry)
		if !ok {
			return nil
		}
		doc, ok := search.Extract(d.Tree.Entry(i).Raw)
		if !ok {
			return nil
		}
		on, ok := paths[h.Session]
		if !ok {
			on = map[string]bool{}
			if n := d.Tree.Len(); n > 0 {
				for _, j := range d.Tree.PathIndices(n - 1) {
					on[d.Tree.Entry(int(j)).ID] = true
				}
			}
			paths[h.Session] = on
		}
		out.Name, out.Cwd = in.Name, in.Cwd
		out.Type, out.Role, out.Timestamp = doc.Type, doc.Role, doc.Timestamp
		out.OnPath = on[h.Entry]
		out.Snippet = q.Snippet(doc.Text)
		found = true
		return nil
	})
	if err != nil && !errors.Is(err, wire.ErrNotFound) {
		return out, false
	}
	return out, found
}

// MergeSearch merges the shards' pages into one of at most limit hits in
// ranking order, with the cursor of the next page ("" on the last). The
// page goes as far down the ranking as every shard's page went: a hit
// beyond a shard's End is left for the next page, which that shard's
// next part precedes.
func MergeSearch(pages []SearchPage, limit int) wire.SearchReply {
	rep := wire.SearchReply{Hits: []wire.SearchHit{}}
	var end *search.After
	for _, p := range pages {
		rep.Total += p.Total
		if p.End != nil && (end == nil || p.End.Less(*end)) {
			end = p.End
		}
	}
	for _, p := range pages {
		for _, h := range p.Hits {
			if end == nil || !end.Less(HitKey(&h)) {
				rep.Hits = append(rep.Hits, h)
			}
		}
	}
	slices.SortStableFunc(rep.Hits, func(a, b wire.SearchHit) int {
		ka, kb := HitKey(&a), HitKey(&b)
		switch {
		case ka.Less(kb):
			return -1
		case kb.Less(ka):
			return 1
		}
		return 0
	})
	if len(rep.Hits) > limit {
		rep.Hits = rep.Hits[:limit]
		k := HitKey(&rep.Hits[limit-1])
		end = &k
	}
	if end != nil {
		rep.Next = EncodeSearchCursor(*end)
	}
	return rep
}

// EncodeSearchCursor is the cursor of the page after key: opaque to
// clients, the score and id of the page's last hit.
func EncodeSearchCursor(k search.After) string {
	return strconv.FormatFloat(k.Score, 'g', -1, 64) + "~" + k.ID
}

// DecodeSearchCursor reads a cursor EncodeSearchCursor made.
func DecodeSearchCursor(c string) (*search.After, error) {
	for i := 0; i < len(c); i++ {
		if c[i] != '~' {
			continue
		}
		score, err := strconv.ParseFloat(c[:i], 64)
		if err != nil || c[i+1:] == "" {
			break
		}
		return &search.After{Score: score, ID: c[i+1:]}, nil
	}
	return nil, wire.Invalid("cursor", fmt.Sprintf("%q is not a cursor of this search (pass the previous page's next as it is)", c))
}
