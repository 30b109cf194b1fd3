package tree

import (
	"cmp"
	"math"
	"slices"

	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// Node is one entry of the session tree in pre-order.
type Node struct {
	Index    int  // entry index in file order
	Depth    int  // 0 for roots
	Last     bool // last among its siblings (or among the roots)
	Children int  // number of children
}

// Tree returns pi's getTree as a flat pre-order walk: roots in file order (an
// entry is a root when its parentId is null, its own id, or not in the
// session), children sorted by timestamp, oldest first, ties in file order.
// Entries whose parents form a cycle are unreachable from any root and, as in
// pi, not part of the tree. Iterative: a 100k-deep chain is fine.
func (s *Session) Tree() []Node {
	n := len(s.entries)
	if n == 0 {
		return nil
	}
	// Children as one CSR array: kids[start[p]:start[p+1]] are p's children.
	start := make([]int32, n+1)
	var roots []int32
	for i := range s.entries {
		if p := s.entries[i].parent; p >= 0 {
			start[p+1]++
		} else {
			roots = append(roots, int32(i))
		}
	}
	for i := 1; i <= n; i++ {
		start[i] += start[i-1]
	}
	kids := make([]int32, start[n])
	fill := slices.Clone(start[:n])
	for i := range s.entries {
		if p := s.entries[i].parent; p >= 0 {
			kids[fill[p]] = int32(i)
			fill[p]++
		}
	}
	byTime := func(a, b int32) int { return cmpMillis(s.entries[a].ms, s.entries[b].ms) }
	for p := 0; p < n; p++ {
		if seg := kids[start[p]:start[p+1]]; len(seg) > 1 {
			slices.SortStableFunc(seg, byTime)
		}
	}

	nodes := make([]Node, 0, n)
	type frame struct {
		idx   int32
		depth int
		last  bool
	}
	stack := make([]frame, 0, 64)
	for k := len(roots) - 1; k >= 0; k-- {
		stack = append(stack, frame{roots[k], 0, k == len(roots)-1})
	}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		seg := kids[start[f.idx]:start[f.idx+1]]
		nodes = append(nodes, Node{Index: int(f.idx), Depth: f.depth, Last: f.last, Children: len(seg)})
		for k := len(seg) - 1; k >= 0; k-- {
			stack = append(stack, frame{seg[k], f.depth + 1, k == len(seg)-1})
		}
	}
	return nodes
}

// cmpMillis orders timestamps like pi's sort comparator a - b: an invalid
// date (NaN) compares equal to everything, which a stable sort leaves in place.
func cmpMillis(a, b float64) int {
	if math.IsNaN(a) || math.IsNaN(b) {
		return 0
	}
	return cmp.Compare(a, b)
}

// Children returns the ids of the direct children of id in tree order.
func (s *Session) Children(id string) []string {
	p, ok := s.byID.get(s.entries, id)
	if !ok {
		return nil
	}
	var kids []int32
	for i := range s.entries {
		if s.entries[i].parent == p {
			kids = append(kids, int32(i))
		}
	}
	slices.SortStableFunc(kids, func(a, b int32) int { return cmpMillis(s.entries[a].ms, s.entries[b].ms) })
	ids := make([]string, len(kids))
	for k, i := range kids {
		ids[k] = s.entries[i].ID
	}
	return ids
}

// TreeJSONOptions select what AppendTreeJSON writes per node.
type TreeJSONOptions struct {
	Type  bool // add "type"
	Label bool // add "label" where the entry has one
	// Entries writes pi's getTree() nodes instead: {"entry":{…},
	// "label"?,"labelTimestamp"?,"children":[…]}, the entry as stored and
	// labelTimestamp the timestamp of the label entry that set the label.
	Entries bool
}

