package main

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/pifleet/sessionlog/internal/cli"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// importOutput prints import results in the order of the files, whatever
// order the workers finish them in, so that the output of two runs over
// the same directory can be compared. Safe for concurrent use.
type importOutput struct {
	e    *env
	json bool
	bar  *progress // nil unless stderr is a terminal

	mu      sync.Mutex
	results []*importResult
	printed int // results[:printed] are out
	ok      int
	exists  int
	failed  int
}

// count is the number of results in, printed or not.
func (o *importOutput) count() int { return o.ok + o.exists + o.failed }

// done records the result of file i and prints what is now in order.
func (o *importOutput) done(i int, r *importResult) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.results[i] = r
	switch r.Result {
	case "ok":
		o.ok++
	case "exists":
		o.exists++
	default:
		o.failed++
	}
	o.bar.clear()
	for o.printed < len(o.results) && o.results[o.printed] != nil {
		o.line(o.results[o.printed])
		o.printed++
	}
	o.bar.draw(o.count())
}

// finish prints the results left (those behind a file that never got one,
// when the import stopped early) and, for several files, the counts.
func (o *importOutput) finish() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.bar.clear()
	for ; o.printed < len(o.results); o.printed++ {
		if r := o.results[o.printed]; r != nil {
			o.line(r)
		}
	}
	if !o.json && len(o.results) > 1 {
		fmt.Fprintf(o.e.stdout, "%s: %d imported, %d stored already, %d failed\n", plural(len(o.results), "file"), o.ok, o.exists, o.failed)
	}
}

func (o *importOutput) line(r *importResult) {
	if o.json {
		b, _ := wire.EncodeJSON(r)
		writeJSON(o.e.stdout, b)
		return
	}
	name := tree.Printable(r.File)
	switch r.Result {
	case "ok":
		extra := ""
		if n := len(r.Skipped); n > 0 {
			extra = fmt.Sprintf(" (%s skipped)", plural(n, "line"))
		}
		fmt.Fprintf(o.e.stdout, "ok      %s  %s  %s%s\n", r.SessionID, plural(*r.EntryCount, "entry"), name, extra)
		for _, l := range r.Skipped {
			le := tree.LineError{Line: l.Line, Field: l.Field, Reason: l.Reason}
			fmt.Fprintf(o.e.stdout, "        %s\n", tree.Printable(le.Error()))
		}
	case "exists":
		fmt.Fprintf(o.e.stdout, "exists  %s  %s\n", r.SessionID, name)
	default:
		fmt.Fprintf(o.e.stdout, "error   %s: %s\n", name, r.Error)
	}
}

// progress is a one-line bar on stderr, redrawn in place: "[####····]
// 12/40 files". A nil *progress draws nothing.
type progress struct {
	w     io.Writer
	total int
	unit  string // what is counted; "files" if empty
	shown bool
}

const barCells = cli.BarCells

func (p *progress) draw(done int) {
	if p == nil || p.total == 0 {
		return
	}
	full := barCells * done / p.total
	unit := p.unit
	if unit == "" {
		unit = "files"
	}
	fmt.Fprintf(p.w, "\r[%s%s] %d/%d %s", strings.Repeat("#", full), strings.Repeat("·", barCells-full), done, p.total, unit)
	p.shown = true
}

// clear erases the bar so that a result line can take its place.
func (p *progress) clear() {
	if p == nil || !p.shown {
		return
	}
	io.WriteString(p.w, "\r\x1b[K")
	p.shown = false
}

// isTerminal reports whether w is a terminal, where a progress bar helps.
var isTerminal = cli.IsTerminal
