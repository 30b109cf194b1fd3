package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/wire"
)

// TestSearchSnippet: a snippet is one line — whitespace and line breaks
// one space, a message's escape sequence made harmless — with matches in
// [brackets], or bold on a terminal, cut with "…" to the room it has.
func TestSearchSnippet(t *testing.T) {
	parts := func(texts ...string) []wire.SnippetPart {
		var ps []wire.SnippetPart
		for k, s := range texts {
			ps = append(ps, wire.SnippetPart{Text: s, Match: k%2 == 1})
		}
		return ps
	}
	for _, c := range []struct {
		parts []wire.SnippetPart
		room  int
		bold  bool
		want  string
	}{
		{parts("Why does the ", "salt", " check fail?"), 0, false, "Why does the [salt] check fail?"},
		{parts("Why does the ", "salt", " check fail?"), 0, true, "Why does the \x1b[1msalt\x1b[22m check fail?"},
		{parts("\n  first line\n\n", "salt", "\t\r\nnext  "), 0, false, "first line [salt] next"},
		{parts("red \x1b[31m", "salt"), 0, false, "red ␛[31m[salt]"},
		{parts("", "salt", " and ", "pepper"), 0, false, "[salt] and [pepper]"},
		// Cut at the end when the match comes early, else at the front too,
		// keeping a third of the room before the match.
		{parts("A ", "salt", " check that fails"), 16, false, "A [salt] check …"},
		{parts("A ", "salt", " check that fails"), 5, false, "A …"},
		{parts("Why does the ", "salt", " check fail?"), 21, false, "…s the [salt] check …"},
		{parts("Why does the ", "salt", " check fail?"), 20, false, "… the [salt] check …"},
		{parts("Why does the ", "salt", " check fail?"), 10, false, "…e [salt]…"},
		{parts("为什么 auth.ts 里的 ", "salt", " 校验失败"), 20, false, "…里的 [salt] 校验失…"},
		{parts("Why does the ", "salt", " check fail?"), 12, true, "…he \x1b[1msalt\x1b[22m ch…"},
	} {
		if got := snippet(c.parts, c.room, c.bold); got != c.want {
			t.Errorf("snippet(%+v, %d, bold %v) = %q, want %q", c.parts, c.room, c.bold, got, c.want)
		}
	}
}

// TestShortIDs: session ids are cut to one length, 8 at least, that keeps
// distinct ids apart — UUIDv7s of one minute share 8 characters.
func TestShortIDs(t *testing.T) {
	for _, c := range []struct{ ids, want []string }{
		{nil, []string{}},
		{[]string{"019aef12-3c4d-7000-8000-000000000001"}, []string{"019aef12"}},
		{[]string{"019aef12-3c4d-7000-8000-000000000001", "019aef12-3c4d-7000-8000-000000000001", "01a00000-0000-7000-8000-000000000000"},
			[]string{"019aef12", "019aef12", "01a00000"}},
		{[]string{"019aef12-3c4d-7000-8000-000000000001", "019aef12-3c5e-7000-8000-000000000002"}, []string{"019aef12-3c4", "019aef12-3c5"}},
	} {
		if got := shortIDs(c.ids); !slices.Equal(got, c.want) {
			t.Errorf("shortIDs(%q) = %q, want %q", c.ids, got, c.want)
		}
	}
}

// TestSearchUsage: wrong flags are usage errors, before any connection.
func TestSearchUsage(t *testing.T) {
	for args, want := range map[string]string{
		"search":                           "missing QUERY",
		"search salt --branch left":        `--branch takes all or path, not "left"`,
		"search salt --limit 0":            "--limit must be from 1 to 100, not 0",
		"search salt --limit 101":          "--limit must be from 1 to 100, not 101",
		"search salt --open --json":        "--open draws tree lines: not with --json",
		"search salt --width -1":           "--width must be 0 or more",
		"search salt -base64 --limit 10":   "-base64 is no flag of search: a query term that starts with - goes after --",
		"search --limit 5 salt -role:user": "-role:user is no flag of search",
	} {
		r := runCLI(t, "", strings.Fields(args)...)
		if l := lines(r.stderr); r.code != 2 || len(l) != 1 || !strings.Contains(l[0], want) || r.stdout != "" {
			t.Errorf("pi-ctl %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", args, r.code, r.stdout, r.stderr, want)
		}
	}
}
