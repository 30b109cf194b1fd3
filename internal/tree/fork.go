package tree

import "fmt"

// Fork is pi's createBranchedSession: a new session whose entries are the
// path from the root to leaf, ids kept, without the label entries of that
// path; the labels of path entries are then written again as fresh label
// entries at the end, in pi's label-map order and with the timestamps of the
// label entries that set them. A child whose parent was a dropped label
// entry becomes an orphan root in the new file, exactly as in pi.
//
// The entries share their Raw bytes with src. h is the new header (new id,
// ParentSession naming src); ids draws the new label entries' ids.
func Fork(src *Session, leaf int, h Header, ids IDGen) (*Session, error) {
	out, err := forkPath(src, leaf, h)
	if err != nil {
		return nil, err
	}
	return out, forkLabels(src, out, ids)
}

// ForkPath is the part of a fork that comes from its source: Fork (pi11:
// Fork11) without the label entries written again at the end. A fork that
// stores only a reference to its source (sessionlog's forks by reference)
// is this path followed by its own records.
func ForkPath(src *Session, leaf int, h Header, pi11 bool) (*Session, error) {
	if pi11 {
		return forkPath11(src, leaf, h)
	}
	return forkPath(src, leaf, h)
}

func forkPath(src *Session, leaf int, h Header) (*Session, error) {
	if leaf < 0 || leaf >= src.Len() {
		return nil, fmt.Errorf("fork: no entry at index %d", leaf)
	}
	path := src.PathIndices(leaf)
	out := NewSession(h)
	out.Grow(len(path))
	for _, i := range path {
		if e := src.entries[i]; e.Kind != KindLabel {
			out.Append(e)
		}
	}
	return out, nil
}

// forkLabels writes the labels of the entries on the fork's path (out's
// entries) again, as fresh label entries chained from the path's last
// entry, as both pi versions do.
func forkLabels(src, out *Session, ids IDGen) error {
	onPath := make(map[string]bool, out.Len())
	parent := ""
	for i := range out.Len() {
		parent = out.entries[i].ID
		onPath[parent] = true
	}
	return labelsOnPath(src, onPath, parent, ids, out.Append)
}

// labelsOnPath emits the fresh label entries of the entries in onPath,
// in pi's label-map order, chained from parent.
func labelsOnPath(src *Session, onPath map[string]bool, parent string, ids IDGen, emit func(Entry)) error {
	for _, target := range src.labelOrder {
		if !onPath[target] {
			continue
		}
		ref := src.labels[target]
		id := ids.New(func(id string) bool { return onPath[id] })
		onPath[id] = true
		label := ref.text
		e, err := NewLabel(Meta{ID: id, ParentID: parent, Timestamp: src.entries[ref.entry].TimestampString()}, target, &label)
		if err != nil {
			return fmt.Errorf("fork: label of %s: %w", target, err)
		}
		emit(e)
		parent = id
	}
	return nil
}

// TimestampString returns the entry's "timestamp" string as written ("" when
// it is absent or not a string).
func (e *Entry) TimestampString() string {
	lf, err := scanLine(e.Raw)
	if err != nil {
		return ""
	}
	ts, _ := decodeString(e.Raw, lf.timestamp)
	return ts
}

// ForkLabels is the part of a fork (Fork, Fork11: the same) that is new:
// the labels of the path's entries written again as fresh label entries,
// chained from the path's last entry that is not a label. A fork by
// reference stores only these after its header; it costs a walk up the
// path, no copy.
func ForkLabels(src *Session, leaf int, ids IDGen) ([]Entry, error) {
	if leaf < 0 || leaf >= src.Len() {
		return nil, fmt.Errorf("fork: no entry at index %d", leaf)
	}
	if len(src.labelOrder) == 0 {
		return nil, nil
	}
	onPath := make(map[string]bool)
	parent := ""
	for _, i := range src.PathIndices(leaf) {
		if e := &src.entries[i]; e.Kind != KindLabel {
			onPath[e.ID] = true
			parent = e.ID
		}
	}
	var out []Entry
	err := labelsOnPath(src, onPath, parent, ids, func(e Entry) { out = append(out, e) })
	return out, err
}
