package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pifleet/sessionlog/internal/conformance"
)

// forEachTransport runs f once over NATS and once over HTTP against the
// shared node, in parallel, each with a session of its own.
func forEachTransport(t *testing.T, f func(t *testing.T, n *node, conn []string)) {
	n := sharedNode(t)
	for name, conn := range transports(n) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t, n, conn)
		})
	}
}

// TestServerRead covers ls, show, tree, context, log, export and status,
// comparing with the offline file commands on the imported file wherever
// both exist: the server must show what the file shows.
func TestServerRead(t *testing.T) {
	forEachTransport(t, func(t *testing.T, n *node, conn []string) {
		cwd := testCwd(t, "/work/")
		path, sid, seq := importedSession(t, n, cwd)
		ms := []string{"--min-seq", jsonNum(seq)}
		pictl := func(args ...string) string { return mustRun(t, withFlags(conn, args...)...) }

		ls := strings.Split(pictl(append([]string{"ls", "--cwd", cwd}, ms...)...), "\n")
		if f := strings.Fields(ls[1]); len(ls) != 3 || strings.Join(strings.Fields(ls[0]), " ") != "ID NAME ENTRIES MODIFIED FIRST MESSAGE" ||
			len(f) != 11 || f[0] != sid || f[1] != "-" || f[2] != "5" || strings.Join(f[5:], " ") != "Why does the salt check fail?" {
			t.Errorf("ls --cwd:\n%s", strings.Join(ls, "\n"))
		}
		var page listPage
		mustJSON(t, pictl("ls", "--cwd", cwd, "--json"), &page)
		if len(page.Sessions) != 1 || !strings.Contains(string(page.Sessions[0]), sid) || page.Next != "" {
			t.Errorf("ls --json: %+v", page)
		}
		// Dated by its entries (2026-01-01), not by the import.
		if out := pictl("ls", "--cwd", cwd, "--since", "2026-01-01T00:00:00Z"); !strings.Contains(out, sid) {
			t.Errorf("ls --since its entries' day misses the session:\n%s", out)
		}
		if out := pictl("ls", "--cwd", cwd, "--since", "1h"); strings.Contains(out, sid) {
			t.Errorf("ls --since 1h lists a session whose entries are of 2026-01-01:\n%s", out)
		}
		if out := pictl("ls", "--cwd", cwd, "--since", "2999-01-01T00:00:00Z"); lineCount(out) != 1 {
			t.Errorf("ls --since the future lists sessions:\n%s", out)
		}

		show := pictl("show", sid)
		for _, want := range []string{"session    " + sid, "cwd        " + cwd, "entries    5 (last seq ", "leaf       " + idFollowUp, "labels     (none)"} {
			if !strings.Contains(show, want) {
				t.Errorf("show lacks %q:\n%s", want, show)
			}
		}
		var detail struct {
			LeafID     string `json:"leafId"`
			EntryCount int    `json:"entryCount"`
		}
		mustJSON(t, pictl("show", sid, "--json"), &detail)
		if detail.LeafID != idFollowUp || detail.EntryCount != 5 {
			t.Errorf("show --json: %+v", detail)
		}

		// The same drawing and transcript as the file commands.
		if got, want := pictl("tree", sid), mustRun(t, "file", "tree", path); got != want {
			t.Errorf("tree differs from file tree:\n%s\nwant:\n%s", got, want)
		}
		if got, want := pictl("tree", sid, "--width", "40"), mustRun(t, "file", "tree", path, "--width", "40"); got != want {
			t.Errorf("tree --width 40 differs from file tree:\n%s\nwant:\n%s", got, want)
		}
		if got, want := pictl("context", sid), mustRun(t, "file", "context", path); got != want {
			t.Errorf("context differs from file context:\n%s\nwant:\n%s", got, want)
		}
		if got, want := pictl("context", sid, "--llm", "--leaf", idAnswer1), mustRun(t, "file", "context", path, "--llm", "--leaf", idAnswer1); got != want {
			t.Errorf("context --llm differs from file context:\n%s\nwant:\n%s", got, want)
		}
		for _, leaf := range []string{"null", idModel, idQuestion, idAnswer1, idAnswer2, idFollowUp} {
			for _, llm := range [][]string{nil, {"--llm"}} {
				args := append([]string{"--leaf", leaf, "--json"}, llm...)
				want := conformance.MustValue(t, []byte(mustRun(t, append([]string{"file", "context", path}, args...)...)))
				conformance.CheckJSON(t, "context "+strings.Join(args, " "), []byte(pictl(append([]string{"context", sid}, args...)...)), want)
			}
		}
		var tr struct {
			Tree   []json.RawMessage `json:"tree"`
			LeafID string            `json:"leafId"`
		}
		mustJSON(t, pictl("tree", sid, "--json"), &tr)
		if len(tr.Tree) != 1 || tr.LeafID != idFollowUp {
			t.Errorf("tree --json: %+v", tr)
		}

		log := pictl("log", sid)
		lines := strings.Split(strings.TrimSuffix(log, "\n"), "\n")
		if len(lines) != 5 || !strings.Contains(lines[0], "  "+idModel+"  [model anthropic/claude-sonnet-4]") ||
			!strings.Contains(lines[4], "  "+idFollowUp+"  user: And the fix?") {
			t.Errorf("log:\n%s", log)
		}
		var entries []seqEntry
		for _, l := range strings.Split(strings.TrimSpace(pictl("log", sid, "--json")), "\n") {
			var e seqEntry
			mustJSON(t, l, &e)
			entries = append(entries, e)
		}
		if len(entries) != 5 || !strings.Contains(string(entries[2].Entry), `"id":"`+idAnswer1+`"`) {
			t.Fatalf("log --json: %+v", entries)
		}
		if out := pictl("log", sid, "--after-seq", jsonNum(entries[2].Seq)); lineCount(out) != 2 || !strings.Contains(out, idAnswer2) {
			t.Errorf("log --after-seq:\n%s", out)
		}

		// Export reproduces the file byte for byte, to stdout or atomically
		// to a file (no temporary file left beside it).
		orig := string(conformance.MustRead(t, path))
		if got := pictl("export", sid); got != orig {
			t.Errorf("export differs from the imported file:\n%s\nwant:\n%s", got, orig)
		}
		if got := pictl("export", sid, "--consistency", "strong"); got != orig {
			t.Errorf("a linearizable export differs from the imported file")
		}
		dir := t.TempDir()
		out := filepath.Join(dir, "out.jsonl")
		pictl("export", sid, "-o", out)
		if got := string(conformance.MustRead(t, out)); got != orig {
			t.Errorf("export -o differs from the imported file")
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("export -o left %d files in its directory", len(ents))
		}
		// export --all: a backup of every session, one file each.
		// The shared node also holds other tests' sessions, some larger than
		// a NATS reply can carry: those may fail, with a reason; ours not.
		backup := filepath.Join(t.TempDir(), "backup")
		r := runCLI(t, "", withFlags(conn, "export", "--all", "-o", backup)...)
		if got := string(conformance.MustRead(t, filepath.Join(backup, sid+".jsonl"))); got != orig {
			t.Errorf("export --all wrote a different file for %s", sid)
		}
		ents, _ := os.ReadDir(backup)
		var failed int
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			if strings.HasPrefix(l, "error") {
				failed++
				if !strings.Contains(l, "max_payload") && !strings.Contains(l, "too large") {
					t.Errorf("export --all failed a session for another reason: %s", l)
				}
			}
		}
		if len(ents) == 0 || lineCount(r.stdout) != len(ents)+failed || (failed > 0) != (r.code == 1) {
			t.Errorf("export --all: exit %d, %d files, %d failed, report:\n%s%s", r.code, len(ents), failed, r.stdout, r.stderr)
		}

		status := pictl("status")
		for _, want := range []string{"node       shared (pi-sessions ", "stream     PI_SESSIONS: ", "replicas   1, leader shared", "REPLICA  ROLE    STATE    LAG", "shared   leader  current  0"} {
			if !strings.Contains(status, want) {
				t.Errorf("status lacks %q:\n%s", want, status)
			}
		}
		var st statusReply
		mustJSON(t, pictl("status", "--json"), &st)
		if st.Store.Applied < seq || st.JetStream == nil || st.JetStream.Stream.Name != "PI_SESSIONS" {
			t.Errorf("status --json: %+v", st)
		}
	})
}

