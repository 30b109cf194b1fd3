package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/pifleet/sessionlog/internal/size"
	"github.com/pifleet/sessionlog/internal/termtext"
	"github.com/pifleet/sessionlog/internal/wire"
)

// archiveCommands operate the archive of idle sessions (pi-node's
// --session-retention; docs/OPERATIONS.md, "Bounded growth").
var archiveCommands = []command{
	{"ls", "list archived sessions, by month of creation", runArchiveLs},
	{"restore", "bring archived sessions back into the log", runArchiveRestore},
	{"now", "run a retention pass now", runArchiveNow},
}

const archiveIntro = `pi-ctl archive operates the archive of idle sessions. pi-node with
--session-retention D moves sessions not written to for D out of the log
into an archive stream; they no longer cost memory in JetStream or in any
node. A restore brings one back, byte for byte, under its id.`

func runArchive(ctx context.Context, e *env, args []string) error {
	return dispatch(ctx, e, "pi-ctl archive", archiveIntro, archiveCommands, args)
}

const archiveLsHelp = `Usage: pi-ctl archive ls [--month YYYYMM] [--limit N] [--all] [--json]

Lists archived sessions in the order they were archived: id, name, entries,
size of the session file, last modification and archive time (UTC). Months
are the sessions' creation months (from the UUIDv7 id, else the header).

A copy noted "live" is of a session that is in the log as well: it was written to while
being archived, and this copy is stale (a restore refuses it).

One page of --limit copies is printed, with a note on stderr when there are
more; --all follows the pages to the end. --json prints the API's page.
`

func runArchiveLs(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl archive ls")
	conn := addConnFlags(fs)
	month := fs.String("month", "", "only sessions created in `YYYYMM`")
	limit := fs.Int("limit", 100, "copies per page, `N` from 1 to 1000")
	cursor := fs.String("cursor", "", "start at `C` (the previous page's next)")
	all := fs.Bool("all", false, "follow the pages to the last one")
	asJSON := fs.Bool("json", false, "print the API's JSON")
	if _, err := parseArgs(e, fs, archiveLsHelp, args); err != nil {
		return err
	}
	if *limit < 1 || *limit > 1000 {
		return usagef(fs.Name(), "--limit must be from 1 to 1000, not %d", *limit)
	}
	if _, err := time.Parse("200601", *month); *month != "" && (err != nil || len(*month) != 6) {
		return usagef(fs.Name(), "--month %q: want a month like 202611", *month)
	}
	req := wire.ArchiveListRequest{Limit: *limit, Month: *month}
	b, err := conn.open(ctx, e, fs)
	if err != nil {
		return err
	}
	defer b.close()
	acc, err := fetchPages(ctx, b, *cursor, func(c string) wire.Request { req.Cursor = c; return req }, *all)
	if err != nil {
		return err
	}
	if *asJSON {
		return writePageJSON(e, acc)
	}
	t := &table{}
	t.row("ID", "NAME", "ENTRIES", "SIZE", "MODIFIED", "ARCHIVED", "NOTE")
	for _, raw := range acc.Sessions {
		var s wire.ArchivedSession
		if err := json.Unmarshal(raw, &s); err != nil {
			return fmt.Errorf("archive.list: unexpected reply from pi-node: %v", err)
		}
		note := "-"
		if s.Live {
			note = "live: stale copy"
		}
		t.row(s.SessionID, termtext.Cut(nullable(s.Name, "-"), 40), strconv.Itoa(s.EntryCount), size.Human(s.Bytes), shortTime(s.Modified), shortTime(s.ArchivedAt), note)
	}
	if err := t.write(e.stdout); err != nil {
		return err
	}
	if acc.Next != "" {
		fmt.Fprintf(e.stderr, "more archived sessions: add --all, or --cursor %s for the next page\n", acc.Next)
	}
	return nil
}
