package main

import (
	"path/filepath"
	"strings"
	"testing"
)

const (
	header = `{"type":"session","version":3,"id":"01a22ba6-0000-7000-8000-000000000002","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`
	entryA = `{"type":"message","id":"aaaaaaaa","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}`
	entryB = `{"type":"message","id":"bbbbbbbb","parentId":"aaaaaaaa","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hello"}],"provider":"p","model":"m","timestamp":2}}`
)

// lines splits stderr into its lines.
func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// TestUsageErrors: a wrong invocation exits 2 with exactly one line on
// stderr that names the command and points at its help.
func TestUsageErrors(t *testing.T) {
	file := writeFile(t, "s.jsonl", header+"\n"+entryA+"\n")
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"file"},
		{"file", "frobnicate"},
		{"file", "tree"},
		{"file", "tree", file, file},
		{"file", "tree", file, "--bogus"},
		{"file", "tree", file, "--width", "-1"},
		{"file", "tree", file, "--width", "wide"},
		{"file", "info"},
		{"file", "context", file, "--leaf"},
		{"file", "check", file, "extra"},
		{"file", "migrate", file},
		{"file", "migrate", "-o", "out.jsonl"},
	} {
		r := runCLI(t, "", args...)
		l := lines(r.stderr)
		if r.code != 2 || len(l) != 1 || !strings.Contains(l[0], "--help") || r.stdout != "" {
			t.Errorf("pi-ctl %q: exit %d, stdout %q, stderr %q; want exit 2 and one line with a hint", args, r.code, r.stdout, r.stderr)
		}
	}
}

// TestBenchMoved: "pi-ctl bench" is a usage error like any unknown
// command, whose one line points at pi-bench, and help no longer lists it.
func TestBenchMoved(t *testing.T) {
	for args, want := range map[string]string{
		"bench":                   "run 'pi-bench append|create|context|rebuild'",
		"bench append --embedded": "run 'pi-bench append --embedded'",
		"bench --help":            "run 'pi-bench --help'",
	} {
		r := runCLI(t, "", strings.Fields(args)...)
		l := lines(r.stderr)
		if r.code != 2 || len(l) != 1 || !strings.Contains(l[0], `unknown command "bench"`) || !strings.Contains(l[0], want) || r.stdout != "" {
			t.Errorf("pi-ctl %q: exit %d, stdout %q, stderr %q; want exit 2 and one line saying %s", args, r.code, r.stdout, r.stderr, want)
		}
	}
	if top := runCLI(t, "", "--help").stdout; strings.Contains(top, "  bench ") {
		t.Errorf("top-level help lists bench:\n%s", top)
	}
}

// TestHelp: --help and -h work on every level, exit 0, print to stdout.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"-h"}, {"help"},
		{"file", "--help"}, {"file", "-h"},
		{"file", "tree", "--help"}, {"file", "tree", "x.jsonl", "-h"},
		{"file", "info", "--help"}, {"file", "context", "--help"},
		{"file", "check", "--help"}, {"file", "migrate", "-h"},
	} {
		r := runCLI(t, "", args...)
		if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, "Usage: pi-ctl") {
			t.Errorf("pi-ctl %q: exit %d, stderr %q, stdout %.80q", args, r.code, r.stderr, r.stdout)
		}
	}
	top := runCLI(t, "", "--help").stdout
	if !strings.Contains(top, "  file ") {
		t.Errorf("top-level help does not list the file command:\n%s", top)
	}
	fileHelp := runCLI(t, "", "file", "--help").stdout
	for _, c := range fileCommands {
		if !strings.Contains(fileHelp, "  "+c.name+" ") {
			t.Errorf("file help does not list %q:\n%s", c.name, fileHelp)
		}
	}
	if h := runCLI(t, "", "file", "context", "--help").stdout; !strings.Contains(h, "-leaf ID") || !strings.Contains(h, "-llm") {
		t.Errorf("context help lacks its flags:\n%s", h)
	}
}

