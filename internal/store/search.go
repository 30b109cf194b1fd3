package store

import (
	"strings"

	"github.com/pifleet/sessionlog/internal/search"
)

// Search is the full-text index that follows the same log as the Store
// (Options.Search), or nil.
func (st *Store) Search() *search.Index { return st.opts.Search }

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
