package store

import (
	"context"
	"runtime/debug"
	"slices"

	"github.com/pifleet/sessionlog/internal/tree"
)

// compactBatch is how many sessions Compact moves per hold of the write
// lock: a few milliseconds, so reads and the feed wait no longer than that.
const compactBatch = 256

// slabSize is the buffer Compact packs small sessions' lines into. One
// allocation of its own (a large object, whose pages go back to the OS as
// a whole), against a buffer per session that would round up to a size
// class, about 6% more for the 20 KB sessions of the rebuild benchmark.
var slabSize = 1 << 20 // a variable for the tests

// slab is a buffer shared by the lines of several sessions, and how many
// of its bytes sessions still use.
type slab struct{ size, live int }

// slabEntries is how many entries a slab of entries holds (tree.Entry is
// about 100 bytes). Entries are packed alike but not counted: a session
// that grows moves its entries out, and its share stays until its lines'
// slab is freed.
var slabEntries = 8192

// Compact moves every loaded session's lines together (tree.Session.
// Compact) and trims its per-entry slices, a batch of sessions at a time.
// The Store runs it once it has caught up after Open (see Rebuilt), before
// memory is returned to the OS: the rebuild leaves the lines scattered
// among freed buffers, and spans holding both cannot be released. Without
// a memory budget, sessions smaller than a quarter slab share slabs; with
// one, each gets its own buffer, so that evicting a session frees its
// memory. It returns the number of sessions moved.
func (st *Store) Compact(ctx context.Context) int {
	st.mu.RLock()
	docs := make([]*Doc, 0, len(st.docs))
	for _, d := range st.docs {
		docs = append(docs, d)
	}
	st.mu.RUnlock()
	n := 0
	var cur *slab
	var sl tree.Slab
	// Each line moved leaves its old copy as garbage, which the collector
	// lets pile up to the heap's size again before it runs, and whose
	// pages go back to the OS only when asked. Collecting and returning
	// them first (the rebuild's own garbage) and after each quarter bounds
	// the peak: a million entries (1 GiB of JSON) peaked at 3.1 GiB of RSS
	// without, 2.5 GiB with (2.3 GiB before there was a compaction).
	// A Store that holds little (restarted from a snapshot, its sessions
	// loaded only as they are read) has no such garbage to speak of, and a
	// forced collection would only delay the reads it serves meanwhile.
	st.mu.RLock()
	collect := st.held >= 64<<20
	st.mu.RUnlock()
	quarter := max(len(docs)/4, 1024)
	for start := 0; start < len(docs); start += compactBatch {
		if ctx.Err() != nil {
			break
		}
		if collect && (start == 0 || start/quarter != (start-compactBatch)/quarter) {
			debug.FreeOSMemory()
		}
		st.mu.Lock()
		for _, d := range docs[start:min(start+compactBatch, len(docs))] {
			// Evicted or purged meanwhile: nothing to move, or no longer ours.
			if d.Tree == nil || st.docs[d.ID] != d {
				continue
			}
			st.leaveSlabLocked(d)
			size, count := d.Tree.LinesSize(), d.Tree.Len()
			if st.opts.MemoryBudget > 0 || size > slabSize/4 || count > slabEntries/4 {
				d.Tree.Compact()
			} else {
				if cur == nil || cap(sl.Lines)-len(sl.Lines) < size {
					sl.Lines, cur = make([]byte, 0, slabSize), &slab{size: slabSize}
				}
				if cap(sl.Entries)-len(sl.Entries) < count {
					sl.Entries = make([]tree.Entry, 0, slabEntries)
				}
				d.Tree.CompactInto(&sl)
				d.slab, d.slabBytes = cur, size
				cur.live += size
			}
			// New arrays and a new Session struct, allocated now and not
			// amid the rebuild's garbage: the small objects a rebuild
			// leaves behind pin the spans they share with it (measured:
			// RSS 1.37× the JSON held without this, 1.30× with it). The
			// old ones are garbage (readers hold them only under the
			// lock); a snapshot may hold the old Seqs without the lock,
			// which stay as they were.
			d.Seqs = slices.Clone(d.Seqs)
			t := *d.Tree
			d.Tree = &t
			n++
		}
		st.mu.Unlock()
	}
	return n
}

// compactAfterRebuildLocked starts the compaction once the Store has
// applied the log as it stood at Open, in the background (Compact takes
// the lock a batch at a time). Under st.mu (write).
func (st *Store) compactAfterRebuildLocked() {
	if end, ok := st.FirstEnd(); !ok || st.applied < end || st.compacting.Load() {
		return
	}
	st.compacting.Store(true)
	st.wg.Go(func() {
		st.Compact(st.ctx)
		close(st.rebuilt)
	})
}

// Rebuilt is closed once the Store has caught up with the log as it stood
// at Open and compacted what it read (Compact): the moment to return the
// rebuild's garbage to the OS.
func (st *Store) Rebuilt() <-chan struct{} { return st.rebuilt }

// leaveSlabLocked notes that d's lines no longer use their slab (the
// session is purged, evicted or moved again). Once less than half of a
// slab is in use, the sessions still in it move to buffers of their own,
// so that the slab is freed: purged sessions must not keep their memory
// held by the ones that stay. Under st.mu (write).
func (st *Store) leaveSlabLocked(d *Doc) {
	s := d.slab
	if s == nil {
		return
	}
	d.slab, s.live = nil, s.live-d.slabBytes
	if s.live*2 >= s.size {
		return
	}
	for _, o := range st.docs {
		if o.slab == s {
			if o.Tree != nil {
				o.Tree.Compact()
			}
			o.slab = nil
		}
	}
}
