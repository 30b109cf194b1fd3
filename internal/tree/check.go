package tree

import (
	"fmt"
	"sort"
)

// Check validates a session file strictly and reports every problem, in line
// order: lines pi would skip (blank lines excepted), a missing or unsupported
// header, differing extra headers, entries without an id, duplicate ids,
// parents that are not in the file, self-parents and parent cycles. pi opens
// such files anyway; Check is for operators who want to know.
func Check(data []byte, opt ReadOptions) []LineError {
	opt.Strict = false
	f, err := Read(data, opt)
	if err != nil {
		if le, ok := err.(*LineError); ok {
			return []LineError{*le}
		}
		return []LineError{{Line: 1, Reason: err.Error()}}
	}
	problems := append([]LineError(nil), f.Skipped...)
	s := f.Session
	first := make(map[string]int, s.Len())
	for i := range s.Len() {
		e := s.Entry(i)
		line := f.EntryLines[i]
		if prev, dup := first[e.ID]; dup {
			problems = append(problems, LineError{Line: line, Reason: fmt.Sprintf("duplicate entry id %q (first on line %d)", e.ID, f.EntryLines[prev])})
		} else {
			first[e.ID] = i
		}
		switch {
		case e.ParentID == "":
		case e.ParentID == e.ID:
			problems = append(problems, LineError{Line: line, Reason: fmt.Sprintf("entry %q is its own parent", e.ID)})
		case !s.Has(e.ParentID):
			problems = append(problems, LineError{Line: line, Reason: fmt.Sprintf("parent %q of entry %q is not in the file (the entry becomes a root)", e.ParentID, e.ID)})
		}
	}
	// Entries on a parent cycle are reachable from no root.
	inTree := make([]bool, s.Len())
	for _, n := range s.Tree() {
		inTree[n.Index] = true
	}
	for i, ok := range inTree {
		if !ok {
			problems = append(problems, LineError{Line: f.EntryLines[i], Reason: fmt.Sprintf("entry %q is on a parent cycle and unreachable from any root", s.Entry(i).ID)})
		}
	}
	sort.SliceStable(problems, func(a, b int) bool { return problems[a].Line < problems[b].Line })
	return problems
}
