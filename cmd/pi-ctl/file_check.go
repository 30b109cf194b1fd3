package main

import (
	"context"
	"fmt"

	"github.com/pifleet/sessionlog/internal/tree"
)

const fileCheckHelp = `Usage: pi-ctl file check FILE

Validates a session file strictly and reports every problem, one line each
on stderr as FILE:LINE: reason: lines pi would skip (malformed JSON, not an
object, no id), a missing or unsupported header, a second header that
differs from the first, duplicate entry ids, parents that are not in the
file, self-parents and parent cycles. pi opens such files anyway; check is
for operators who want to know.

Exit status 0 and "ok: N entries" on stdout when the file is clean, 1 when
there are problems.
`

func runFileCheck(_ context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl file check")
	pos, err := parseArgs(e, fs, fileCheckHelp, args, "FILE")
	if err != nil {
		return err
	}
	data, err := readInput(e, pos[0])
	if err != nil {
		return err
	}
	name := displayName(pos[0])
	if problems := tree.Check(data, tree.ReadOptions{}); len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(e.stderr, "%s:%d: %s\n", name, p.Line, p.Reason)
		}
		return errReported
	}
	// Check found nothing, so this lenient read skips nothing either; it
	// is only here to count.
	f, err := tree.Read(data, tree.ReadOptions{})
	if err != nil {
		return asInputError(name, err)
	}
	_, err = fmt.Fprintf(e.stdout, "ok: %s\n", plural(f.Len(), "entry"))
	return err
}
