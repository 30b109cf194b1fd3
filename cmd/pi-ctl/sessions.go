package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/pifleet/sessionlog/internal/termtext"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// listPage is the list reply; Next is empty on the last page.
type listPage struct {
	Sessions []json.RawMessage `json:"sessions"`
	Next     string            `json:"next,omitempty"`
}

const lsHelp = `Usage: pi-ctl ls [--name S] [--cwd DIR] [--label L] [--parent SID] [--since T] [--limit N] [--all] [--json]

Lists sessions in creation order (session ids are UUIDv7): id, name, number
of entries, last modification (UTC) and working directory.

With --cwd DIR it lists what pi's /resume shows for that directory: name,
entries, last modification and the first user message (in place of the
cwd), from the node's catalog and the first entries of each session, so a
large session store is listed without reading it.

Filters, as the API's: --name is a case-insensitive substring of the
session name, --cwd the exact working directory, --label a label some entry
carries, --parent the session the listed ones were forked from (their
parentSession), --since the earliest modification: an RFC 3339 time or a
duration back from now (24h).

One page of --limit sessions is printed, with a note on stderr when there
are more; --all follows the pages to the end. --json prints the API's page
{"sessions":[…],"next":…}; with --all, every session in one {"sessions":[…]}.
`

func runLs(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl ls")
	conn := addConnFlags(fs)
	name := fs.String("name", "", "only sessions whose name contains `S` (any case)")
	cwd := fs.String("cwd", "", "only sessions started in `DIR`")
	label := fs.String("label", "", "only sessions where some entry carries label `L`")
	parent := fs.String("parent", "", "only the forks of session `SID` (their parentSession)")
	since := fs.String("since", "", "only sessions modified at or after `T` (RFC 3339, or a duration like 24h)")
	limit := fs.Int("limit", 100, "sessions per page, `N` from 1 to 1000")
	cursor := fs.String("cursor", "", "start after session `ID` (the previous page's next)")
	all := fs.Bool("all", false, "follow the pages to the last one")
	asJSON := fs.Bool("json", false, "print the API's JSON")
	if _, err := parseArgs(e, fs, lsHelp, args); err != nil {
		return err
	}
	// With --cwd, the first message is shown: the catalog's preview.
	req := wire.ListRequest{Limit: *limit, Name: *name, Cwd: *cwd, Label: *label, ParentSession: *parent, Preview: *cwd != ""}
	if *limit < 1 || *limit > 1000 {
		return usagef(fs.Name(), "--limit must be from 1 to 1000, not %d", *limit)
	}
	if *since != "" {
		s, err := parseSince(*since, time.Now())
		if err != nil {
			return usagef(fs.Name(), "%v", err)
		}
		req.Since = s
	}
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
	infos := make([]wire.Info, len(acc.Sessions))
	for k, raw := range acc.Sessions {
		if err := json.Unmarshal(raw, &infos[k]); err != nil {
			return fmt.Errorf("list: unexpected reply from pi-node: %v", err)
		}
	}
	t := &table{}
	if *cwd != "" {
		// pi's /resume for one directory: the first message instead of
		// the cwd they all share.
		first, err := firstMessages(ctx, b, infos)
		if err != nil {
			return err
		}
		t.row("ID", "NAME", "ENTRIES", "MODIFIED", "FIRST MESSAGE")
		for k, s := range infos {
			t.row(s.SessionID, termtext.Cut(nullable(s.Name, "-"), 40), strconv.Itoa(s.EntryCount), shortTime(s.Modified), termtext.Cut(first[k], 60))
		}
	} else {
		t.row("ID", "NAME", "ENTRIES", "MODIFIED", "CWD")
		for _, s := range infos {
			t.row(s.SessionID, termtext.Cut(nullable(s.Name, "-"), 40), strconv.Itoa(s.EntryCount), shortTime(s.Modified), orDash(tree.Printable(s.Cwd)))
		}
	}
	if err := t.write(e.stdout); err != nil {
		return err
	}
	if acc.Next != "" {
		fmt.Fprintf(e.stderr, "more sessions: add --all, or --cursor %s for the next page\n", acc.Next)
	}
	return nil
}

const showHelp = `Usage: pi-ctl show SID [--json]

Shows one session: id, name, working directory, creation and last
modification, fork parent, number of entries and the log sequence of the
last one, pi's default leaf (the last entry), the labels and, when the
session spent any, its usage by provider/model (pi 1.1's usage
breakdown, as "file info" shows it).

--json prints the API's JSON (the list record plus header, labels, leafId
and usageBreakdown).
`

func runShow(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl show")
	conn := addConnFlags(fs)
	asJSON := fs.Bool("json", false, "print the API's JSON")
	pos, err := parseArgs(e, fs, showHelp, args, "SID")
	if err != nil {
		return err
	}
	var d wire.Detail
	if printed, err := conn.query(ctx, e, fs, wire.GetRequest{SessionID: pos[0], Include: wire.GetIncludeUsage}, *asJSON, &d); printed || err != nil {
		return err
	}
	kv := []string{"session", d.SessionID}
	kv = append(kv, "name", nullable(d.Name, "(none)"), "cwd", tree.Printable(d.Cwd))
	kv = append(kv, "created", d.Created.UTC().Format(time.RFC3339Nano), "modified", d.Modified.UTC().Format(time.RFC3339Nano))
	if d.ParentSession != nil {
		kv = append(kv, "parent", tree.Printable(*d.ParentSession))
	}
	kv = append(kv, "entries", fmt.Sprintf("%d (last seq %d)", d.EntryCount, d.LastSeq))
	kv = append(kv, "leaf", nullable(d.LeafID, "(none: no entries)"))
	if len(d.Labels) == 0 {
		kv = append(kv, "labels", "(none)")
	}
	key := "labels"
	for _, id := range slices.Sorted(maps.Keys(d.Labels)) {
		kv = append(kv, key, tree.Printable(id)+" "+strconv.Quote(d.Labels[id])) // quoted: labels may be blank
		key = ""
	}
	if d.UsageBreakdown != nil {
		key = "usage"
		for _, u := range *d.UsageBreakdown {
			kv = append(kv, key, usageText(tree.UsageTotal{Key: u.Key, Cost: u.Cost, Tokens: u.Tokens}))
			key = ""
		}
	}
	return keyValues(e.stdout, kv...)
}

// nullable is *s made printable, or none when s is nil.
func nullable(s *string, none string) string {
	if s == nil {
		return none
	}
	return tree.Printable(*s)
}

// fetchPages calls a list operation from cursor on (the request of a
// page is page(cursor)) and, with all, follows its cursor to the last
// page; the result holds every session fetched and the cursor after them
// ("" at the end).
func fetchPages(ctx context.Context, b backend, cursor string, page func(cursor string) wire.Request, all bool) (listPage, error) {
	var reply, acc listPage
	for {
		reply = listPage{} // decoding keeps fields the reply leaves out, like next on the last page
		if err := call(ctx, b, page(cursor), &reply); err != nil {
			return acc, err
		}
		acc.Sessions = append(acc.Sessions, reply.Sessions...)
		if !all || reply.Next == "" {
			break
		}
		cursor = reply.Next
	}
	acc.Next = reply.Next
	return acc, nil
}

// writePageJSON prints a list as the API's JSON ([] rather than null when
// empty).
func writePageJSON(e *env, acc listPage) error {
	if acc.Sessions == nil {
		acc.Sessions = []json.RawMessage{}
	}
	return encodeJSON(e.stdout, acc)
}
