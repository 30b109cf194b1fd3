package tree

import (
	"slices"
	"strings"

	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// Session is one pi session held in memory: the header, the entries in file
// (= stream) order, and the indexes pi's SessionManager builds: entries by id,
// resolved parents, labels and the session name. Appends are O(1); a path of
// depth D is O(D); the tree is O(N log N) for sorting siblings.
//
// pi's semantics, reproduced:
//   - An id maps to its LAST entry in file order (pi's Map.set); parents resolve through it.
//   - A parent that is not (yet) in the session leaves the entry a root (an orphan),
//     and is resolved if an entry with that id arrives later.
//   - Labels: the last label entry per target wins, on any branch; an absent or
//     falsy label clears it.
//   - The name comes from the last session_info entry in file order.
//
// A Session is not safe for concurrent use; callers synchronize.
type Session struct {
	Header  Header
	entries []Entry
	byID    idIndex
	labels  map[string]labelRef
	// labelOrder keeps the targets in JavaScript Map order (first set, moved
	// to the end when cleared and set again): forks re-create labels in it.
	labelOrder []string
	lastSI     int32 // index of the last session_info entry, -1 if none
	// waiting holds, per parent id not (yet) present, the entries naming it.
	// It stays empty for sessions written by pi or by our Writer.
	waiting map[string][]int32
	bytes   int // sum of len(Raw) over header and entries
}

// appendEntry appends with 1.25x growth instead of append's 2x for small
// slices: a Store holds millions of entries in many small sessions, where
// doubling leaves a third of each slice empty on average.
func appendEntry(s []Entry, e Entry) []Entry {
	if len(s) == cap(s) {
		grown := make([]Entry, len(s), len(s)+len(s)/4+4)
		copy(grown, s)
		s = grown
	}
	return append(s, e)
}

// NewSession returns an empty session with header h.
func NewSession(h Header) *Session {
	return &Session{
		Header: h,
		labels: make(map[string]labelRef),
		lastSI: -1,
		bytes:  len(h.Raw),
	}
}

// Grow makes room for n more entries (when the count is known: a session
// read from a file or a snapshot), so appending them does not regrow the
// entries and the id index.
func (s *Session) Grow(n int) {
	if n <= 0 {
		return
	}
	s.entries = slices.Grow(s.entries, n)
	s.byID.grow(s.entries, s.byID.n+n)
}

// Len returns the number of entries.
func (s *Session) Len() int { return len(s.entries) }

// Entry returns the entry at index i (file order).
func (s *Session) Entry(i int) *Entry { return &s.entries[i] }

// Entries returns the entries in file order. The slice must not be modified.
func (s *Session) Entries() []Entry { return s.entries }

// Bytes returns the size of the session's JSON lines (header and entries).
func (s *Session) Bytes() int { return s.bytes }

// Index returns the index of the entry with id (the last one, if repeated).
func (s *Session) Index(id string) (int, bool) {
	i, ok := s.byID.get(s.entries, id)
	return int(i), ok
}

// Get returns the entry with id.
func (s *Session) Get(id string) (*Entry, bool) {
	i, ok := s.byID.get(s.entries, id)
	if !ok {
		return nil, false
	}
	return &s.entries[i], true
}

// Has reports whether an entry with id exists.
func (s *Session) Has(id string) bool {
	_, ok := s.byID.get(s.entries, id)
	return ok
}

// Append adds e as the newest entry (the session's new default leaf).
func (s *Session) Append(e Entry) {
	i := int32(len(s.entries))
	e.parent = -1
	if e.ParentID != "" && e.ParentID != e.ID {
		if p, ok := s.byID.get(s.entries, e.ParentID); ok {
			e.parent = p
		} else {
			if s.waiting == nil {
				s.waiting = make(map[string][]int32)
			}
			s.waiting[e.ParentID] = append(s.waiting[e.ParentID], i)
		}
	}
	s.entries = appendEntry(s.entries, e)
	s.bytes += len(e.Raw)

	if old, dup := s.byID.put(s.entries, e.ID, i); dup {
		// pi resolves an id to its last entry: re-point the old one's children.
		for k := range s.entries[:i] {
			if s.entries[k].parent == old {
				s.entries[k].parent = i
			}
		}
	}
	if w, ok := s.waiting[e.ID]; ok {
		for _, k := range w {
			s.entries[k].parent = i
		}
		delete(s.waiting, e.ID)
	}

	switch e.Kind {
	case KindLabel:
		if target, label, set, ok := e.LabelChange(); ok {
			if set {
				if _, had := s.labels[target]; !had {
					s.labelOrder = append(s.labelOrder, target)
				}
				s.labels[target] = labelRef{label, i}
			} else if _, had := s.labels[target]; had {
				delete(s.labels, target)
				s.labelOrder = slices.DeleteFunc(s.labelOrder, func(t string) bool { return t == target })
			}
		}
	case KindSessionInfo:
		s.lastSI = i
	}
}

// LabelChange decodes a label entry: the target, and the label it sets (set)
// or that it clears it (an absent or falsy label). ok is false for other
// entries and for a target that is not a string.
func (e *Entry) LabelChange() (target, label string, set, ok bool) {
	if e.Kind != KindLabel {
		return "", "", false, false
	}
	target, ok = e.str(fTarget)
	if !ok {
		return "", "", false, false
	}
	if raw := e.field(fLabel); jsjson.Truthy(raw) {
		return target, jsjson.ToString(raw), true, true
	}
	return target, "", false, true
}

// SessionName decodes a session_info entry's name as pi's getSessionName
// reports it when the entry is the last one: trimmed; ok is false when it is
// empty, absent, or e is not a session_info entry.
func (e *Entry) SessionName() (string, bool) {
	if e.Kind != KindSessionInfo {
		return "", false
	}
	n, ok := e.str(fName)
	if !ok {
		return "", false
	}
	n = jsjson.Trim(n)
	return n, n != ""
}

// LeafID returns pi's default leaf: the id of the last entry in file order,
// or "" for a session without entries.
func (s *Session) LeafID() string {
	if len(s.entries) == 0 {
		return ""
	}
	return s.entries[len(s.entries)-1].ID
}

// Label returns the label of entry id.
func (s *Session) Label(id string) (string, bool) {
	l, ok := s.labels[id]
	return l.text, ok
}

// labelRef is a label and the index of the label entry that set it.
type labelRef struct {
	text  string
	entry int32
}

// LabelTargets returns the labelled entry ids in the order pi's label map
// iterates them (insertion order; a cleared and re-set label moves last).
func (s *Session) LabelTargets() []string { return slices.Clone(s.labelOrder) }

// Labels returns a copy of all labels by target id.
func (s *Session) Labels() map[string]string {
	m := make(map[string]string, len(s.labels))
	for k, v := range s.labels {
		m[k] = v.text
	}
	return m
}

// Name returns the session name: the last session_info entry's name trimmed
// with JavaScript's String.prototype.trim; ok is false when there is none or
// it is empty after trimming (even if an earlier entry had a name).
func (s *Session) Name() (string, bool) {
	if s.lastSI < 0 {
		return "", false
	}
	return s.entries[s.lastSI].SessionName()
}

// Parent returns the resolved parent of the entry at index i, or -1 when the
// entry is a root (null parent, self-parent, or parent not in the session).
func (s *Session) Parent(i int) int { return int(s.entries[i].parent) }

// PathIndices returns the indices from the root to the entry at index leaf,
// root first. pi walks parentId until a parent is missing; where a malformed
// session loops (a→b→a), the walk stops before repeating an entry.
func (s *Session) PathIndices(leaf int) []int32 {
	if leaf < 0 || leaf >= len(s.entries) {
		return nil
	}
	path := make([]int32, 0, 16)
	for i := int32(leaf); i >= 0; i = s.entries[i].parent {
		if len(path) > len(s.entries) {
			return s.acyclicPath(leaf)
		}
		path = append(path, i)
	}
	reverse(path)
	return path
}

// acyclicPath is the slow path for sessions whose parents form a cycle.
func (s *Session) acyclicPath(leaf int) []int32 {
	seen := make(map[int32]bool)
	var path []int32
	for i := int32(leaf); i >= 0 && !seen[i]; i = s.entries[i].parent {
		seen[i] = true
		path = append(path, i)
	}
	reverse(path)
	return path
}

// Path returns the ids from the root to leafID, root first (pi's getBranch).
// An unknown id gives an empty path.
func (s *Session) Path(leafID string) []string {
	i, ok := s.byID.get(s.entries, leafID)
	if !ok {
		return []string{}
	}
	idx := s.PathIndices(int(i))
	ids := make([]string, len(idx))
	for k, j := range idx {
		ids[k] = s.entries[j].ID
	}
	return ids
}

func reverse(p []int32) {
	for a, b := 0, len(p)-1; a < b; a, b = a+1, b-1 {
		p[a], p[b] = p[b], p[a]
	}
}

// CountsByType returns how many entries of each type the session holds.
func (s *Session) CountsByType() map[string]int {
	m := make(map[string]int)
	for i := range s.entries {
		m[s.entries[i].Type()]++
	}
	return m
}

// FirstMessage returns the preview of the session's first user message
// with text, as pi's /resume lists sessions by it; false when there is none.
func (s *Session) FirstMessage() (string, bool) {
	for i := range s.entries {
		if p, ok := s.entries[i].UserPreview(); ok {
			return p, true
		}
	}
	return "", false
}

// UserPreview returns the preview of a user message with text (Preview
// without its "user: "); false for any other entry.
func (e *Entry) UserPreview() (string, bool) {
	if e.Kind != KindMessage || e.Role != RoleUser {
		return "", false
	}
	p := strings.TrimPrefix(e.Preview(), "user: ")
	return p, p != "(empty)"
}
