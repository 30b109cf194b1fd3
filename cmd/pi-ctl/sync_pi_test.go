//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/conformance"
	"github.com/pifleet/sessionlog/internal/pisync"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// TestSyncPiFilesKill9 grows pi 0.73.1's fork files (children of dropped
// labels: orphans) and every pi 1.1.0 file (system messages, context
// edits, usage; the recovered empty file; the damaged file pi repairs) in
// half lines while the pi-ctl binary syncs them, the next lines written
// once the sync has stored the last ones, and kills the sync with SIGKILL
// three times on the way, each time once it has stored some of the lines
// just written. In the end every session is its file (less the lines pi
// skips) with each entry stored once, nothing is refused, and pi-ctl
// checkout writes each file back.
func TestSyncPiFilesKill9(t *testing.T) {
	files := conformance.PiFiles(t)
	n := startNode(t, "pifiles", "")
	conn := []string{"--server", n.natsURL}
	dir, state := filepath.Join(t.TempDir(), "sessions"), filepath.Join(t.TempDir(), "state.json")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	vs := make([]vector, len(files))
	for k, f := range files {
		vs[k] = vector{name: f.Name, file: filepath.Join(dir, strings.ReplaceAll(f.Name, "/", "_")+".jsonl"), data: f.Data, sid: f.SID}
		if f.Start != nil {
			if err := os.WriteFile(vs[k].file, f.Start, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	p := startSync(t, "pi-ctl-sync", dir, state, conn...)

	rng := rand.New(rand.NewPCG(34, 9)) // fixed: a failure replays
	next := make([]int, len(files))
	pieces, written := 0, 0
	for _, f := range files {
		pieces += len(f.Pieces)
	}
	// expected is how many entries the cluster must have once the sync has
	// read the files as they stand: those of their complete lines.
	expected := func() int {
		n := 0
		for k, f := range files {
			data := append(append([]byte{}, f.Start...), bytes.Join(f.Pieces[:next[k]], nil)...)
			data = data[:bytes.LastIndexByte(data, '\n')+1]
			if len(bytes.TrimSpace(data)) > 0 {
				n += len(lines(expectedExport(t, data))) - 1
			}
		}
		return n
	}
	// caughtUp waits until the sync has stored every complete line; a
	// refused one fails at once.
	caughtUp := func() {
		testutil.WaitFor(t, 60*time.Second, func() error {
			if b, err := os.ReadFile(pisync.DeadLetterPath(state)); err == nil {
				t.Fatalf("refused lines:\n%s", b)
			}
			if got, want := storedSoFar(t, vs, conn), expected(); got != want {
				return fmt.Errorf("%d entries in the cluster, %d complete in the files", got, want)
			}
			return nil
		})
	}
	kills := []int{pieces / 4, pieces / 2, 3 * pieces / 4}
	for written < pieces {
		before := storedSoFar(t, vs, conn)
		for k, f := range files {
			m := min(len(f.Pieces)-next[k], 1+rng.IntN(3))
			for _, piece := range f.Pieces[next[k] : next[k]+m] {
				if err := (piWrite{data: piece}).apply(vs[k].file); err != nil {
					t.Fatal(err)
				}
			}
			next[k] += m
			written += m
		}
		if len(kills) > 0 && written >= kills[0] && expected() > before {
			kills = kills[1:]
			// Killed at work: once it has stored some of the new lines,
			// maybe not all.
			testutil.WaitFor(t, 60*time.Second, func() error {
				if storedSoFar(t, vs, conn) == before {
					return errors.New("nothing of the new lines stored yet")
				}
				return nil
			})
			p.Kill()
			p.Start(t)
		}
		// The next lines come once the sync has read these: every
		// moment of the files is one the sync sees.
		caughtUp()
	}
	if len(kills) > 0 {
		t.Fatalf("%d kills left", len(kills))
	}
	waitExported(t, vs, conn, 120*time.Second)
	if err := p.Stop(15 * time.Second); err != nil {
		t.Fatalf("pi-ctl sync: %v\n%s", err, p.Tail(20))
	}
	t.Logf("pi-ctl sync, after the last restart: %s", p.Tail(1))
	if p.LogContains("refused by") || p.LogContains("not merged") {
		t.Errorf("warnings:\n%s", p.Tail(40))
	}
	if _, err := os.Stat(pisync.DeadLetterPath(state)); !os.IsNotExist(err) {
		t.Errorf("a dead-letter file (%v):\n%s", err, testutil.ReadFile(t, pisync.DeadLetterPath(state)))
	}
	out := t.TempDir()
	exact := 0
	for _, v := range vs {
		want := expectedExport(t, v.data)
		if got, n := len(lines(mustRun(t, withFlags(conn, "log", v.sid)...))), len(lines(want))-1; got != n {
			t.Errorf("%s: %d records in the log, the file has %d entries", v.name, got, n)
		}
		path := strings.TrimSpace(mustRun(t, withFlags(conn, "checkout", v.sid, "--dir", out)...))
		got := testutil.ReadFile(t, path)
		switch {
		case got != want:
			t.Errorf("%s: checkout wrote %d bytes, the file less what pi skips has %d", v.name, len(got), len(want))
		case got == string(v.data):
			exact++
		}
	}
	// All but the damaged file (blank and malformed lines pi skips) come
	// back byte for byte.
	t.Logf("%d of %d files checked out byte for byte", exact, len(vs))
	if exact < len(vs)-1 {
		t.Errorf("%d of %d files checked out byte for byte, want all but the damaged one", exact, len(vs))
	}
}

// storedSoFar is the number of entries the cluster has of the vectors'
// sessions, those not imported yet counting none.
func storedSoFar(t *testing.T, vs []vector, conn []string) int {
	t.Helper()
	n := 0
	for _, v := range vs {
		r := runCLI(t, "", withFlags(conn, "show", v.sid, "--json", "--consistency", "strong")...)
		if r.code != 0 {
			continue
		}
		var d struct{ EntryCount int }
		if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
			t.Fatal(err)
		}
		n += d.EntryCount
	}
	return n
}