// AppendTreeJSON appends the tree as nested [{"id":…,"children":[…]}],
// the shape of the conformance vectors, optionally with "type" and "label".
func (s *Session) AppendTreeJSON(dst []byte, nodes []Node, opt TreeJSONOptions) []byte {
	dst = append(dst, '[')
	prev := -1
	for _, n := range nodes {
		if prev >= 0 && n.Depth <= prev {
			for k := 0; k <= prev-n.Depth; k++ {
				dst = append(dst, "]}"...)
			}
			dst = append(dst, ',')
		}
		e := &s.entries[n.Index]
		if opt.Entries {
			dst = s.appendNodeEntry(dst, e)
			prev = n.Depth
			continue
		}
		dst = append(dst, `{"id":`...)
		dst = jsjson.AppendString(dst, e.ID)
		dst = s.appendTypeLabel(dst, e, opt)
		dst = append(dst, `,"children":[`...)
		prev = n.Depth
	}
	for k := 0; k <= prev; k++ {
		dst = append(dst, "]}"...)
	}
	return append(dst, ']')
}

// appendTypeLabel appends a node's "type" and "label" fields, as opt asks,
// for both tree forms without entries.
func (s *Session) appendTypeLabel(dst []byte, e *Entry, opt TreeJSONOptions) []byte {
	if opt.Type {
		dst = append(dst, `,"type":`...)
		dst = jsjson.AppendString(dst, e.Type())
	}
	if opt.Label {
		if l, ok := s.labels[e.ID]; ok {
			dst = append(dst, `,"label":`...)
			dst = jsjson.AppendString(dst, l.text)
		}
	}
	return dst
}

// AppendFlatTreeJSON appends the nodes AppendTreeJSON nests as one array
// in pre-order, each with "id" and "parentId" (its parent in the tree, null
// for a root) before AppendTreeJSON's fields, and "children" the ids of its
// children in tree order. A decoder with a depth limit reads it whatever
// the tree's depth: the nested form takes two levels per entry of a branch.
func (s *Session) AppendFlatTreeJSON(dst []byte, nodes []Node, opt TreeJSONOptions) []byte {
	// next[k] is the position of node k's next sibling, -1 for none: the
	// children of node k are k+1 and its siblings after it.
	next := make([]int32, len(nodes))
	path := make([]int32, 0, 64)
	for k, n := range nodes {
		next[k] = -1
		if len(path) > n.Depth {
			next[path[n.Depth]] = int32(k)
			path = path[:n.Depth]
		}
		path = append(path, int32(k))
	}
	dst = append(dst, '[')
	for k, n := range nodes {
		if k > 0 {
			dst = append(dst, ',')
		}
		e := &s.entries[n.Index]
		dst = append(dst, `{"id":`...)
		dst = jsjson.AppendString(dst, e.ID)
		dst = append(dst, `,"parentId":`...)
		if e.parent < 0 {
			dst = append(dst, "null"...)
		} else {
			dst = jsjson.AppendString(dst, s.entries[e.parent].ID)
		}
		if opt.Entries {
			dst = append(dst, `,"entry":`...)
			dst = append(dst, e.Raw...)
			dst = s.appendLabelFields(dst, e)
		} else {
			dst = s.appendTypeLabel(dst, e, opt)
		}
		dst = append(dst, `,"children":[`...)
		if n.Children > 0 {
			for c := int32(k + 1); c >= 0; c = next[c] {
				if c != int32(k+1) {
					dst = append(dst, ',')
				}
				dst = jsjson.AppendString(dst, s.entries[nodes[c].Index].ID)
			}
		}
		dst = append(dst, "]}"...)
	}
	return append(dst, ']')
}

// appendNodeEntry opens e's getTree() node, up to its children's "[".
func (s *Session) appendNodeEntry(dst []byte, e *Entry) []byte {
	dst = append(dst, `{"entry":`...)
	dst = append(dst, e.Raw...)
	dst = s.appendLabelFields(dst, e)
	return append(dst, `,"children":[`...)
}

// appendLabelFields appends a getTree() node's ,"label" and
// ,"labelTimestamp" where e has a label.
func (s *Session) appendLabelFields(dst []byte, e *Entry) []byte {
	if l, ok := s.labels[e.ID]; ok {
		dst = append(dst, `,"label":`...)
		dst = jsjson.AppendString(dst, l.text)
		// pi keeps the label entry's timestamp as it was written.
		if lf, err := scanLine(s.entries[l.entry].Raw); err == nil && lf.timestamp.ok() {
			dst = append(dst, `,"labelTimestamp":`...)
			dst = append(dst, lf.timestamp.of(s.entries[l.entry].Raw)...)
		}
	}
	return dst
}
