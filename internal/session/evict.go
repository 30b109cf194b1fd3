package session

import (
	"context"
	"fmt"
	"slices"
)

// evictLocked drops the least recently used trees until the loaded JSON
// bytes fit in 90% of the budget (the slack keeps eviction from running on
// every append). Catalog data stays, so listings never need a reload.
func (st *Store) evictLocked() {
	budget := st.opts.MemoryBudget
	if budget <= 0 || st.held <= budget || st.opts.Log == nil {
		return
	}
	loaded := make([]*Doc, 0, len(st.docs))
	for _, d := range st.docs {
		if d.Tree != nil {
			loaded = append(loaded, d)
		}
	}
	slices.SortFunc(loaded, func(a, b *Doc) int { return int(a.lastUse.Load() - b.lastUse.Load()) })
	target := budget * 9 / 10
	for _, d := range loaded {
		if st.held <= target {
			break
		}
		st.held -= int64(d.Tree.Bytes())
		h := d.Tree.Header
		d.cwd, d.parentSession = h.Cwd, h.ParentSession
		d.name, d.hasName = d.Tree.Name()
		d.labels = d.Tree.Labels()
		d.Tree, d.Seqs = nil, nil
		st.stats.evictions.Add(1)
	}
}

// reload reads an evicted session back from the log (authoritative) and
// installs it, including records the Store has not applied yet: those are
// skipped when they arrive (their sequence is not beyond LastSeq).
func (st *Store) reload(ctx context.Context, id string) error {
	if st.opts.Log == nil {
		return fmt.Errorf("session %s is evicted and the Store has no log to reload it from: %w", id, ErrUnavailable)
	}
	recs, err := st.opts.Log.Read(ctx, id, 0)
	if err != nil {
		return fmt.Errorf("reload %s: %w", id, err)
	}
	for {
		st.mu.Lock()
		d := st.docs[id]
		if d == nil || d.Tree != nil {
			st.mu.Unlock()
			return nil // purged, or someone else reloaded it
		}
		last := recs[len(recs)-1].Seq
		if d.LastSeq <= last {
			s, seqs, err := buildSession(recs)
			if err != nil {
				st.mu.Unlock()
				return fmt.Errorf("reload %s: %w", id, err)
			}
			d.Tree, d.Seqs, d.LastSeq, d.Entries = s, seqs, last, s.Len()
			d.labels = nil
			st.held += int64(s.Bytes())
			st.touch(d)
			st.stats.reloads.Add(1)
			st.mu.Unlock()
			return nil
		}
		st.mu.Unlock()
		// The Store applied records after our read: fetch the tail too.
		more, err := st.opts.Log.Read(ctx, id, last)
		if err != nil {
			return fmt.Errorf("reload %s: %w", id, err)
		}
		recs = append(recs, more...)
	}
}
