package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/pifleet/sessionlog/internal/size"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

const archiveRestoreHelp = `Usage: pi-ctl archive restore SID... [--json]

Brings archived sessions back into the log, byte for byte as they were
archived, under their ids; their copies leave the archive. One line each:

  restored  SID  N entries  last seq S
  error     SID: reason

A session written to less than the log's duplicate window (2 minutes) before
it was archived can be restored only once that window has passed: the error
says until when. Clients' cursors are not archived: a restored session
starts at pi's default leaf. Exit status 1 when some session failed.

--json prints one object per session: {"sessionId","result" (restored or
error),"entryCount","lastSeq","error"}.
`

// restoreResult is the outcome of one session, also its --json line.
type restoreResult struct {
	SessionID  string `json:"sessionId"`
	Result     string `json:"result"` // restored, error
	EntryCount int    `json:"entryCount,omitempty"`
	LastSeq    uint64 `json:"lastSeq,omitempty"`
	Error      string `json:"error,omitempty"`
}

func runArchiveRestore(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl archive restore")
	conn := addConnFlags(fs)
	asJSON := fs.Bool("json", false, "print one JSON object per session")
	sids, err := parseArgs(e, fs, archiveRestoreHelp, args, "SID...")
	if err != nil {
		return err
	}
	b, err := conn.open(ctx, e, fs)
	if err != nil {
		return err
	}
	defer b.close()
	failed := false
	for _, sid := range sids {
		r := restoreResult{SessionID: sid, Result: "restored"}
		if err := call(ctx, b, wire.ArchiveRestoreRequest{SessionID: sid}, &r); err != nil {
			r = restoreResult{SessionID: sid, Result: "error", Error: err.Error()}
			failed = true
		}
		if *asJSON {
			if err := encodeJSON(e.stdout, r); err != nil {
				return err
			}
			continue
		}
		if r.Error != "" {
			fmt.Fprintf(e.stderr, "error     %s: %s\n", sid, r.Error)
			continue
		}
		fmt.Fprintf(e.stdout, "restored  %s  %d entries  last seq %d\n", sid, r.EntryCount, r.LastSeq)
	}
	if failed {
		return errReported
	}
	return nil
}

const archiveNowHelp = `Usage: pi-ctl archive now [--older-than D] [--dry-run] [--json]

Runs a retention pass now, on the node pi-ctl talks to: every session not
written to for D moves to the archive; without --older-than, that node's
retention applies (--retention-policy: each tenant's archiveAfter and
deleteAfter, archived sessions included; or --session-retention). Only one
node at a time runs passes; if another one is running, this fails and says
which.

--dry-run lists what the pass would archive and erase, with each session's
tenant, and does nothing.

The pass runs within the request: --timeout defaults to 10m here. Over NATS
pi-node ends a request after one minute; a pass cut short leaves every
session either archived or as it was, and the next pass goes on. A large
backlog is best left to the periodic passes, or run with --http.
`

func runArchiveNow(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl archive now")
	conn := addConnFlags(fs)
	conn.timeout = 10 * time.Minute
	fs.Lookup("timeout").DefValue = "10m0s"
	older := fs.Duration("older-than", 0, "archive sessions not written to for `D` (default: the node's retention policy or --session-retention)")
	dry := fs.Bool("dry-run", false, "list what the pass would archive and erase; do nothing")
	asJSON := fs.Bool("json", false, "print the API's JSON")
	if _, err := parseArgs(e, fs, archiveNowHelp, args); err != nil {
		return err
	}
	if *older < 0 {
		return usagef(fs.Name(), "--older-than must not be negative")
	}
	req := wire.ArchiveRunRequest{DryRun: *dry}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "older-than" {
			req.OlderThan = older.String()
		}
	})
	var r wire.ArchivePass
	if printed, err := conn.query(ctx, e, fs, req, *asJSON, &r); printed || err != nil {
		return err
	}
	if r.DryRun {
		t := &table{}
		t.row("SESSION", "TENANT", "WOULD", "FROM", "MODIFIED", "CWD")
		for _, p := range r.Planned {
			t.row(p.SessionID, p.Tenant, p.Action, p.Where, shortTime(p.Modified), orDash(tree.Printable(p.Cwd)))
		}
		if err := t.write(e.stdout); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "%d sessions would be archived or erased; nothing was\n", len(r.Planned))
		return nil
	}
	cutoff := "-"
	if !r.Cutoff.IsZero() {
		cutoff = r.Cutoff.UTC().Format(time.RFC3339)
	}
	if err := keyValues(e.stdout,
		"cutoff", cutoff,
		"idle", fmt.Sprint(r.Candidates),
		"archived", fmt.Sprintf("%d (%s), %d with a write that raced the purge", r.Archived, size.Human(r.Bytes), r.Repaired),
		"erased", fmt.Sprint(r.Erased),
		"active", fmt.Sprintf("%d written to meanwhile, left in the log", r.Active),
		"failed", fmt.Sprint(r.Failed),
		"took", (time.Duration(r.Seconds * float64(time.Second))).Round(time.Millisecond).String(),
	); err != nil {
		return err
	}
	if r.Failed > 0 {
		fmt.Fprintf(e.stderr, "%d sessions could not be archived; pi-node's log says why, and the next pass retries them\n", r.Failed)
		return errReported
	}
	return nil
}
