package main

import (
	"bufio"
	"context"
	"fmt"

	"github.com/pifleet/sessionlog/internal/tree"
)

const fileTreeHelp = `Usage: pi-ctl file tree FILE [--json] [--width N]

Draws the session tree the way pi's /tree does: one line per entry with its
id and a preview, indented only where the conversation branches.

  •          the entry is on the path to the leaf
  [label]    the entry's label
  ← leaf     pi's default leaf: the last entry in the file

With --json, prints the tree as nested [{"id":…,"children":[…]}], the shape
of pi's getTree (roots in file order, children oldest first).
`

func runFileTree(_ context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl file tree")
	asJSON := fs.Bool("json", false, "print the tree as JSON")
	width := widthFlag(fs, e)
	pos, err := parseArgs(e, fs, fileTreeHelp, args, "FILE")
	if err != nil {
		return err
	}
	if err := checkWidth(fs, *width); err != nil {
		return err
	}
	f, err := loadSession(e, pos[0], tree.ReadOptions{})
	if err != nil {
		return err
	}
	nodes := f.Tree()
	if missing := f.Len() - len(nodes); missing > 0 {
		fmt.Fprintf(e.stderr, "%s: %d entries on parent cycles are in no tree (see 'pi-ctl file check')\n", displayName(pos[0]), missing)
	}
	if *asJSON {
		out := f.AppendTreeJSON(nil, nodes, tree.TreeJSONOptions{})
		_, err := e.stdout.Write(append(out, '\n'))
		return err
	}
	w := bufio.NewWriter(e.stdout)
	if f.Len() == 0 {
		w.WriteString("(no entries)\n")
	}
	writeTree(w, f.Session, nodes, f.Len()-1, "← leaf", *width)
	return w.Flush()
}

// writeTree draws nodes, one line per entry, each cut to width columns
// (0: no limit). The entries on the path to the entry at index leaf get a
// bullet, and that entry gets mark (-1: the null leaf, nothing marked).
// The drawing, the id, the label (up to 40 columns) and the mark are kept
// whole; the preview takes what is left, at least 8 columns.
func writeTree(w *bufio.Writer, s *tree.Session, nodes []tree.Node, leaf int, mark string, width int) {
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
			head += "[" + cutWidth(tree.Printable(l), 40) + "] "
		}
		tail := ""
		if n.Index == leaf {
			tail = "  " + mark
		}
		preview := e.Preview()
		if width > 0 {
			preview = cutWidth(preview, max(width-textWidth(head)-textWidth(tail), 8))
		}
		w.WriteString(head)
		w.WriteString(preview)
		w.WriteString(tail)
		w.WriteByte('\n')
	}
}
