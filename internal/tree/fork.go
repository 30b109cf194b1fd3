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
	if leaf < 0 || leaf >= src.Len() {
		return nil, fmt.Errorf("fork: no entry at index %d", leaf)
	}
	out := NewSession(h)
	onPath := make(map[string]bool)
	parent := ""
	for _, i := range src.PathIndices(leaf) {
		e := src.entries[i]
		if e.Kind == KindLabel {
			continue
		}
		out.Append(e)
		onPath[e.ID] = true
		parent = e.ID
	}
	return out, forkLabels(src, out, onPath, parent, ids)
}

// forkLabels writes the labels of the entries on the fork's path (onPath)
// again, as fresh label entries chained from parent, as both pi versions do.
func forkLabels(src, out *Session, onPath map[string]bool, parent string, ids IDGen) error {
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
		out.Append(e)
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
