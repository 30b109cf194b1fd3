package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/wire"
)

// pi-ctl rm against the real pi-node: a selection is refused without
// --yes, listed by --dry-run (nothing erased), erased with --yes, and then
// gone from ls; a named session with a stale --expect-last-seq is a
// conflict and stays, with the right one it is erased; a missing session
// fails the command after the others are done.
func TestRm(t *testing.T) {
	n := startNode(t, "rm", "")
	h := []string{"--http", n.httpURL}
	_, a1, _ := importedSession(t, n, "/rm/a")
	_, a2, _ := importedSession(t, n, "/rm/a")
	_, b1, bLast := importedSession(t, n, "/rm/b")

	if r := runCLI(t, "", withFlags(h, "rm", "--cwd", "/rm/a")...); r.code != 2 || !strings.Contains(r.stderr, "--yes") {
		t.Fatalf("rm --cwd without --yes: exit %d, %s", r.code, r.stderr)
	}
	r := runCLI(t, "", withFlags(h, "rm", "--cwd", "/rm/a", "--dry-run")...)
	if r.code != 0 || !strings.Contains(r.stdout, a1) || !strings.Contains(r.stdout, a2) || strings.Contains(r.stdout, b1) ||
		!strings.Contains(r.stderr, "2 sessions would be erased") {
		t.Fatalf("rm --dry-run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var live listPage
	mustJSON(t, mustRun(t, withFlags(h, "ls", "--cwd", "/rm/a", "--json")...), &live)
	if len(live.Sessions) != 2 {
		t.Fatalf("after the dry run: %d sessions, want both", len(live.Sessions))
	}
	out := mustRun(t, withFlags(h, "rm", "--cwd", "/rm/a", "--yes")...)
	if !strings.Contains(out, a1) || !strings.Contains(out, a2) {
		t.Fatalf("rm --cwd --yes:\n%s", out)
	}
	live = listPage{}
	mustJSON(t, mustRun(t, withFlags(h, "ls", "--cwd", "/rm/a", "--json")...), &live)
	if len(live.Sessions) != 0 {
		t.Fatalf("after rm: %d sessions left in /rm/a", len(live.Sessions))
	}

	// archive now --dry-run lists what a pass would do, and does nothing.
	r = runCLI(t, "", withFlags(h, "archive", "now", "--older-than", "0s", "--dry-run")...)
	if r.code != 0 || !strings.Contains(r.stdout, b1) || !strings.Contains(r.stdout, "default") || !strings.Contains(r.stdout, "archive") ||
		!strings.Contains(r.stderr, "1 sessions would be archived or erased") {
		t.Fatalf("archive now --dry-run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	mustRun(t, withFlags(h, "show", b1)...)

	r = runCLI(t, "", withFlags(h, "rm", b1, "--expect-last-seq", "1")...)
	if r.code != 1 || !strings.Contains(r.stderr, "conflict") {
		t.Fatalf("rm with a stale --expect-last-seq: exit %d, %s", r.code, r.stderr)
	}
	mustRun(t, withFlags(h, "show", b1)...)
	r = runCLI(t, "", withFlags(h, "rm", a1, b1, "--expect-last-seq", "1")...)
	if r.code != 2 {
		t.Fatalf("--expect-last-seq with two sessions: exit %d, want a usage error", r.code)
	}
	r = runCLI(t, "", withFlags(h, "rm", a1, b1, "--json")...)
	if r.code != 1 || !strings.Contains(r.stderr, "rm "+a1) || !strings.Contains(r.stderr, "1 of 2 sessions not erased") {
		t.Fatalf("rm of a missing and a live session: exit %d, %s", r.code, r.stderr)
	}
	var got wire.DeleteReply
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.SessionID != b1 || got.LastSeq != bLast || got.Records == 0 {
		t.Fatalf("rm --json: %q (%v), want %s erased up to %d", r.stdout, err, b1, bLast)
	}
}
