package main

import (
	"bufio"
	"context"
	"fmt"

	"github.com/pifleet/sessionlog/internal/termtext"
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
	termtext.WriteTree(w, f.Session, nodes, f.Len()-1, "← leaf", *width)
	return w.Flush()
}
