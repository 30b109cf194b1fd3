package main

import (
	"bufio"
	"context"
	"fmt"
	"strconv"

	"github.com/pifleet/sessionlog/internal/termtext"
	"github.com/pifleet/sessionlog/internal/tree"
)

const logHelp = `Usage: pi-ctl log SID [-f] [--after-seq N] [--json] [--width N]

Prints the entries of session SID in log order, one line each: the log
sequence, the entry id and a preview (as 'pi-ctl tree' shows it).
--after-seq N starts after sequence N.

With -f, keeps following: each new entry is printed as it is stored, until
interrupted (Ctrl-C). Over HTTP this reads the node's watch stream (Server-
Sent Events) and resumes after a dropped connection without gaps or
duplicates; over NATS it polls the entries operation.

--json prints one JSON object per line, {"seq":N,"entry":{…}}, the shape of
the API's entries.
`

func runLog(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl log")
	conn := addConnFlags(fs)
	var follow bool
	fs.BoolVar(&follow, "f", false, "keep printing new entries until interrupted")
	fs.BoolVar(&follow, "follow", false, "the same as -f")
	after := fs.Uint64("after-seq", 0, "start after log sequence `N`")
	asJSON := fs.Bool("json", false, "print {\"seq\",\"entry\"} objects, one per line")
	width := widthFlag(fs, e)
	pos, err := parseArgs(e, fs, logHelp, args, "SID")
	if err != nil {
		return err
	}
	if err := checkWidth(fs, *width); err != nil {
		return err
	}
	b, err := conn.open(ctx, e, fs)
	if err != nil {
		return err
	}
	defer b.close()
	sid := pos[0]
	pr := &entryPrinter{w: bufio.NewWriter(e.stdout), json: *asJSON, width: *width}

	if !follow {
		r := newEntryReader(b, sid)
		for seq := *after; ; {
			page, _, last, err := r.Next(ctx, seq)
			if err != nil {
				return err
			}
			for _, en := range page {
				pr.print(en)
				seq = en.Seq
			}
			if err := pr.w.Flush(); err != nil {
				return err
			}
			if len(page) == 0 || seq >= last {
				return nil
			}
		}
	}

	// Following: every entry goes out at once, and an outage is reported
	// once (not at every retry) until entries flow again.
	warned := false
	fn := func(en seqEntry) error {
		warned = false
		pr.print(en)
		return pr.w.Flush()
	}
	retry := func(err error) {
		if !warned {
			fmt.Fprintf(e.stderr, "pi-ctl log: %v; retrying until interrupted\n", err)
			warned = true
		}
	}
	err = followEntries(ctx, b, sid, *after, fn, retry)
	if ctx.Err() != nil {
		return nil // interrupted: the normal end of a follow
	}
	return err
}

// entryPrinter writes entries as log lines or as JSON objects.
type entryPrinter struct {
	w     *bufio.Writer
	json  bool
	width int
}

func (p *entryPrinter) print(en seqEntry) {
	if p.json {
		p.w.WriteString(`{"seq":`)
		p.w.WriteString(strconv.FormatUint(en.Seq, 10))
		p.w.WriteString(`,"entry":`)
		p.w.Write(en.Entry)
		p.w.WriteString("}\n")
		return
	}
	head := fmt.Sprintf("%6d  ", en.Seq)
	preview := ""
	if ent, err := tree.ParseEntry(en.Entry); err == nil {
		head += tree.Printable(ent.ID) + "  "
		preview = ent.Preview()
	} else {
		preview = tree.Printable(string(en.Entry)) // not an entry pi could read: show what it is
	}
	if p.width > 0 {
		preview = termtext.Cut(preview, max(p.width-termtext.Width(head), 8))
	}
	p.w.WriteString(head)
	p.w.WriteString(preview)
	p.w.WriteByte('\n')
}
