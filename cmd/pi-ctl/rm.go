package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/pifleet/sessionlog/internal/termtext"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

const rmHelp = `Usage: pi-ctl rm SID... [--expect-last-seq N] [--dry-run]
       pi-ctl rm --cwd DIR [--since T] (--dry-run | --yes)

Erases sessions (docs/SECURITY.md, "Erasure"): each session's records are
overwritten in the log, its cursors and archived copies removed, and every
pi-node drops it from memory, snapshots and search index; the ledger of
erasures keeps the session id, the time and who erased it, nothing of its
content. An erasure cannot be undone.

Name the sessions, or select them as ls does: --cwd DIR (sessions started
there) and --since T (modified at or after T). A selection erases only
with --yes; --dry-run lists what would go and erases nothing. A session
that does not exist fails the command (exit 1) after the others are done.

--expect-last-seq N erases the one session named only if its last log
sequence is N (pi-ctl show prints it): nothing appended after you looked
is lost without you seeing it.
`

func runRm(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl rm")
	conn := addConnFlags(fs)
	cwd := fs.String("cwd", "", "erase the sessions started in `DIR`")
	since := fs.String("since", "", "with --cwd: only sessions modified at or after `T` (RFC 3339, or a duration like 24h)")
	expect := fs.Uint64("expect-last-seq", 0, "erase the one session named only if its last sequence is `N`")
	dry := fs.Bool("dry-run", false, "list the sessions that would be erased; erase nothing")
	yes := fs.Bool("yes", false, "erase the sessions --cwd selects (without it, a selection is refused)")
	asJSON := fs.Bool("json", false, "print each erasure's JSON (with --dry-run: the sessions' list records)")
	sids, err := parseArgs(e, fs, rmHelp, args, "[SID...]")
	if err != nil {
		return err
	}
	switch {
	case len(sids) == 0 && *cwd == "":
		return usagef(fs.Name(), "name the sessions to erase, or select them with --cwd")
	case len(sids) > 0 && (*cwd != "" || *since != ""):
		return usagef(fs.Name(), "name sessions or select them with --cwd/--since, not both")
	case *since != "" && *cwd == "":
		return usagef(fs.Name(), "--since selects among the sessions of a --cwd")
	case *expect != 0 && len(sids) != 1:
		return usagef(fs.Name(), "--expect-last-seq is the last sequence of one session: name exactly one")
	case *cwd != "" && !*dry && !*yes:
		return usagef(fs.Name(), "a selection erases only with --yes (or list it with --dry-run)")
	}
	b, err := conn.open(ctx, e, fs)
	if err != nil {
		return err
	}
	defer b.close()

	var infos []wire.Info
	if *cwd != "" {
		req := wire.ListRequest{Limit: 1000, Cwd: *cwd}
		if *since != "" {
			s, err := parseSince(*since, time.Now())
			if err != nil {
				return usagef(fs.Name(), "%v", err)
			}
			req.Since = s
		}
		acc, err := fetchPages(ctx, b, "", func(c string) wire.Request { req.Cursor = c; return req }, true)
		if err != nil {
			return err
		}
		for _, raw := range acc.Sessions {
			var in wire.Info
			if err := json.Unmarshal(raw, &in); err != nil {
				return fmt.Errorf("list: unexpected reply from pi-node: %v", err)
			}
			infos = append(infos, in)
		}
	} else {
		for _, sid := range sids {
			infos = append(infos, wire.Info{SessionID: sid})
		}
	}
	if *dry {
		return rmDryRun(ctx, e, b, infos, *asJSON)
	}
	t := &table{}
	t.row("ID", "RECORDS", "ARCHIVED COPIES", "LAST SEQ")
	var failed []error
	for _, in := range infos {
		var r wire.DeleteReply
		err := call(ctx, b, wire.DeleteRequest{SessionID: in.SessionID, ExpectLastSeq: *expect}, &r)
		if err != nil {
			fmt.Fprintf(e.stderr, "rm %s: %v\n", in.SessionID, err)
			failed = append(failed, err)
			continue
		}
		if *asJSON {
			if err := encodeJSON(e.stdout, r); err != nil {
				return err
			}
			continue
		}
		t.row(r.SessionID, strconv.Itoa(r.Records), strconv.Itoa(r.ArchivedCopies), strconv.FormatUint(r.LastSeq, 10))
	}
	if !*asJSON {
		if err := t.write(e.stdout); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("rm: %d of %d sessions not erased: %w", len(failed), len(infos), errors.Join(failed...))
	}
	return nil
}

// rmDryRun lists what rm would erase: each named session as show knows
// it (a missing one fails the command, as the erasure would).
func rmDryRun(ctx context.Context, e *env, b backend, infos []wire.Info, asJSON bool) error {
	t := &table{}
	t.row("WOULD ERASE", "NAME", "ENTRIES", "MODIFIED", "CWD")
	var out []wire.Info
	for _, in := range infos {
		if in.Cwd == "" && in.Modified.IsZero() {
			var got wire.Detail
			if err := call(ctx, b, wire.GetRequest{SessionID: in.SessionID}, &got); err != nil {
				return fmt.Errorf("rm --dry-run %s: %w", in.SessionID, err)
			}
			in = got.Info
		}
		out = append(out, in)
		t.row(in.SessionID, termtext.Cut(nullable(in.Name, "-"), 40), strconv.Itoa(in.EntryCount), shortTime(in.Modified), orDash(tree.Printable(in.Cwd)))
	}
	if asJSON {
		if out == nil {
			out = []wire.Info{}
		}
		return encodeJSON(e.stdout, out)
	}
	if err := t.write(e.stdout); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "%d sessions would be erased; nothing was\n", len(out))
	return nil
}
