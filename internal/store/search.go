package store

import (
	"context"
	"strings"

	"github.com/pifleet/sessionlog/internal/search"
	"github.com/pifleet/sessionlog/internal/shard"
)

// Search is the full-text index that follows the same log as the Store
// (Options.Search), or nil.
func (st *Store) Search() *search.Index { return st.opts.Search }

// cwdOf is the session's cwd as the Store has it (the search index's
// source after a restart: search.Index.SetCwdSource).
func (st *Store) cwdOf(sid string) (string, bool) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	d := st.docs[sid]
	if d == nil {
		return "", false
	}
	return d.Info().Cwd, true
}

// SessionsNamed returns the sessions whose name contains s,
// case-insensitively (search's name: filter, resolved against the names
// as they are now).
func (st *Store) SessionsNamed(s string) []string {
	s = strings.ToLower(s)
	st.mu.RLock()
	defer st.mu.RUnlock()
	var out []string
	for id, d := range st.docs {
		if in := d.Info(); in.Name != nil && strings.Contains(strings.ToLower(*in.Name), s) {
			out = append(out, id)
		}
	}
	return out
}

// Labelled returns the entries that carry label l now, as search.DocIDs
// (search's label: filter: the label entry names its target, and the last
// one wins).
func (st *Store) Labelled(l string) []string {
	st.mu.RLock()
	defer st.mu.RUnlock()
	var out []string
	for id, d := range st.docs {
		labels := d.labels
		if d.Tree != nil {
			labels = d.Tree.Labels()
		}
		for target, text := range labels {
			if text == l {
				out = append(out, search.DocID(id, target))
			}
		}
	}
	return out
}

// Text returns the text search indexes of an entry (search.Extract), as
// the Store shows it now (search's phrases are checked against it).
func (st *Store) Text(ctx context.Context, sid, entry string) (string, bool) {
	var text string
	found := false
	_ = st.View(ctx, sid, func(d *Doc) error {
		if i, ok := d.Tree.Index(entry); ok {
			if doc, ok := search.Extract(d.Tree.Entry(i).Raw); ok {
				text, found = doc.Text, true
			}
		}
		return nil
	})
	return text, found
}

// SearchStats is how far the full-text indexes of the held shards have
// followed the log: the sums of their positions in their own streams, as
// StatsOf sums the Stores'.
type SearchStats struct {
	Indexes  int    // shards held here with an index (0: search is not served here)
	Applied  uint64 // the last sequence indexed (with shards, a sum of positions)
	Lag      uint64 // records the indexes are behind the log's end as their Stores know it
	CaughtUp bool   // every index has reached the log's end as it first learned it
}

// SearchStatsOf adds the held shards' indexes up.
func SearchStatsOf(sh Shards) SearchStats {
	all := sh.All()
	out := SearchStats{CaughtUp: true}
	for _, st := range all {
		x := st.Search()
		if x == nil || len(all) > 1 && !st.Held() {
			continue
		}
		applied, end := x.Applied(), st.known()
		out.Indexes++
		out.Applied += shard.Raw(applied)
		out.Lag += shard.Raw(end) - min(shard.Raw(end), shard.Raw(applied))
		out.CaughtUp = out.CaughtUp && x.CaughtUp()
	}
	out.CaughtUp = out.CaughtUp && out.Indexes > 0
	return out
}