// TestInputErrors: unreadable and invalid inputs exit 1 with one line.
func TestInputErrors(t *testing.T) {
	dir := t.TempDir()
	noHeader := writeFile(t, "n.jsonl", entryA+"\n")
	empty := writeFile(t, "e.jsonl", "\n\n")
	good := writeFile(t, "g.jsonl", header+"\n"+entryA+"\n"+entryB+"\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"file", "tree", filepath.Join(dir, "missing.jsonl")}, "no such file"},
		{[]string{"file", "info", dir}, "is a directory"},
		{[]string{"file", "tree", noHeader}, noHeader + ":1: first line is not a session header"},
		{[]string{"file", "context", empty}, empty + ":1: empty file"},
		{[]string{"file", "check", noHeader}, noHeader + ":1: first line is not a session header"},
		{[]string{"file", "context", good, "--leaf", "cafebabe"}, `unknown leaf "cafebabe"`},
	} {
		r := runCLI(t, "", c.args...)
		l := lines(r.stderr)
		if r.code != 1 || len(l) != 1 || !strings.Contains(l[0], c.want) {
			t.Errorf("pi-ctl %q: exit %d, stderr %q; want exit 1 and one line with %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

// TestCheck reports every problem with its line and passes a clean file.
func TestCheck(t *testing.T) {
	bad := writeFile(t, "bad.jsonl", strings.Join([]string{
		header,
		entryA,
		`{"type":"message","id":"cccccccc",`, // 3: malformed
		"",                                   // 4: blank lines are fine
		entryA,                               // 5: duplicate id
		`{"type":"label","id":"dddddddd","parentId":"99999999","timestamp":"2026-01-01T00:00:03.000Z","targetId":"aaaaaaaa","label":"x"}`, // 6: unknown parent
	}, "\n")+"\n")
	r := runCLI(t, "", "file", "check", bad)
	l := lines(r.stderr)
	if r.code != 1 || r.stdout != "" || len(l) != 3 {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s\nwant exit 1 and 3 problems", r.code, r.stdout, r.stderr)
	}
	for k, prefix := range []string{bad + ":3: ", bad + ":5: duplicate entry id", bad + ":6: parent \"99999999\""} {
		if !strings.HasPrefix(l[k], prefix) {
			t.Errorf("problem %d = %q, want prefix %q", k+1, l[k], prefix)
		}
	}
	// The same file read leniently: warnings, exit 0.
	r = runCLI(t, "", "file", "tree", bad)
	if r.code != 0 || len(lines(r.stderr)) != 1 || !strings.HasPrefix(r.stderr, bad+":3: skipped: ") {
		t.Errorf("lenient tree: exit %d, stderr %q; want 0 and one skipped warning", r.code, r.stderr)
	}

	good := writeFile(t, "good.jsonl", header+"\n"+entryA+"\n"+entryB+"\n")
	if out := mustRun(t, "file", "check", good); out != "ok: 2 entries\n" {
		t.Errorf("check of a clean file: %q", out)
	}
}

// TestStdin reads FILE "-" from stdin.
func TestStdin(t *testing.T) {
	r := runCLI(t, header+"\n"+entryA+"\n"+entryB+"\n", "file", "info", "-", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"leafId":"bbbbbbbb"`) {
		t.Errorf("info from stdin: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, "garbage\n", "file", "check", "-")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "<stdin>:1: ") {
		t.Errorf("check of bad stdin: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestEmptySession: a header without entries is a valid session whose
// leaf is null.
func TestEmptySession(t *testing.T) {
	file := writeFile(t, "empty.jsonl", header+"\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"file", "tree", file}, "(no entries)\n"},
		{[]string{"file", "tree", file, "--json"}, "[]\n"},
		{[]string{"file", "context", file, "--json"}, `{"leafId":null,"path":[],"thinkingLevel":"off","model":null,"contextEntryIds":[],"messages":[]}` + "\n"},
		{[]string{"file", "check", file}, "ok: 0 entries\n"},
	} {
		if got := mustRun(t, c.args...); got != c.want {
			t.Errorf("pi-ctl %q = %q, want %q", c.args, got, c.want)
		}
	}
	info := mustRun(t, "file", "info", file, "--json")
	if !strings.Contains(info, `"name":null,"leafId":null,"labels":{},"entryCount":0`) {
		t.Errorf("info of an empty session: %s", info)
	}
}

// TestContextText covers the transcript's null leaf and default leaf.
func TestContextText(t *testing.T) {
	good := writeFile(t, "good.jsonl", header+"\n"+entryA+"\n"+entryB+"\n")
	if out := mustRun(t, "file", "context", good, "--leaf", "null"); !strings.HasPrefix(out, "leaf null") || !strings.Contains(out, "0 messages") {
		t.Errorf("null leaf: %q", out)
	}
	out := mustRun(t, "file", "context", good)
	for _, want := range []string{"leaf bbbbbbbb", "model p/m", "── 1. user", "hi", "── 2. assistant · p/m", "hello"} {
		if !strings.Contains(out, want) {
			t.Errorf("default leaf transcript lacks %q:\n%s", want, out)
		}
	}
}
