//go:build linux

package main

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// syncSummary is the summary line of pi-ctl sync.
var syncSummary = regexp.MustCompile(`(\d+) files, (\d+) sessions imported, (\d+) entries appended, (\d+) refused`)

// summaryOf reads the counts of the summary line in out.
func summaryOf(t *testing.T, out string) (files, imported, appended, refused int) {
	t.Helper()
	m := syncSummary.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no summary line in %q", out)
	}
	n := make([]int, 4)
	for k := range n {
		n[k], _ = strconv.Atoi(m[k+1])
	}
	return n[0], n[1], n[2], n[3]
}

// startSync runs the pi-ctl binary's sync (watch mode) over dir.
func startSync(t *testing.T, name, dir, state string, conn ...string) *proctest.Proc {
	t.Helper()
	args := append([]string{"sync", dir, "--state", state, "--rescan", "2s"}, conn...)
	p := proctest.New(t, name, builtBinary(t, "pi-ctl"), args...)
	p.Start(t)
	return p
}

// syncOnce runs "pi-ctl sync --once" in-process and returns its output.
func syncOnce(t *testing.T, dir, state string, conn ...string) result {
	t.Helper()
	return runCLI(t, "", append([]string{"sync", dir, "--once", "--state", state}, conn...)...)
}

// waitExported polls until every vector's export is its file (less
// what pi skips), byte for byte.
func waitExported(t *testing.T, vs []vector, conn []string, limit time.Duration) {
	t.Helper()
	testutil.WaitFor(t, limit, func() error {
		for _, v := range vs {
			r := runCLI(t, "", withFlags(conn, "export", v.sid)...)
			if r.code != 0 {
				return fmt.Errorf("%s: %s", v.name, r.stderr)
			}
			if want := expectedExport(t, v.data); r.stdout != want {
				return fmt.Errorf("%s: export has %d bytes, the file %d", v.name, len(r.stdout), len(want))
			}
		}
		return nil
	})
}

// TestSyncConformance grows every pi-v3 conformance file into a sessions
// directory as pi grows it (first flush in one write, then line by line in
// half lines; the recovered empty file; the forks) while the pi-ctl binary
// syncs the directory into a real pi-node. Every session's export must
// then be its file byte for byte, its tree and contexts pi's; a second run
// over the same state sends nothing.
func TestSyncConformance(t *testing.T) {
	_, vs := v3Vectors(t)
	n := startNode(t, "sync", "")
	conn := []string{"--http", n.httpURL}
	dir, state := filepath.Join(t.TempDir(), "sessions"), filepath.Join(t.TempDir(), "state.json")
	p := startSync(t, "pi-ctl-sync", dir, state, conn...)

	gs := make([]piGrowth, len(vs))
	for k, v := range vs {
		gs[k] = growthOf(t, dir, v)
	}
	// Up to the first flush, then wait for the imports, so that the rest
	// of every file reaches the cluster as appends of the lines pi adds.
	growAll(t, gs, func(piGrowth) int { return 0 }, func(g piGrowth) int { return g.flush + 1 })
	waitShown(t, vs, conn)
	growAll(t, gs, func(g piGrowth) int { return g.flush + 1 }, func(g piGrowth) int { return len(g.writes) })
	waitExported(t, vs, conn, 60*time.Second)
	if err := p.Stop(15 * time.Second); err != nil {
		t.Fatalf("pi-ctl sync: %v\n%s", err, p.Tail(20))
	}
	t.Logf("pi-ctl sync: %s", p.Tail(1))
	files, imported, appended, refused := summaryOf(t, p.Tail(1))
	entries := 0
	for _, v := range vs {
		entries += len(lines(expectedExport(t, v.data))) - 1
	}
	if files != len(vs) || imported != len(vs) || appended < entries/2 || refused != 0 {
		t.Errorf("summary %q: want %d files and sessions imported, most of the %d entries appended, 0 refused", p.Tail(1), len(vs), entries)
	}
	if p.LogContains("refused by") || p.LogContains("not merged") {
		t.Errorf("warnings:\n%s", p.Tail(40))
	}

	// Restarted on the same state: nothing to send.
	r := syncOnce(t, dir, state, conn...)
	if r.code != 0 {
		t.Fatalf("sync --once: exit %d: %s", r.code, r.stderr)
	}
	if _, imported, appended, _ := summaryOf(t, r.stdout); imported+appended != 0 {
		t.Errorf("second run sent again: %s", r.stdout)
	}
	checkVectors(t, vs, conn)
}

