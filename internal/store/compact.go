package store

import (
	"context"
	"slices"
)

// compactBatch is how many sessions Compact moves per hold of the write
// lock: a few milliseconds, so reads and the feed wait no longer than that.
const compactBatch = 256

// Compact moves every loaded session's lines into one buffer per session
// (tree.Session.Compact) and trims its per-entry slices, a batch of
// sessions at a time. Run once the Store has caught up after a rebuild,
// before returning memory to the OS: the rebuild leaves the lines
// scattered among freed buffers, and spans holding both cannot be released
// (see tree.Session.Compact). It returns the number of sessions moved.
func (st *Store) Compact(ctx context.Context) int {
	st.mu.RLock()
	docs := make([]*Doc, 0, len(st.docs))
	for _, d := range st.docs {
		docs = append(docs, d)
	}
	st.mu.RUnlock()
	n := 0
	for start := 0; start < len(docs); start += compactBatch {
		if ctx.Err() != nil {
			break
		}
		st.mu.Lock()
		for _, d := range docs[start:min(start+compactBatch, len(docs))] {
			// Evicted or purged meanwhile: nothing to move, or no longer ours.
			if d.Tree == nil || st.docs[d.ID] != d {
				continue
			}
			d.Tree.Compact()
			// A new array: a snapshot may hold the old one without the lock.
			d.Seqs = slices.Clone(d.Seqs)
			n++
		}
		st.mu.Unlock()
	}
	return n
}
