package termtext

import (
	"bufio"
	"iter"
	"strings"

	"github.com/pifleet/sessionlog/internal/tree"
)

// The layout of pi's /tree (its TreeList.flattenTree), which keeps long
// sessions readable by indenting only where the conversation branches:
//
//   - A chain of single children stays at its parent's indentation.
//   - The children of an entry with several children go one level deeper
//     and are drawn with a connector, "├─ " or "└─ " for the last one.
//   - The first entry after such a branch point indents one level more
//     again (except at the top), so each branch reads as a block.
//   - Below a connector that has later siblings, a gutter "│" runs down
//     until the next sibling.
//   - Several roots behave like children of an invisible root: no
//     connectors for them, and everything else one level shallower.
//
// Children stay in getTree's order (timestamps), the order of the --json
// output; pi's picker additionally moves the active branch first.

// gutter is a vertical line at a level, for the descendants of a connector.
// Lists are shared between siblings and newest first; positions never grow
// along a list, so drawing can stop at the first one out of view.
type gutter struct {
	level int
	show  bool // false: the connector was "└─ ", draw blanks
	next  *gutter
}

// slot is the layout state of one ancestor of the entry being drawn.
type slot struct {
	indent       int
	justBranched bool // its parent has several children
	children     int
	kidGutters   *gutter // the gutters its children inherit
}

// treeDrawer turns the pre-order nodes of tree.Session.Tree into prefixes.
// It holds one slot per level of the current path, not the whole tree, and
// never recurses, so a 100,000-deep chain costs nothing special.
type treeDrawer struct {
	multiRoot bool
	maxLevels int // levels drawn before the prefix is elided on the left
	path      []slot
	buf       []string
}

func newTreeDrawer(nodes []tree.Node, maxLevels int) *treeDrawer {
	roots := 0
	for _, n := range nodes {
		if n.Depth == 0 {
			roots++
		}
	}
	return &treeDrawer{multiRoot: roots > 1, maxLevels: max(maxLevels, 2)}
}

// prefix returns the drawing in front of node n; nodes must come in the
// pre-order of tree.Session.Tree.
func (d *treeDrawer) prefix(n tree.Node) string {
	d.path = d.path[:n.Depth]
	var s slot
	var inherited *gutter
	connector := false
	if n.Depth == 0 {
		if d.multiRoot { // children of the invisible root: no connector
			s.indent, s.justBranched = 1, true
		}
	} else {
		p := &d.path[n.Depth-1]
		s.indent = p.indent
		s.justBranched = p.children > 1
		if s.justBranched || (p.justBranched && p.indent > 0) {
			s.indent++
		}
		inherited, connector = p.kidGutters, s.justBranched
	}
	s.children = n.Children
	level := s.indent
	if d.multiRoot {
		level = max(0, level-1)
	}
	s.kidGutters = inherited
	if connector {
		s.kidGutters = &gutter{level: max(0, level-1), show: !n.Last, next: inherited}
	}
	d.path = append(d.path, s)
	return d.draw(level, connector, n.Last, inherited)
}

// draw renders level cells of three columns: gutters where an ancestor's
// connector was, the node's own connector in the last cell. Beyond
// maxLevels the leftmost cells give way to "⋯", so a comb-shaped tree
// thousands of branch points deep still prints lines of bounded width.
func (d *treeDrawer) draw(level int, connector, last bool, g *gutter) string {
	first := 0
	if level > d.maxLevels {
		first = level - d.maxLevels + 1
	}
	cells := d.buf[:0]
	for range level - first {
		cells = append(cells, "   ")
	}
	if connector && level > 0 && level-1 >= first {
		cells[level-1-first] = "├─ "
		if last {
			cells[level-1-first] = "└─ "
		}
	}
	// pi lets the oldest gutter at a level win; the list is newest first.
	for ; g != nil && g.level >= first; g = g.next {
		if g.level < level {
			cells[g.level-first] = "   "
			if g.show {
				cells[g.level-first] = "│  "
			}
		}
	}
	d.buf = cells
	if first > 0 {
		return "⋯  " + strings.Join(cells[1:], "")
	}
	return strings.Join(cells, "")
}

// WriteTree draws nodes (tree.Session.Tree's pre-order) as pi's /tree
// does, one line per entry, each cut to width columns (0: no limit). The
// entries on the path to the entry at index leaf get a bullet, and that
// entry gets mark (-1: the null leaf, nothing marked). The drawing, the
// id, the label (up to 40 columns) and the mark are kept whole; the
// preview takes what is left, at least 8 columns.
func WriteTree(w *bufio.Writer, s *tree.Session, nodes []tree.Node, leaf int, mark string, width int) {
	for _, line := range TreeLines(s, nodes, leaf, mark, width) {
		w.WriteString(line)
		w.WriteByte('\n')
	}
}

// TreeLines yields WriteTree's lines (without the newline) with the index
// of each one's entry, so that a caller can print the lines of a few
// entries — pi-ctl search --open — exactly as the whole tree shows them.
func TreeLines(s *tree.Session, nodes []tree.Node, leaf int, mark string, width int) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		onPath := make([]bool, s.Len())
		for _, i := range s.PathIndices(leaf) {
			onPath[i] = true
		}
		maxLevels := 40
		if width > 0 {
			maxLevels = width / 6 // the drawing keeps at most half the line
		}
		d := newTreeDrawer(nodes, maxLevels)
		for _, n := range nodes {
			e := s.Entry(n.Index)
			head := d.prefix(n)
			if onPath[n.Index] {
				head += "• "
			}
			head += tree.Printable(e.ID) + " "
			if l, ok := s.Label(e.ID); ok {
				head += "[" + Cut(tree.Printable(l), 40) + "] "
			}
			tail := ""
			if n.Index == leaf {
				tail = "  " + mark
			}
			preview := e.Preview()
			if width > 0 {
				preview = Cut(preview, max(width-Width(head)-Width(tail), 8))
			}
			if !yield(n.Index, head+preview+tail) {
				return
			}
		}
	}
}
