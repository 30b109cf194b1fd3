package store

import (
	"slices"
	"strings"
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

// IdleSession is a session IdleFor found, with what a retention policy
// decides by.
type IdleSession struct {
	ID, Cwd  string
	Modified time.Time
}

// IdleFor is Idle with a cutoff per session, by its cwd (a zero cutoff:
// never idle).
func (st *Store) IdleFor(cutoffOf func(cwd string) time.Time) []IdleSession {
	st.mu.RLock()
	var out []IdleSession
	for id, d := range st.docs {
		cwd := d.cwd // an evicted session's; a loaded one's is its header's
		if d.Tree != nil {
			cwd = d.Tree.Header.Cwd
		}
		if c := cutoffOf(cwd); !c.IsZero() && d.Modified.Before(c) {
			out = append(out, IdleSession{ID: id, Cwd: cwd, Modified: d.Modified})
		}
	}
	st.mu.RUnlock()
	slices.SortFunc(out, func(a, b IdleSession) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Has reports whether the Store holds the session (loaded or evicted),
// without loading it.
func (st *Store) Has(id string) bool {
	return !st.lacks(id)
}
