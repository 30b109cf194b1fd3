package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pifleet/sessionlog/internal/pisync"
	"github.com/pifleet/sessionlog/internal/size"
)

const syncHelp = `Usage: pi-ctl sync [DIR...] [--once [--retry-for D]] [--state FILE] [--dry-run]

Streams every pi session file under the directories (default
$PI_CODING_AGENT_DIR/sessions, else ~/.pi/agent/sessions) into the
cluster, live, as pi writes it: a new file is imported as one session, and
each line pi adds is appended with the id pi gave it, so a retry is never
stored twice. A line without its newline yet is waited for. Directories
are watched recursively (new ones too) and rescanned every --rescan, since
file system events can be lost.

A file pi rewrites (migrating an old file, recovering a broken one) is
compared with the cluster by entry id: what the cluster has is skipped,
the rest appended; a header that is not the cluster's is reported and the
file is not merged. A file larger than --max-file-size (default 1GiB) is
left out, with one warning naming it: no pi session is that large.

--state FILE (default: pi-ctl-sync.json next to the sessions directory)
remembers what is synced of each file, so a restart sends nothing twice.
An entry the cluster refuses is written to the dead-letter file next to it
(the state file's name, extension .refused.jsonl), logged and counted; with --once the exit status is
then 1.

--once makes one pass and prints the summary. Files that fail for the
cluster's reasons (no reply in time, unreachable, 5xx) are retried while
one went through within --retry-for (after 1 s, doubling to 15 s); the
exit status is 1 if some are still not in the cluster then:

  N files, M sessions imported, K entries appended, R refused

Without it, sync runs until interrupted (SIGINT, SIGTERM) and prints the
summary then. On a terminal a progress bar shows the first pass.
`

func runSync(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl sync")
	conn := addConnFlags(fs)
	once := fs.Bool("once", false, "one pass over the files, then exit")
	statePath := fs.String("state", "", "the state `FILE` (default: pi-ctl-sync.json next to the sessions directory)")
	dryRun := fs.Bool("dry-run", false, "read the files and the cluster, print the summary of what would be sent, send and write nothing")
	jobs := fs.Int("j", 4, "sync `N` files at once")
	rescan := fs.Duration("rescan", 30*time.Second, "look at every file again every `D` (watch mode)")
	retryFor := fs.Duration("retry-for", time.Minute, "with --once, retry files the cluster failed while one went through within `D` (0: give up at the first failure)")
	maxFile := fs.String("max-file-size", size.Format(pisync.DefaultMaxFileSize), "leave out, with a warning, files larger than `SIZE` (a new file is read into memory whole)")
	dirs, err := parseArgs(e, fs, syncHelp, args, "[DIR...]")
	if err != nil {
		return err
	}
	if *jobs < 1 {
		return usagef(fs.Name(), "-j must be at least 1, not %d", *jobs)
	}
	if *rescan <= 0 {
		return usagef(fs.Name(), "--rescan must be positive, not %v", *rescan)
	}
	if *retryFor < 0 {
		return usagef(fs.Name(), "--retry-for must not be negative, not %v", *retryFor)
	}
	maxFileSize, err := size.Parse(*maxFile)
	if err != nil || maxFileSize <= 0 {
		return usagef(fs.Name(), "--max-file-size must be a positive size like 1GiB, not %q", *maxFile)
	}
	if len(dirs) == 0 {
		d, err := pisync.DefaultSessionsDir(e.getenv)
		if err != nil {
			return err
		}
		dirs = []string{d}
	}
	if *statePath == "" {
		*statePath = filepath.Join(filepath.Dir(filepath.Clean(dirs[0])), "pi-ctl-sync.json")
	}
	// A pass that retries needs a NATS connection that outlives the node's
	// restart; --retry-for bounds how long.
	conn.reconnect = !*once || *retryFor > 0
	b, err := conn.open(ctx, e, fs)
	if err != nil {
		return err
	}
	defer b.close()

	out := &syncOutput{e: e, bar: isTerminal(e.stderr)}
	s, err := pisync.New(pisync.Options{Client: client{b}, Dirs: dirs, StatePath: *statePath, DryRun: *dryRun,
		Jobs: *jobs, Rescan: *rescan, RetryFor: *retryFor, MaxFileSize: maxFileSize, Warn: out.warn, Progress: out.progress})
	if err != nil {
		return err
	}
	if *once {
		err = s.Once(ctx)
	} else {
		err = s.Watch(ctx)
	}
	out.done()
	sum := s.Summary()
	line := sum.String()
	if *dryRun {
		line = "dry run: " + line + " (nothing sent)"
	}
	fmt.Fprintln(e.stdout, line)
	switch {
	case err != nil && !errors.Is(err, context.Canceled):
		return err
	case *once && err != nil:
		return err
	case *once && sum.Failed():
		return errReported
	}
	return nil
}

// syncOutput prints the sync's warnings and progress on stderr, one line
// each (the bar, on a terminal, is redrawn below them). Safe for
// concurrent use.
type syncOutput struct {
	e   *env
	bar bool

	mu    sync.Mutex
	shown bool      // a bar is on the screen
	last  time.Time // the last plain progress line
}

func (o *syncOutput) warn(msg string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.clear()
	fmt.Fprintf(o.e.stderr, "pi-ctl sync: %s\n", msg)
}

// progress draws the bar on a terminal; elsewhere a plain line every few
// seconds, and only for a pass long enough to need one. Only the first
// pass (over every file) is shown: a watch's later ones are a file or two.
func (o *syncOutput) progress(p pisync.Progress) {
	if !p.First {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	rate := 0.0
	if s := p.Elapsed.Seconds(); s > 0 {
		rate = float64(p.Imported) / s
	}
	text := fmt.Sprintf("%d/%d files, %s, %.0f sessions/s", p.Done, p.Total, size.Human(p.Bytes), rate)
	switch {
	case o.bar:
		full := barCells * p.Done / max(p.Total, 1)
		fmt.Fprintf(o.e.stderr, "\r[%s%s] %s\x1b[K", strings.Repeat("#", full), strings.Repeat("·", barCells-full), text)
		o.shown = true
	case p.Elapsed > 5*time.Second && time.Since(o.last) > 5*time.Second:
		o.last = time.Now()
		fmt.Fprintf(o.e.stderr, "pi-ctl sync: %s\n", text)
	}
}

func (o *syncOutput) done() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.clear()
}

func (o *syncOutput) clear() {
	if o.shown {
		io.WriteString(o.e.stderr, "\r\x1b[K")
		o.shown = false
	}
}
