//go:build linux

package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLsCwdResume: "ls --cwd" lists a directory's sessions with what pi's
// /resume shows (name, entries, modified, first user message), from the
// catalog and the head of each session: its time does not grow with the
// sessions' size. 100 sessions of ~250 KiB each are listed.
func TestLsCwdResume(t *testing.T) {
	n := sharedNode(t)
	conn := []string{"--http", n.httpURL}
	cwd := testCwd(t, "/home/dev/")
	dir := t.TempDir()
	big := strings.Repeat("x", 250<<10)
	const sessions = 100
	for k := range sessions {
		_, path, leaf := piSession(t, dir, cwd)
		appendFile(t, path, `{"type":"session_info","id":"n0000001","parentId":"`+leaf+`","timestamp":"2026-11-30T09:00:01.000Z","name":"task `+fmt.Sprint(k)+`"}`+"\n"+
			piLine("t0000001", "n0000001", "user", big))
	}
	if r := syncOnce(t, dir, filepath.Join(t.TempDir(), "state.json"), conn...); r.code != 0 {
		t.Fatalf("sync: %s %s", r.stdout, r.stderr)
	}
	mustRun(t, withFlags(conn, "ls", "--cwd", cwd, "--all", "--consistency", "strong")...) // the node has applied the sync
	start := time.Now()
	out := mustRun(t, withFlags(conn, "ls", "--cwd", cwd, "--all")...)
	elapsed := time.Since(start)
	rows := lines(out)
	if len(rows) != sessions+1 || strings.Join(strings.Fields(rows[0]), " ") != "ID NAME ENTRIES MODIFIED FIRST MESSAGE" {
		t.Fatalf("ls --cwd:\n%s", out)
	}
	for k, row := range rows[1:] {
		f := strings.Fields(row)
		if name := f[1] + " " + f[2]; name != fmt.Sprintf("task %d", k) || f[3] != "4" || !strings.HasSuffix(row, "why does the salt check fail?") {
			t.Errorf("row %d: %q", k, row)
		}
	}
	t.Logf("ls --cwd of %d sessions (%d MiB) over HTTP: %v", sessions, sessions*len(big)>>20, elapsed)
}
