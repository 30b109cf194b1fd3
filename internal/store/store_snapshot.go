package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// snapRef locates an evicted session's lines in a snapshot file.
type snapRef struct {
	file *snapFile
	e    *snapEntry
}

// restore loads the newest usable snapshot: every session it holds becomes
// known at once (catalog from the index), its lines stay on disk until first
// used, and following the log resumes after the snapshot's sequence.
func (st *Store) restore(ctx context.Context) {
	dir := st.opts.SnapshotDir
	if dir == "" {
		return
	}
	if st.opts.Seal != nil {
		removePlainSnapshots(dir, st.log)
	}
	sf, err := openSnapshot(dir, st.opts.Seal)
	if err != nil {
		st.log.Warn("ignoring the snapshot; rebuilding from the log", "dir", dir, "err", err)
		return
	}
	if sf == nil {
		return
	}
	keep := false
	defer func() {
		if !keep {
			sf.f.Close()
		}
	}()
	if id, _ := st.identity(ctx); id != sf.identity { // unknown: not this snapshot's either
		st.log.Warn("ignoring a snapshot of another log; rebuilding from the log", "snapshot", sf.path, "its log", sf.identity, "this log", id)
		return
	}
	if last, err := st.feed.LastSeq(ctx); err == nil && last < sf.applied {
		st.log.Warn("ignoring a snapshot ahead of the log; rebuilding from the log", "snapshot", sf.path, "applied", sf.applied, "log last seq", last)
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for i := range sf.index {
		e := &sf.index[i]
		st.docs[e.id] = &Doc{ID: e.id, HeaderSeq: e.headerSeq, LastSeq: e.lastSeq, Created: e.created, Modified: e.modified,
			Entries: int(e.entries), cwd: e.cwd, parentSession: e.parentSession, name: e.name, hasName: e.hasName,
			labels: e.labels, first: e.first, firstKnown: e.firstKnown, LastEntry: e.lastEntry, base: &snapRef{sf, e}}
		st.indexLacks = st.indexLacks || !e.firstKnown || e.lastEntry.IsZero()
	}
	st.applied, st.snap, st.snapAt, keep = sf.applied, sf, sf.applied, true
	if fi, err := sf.f.Stat(); err == nil {
		st.snapTime.Store(fi.ModTime().UnixNano())
	}
	st.log.Info("restored the snapshot", "path", sf.path, "sessions", len(sf.index), "applied", sf.applied)
}

// identityTimeout bounds the question of the log's identity: a stream
// info request sent while the cluster elects its leaders can go
// unanswered, and Close's last snapshot (up to a minute, for the
// sessions it reads back) once waited out all of it for this alone,
// holding up a node's shutdown.
var identityTimeout = 5 * time.Second // a var for the test that shortens it

// identity names the log the Store follows (session.Identifier), "" for a
// feed that cannot say; an error when the log did not answer. Asked once:
// a log's identity does not change while it is followed.
func (st *Store) identity(ctx context.Context) (string, error) {
	idf, ok := st.feed.(session.Identifier)
	if !ok {
		return "", nil
	}
	if id := st.ident.Load(); id != nil {
		return *id, nil
	}
	ictx, cancel := context.WithTimeout(ctx, identityTimeout)
	defer cancel()
	id, err := idf.Identity(ictx)
	if err != nil {
		return "", err
	}
	st.ident.Store(&id)
	return id, nil
}

// snapshotLoop writes a snapshot every SnapshotEvery while records arrive,
// and at once after an erasure.
func (st *Store) snapshotLoop(ctx context.Context) {
	every := st.opts.SnapshotEvery
	if every <= 0 {
		every = 5 * time.Minute
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := st.Snapshot(ctx); err != nil && ctx.Err() == nil {
				st.log.Warn("snapshot failed", "err", err)
			}
		case <-st.erased:
			// A new snapshot without the session replaces the files that
			// hold it: the previous snapshot and spill blocks.
			if err := st.Snapshot(ctx); err != nil && ctx.Err() == nil {
				st.log.Warn("snapshot after an erasure failed", "err", err)
			}
		}
	}
}

