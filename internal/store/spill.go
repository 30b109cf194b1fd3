package store

import (
	"fmt"
	"os"
	"path/filepath"
)

// Spill files hold evicted sessions that no snapshot block holds yet (the
// Store evicted them before its first snapshot, or after the last one).
// Without them such a session comes back from the log: a filtered read of
// one session in a large interleaved stream takes tens of milliseconds to
// most of a second, and a snapshot taken with a memory budget would have
// to make thousands of those (at a million entries with a 512 MiB budget
// the shutdown snapshot ran out of time). A spill block is in the
// snapshot's format, so reloads and snapshots read it like any other.
//
// Spill files are scratch: never fsynced, not indexed, removed when the
// Store opens and once a snapshot has taken over every session in them.
// After a crash the log is the truth, as it always is.

const spillPattern = "spill-*.blk"

// spill is the file evictions currently append to.
type spill struct {
	file *snapFile
	off  int64
}

// spillLocked writes d's loaded tree to the current spill file and returns
// the block to come back from. The caller holds st.mu for writing.
func (st *Store) spillLocked(d *Doc) (*snapRef, error) {
	if st.opts.SnapshotDir == "" {
		return nil, fmt.Errorf("no snapshot directory to spill to")
	}
	if st.spill == nil {
		if err := os.MkdirAll(st.opts.SnapshotDir, 0o700); err != nil {
			return nil, err
		}
		f, err := os.CreateTemp(st.opts.SnapshotDir, spillPattern)
		if err != nil {
			return nil, err
		}
		st.spill = &spill{file: &snapFile{path: f.Name(), f: f, ring: st.opts.Seal}}
		st.spills = append(st.spills, st.spill.file)
	}
	n := d.Tree.Len()
	lines := make([][]byte, n)
	for i := range n {
		lines[i] = d.Tree.Entry(i).Raw
	}
	st.spillBuf = appendBlock(st.spillBuf[:0], d.HeaderSeq, d.Tree.Header.Raw, d.Seqs[:n], lines)
	if st.opts.Seal != nil {
		st.sealBuf = sealBlock(st.sealBuf[:0], st.opts.Seal, st.spillBuf, d.ID)
		st.spillBuf, st.sealBuf = st.sealBuf, st.spillBuf
	}
	sp := st.spill
	if _, err := sp.file.f.WriteAt(st.spillBuf, sp.off); err != nil {
		return nil, fmt.Errorf("spill %s: %w", d.ID, err)
	}
	e := &snapEntry{id: d.ID, off: sp.off, size: uint32(len(st.spillBuf) - 8), headerSeq: d.HeaderSeq, lastSeq: d.LastSeq}
	sp.off += int64(len(st.spillBuf))
	if cap(st.spillBuf) > 4<<20 {
		st.spillBuf, st.sealBuf = nil, nil // one huge session should not pin its buffers
	}
	return &snapRef{sp.file, e}, nil
}

// dropSpillsLocked forgets the spill files no session refers to any more
// and starts a new one for the next eviction; it returns the files to
// close and remove (outside the lock: a reload may be reading one, and
// falls back to the log when it finds it closed).
func (st *Store) dropSpillsLocked() []*snapFile {
	used := map[*snapFile]bool{}
	for _, d := range st.docs {
		if d.base != nil {
			used[d.base.file] = true
		}
	}
	var keep, drop []*snapFile
	for _, f := range st.spills {
		if used[f] {
			keep = append(keep, f)
		} else {
			drop = append(drop, f)
		}
	}
	st.spills, st.spill = keep, nil
	return drop
}

func removeFiles(files []*snapFile) {
	for _, f := range files {
		f.f.Close()
		os.Remove(f.path)
	}
}

// removeStaleSpills deletes the spill files of an earlier process.
func removeStaleSpills(dir string) {
	paths, _ := filepath.Glob(filepath.Join(dir, spillPattern))
	for _, p := range paths {
		os.Remove(p)
	}
}