// waitShown polls until every vector's session is in the cluster.
func waitShown(t *testing.T, vs []vector, conn []string) {
	t.Helper()
	testutil.WaitFor(t, 30*time.Second, func() error {
		for _, v := range vs {
			if r := runCLI(t, "", withFlags(conn, "show", v.sid)...); r.code != 0 {
				return fmt.Errorf("%s: %s", v.name, r.stderr)
			}
		}
		return nil
	})
}

// storedEntries is the number of entries of the vectors' sessions in the
// cluster.
func storedEntries(t *testing.T, vs []vector, conn []string) int {
	t.Helper()
	n := 0
	for _, v := range vs {
		var d struct{ EntryCount int }
		mustJSON(t, mustRun(t, withFlags(conn, "show", v.sid, "--json", "--consistency", "strong")...), &d)
		n += d.EntryCount
	}
	return n
}

// TestSyncKill9 kills the sync with SIGKILL while pi writes, restarts it,
// and checks that every session ends up whole, each entry stored once.
func TestSyncKill9(t *testing.T) {
	_, vs := v3Vectors(t)
	n := startNode(t, "kill", "")
	conn := []string{"--server", n.natsURL}
	dir, state := filepath.Join(t.TempDir(), "sessions"), filepath.Join(t.TempDir(), "state.json")
	p := startSync(t, "pi-ctl-sync", dir, state, conn...)

	gs := make([]piGrowth, len(vs))
	for k, v := range vs {
		gs[k] = growthOf(t, dir, v)
	}
	half := func(g piGrowth) int { return max(g.flush+1, len(g.writes)/2) }
	growAll(t, gs, func(piGrowth) int { return 0 }, func(g piGrowth) int { return g.flush + 1 })
	waitShown(t, vs, conn)
	// The kill comes while the sync is appending the lines of the first
	// half: pi goes on writing, the sync restarts and catches up.
	done := make(chan struct{})
	go func() {
		defer close(done)
		growAll(t, gs, func(g piGrowth) int { return g.flush + 1 }, half)
	}()
	imported := storedEntries(t, vs, conn)
	testutil.WaitFor(t, 30*time.Second, func() error {
		if storedEntries(t, vs, conn) == imported {
			return errors.New("no appends yet")
		}
		return nil
	})
	p.Kill()
	<-done
	inCluster := storedEntries(t, vs, conn) // entries stored before the kill
	if inCluster == imported {
		t.Fatal("killed before any append")
	}
	growAll(t, gs, half, func(g piGrowth) int { return len(g.writes) })
	p.Start(t)
	waitExported(t, vs, conn, 60*time.Second)
	if err := p.Stop(15 * time.Second); err != nil {
		t.Fatalf("pi-ctl sync: %v", err)
	}
	t.Logf("pi-ctl sync, after the restart: %s (%d entries were in the cluster before the kill)", p.Tail(1), inCluster)
	total := 0
	for _, v := range vs {
		// The log holds each entry once: as many records as the file has
		// entries (a duplicate would be a second record).
		want := len(lines(expectedExport(t, v.data))) - 1
		total += want
		if got := len(lines(mustRun(t, withFlags(conn, "log", v.sid)...))); got != want {
			t.Errorf("%s: %d records in the log, the file has %d entries", v.name, got, want)
		}
	}
	// The restarted sync sent exactly what the cluster lacked: not the
	// entries stored before the kill that its state did not record yet.
	if _, imported, appended, refused := summaryOf(t, p.Tail(1)); imported != 0 || appended != total-inCluster || refused != 0 {
		t.Errorf("after the restart: %q, want 0 imported, %d appended, 0 refused", p.Tail(1), total-inCluster)
	}
	if out, err := exec.Command(builtBinary(t, "pi-ctl"), append([]string{"sync", dir, "--once", "--state", state}, conn...)...).CombinedOutput(); err != nil {
		t.Errorf("sync --once after the restart: %v\n%s", err, out)
	} else if _, imported, appended, _ := summaryOf(t, string(out)); imported+appended != 0 {
		t.Errorf("sync --once after the restart sent again: %s", out)
	}
}