// Snapshot writes the Store's state to SnapshotDir (if anything was applied
// since the last one). Sessions evicted without a snapshot to come back
// from are read from the log for it.
func (st *Store) Snapshot(ctx context.Context) error {
	if st.opts.SnapshotDir == "" {
		return nil
	}
	st.snapMu.Lock()
	defer st.snapMu.Unlock()

	// Capture under the read lock; lines are immutable, so the slices stay
	// valid while the writer works without the lock.
	st.mu.RLock()
	taken := st.opts.Now()
	at, applied := st.applied, st.snapshotApplied()
	if st.snap != nil && st.snapAt == at && !st.indexLacks {
		st.mu.RUnlock()
		st.snapTime.Store(taken.UnixNano()) // still current: an idle Store's snapshot is not stale
		return nil
	}
	items := make([]snapItem, 0, len(st.docs))
	for _, d := range st.docs {
		items = append(items, captureDoc(d))
	}
	st.mu.RUnlock()
	slices.SortFunc(items, func(a, b snapItem) int { return strings.Compare(a.meta.id, b.meta.id) })

	ident, err := st.identity(ctx)
	if err != nil {
		// The next start would not recognize it as this log's.
		return fmt.Errorf("snapshot: the log's identity is unknown: %w", err)
	}
	path, index, err := writeSnapshot(st.opts.SnapshotDir, applied, ident, st.opts.Seal, func(yield func(*snapSession) error) error {
		for i := range items {
			// A shutdown's deadline (Close's ctx) bounds the writing too:
			// abandoned, the temp file goes and the previous snapshot stays.
			if err := ctx.Err(); err != nil {
				return err
			}
			s, err := st.materialize(ctx, &items[i], applied)
			if err != nil {
				return err
			}
			if s == nil {
				continue // purged meanwhile
			}
			if err := yield(s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	sf := &snapFile{path: path, f: f, applied: applied, identity: ident, index: index, ring: st.opts.Seal}
	st.swapSnapshot(sf)
	st.snapAt = at
	st.snapTime.Store(taken.UnixNano())
	st.log.Info("snapshot written", "path", path, "sessions", len(index), "applied", applied)
	return nil
}

// SnapshotAt is when the Store's snapshot last held everything it had
// applied: the capture of its last snapshot, or the last periodic pass
// that found nothing new to write; before the first, the restored
// snapshot's file time, or Open's. Zero without SnapshotDir or before
// Open. A snapshot that keeps failing shows as an old time.
func (st *Store) SnapshotAt() time.Time {
	n := st.snapTime.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// snapItem is a session as captured for a snapshot.
type snapItem struct {
	meta    snapEntry
	header  []byte
	seqs    []uint64
	lines   [][]byte
	base    *snapRef // evicted with a snapshot block: lines come from there, then tail
	tail    []session.Stored
	fromLog bool // evicted without one: read from the log
}

func captureDoc(d *Doc) snapItem {
	it := snapItem{meta: snapEntry{id: d.ID, headerSeq: d.HeaderSeq, lastSeq: d.LastSeq, created: d.Created, modified: d.Modified, entries: uint32(d.Entries)}}
	in := d.Info()
	it.meta.cwd = in.Cwd
	if in.ParentSession != nil {
		it.meta.parentSession = *in.ParentSession
	}
	if in.Name != nil {
		it.meta.name, it.meta.hasName = *in.Name, true
	}
	it.meta.first, it.meta.firstKnown = d.firstMessage(), d.Tree != nil || d.firstKnown
	it.meta.lastEntry = d.LastEntry
	if d.Tree != nil {
		it.meta.labels = d.Tree.Labels()
		it.header = d.Tree.Header.Raw
		n := d.Tree.Len()
		it.seqs = d.Seqs[:n:n]
		it.lines = make([][]byte, n)
		for i := range n {
			it.lines[i] = d.Tree.Entry(i).Raw
		}
		return it
	}
	it.meta.labels = d.labels
	if d.base != nil {
		it.base, it.tail = d.base, d.tail[:len(d.tail):len(d.tail)]
	} else {
		it.fromLog = true
	}
	return it
}

// materialize fills an item's lines from where they are.
func (st *Store) materialize(ctx context.Context, it *snapItem, applied uint64) (*snapSession, error) {
	s := &snapSession{meta: it.meta, header: it.header, seqs: it.seqs, lines: it.lines}
	switch {
	case it.base != nil:
		h, seqs, lines, err := it.base.file.readBlock(it.base.e)
		if err != nil {
			return nil, err
		}
		s.header, s.seqs, s.lines = h, seqs, lines
		for _, r := range it.tail {
			s.seqs, s.lines = append(s.seqs, r.Seq), append(s.lines, r.Data)
		}
	case it.fromLog:
		recs, err := st.opts.Log.Read(ctx, it.meta.id, 0)
		if errors.Is(err, wire.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("session %s: %w", it.meta.id, err)
		}
		s.header = recs[0].Data
		if recs[0].Fork != nil {
			// A fork by reference: its path, then its own lines (those
			// applied; inherited lines are the path at any sequence).
			kept := recs[:0:0]
			for _, r := range recs {
				if r.Seq <= applied || r.IsInherit() {
					kept = append(kept, r)
				}
			}
			recs = kept
			t, seqs, err := session.BuildFrom(ctx, st.parents(), recs)
			if err != nil {
				return nil, fmt.Errorf("session %s: %w", it.meta.id, err)
			}
			for i := range t.Len() {
				s.seqs, s.lines = append(s.seqs, seqs[i]), append(s.lines, t.Entry(i).Raw)
			}
			break
		}
		for _, r := range recs[1:] {
			if r.Seq <= applied && !r.IsHeader() && !r.IsMarker() {
				s.seqs, s.lines = append(s.seqs, r.Seq), append(s.lines, r.Data)
			}
		}
	}
	if n := len(s.seqs); n > 0 {
		s.meta.lastSeq = max(s.meta.headerSeq, s.seqs[n-1])
	}
	s.meta.entries = uint32(len(s.lines))
	if !s.meta.firstKnown || s.meta.lastEntry.IsZero() {
		// Restored from a snapshot without them: its lines are at hand.
		s.meta.first, s.meta.lastEntry = listingOf(s.lines, s.meta.created)
		s.meta.firstKnown = true
	}
	return s, nil
}

// listingOf is what a listing shows of a session from its entry lines:
// tree.Session.FirstMessage and Doc.LastEntry (created without entries).
func listingOf(lines [][]byte, created time.Time) (first *string, last time.Time) {
	d := Doc{LastEntry: created}
	for _, l := range lines {
		e, err := tree.ParseEntry(l)
		if err != nil {
			continue
		}
		if p, ok := e.UserPreview(); ok && first == nil {
			first = &p
		}
		d.noteTime(&e)
	}
	return first, d.LastEntry
}

// swapSnapshot makes sf the current snapshot: evicted sessions point at its
// blocks (their tails shrink to what came after it), loaded ones note it so
// that evicting them later needs no log read. The previous file is removed.
func (st *Store) swapSnapshot(sf *snapFile) {
	byID := make(map[string]*snapEntry, len(sf.index))
	for i := range sf.index {
		byID[sf.index[i].id] = &sf.index[i]
	}
	st.mu.Lock()
	old := st.snap
	st.snap = sf
	unknown := false // any preview still unknown (records came since the capture)
	for id, d := range st.docs {
		e := byID[id]
		if e != nil && d.HeaderSeq == e.headerSeq && d.Tree == nil && !d.firstKnown && e.firstKnown &&
			(e.first != nil || d.LastSeq == e.lastSeq) {
			// A preview the new file found in the lines: the first stays
			// the first; none stays none if nothing came since.
			d.first, d.firstKnown = e.first, true
		}
		if e != nil && d.HeaderSeq == e.headerSeq && e.lastEntry.After(d.LastEntry) {
			d.LastEntry = e.lastEntry
		}
		unknown = unknown || d.Tree == nil && (!d.firstKnown || d.LastEntry.IsZero())
		if e == nil || d.HeaderSeq != e.headerSeq {
			if d.base != nil && d.base.file == old {
				// Its log read for the new file found nothing (purged as
				// the notice is on its way): forget the old block; the
				// log is the truth from here.
				d.base, d.tail = nil, nil
			}
			continue
		}
		if d.Tree == nil && d.base == nil && d.LastSeq > e.lastSeq {
			// Evicted without a block, and records arrived since the
			// capture: they are in no tail, so the log stays its source.
			continue
		}
		if d.Tree == nil && d.base != nil && d.base.e.lastSeq > e.lastSeq {
			// Spilled after the capture: its spill block holds records
			// the new snapshot lacks, and its tail starts after them, so
			// the spill block stays its source.
			continue
		}
		d.base = &snapRef{sf, e}
		if d.Tree == nil {
			k := 0
			for k < len(d.tail) && d.tail[k].Seq <= e.lastSeq {
				k++
			}
			d.tail = slices.Clone(d.tail[k:])
		}
	}
	st.indexLacks = unknown
	spills := st.dropSpillsLocked()
	st.mu.Unlock()
	removeFiles(spills)
	if old != nil {
		old.f.Close()
		if old.path != sf.path {
			os.Remove(old.path)
		}
	}
	// Leftovers of crashed writers.
	if tmps, _ := filepath.Glob(filepath.Join(st.opts.SnapshotDir, "*.snap.tmp")); len(tmps) > 0 {
		for _, p := range tmps {
			os.Remove(p)
		}
	}
}

// loadFromSnapshot rebuilds an evicted session from its snapshot block and
// the records applied after it.
func (st *Store) loadFromSnapshot(ref *snapRef) (*tree.Session, []uint64, error) {
	h, seqs, lines, err := ref.file.readBlock(ref.e)
	if err != nil {
		return nil, nil, err
	}
	hdr, err := tree.ParseHeader(h)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: header of %s: %v", errSnapshot, ref.e.id, err)
	}
	s := tree.NewSession(hdr)
	s.Grow(len(lines) + 4) // and a few for the tail
	out := make([]uint64, 0, len(lines)+4)
	for k, l := range lines {
		e, err := tree.ParseEntry(l)
		if err != nil {
			continue // the Store skipped it when it applied it, too
		}
		s.Append(e)
		out = append(out, seqs[k])
	}
	return s, out, nil
}
