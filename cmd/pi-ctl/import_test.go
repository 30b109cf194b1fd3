package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/conformance"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestImportReport imports a directory tree holding good, bad and already
// stored files, and checks the per-file lines, their order, the count, the
// exit status and that the bad file left nothing behind.
func TestImportReport(t *testing.T) {
	forEachTransport(t, func(t *testing.T, n *node, conn []string) {
		dir := t.TempDir()
		mk := func(rel, content string) string {
			p := filepath.Join(dir, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}
		goodPath, goodSID := newSessionFile(t, "/import")
		good := mk("a/good.jsonl", string(conformance.MustRead(t, goodPath)))
		// Malformed JSON where the header should be: pi skips the line, and
		// without a header the file cannot be opened at all.
		bad := mk("b/bad.jsonl", "{\"type\":\"message\"\n")
		storedPath, storedSID, _ := importedSession(t, n, "/import")
		stored := mk("b/c/stored.jsonl", string(conformance.MustRead(t, storedPath)))
		mk("b/notes.txt", "not a session")
		missing := filepath.Join(dir, "missing.jsonl")

		r := runCLI(t, "", withFlags(conn, "import", dir, missing, "-j", "3")...)
		want := []string{
			"ok      " + goodSID + "  5 entries  " + good,
			"error   " + bad + ": ",
			"exists  " + storedSID + "  " + stored,
			"error   " + missing + ": ",
			"4 files: 1 imported, 1 stored already, 2 failed",
		}
		got := lines(r.stdout)
		if len(got) == len(want) && strings.HasPrefix(got[2], "ok      "+storedSID+"  5 entries  "+stored) {
			// The same bytes stored already are also what a retry finds of
			// its own first attempt: when the node's first publish timed
			// out (a loaded machine), finding them is an idempotent retry's
			// success, not "exists" (writer's fixedPlan.Reconcile).
			want[2], want[4] = got[2], "4 files: 2 imported, 0 stored already, 2 failed"
		}
		if r.code != 1 || r.stderr != "" || len(got) != len(want) {
			t.Fatalf("import: exit %d, stderr %q, stdout:\n%s", r.code, r.stderr, r.stdout)
		}
		for k := range want {
			if !strings.HasPrefix(got[k], want[k]) {
				t.Errorf("line %d = %q, want prefix %q", k+1, got[k], want[k])
			}
		}
		if out := mustRun(t, withFlags(conn, "export", goodSID)...); out != string(conformance.MustRead(t, good)) {
			t.Errorf("the imported file does not export as it was")
		}

		// Again, as JSON and one file at a time: the same order.
		r = runCLI(t, "", withFlags(conn, "import", dir, "--json", "-j", "1")...)
		got = lines(r.stdout)
		if r.code != 1 || len(got) != 3 {
			t.Fatalf("import --json: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		var res []importResult
		for _, l := range got {
			var ir importResult
			mustJSON(t, l, &ir)
			res = append(res, ir)
		}
		storedAgain := func(r string) bool { return r == "exists" || r == "ok" } // as above
		if !storedAgain(res[0].Result) || res[0].SessionID != goodSID || res[0].File != good ||
			res[1].Result != "error" || res[1].File != bad || res[1].Error == "" ||
			!storedAgain(res[2].Result) || res[2].SessionID != storedSID {
			t.Errorf("import --json: %+v", res)
		}

		// A single good file: exit 0, one line, no count.
		path, sid := newSessionFile(t, "/import")
		out := mustRun(t, withFlags(conn, "import", path)...)
		if out != "ok      "+sid+"  5 entries  "+path+"\n" {
			t.Errorf("import of one file: %q", out)
		}
	})
}

// TestImportSkippedLines: lines pi skips are skipped by the import too,
// and the result says so.
func TestImportSkippedLines(t *testing.T) {
	n := sharedNode(t)
	path, sid := newSessionFile(t, "/skipped")
	data := conformance.MustRead(t, path)
	nl := bytes.IndexByte(data, '\n')
	withJunk := writeFile(t, "junk.jsonl", string(data[:nl+1])+"not json\n"+string(data[nl+1:]))
	out := mustRun(t, "import", withJunk, "--http", n.httpURL)
	if want := "ok      " + sid + "  5 entries  " + withJunk + " (1 line skipped)\n        line 2: "; !strings.HasPrefix(out, want) || strings.Count(out, "\n") != 2 {
		t.Errorf("import with a junk line: %q, want it to start %q and name the line", out, want)
	}
	if got := mustRun(t, "export", sid, "--http", n.httpURL); got != string(data) {
		t.Errorf("export after skipping:\n%s\nwant:\n%s", got, data)
	}
}

// TestImportStrict: --strict refuses a file with an entry not of pi's
// shape, naming its line and field, and stores nothing of it; without it
// the entry is skipped and listed.
func TestImportStrict(t *testing.T) {
	n := sharedNode(t)
	path, sid := newSessionFile(t, "/strict")
	data := conformance.MustRead(t, path)
	nl := bytes.IndexByte(data, '\n')
	bad := `{"type":"model_change","id":"badbad00","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","provider":"p"}` + "\n"
	file := writeFile(t, "strict.jsonl", string(data[:nl+1])+bad+string(data[nl+1:]))
	for _, conn := range [][]string{{"--http", n.httpURL}, {"--server", n.natsURL}} {
		r := runCLI(t, "", append([]string{"import", "--strict", file}, conn...)...)
		if r.code == 0 || !strings.Contains(r.stdout, "line 2.modelId: required") {
			t.Errorf("%s strict import: exit %d %q, want an error naming line 2.modelId", conn[0], r.code, r.stdout)
		}
		if r := runCLI(t, "", append([]string{"export", sid}, conn...)...); r.code == 0 {
			t.Errorf("%s: the strict import stored the session", conn[0])
		}
	}
	out := mustRun(t, "import", "--json", file, "--http", n.httpURL)
	if !strings.Contains(out, `"skipped":[{"line":2,"field":"modelId","reason":"required: a string"}]`) {
		t.Errorf("lenient import: %s", out)
	}
}

// TestImportSymlinkDir: a PATH that is a symbolic link to a directory is
// searched like the directory, and the files keep the name given.
func TestImportSymlinkDir(t *testing.T) {
	n := sharedNode(t)
	real := t.TempDir()
	path, sid := newSessionFile(t, "/symlink")
	if err := os.Rename(path, filepath.Join(real, "s.jsonl")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "sessions")
	if err := os.Symlink(real, link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	if out := mustRun(t, "import", link, "--http", n.httpURL); out != "ok      "+sid+"  5 entries  "+filepath.Join(link, "s.jsonl")+"\n" {
		t.Errorf("import through a symlink: %q", out)
	}
}

// TestProgressBar draws the bar into a buffer as a terminal would get it:
// redrawn in place, erased before each result line and at the end.
func TestProgressBar(t *testing.T) {
	var stdout, stderr bytes.Buffer
	o := &importOutput{e: &env{stdout: &stdout, stderr: &stderr}, results: make([]*importResult, 2), bar: &progress{w: &stderr, total: 2}}
	n := 1
	o.done(1, &importResult{File: "b.jsonl", Result: "exists", SessionID: "s2"})
	o.done(0, &importResult{File: "a.jsonl", Result: "ok", SessionID: "s1", EntryCount: &n})
	o.finish()
	if want := "ok      s1  1 entry  a.jsonl\nexists  s2  b.jsonl\n2 files: 1 imported, 1 stored already, 0 failed\n"; stdout.String() != want {
		t.Errorf("stdout %q, want %q", stdout.String(), want)
	}
	bar := "\r[" + strings.Repeat("#", 15) + strings.Repeat("·", 15) + "] 1/2 files"
	full := "\r[" + strings.Repeat("#", 30) + "] 2/2 files"
	if want := bar + "\r\x1b[K" + full + "\r\x1b[K"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
	if isTerminal(&stderr) {
		t.Error("a buffer is not a terminal")
	}
}

// fakeBackend answers every operation with fn.
type fakeBackend struct {
	fn func(ctx context.Context, op string) ([]byte, error)
}

func (f fakeBackend) do(ctx context.Context, req wire.Request) ([]byte, error) {
	return f.fn(ctx, req.Op().Name)
}

func (fakeBackend) close() {}

// TestImportStops: an interrupt stops the import without reporting the
// files in flight as failed (they may have gone through), and a node that
// cannot be reached stops it after the first file instead of failing every
// file the same way.
func TestImportStops(t *testing.T) {
	files := []string{writeFile(t, "a.jsonl", header+"\n"), writeFile(t, "b.jsonl", header+"\n"), writeFile(t, "c.jsonl", header+"\n")}
	newOut := func(stdout *bytes.Buffer) *importOutput {
		return &importOutput{e: &env{stdout: stdout}, results: make([]*importResult, len(files))}
	}

	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{}, len(files))
	blocked := fakeBackend{func(ctx context.Context, _ string) ([]byte, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	var stdout bytes.Buffer
	out := newOut(&stdout)
	errc := make(chan error, 1)
	go func() { errc <- importAll(ctx, blocked, files, nil, 2, false, out) }()
	<-started
	cancel()
	if err := <-errc; err == nil || err.Error() != "interrupted after 0 of 3 files" {
		t.Errorf("interrupted import: %v", err)
	}
	out.finish()
	if stdout.String() != "3 files: 0 imported, 0 stored already, 0 failed\n" {
		t.Errorf("interrupted import printed %q", stdout.String())
	}

	calls := 0
	gone := fakeBackend{func(context.Context, string) ([]byte, error) {
		calls++
		return nil, &apiclient.UnreachableError{Where: "nats://x", Err: errors.New("no servers")}
	}}
	stdout.Reset()
	err := importAll(context.Background(), gone, files, nil, 1, false, newOut(&stdout))
	var ue *apiclient.UnreachableError
	if !errors.As(err, &ue) || calls != 1 || stdout.String() != "" {
		t.Errorf("unreachable node: %v after %d calls, printed %q", err, calls, stdout.String())
	}
}

// TestExportModes: what export writes is its owner's only: -o FILE (new or
// replacing a wider file) and --all's files are 0600, the DIR it creates
// 0700.
func TestExportModes(t *testing.T) {
	n := sharedNode(t)
	_, sid, _ := importedSession(t, n, "/modes")
	dir := t.TempDir()
	mode := func(path string) os.FileMode {
		t.Helper()
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Mode().Perm()
	}
	one := filepath.Join(dir, "one.jsonl")
	mustRun(t, "export", sid, "-o", one, "--http", n.httpURL)
	wide := filepath.Join(dir, "wide.jsonl")
	if err := os.WriteFile(wide, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "export", sid, "-o", wide, "--http", n.httpURL)
	for _, p := range []string{one, wide} {
		if m := mode(p); m != 0o600 {
			t.Errorf("export -o %s: mode %v, want 0600", p, m)
		}
	}
	all := filepath.Join(dir, "backup")
	mustRun(t, "export", "--all", "-o", all, "--http", n.httpURL)
	if m := mode(all); m != 0o700 {
		t.Errorf("export --all created %s with mode %v, want 0700", all, m)
	}
	ents, err := os.ReadDir(all)
	if err != nil || len(ents) == 0 {
		t.Fatalf("export --all wrote %d files (%v)", len(ents), err)
	}
	for _, e := range ents {
		if m := mode(filepath.Join(all, e.Name())); m != 0o600 {
			t.Errorf("export --all: %s has mode %v, want 0600", e.Name(), m)
		}
	}
}
