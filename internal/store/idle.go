package store

import (
	"slices"
	"time"
)

// Idle returns the ids, in id order, of the sessions whose last record the
// log stored before cutoff: the candidates of a retention pass (package
// archive). One walk over the catalog under the read lock, whatever the
// number of sessions; List, paged and sorted per page, would walk it once
// per page. The caller re-checks each session when it gets to it: one may
// have been written to since.
func (st *Store) Idle(cutoff time.Time) []string {
	st.mu.RLock()
	ids := make([]string, 0, len(st.docs)/8)
	for id, d := range st.docs {
		if d.Modified.Before(cutoff) {
			ids = append(ids, id)
		}
	}
	st.mu.RUnlock()
	slices.Sort(ids)
	return ids
}

// Has reports whether the Store holds the session (loaded or evicted),
// without loading it.
func (st *Store) Has(id string) bool {
	return !st.lacks(id)
}
