package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// evictLocked drops the least recently used trees until the loaded JSON
// bytes fit in 90% of the budget (the slack keeps eviction from running on
// every append). Catalog data stays, so listings never need a reload.
func (st *Store) evictLocked() {
	budget := st.budget.Load()
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
		d.first, d.firstKnown = d.firstMessage(), true
		d.tail = nil
		if d.base != nil && (d.base.file == st.snap || st.spill != nil && d.base.file == st.spill.file) {
			// Comes back from its snapshot (or spill) block plus what
			// followed it.
			for i, seq := range d.Seqs {
				if seq > d.base.e.lastSeq {
					e := d.Tree.Entry(i)
					d.tail = append(d.tail, session.Stored{Session: d.ID, Seq: seq, Record: session.Record{Type: e.Type(), ID: e.ID, Parent: e.ParentID, Data: e.Raw}})
				}
			}
		} else if ref, err := st.spillLocked(d); err == nil {
			d.base = ref
		} else {
			if st.opts.SnapshotDir != "" {
				st.log.Warn("spilling an evicted session failed; it will come back from the log", "session", d.ID, "err", err)
			}
			d.base = nil
		}
		d.Tree, d.Seqs = nil, nil
		st.leaveSlabLocked(d)
		st.stats.evictions.Add(1)
	}
}

// reload reads an evicted session back from the log (authoritative) and
// installs it, including records the Store has not applied yet: those are
// skipped when they arrive (their sequence is not beyond LastSeq).
func (st *Store) reload(ctx context.Context, id string) error {
	for range 3 {
		st.mu.RLock()
		d := st.docs[id]
		var ref *snapRef
		if d != nil && d.Tree == nil {
			ref = d.base
		}
		st.mu.RUnlock()
		if ref == nil {
			break
		}
		t, seqs, err := st.loadFromSnapshot(ref)
		if err != nil {
			st.log.Warn("reading a session from the snapshot failed", "session", id, "err", err)
			continue // a newer snapshot replaced the file: look again
		}
		st.mu.Lock()
		if d := st.docs[id]; d != nil && d.Tree == nil && d.base == ref {
			for _, r := range d.tail {
				if e, err := tree.ParseEntry(r.Data); err == nil {
					t.Append(e)
					seqs = append(seqs, r.Seq)
				}
			}
			d.Tree, d.Seqs, d.Entries, d.tail, d.labels = t, seqs, t.Len(), nil, nil
			d.timesFromTree()
			st.held += int64(t.Bytes())
			st.touch(d)
			st.stats.reloads.Add(1)
		}
		st.mu.Unlock()
		return nil
	}
	return st.reloadFromLog(ctx, id)
}

// parents is where the Store reads forks' parents (Options.Parents).
func (st *Store) parents() session.Reader {
	if st.opts.Parents != nil {
		return st.opts.Parents
	}
	return st.opts.Log
}

// reloadFromLog reads an evicted session back from the log.
func (st *Store) reloadFromLog(ctx context.Context, id string) error {
	if st.opts.Log == nil {
		return fmt.Errorf("session %s is evicted and the Store has no log to reload it from: %w", id, wire.ErrUnavailable)
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
			s, seqs, err := session.BuildFrom(ctx, st.parents(), recs)
			if err != nil {
				st.mu.Unlock()
				return fmt.Errorf("reload %s: %w", id, err)
			}
			d.Tree, d.Seqs, d.LastSeq, d.Entries = s, seqs, last, s.Len()
			d.labels, d.base, d.tail = nil, nil, nil
			d.timesFromTree()
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