// TestListPages follows the list's pages with --all.
func TestListPages(t *testing.T) {
	forEachTransport(t, func(t *testing.T, n *node, conn []string) {
		cwd := testCwd(t, "/pages/")
		var sids []string
		var seq uint64
		for range 3 {
			_, sid, s := importedSession(t, n, cwd)
			sids, seq = append(sids, sid), s
		}
		r := runCLI(t, "", withFlags(conn, "ls", "--cwd", cwd, "--limit", "2", "--min-seq", jsonNum(seq))...)
		if r.code != 0 || lineCount(r.stdout) != 3 || !strings.HasPrefix(r.stderr, "more sessions: add --all, or --cursor "+sids[1]) {
			t.Errorf("ls --limit 2: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		var page listPage
		mustJSON(t, mustRun(t, withFlags(conn, "ls", "--cwd", cwd, "--limit", "2", "--all", "--json")...), &page)
		if len(page.Sessions) != 3 || page.Next != "" {
			t.Errorf("ls --all --json: %d sessions, next %q", len(page.Sessions), page.Next)
		}
		for k, raw := range page.Sessions {
			if !strings.Contains(string(raw), sids[k]) {
				t.Errorf("session %d is not %s: %s", k, sids[k], raw)
			}
		}
		if out := mustRun(t, withFlags(conn, "ls", "--cwd", cwd, "--cursor", sids[0])...); lineCount(out) != 3 || strings.Contains(out, sids[0]) {
			t.Errorf("ls --cursor:\n%s", out)
		}
	})
}

// mustJSON decodes a command's JSON output.
func mustJSON(t testing.TB, out string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("%v in %.300q", err, out)
	}
}

// jsonNum writes a sequence as a flag value.
func jsonNum(n uint64) string { return strconv.FormatUint(n, 10) }

var cwdRuns atomic.Int64

// testCwd is a cwd of the test's own, also across -count runs on the
// shared node, so that listing by cwd finds only this run's sessions.
func testCwd(t *testing.T, root string) string {
	return fmt.Sprintf("%s%s-%d", root, strings.ReplaceAll(t.Name(), "/", "-"), cwdRuns.Add(1))
}
