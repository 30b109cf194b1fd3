package main

import (
	"cmp"
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/wire"
)

// TestServerSearch: pi-ctl search over both transports finds the answer
// on the branch the session left (PATH "-") beside the question on its
// path ("•"), brackets the matched word, prints with --json what the API
// answers, draws with --open each hit's line of pi-ctl tree, leaves the
// branch out with --branch path, pages with --limit 1 through every hit
// once, and fails on a bad query with the node's position.
func TestServerSearch(t *testing.T) {
	forEachTransport(t, func(t *testing.T, n *node, conn []string) {
		cwd := testCwd(t, "/work/")
		_, sid, seq := importedSession(t, n, cwd)
		query := []string{"salt", "cwd:" + cwd} // two arguments: one query
		pictl := func(args ...string) result {
			t.Helper()
			args = append(append(withFlags(conn, append(append([]string{"search"}, args...), "--min-seq", jsonNum(seq))...), "--"), query...)
			r := runCLI(t, "", args...)
			if r.code != 0 {
				t.Fatalf("pi-ctl %q: exit %d, stderr:\n%s", args, r.code, r.stderr)
			}
			return r
		}

		rows := hitRows(t, pictl().stdout)
		if len(rows) != 2 || rows[idQuestion] == nil || rows[idAnswer1] == nil {
			t.Fatalf("search %q: want %s and %s, got %v", query, idQuestion, idAnswer1, rows)
		}
		for id, want := range map[string]struct{ path, kind, time, snippet string }{
			idQuestion: {"•", "user", "2026-01-01 00:00:02", "Why does the [salt] check fail?"},
			idAnswer1:  {"-", "assistant", "2026-01-01 00:00:03", "The [salt] is not Base64."},
		} {
			f := rows[id]
			if !strings.HasPrefix(sid, f[0]) || len(f[0]) < 8 || f[1] != "-" || f[3] != want.kind || f[4]+" "+f[5] != want.time ||
				f[6] != want.path || strings.Join(f[7:], " ") != want.snippet {
				t.Errorf("hit %s: %q, want %+v", id, f, want)
			}
		}

		// --json is the API's reply, as GET /v1/search gives it.
		var got, api wire.SearchReply
		mustJSON(t, pictl("--json").stdout, &got)
		resp, err := http.Get(n.httpURL + "/v1/search?" + url.Values{"q": {strings.Join(query, " ")}, "minSeq": {jsonNum(seq)}}.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&api); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/search: %d %v", resp.StatusCode, err)
		}
		// Scores move as the shared node indexes other tests' sessions.
		for _, r := range []*wire.SearchReply{&got, &api} {
			if !slices.IsSortedFunc(r.Hits, func(a, b wire.SearchHit) int { return cmp.Compare(b.Score, a.Score) }) {
				t.Errorf("hits not ranked best first: %+v", r.Hits)
			}
			for k := range r.Hits {
				r.Hits[k].Score = 0
			}
		}
		if !reflect.DeepEqual(got, api) || len(got.Hits) != 2 {
			t.Errorf("search --json:\n%+v\nthe API:\n%+v", got, api)
		}
		for _, h := range got.Hits {
			if h.SessionID != sid || h.OnPath != (h.EntryID == idQuestion) || h.Cwd != cwd {
				t.Errorf("search --json hit: %+v", h)
			}
		}

		// --open: under each hit, its line of pi-ctl tree.
		tree := strings.Split(mustRun(t, withFlags(conn, "tree", sid, "--width", "0")...), "\n")
		out := strings.Split(strings.TrimSuffix(pictl("--open", "--width", "0").stdout, "\n"), "\n")
		if len(out) != 5 {
			t.Fatalf("search --open: want a heading and two hits of two lines:\n%s", strings.Join(out, "\n"))
		}
		for k := 1; k < len(out); k += 2 {
			id := strings.Fields(out[k])[2]
			line, ok := strings.CutPrefix(out[k+1], openIndent)
			if !ok || !slices.Contains(tree, line) || !strings.Contains(line, " "+id+" ") {
				t.Errorf("search --open: under %s comes %q, not its line of pi-ctl tree:\n%s", id, out[k+1], strings.Join(tree, "\n"))
			}
		}

		if rows := hitRows(t, pictl("--branch", "path").stdout); len(rows) != 1 || rows[idQuestion] == nil {
			t.Errorf("search --branch path: %v, want only %s", rows, idQuestion)
		}

		// Pages of one hit, each named by the note of the one before.
		seen := map[string]int{}
		cursor := []string{}
		for page := 0; ; page++ {
			r := pictl(append([]string{"--limit", "1"}, cursor...)...)
			for id := range hitRows(t, r.stdout) {
				seen[id]++
			}
			_, next, more := strings.Cut(strings.TrimSpace(r.stderr), "--cursor ")
			if !more {
				break
			}
			if page > 2 {
				t.Fatalf("search --limit 1: a %dth page for two hits", page+2)
			}
			next, _, _ = strings.Cut(next, " ")
			cursor = []string{"--cursor", next}
		}
		if len(seen) != 2 || seen[idQuestion] != 1 || seen[idAnswer1] != 1 {
			t.Errorf("search --limit 1, page after page: %v, want each hit once", seen)
		}
		var all searchPage
		mustJSON(t, pictl("--limit", "1", "--all", "--json").stdout, &all)
		if len(all.Hits) != 2 || all.Next != "" {
			t.Errorf("search --limit 1 --all --json: %+v", all)
		}

		expectFailure(t, 1, "position", nil, withFlags(conn, "search", `salt "unclosed`)...)
	})
}

// hitRows reads search's table: each hit's fields (SESSION NAME ENTRY
// TYPE DAY TIME PATH SNIPPET...) by entry id.
func hitRows(t *testing.T, out string) map[string][]string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if h := strings.Join(strings.Fields(lines[0]), " "); h != "SESSION NAME ENTRY TYPE TIME PATH SNIPPET" {
		t.Fatalf("search: heading %q in:\n%s", h, out)
	}
	rows := map[string][]string{}
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) > 7 {
			rows[f[2]] = f
		}
	}
	return rows
}
