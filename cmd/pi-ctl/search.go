package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"

	"github.com/pifleet/sessionlog/internal/wire"
)

const searchHelp = `Usage: pi-ctl search QUERY... [--branch all|path] [--limit N] [--cursor C] [--all] [--open] [--json] [--width N]

Searches the entries of every session the node holds and prints the hits,
best first, one line each:

  SESSION  the session's id, as long as it takes to tell this page's
           sessions apart (8 characters at least; --json has them whole)
  NAME     the session's name
  ENTRY    the entry's id
  TYPE     the entry's type (compaction, branch_summary, …), or for a
           message its role (user, assistant, toolResult, …)
  TIME     the entry's timestamp (UTC)
  PATH     • the entry is on the session's path, root to its last entry
           (where pi-ctl tree bullets it); - it is on a branch the
           session left
  SNIPPET  the text around the match, the matched words in bold on a
           terminal (without $NO_COLOR), else in [brackets]

QUERY is the words given, joined by spaces. Every term must match:

  salt base64          entries with both words (any case; a word is a run
                       of letters and digits)
  "salt check"         the phrase
  auth*                a word starting with auth
  -base64 -"a phrase"  leave out entries with it (also -field:value)
  field:value          role:assistant type:compaction tool:grep
                       model:claude-sonnet-4 label:root_cause
                       cwd:/home/dev/project (that directory and below)
                       name:auth (in the session's current name, any case)
                       session:SID since:2026-11-01 until:2026-11-30
                       (since and until: RFC 3339 or a day, inclusive);
                       field:"value with spaces"

Quote the query for the shell when it holds quotes or *. A term that starts
with "-" would read as a flag: put the flags first, then --, then the query:

  pi-ctl search --limit 5 -- '"salt check" -base64 role:assistant'

A query that does not parse fails with the position of the problem (1 is
its first character) and what was expected there.

--branch path searches only the entries on each session's path. One page of
--limit hits is printed, with a note on stderr when there are more; --all
follows the pages to the end, --cursor C starts at the page a note named.
--open prints under each hit its line of 'pi-ctl tree SID' (reading each
session once). --json prints the API's page {"hits":[…],"total":N,"next":…};
with --all, every hit in one {"hits":[…],"total":N}.
`

// searchPage is the search reply with its hits undecoded, so that --json
// prints them as the node sent them.
type searchPage struct {
	Hits  []json.RawMessage `json:"hits"`
	Total int               `json:"total"`
	Next  string            `json:"next,omitempty"`
}

func runSearch(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl search")
	conn := addConnFlags(fs)
	branch := fs.String("branch", wire.SearchBranchAll, "search `all` entries, or path: only those on each session's path")
	limit := fs.Int("limit", 20, "hits per page, `N` from 1 to 100")
	cursor := fs.String("cursor", "", "start at page `C` (the previous page's next)")
	all := fs.Bool("all", false, "follow the pages to the last one")
	open := fs.Bool("open", false, "print each hit's line of pi-ctl tree under it")
	asJSON := fs.Bool("json", false, "print the API's JSON")
	width := widthFlag(fs, e)
	if term, ok := dashedTerm(fs, args); ok {
		return usagef(fs.Name(), "%s is no flag of search: a query term that starts with - goes after --, as in pi-ctl search [flags] -- 'salt %s'", term, term)
	}
	pos, err := parseArgs(e, fs, searchHelp, args, "QUERY...")
	if err != nil {
		return err
	}
	switch {
	case *branch != wire.SearchBranchAll && *branch != wire.SearchBranchPath:
		return usagef(fs.Name(), "--branch takes %s or %s, not %q", wire.SearchBranchAll, wire.SearchBranchPath, *branch)
	case *limit < 1 || *limit > 100:
		return usagef(fs.Name(), "--limit must be from 1 to 100, not %d", *limit)
	case *open && *asJSON:
		return usagef(fs.Name(), "--open draws tree lines: not with --json")
	}
	if err := checkWidth(fs, *width); err != nil {
		return err
	}
	b, err := conn.open(ctx, e, fs)
	if err != nil {
		return err
	}
	defer b.close()

	req := wire.SearchRequest{Query: strings.Join(pos, " "), Branch: *branch, Limit: *limit}
	acc, err := searchPages(ctx, b, req, *cursor, *all)
	if err != nil {
		return err
	}
	if *asJSON {
		if acc.Hits == nil {
			acc.Hits = []json.RawMessage{}
		}
		return encodeJSON(e.stdout, acc)
	}
	hits := make([]wire.SearchHit, len(acc.Hits))
	for k, raw := range acc.Hits {
		if err := json.Unmarshal(raw, &hits[k]); err != nil {
			return fmt.Errorf("search: unexpected reply from pi-node: %v", err)
		}
	}
	p := hitPrinter{width: *width, bold: isTerminal(e.stdout) && e.getenv("NO_COLOR") == ""}
	if *open {
		if p.lines, err = treeLines(ctx, b, hits, max(*width-len(openIndent), 0)); err != nil {
			return err
		}
	}
	if err := p.write(e.stdout, hits); err != nil {
		return err
	}
	if acc.Next != "" {
		fmt.Fprintf(e.stderr, "%d of about %d hits: add --all, or --cursor %s for the next page\n", len(hits), acc.Total, acc.Next)
	}
	return nil
}

// dashedTerm finds an argument before "--" that the flag parser would take
// for a flag fs does not have: most likely an excluded term (-base64),
// which must follow "--".
func dashedTerm(fs *flag.FlagSet, args []string) (string, bool) {
	for k := 0; k < len(args) && args[k] != "--"; k++ {
		a := args[k]
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		name, _, inline := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := fs.Lookup(name)
		switch {
		case name == "h" || name == "help":
		case f == nil:
			return a, true
		case !inline && !isBoolFlag(f):
			k++ // its value, which may start with "-"
		}
	}
	return "", false
}

// isBoolFlag reports whether f takes no value (--json, not --limit N).
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// searchPages runs req from cursor on and, with all, follows the pages to
// the last — without, past pages a node cut short with no hit, to the
// first with one; the result holds every hit fetched, the first page's
// total and the cursor after the hits ("" at the end).
func searchPages(ctx context.Context, b backend, req wire.SearchRequest, cursor string, all bool) (searchPage, error) {
	var acc searchPage
	for first := true; ; first = false {
		var page searchPage
		req.Cursor = cursor
		if err := call(ctx, b, req, &page); err != nil {
			return acc, err
		}
		if first {
			acc.Total = page.Total
		}
		acc.Hits = append(acc.Hits, page.Hits...)
		if acc.Next = page.Next; page.Next == "" || !all && len(acc.Hits) > 0 {
			return acc, nil
		}
		cursor = page.Next
	}
}
