package tree

import (
	"cmp"
	"slices"
	"unsafe"
)

// Compact moves the header's and the entries' lines into one buffer of
// exactly their size and trims the entry slice to its length; the session
// reads the same afterwards.
//
// Why: a Store built from the log holds each line in the buffer its
// message came in (the client library allocates one per message), or
// held a clone of it, which ended up among the dropped buffers: either
// way the lines are scattered over heap spans, and a span with one live
// line cannot go back to the OS: after a rebuild about a fifth of the
// resident memory was such holes.
// Moving every line once, when the rebuild is done, leaves those spans
// empty. The strings decoded without escapes (ids, parent ids, label
// targets) point into the lines, so they are moved along; anything else
// still holding an old line keeps it alive and stays correct.
func (s *Session) Compact() {
	s.CompactInto(&Slab{Lines: make([]byte, 0, s.LinesSize()), Entries: make([]Entry, 0, len(s.entries))})
}

// LinesSize is the size of the lines Compact moves: the header's and the
// entries'.
func (s *Session) LinesSize() int {
	total := len(s.Header.Raw)
	for i := range s.entries {
		total += len(s.entries[i].Raw)
	}
	return total
}

// Slab is room shared by the sessions a Store compacts: a Store packs many
// small sessions into one, so that no session rounds up to an allocation
// size class of its own. CompactInto appends to both.
type Slab struct {
	Lines   []byte
	Entries []Entry
}

// CompactInto is Compact into sl, which must have room for LinesSize bytes
// and Len entries beyond its lengths; without it the session gets buffers
// of its own. The session's entries keep their length as capacity, so an
// append moves them out rather than into the next session's.
func (s *Session) CompactInto(sl *Slab) {
	if cap(sl.Lines)-len(sl.Lines) < s.LinesSize() || cap(sl.Entries)-len(sl.Entries) < len(s.entries) {
		s.Compact()
		return
	}
	buf := sl.Lines
	defer func() { sl.Lines = buf }()
	var moved []move
	place := func(raw []byte) []byte {
		if len(raw) == 0 {
			return raw
		}
		off := len(buf)
		buf = append(buf, raw...)
		moved = append(moved, move{uintptr(unsafe.Pointer(unsafe.SliceData(raw))), len(raw), off})
		return buf[off:len(buf):len(buf)]
	}
	// Lines are placed first, and strings re-pointed after: buf does not
	// grow (it has room), so the slices taken stay valid.
	h := &s.Header
	h.Raw = place(h.Raw)
	at := len(sl.Entries)
	sl.Entries = append(sl.Entries, s.entries...)
	entries := sl.Entries[at:len(sl.Entries):len(sl.Entries)]
	for i := range entries {
		entries[i].Raw = place(entries[i].Raw)
	}
	slices.SortFunc(moved, func(a, b move) int { return cmp.Compare(a.from, b.from) })
	str := func(v string) string { return relocate(v, moved, buf) }
	h.ID, h.Timestamp, h.Cwd, h.ParentSession = str(h.ID), str(h.Timestamp), str(h.Cwd), str(h.ParentSession)
	for i := range entries {
		entries[i].ID, entries[i].ParentID = str(entries[i].ID), str(entries[i].ParentID)
	}
	s.entries = entries
	// byID holds indexes, not strings: nothing to move; a new array all
	// the same, allocated now rather than amid the rebuild's garbage.
	s.byID = s.byID.clone()
	labels := make(map[string]labelRef, len(s.labels))
	for k, v := range s.labels {
		labels[str(k)] = labelRef{str(v.text), v.entry}
	}
	s.labels = labels
	s.labelOrder = slices.Clone(s.labelOrder)
	for i, t := range s.labelOrder {
		s.labelOrder[i] = str(t)
	}
	if len(s.waiting) > 0 {
		waiting := make(map[string][]int32, len(s.waiting))
		for k, v := range s.waiting {
			waiting[str(k)] = v
		}
		s.waiting = waiting
	}
}

// move records that n bytes at address from now sit at buf[to:].
type move struct {
	from uintptr
	n    int
	to   int
}

// relocate returns v re-pointed into buf when its bytes lie in a moved
// line (moved sorted by from), else v itself (a string of its own, from
// an escaped value, or empty).
func relocate(v string, moved []move, buf []byte) string {
	if len(v) == 0 {
		return v
	}
	p := uintptr(unsafe.Pointer(unsafe.StringData(v)))
	// The last line starting at or before p.
	i, _ := slices.BinarySearchFunc(moved, p, func(m move, p uintptr) int {
		if m.from <= p {
			return -1
		}
		return 1
	})
	if i == 0 {
		return v
	}
	m := moved[i-1]
	off := int(p - m.from)
	if off+len(v) > m.n {
		return v
	}
	return unsafe.String(&buf[m.to+off], len(v))
}
