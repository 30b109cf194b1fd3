package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/conformance"
)

// v1File is a small version-1 session: no ids, a compaction pointing at
// an entry by index.
const v1File = `{"type":"session","id":"0f9e8d7c-6b5a-4c3d-8e2f-000000000001","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}
{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"one","timestamp":1}}
{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"two"}],"timestamp":2}}
{"type":"compaction","timestamp":"2025-01-01T00:00:03.000Z","summary":"s","firstKeptEntryIndex":2,"tokensBefore":10}
{"type":"message","timestamp":"2025-01-01T00:00:04.000Z","message":{"role":"user","content":"three","timestamp":4}}
`

func TestMigrateV1(t *testing.T) {
	in := writeFile(t, "v1.jsonl", v1File)
	if err := os.Chmod(in, 0o644); err != nil { // whatever the umask
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "v3.jsonl")
	if msg := mustRun(t, "file", "migrate", in, "-o", out, "--seed", "1"); !strings.Contains(msg, "version 1 → 3, 4 entries written to "+out) {
		t.Errorf("migrate said %q", msg)
	}
	if got := mustRun(t, "file", "check", out); got != "ok: 4 entries\n" {
		t.Errorf("check of the migrated file: %q", got)
	}
	migrated := string(conformance.MustRead(t, out))
	if !strings.HasPrefix(migrated, `{"type":"session","id":"0f9e8d7c-6b5a-4c3d-8e2f-000000000001","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w","version":3}`) {
		t.Errorf("header not migrated as pi does: %.200s", migrated)
	}
	if !strings.Contains(migrated, `"firstKeptEntryId":"`) || strings.Contains(migrated, "firstKeptEntryIndex") {
		t.Errorf("compaction index not turned into an id: %s", migrated)
	}
	info := conformance.MustValue(t, []byte(mustRun(t, "file", "info", "--json", out)))
	if v, _ := conformance.Field(info, "sourceVersion"); v.Num != 3 {
		t.Errorf("the migrated file reads as version %v", v.Num)
	}
	// The seed makes the ids reproducible; another seed gives others.
	again := filepath.Join(dir, "again.jsonl")
	mustRun(t, "file", "migrate", in, "-o", again, "--seed", "1")
	if string(conformance.MustRead(t, again)) != migrated {
		t.Error("the same seed gave different ids")
	}
	if other := mustRun(t, "file", "migrate", in, "-o", "-", "--seed", "2"); other == migrated || !strings.HasSuffix(other, "\n") {
		t.Error("another seed gave the same ids (or -o - wrote nothing)")
	}
	inSt, err1 := os.Stat(in)
	outSt, err2 := os.Stat(out)
	if err1 != nil || err2 != nil || inSt.Mode().Perm() != 0o644 || outSt.Mode().Perm() != 0o600 {
		t.Errorf("a new OUT should be 0600 (the input is 0644): %v, %v (%v %v)", outSt, inSt, err1, err2)
	}
	// In place, FILE keeps its mode.
	if err := os.Chmod(again, 0o640); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "file", "migrate", again, "-o", again)
	if st, err := os.Stat(again); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("an in-place rewrite should keep FILE's mode 0640: %v (%v)", st, err)
	}
}

// TestMigrateAtomic: a failing migration leaves OUT as it was and no
// temporary file behind.
func TestMigrateAtomic(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.jsonl")
	if err := os.WriteFile(out, []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		writeFile(t, "bad.jsonl", "not a session\n"),
		filepath.Join(dir, "missing.jsonl"),
	} {
		r := runCLI(t, "", "file", "migrate", bad, "-o", out)
		if r.code != 1 || len(lines(r.stderr)) != 1 {
			t.Errorf("migrate %s: exit %d, stderr %q", bad, r.code, r.stderr)
		}
	}
	if got := string(conformance.MustRead(t, out)); got != "keep\n" {
		t.Errorf("OUT changed to %q", got)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d files, want only OUT: %v", len(ents), ents)
	}
	// A good input replaces an existing OUT (another file).
	mustRun(t, "file", "migrate", writeFile(t, "v1.jsonl", v1File), "-o", out)
	if got := mustRun(t, "file", "check", out); got != "ok: 4 entries\n" {
		t.Errorf("check after replacing OUT: %q", got)
	}
}

// TestMigrateInPlace: OUT may be FILE only when spelled exactly as FILE.
func TestMigrateInPlace(t *testing.T) {
	in := writeFile(t, "s.jsonl", header+"\n"+"garbage\n"+entryA+"\n")
	dir := filepath.Dir(in)
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	sep := string(filepath.Separator)
	for _, other := range []string{link, dir + sep + "." + sep + "s.jsonl"} {
		r := runCLI(t, "", "file", "migrate", in, "-o", other)
		if r.code != 1 || !strings.Contains(r.stderr, "under another name") {
			t.Errorf("-o %s: exit %d, stderr %q; want a refusal", other, r.code, r.stderr)
		}
	}
	if got := string(conformance.MustRead(t, in)); !strings.Contains(got, "garbage") {
		t.Fatal("a refused migration changed FILE")
	}
	r := runCLI(t, "", "file", "migrate", in, "-o", in)
	if r.code != 0 || !strings.Contains(r.stderr, ":2: skipped: ") {
		t.Fatalf("in-place rewrite: exit %d, stderr %q", r.code, r.stderr)
	}
	if got := string(conformance.MustRead(t, in)); got != header+"\n"+entryA+"\n" {
		t.Errorf("in-place rewrite gave %q", got)
	}
	// Through a symlink OUT, the target is replaced and the link kept.
	target := writeFile(t, "target.jsonl", "old\n")
	link2 := filepath.Join(dir, "link2.jsonl")
	if err := os.Symlink(target, link2); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "file", "migrate", in, "-o", link2)
	if st, err := os.Lstat(link2); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink OUT was replaced: %v %v", st.Mode(), err)
	}
	if got := string(conformance.MustRead(t, target)); got != header+"\n"+entryA+"\n" {
		t.Errorf("the symlink's target holds %q", got)
	}
	if r := runCLI(t, "", "file", "migrate", in, "-o", dir); r.code != 1 || !strings.Contains(r.stderr, "is a directory") {
		t.Errorf("-o DIR: exit %d, stderr %q", r.code, r.stderr)
	}
}
