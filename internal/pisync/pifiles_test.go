package pisync

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/conformance"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// TestSyncPiFilesGrowing syncs 0.73.1 fork files and pi 1.1.0 files while
// they grow, with a new Syncer on the saved state for every pass (a
// restarted pi-ctl), the files growing by a few pieces between passes.
// Every line pi wrote must end up in the cluster byte for byte (less
// what pi itself skips), none refused, and a checkout must write each
// file back.
func TestSyncPiFilesGrowing(t *testing.T) {
	files := conformance.PiFiles(t)
	f := newFixture(t)
	paths := make([]string, len(files))
	for k, pf := range files {
		paths[k] = filepath.Join(f.dir, strings.ReplaceAll(pf.Name, "/", "_")+".jsonl")
		if pf.Start != nil {
			if err := os.WriteFile(paths[k], pf.Start, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	rng := rand.New(rand.NewPCG(34, 34)) // fixed: a failure replays
	var total Summary
	next := make([]int, len(files))
	for growing := true; growing; {
		growing = false
		for k, pf := range files {
			n := min(len(pf.Pieces)-next[k], 1+rng.IntN(3))
			for _, p := range pf.Pieces[next[k] : next[k]+n] {
				write(t, paths[k], string(p))
			}
			next[k] += n
			growing = growing || next[k] < len(pf.Pieces)
		}
		s := f.once()
		total.Refused += s.Refused
		total.Conflicts += s.Conflicts
		total.Errors += s.Errors
	}
	if total.Refused+total.Conflicts+total.Errors != 0 {
		t.Errorf("summed over the passes: %d refused, %d not merged, %d errors; want none", total.Refused, total.Conflicts, total.Errors)
	}
	if _, err := os.Stat(DeadLetterPath(f.state)); !os.IsNotExist(err) {
		t.Errorf("a dead-letter file: %v\n%s", err, testutil.ReadFile(t, DeadLetterPath(f.state)))
	}
	out := t.TempDir()
	for _, pf := range files {
		want := conformance.ExpectedExport(t, pf.Data)
		if got := f.export(pf.SID); got != want {
			t.Errorf("%s: the cluster's session (%d bytes) is not the file less what pi skips (%d bytes)", pf.Name, len(got), len(want))
			continue
		}
		path, err := Checkout(context.Background(), f.c, pf.SID, out)
		if err != nil {
			t.Errorf("%s: checkout: %v", pf.Name, err)
			continue
		}
		// want is the file itself but for p11's damaged lines.
		if got := testutil.ReadFile(t, path); got != want {
			t.Errorf("%s: checkout wrote %d bytes, want %d", pf.Name, len(got), len(want))
		}
	}
}

// TestRefusedPiFiles: the files pi 1.1.0 refuses to open (no valid header
// first) are told by name and left as they are; the zero-byte file pi
// accepts waits, and once pi has written its header there (at once, as pi
// 1.1 does) it is a session of no entries, whose entries follow.
func TestRefusedPiFiles(t *testing.T) {
	dir := filepath.Join(conformance.Dir(t), "pi-v3-1.1", "p13-refused-files")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no pi 1.1.0 vectors beside the repository: %v", err)
	}
	var exp struct {
		Refused []struct {
			File      string  `json:"file"`
			OpenError *string `json:"openError"`
		} `json:"refused"`
	}
	if err := json.Unmarshal(conformance.MustRead(t, filepath.Join(dir, "expected.json")), &exp); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	refused, accepted := 0, ""
	for _, r := range exp.Refused {
		write(t, filepath.Join(f.dir, r.File), string(conformance.MustRead(t, filepath.Join(dir, r.File))))
		if r.OpenError != nil {
			refused++
		} else {
			accepted = r.File
		}
	}
	if refused != 4 || accepted == "" {
		t.Fatalf("%d refused files and accepted %q in %s", refused, accepted, dir)
	}
	s := f.once()
	if s.Errors != refused || s.Imported != 0 {
		t.Errorf("summary %+v: want %d files not readable as pi sessions, none imported", s, refused)
	}
	for _, r := range exp.Refused {
		if got, want := testutil.ReadFile(t, filepath.Join(f.dir, r.File)), string(conformance.MustRead(t, filepath.Join(dir, r.File))); got != want {
			t.Errorf("%s: changed by the sync", r.File)
		}
		if told := strings.Contains(f.warn.String(), filepath.Join(f.dir, r.File)+":"); told != (r.OpenError != nil) {
			t.Errorf("%s: told %v, pi refuses it: %v\n%s", r.File, told, r.OpenError != nil, f.warn.String())
		}
	}
	// Told once: a second pass over the same files counts nothing.
	if s := f.once(); s.Errors+s.Imported != 0 {
		t.Errorf("second pass: %+v", s)
	}
	sid := testutil.SessionID(t)
	empty := filepath.Join(f.dir, accepted)
	write(t, empty, headerLine(sid)+"\n")
	if s := f.once(); s.Imported != 1 {
		t.Fatalf("the header-only file: %+v", s)
	}
	if got := f.export(sid); got != headerLine(sid)+"\n" {
		t.Errorf("header-only session: %q", got)
	}
	write(t, empty, entryLine("a0000001", "", "user", "why?")+"\n")
	if s := f.once(); s.Appended != 1 {
		t.Fatalf("the first entry after the header: %+v", s)
	}
	if got := f.export(sid); got != testutil.ReadFile(t, empty) {
		t.Errorf("the session is not the file:\n%s", got)
	}
}

// TestRewrittenCRLF: a synced file rewritten with a CR before a line's
// newline (pi 1.1 reads such a damaged line as it was) is the same
// session: the entry is known, not refused as other content.
func TestRewrittenCRLF(t *testing.T) {
	f := newFixture(t)
	sid, path := f.synced()
	data := firstFlush(sid)
	lines := strings.SplitAfter(data, "\n")
	lines[1] = strings.TrimSuffix(lines[1], "\n") + "\r\n" // the first entry's
	crlf := strings.Join(lines, "")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	write(t, path, crlf)
	if s := f.once(); s.Refused+s.Conflicts != 0 || s.Known != 2 {
		t.Errorf("after the rewrite: %+v, want the 2 entries known", s)
	}
}
