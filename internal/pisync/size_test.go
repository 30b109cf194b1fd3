package pisync

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/testutil"
)

// TestMaxFileSize: a 2 GiB sparse .jsonl (no disk used) is left out with
// one warning naming it, at every pass after the first too, and never
// read; the session next to it is synced.
func TestMaxFileSize(t *testing.T) {
	f := newFixture(t)
	big := filepath.Join(f.dir, "big.jsonl")
	write(t, big, headerLine(testutil.SessionID(t))+"\n")
	if err := os.Truncate(big, 2<<30); err != nil {
		t.Fatal(err)
	}
	sid := testutil.SessionID(t)
	small := filepath.Join(f.dir, "small.jsonl")
	write(t, small, firstFlush(sid))
	s, err := New(f.options())
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Once(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if sum := s.Summary(); sum.Imported != 1 {
		t.Fatalf("summary %+v", sum)
	}
	if got := f.export(sid); got != firstFlush(sid) {
		t.Errorf("export of the small file:\n%s", got)
	}
	want := big + ": larger than --max-file-size 1GiB: not synced"
	if n := strings.Count(f.warn.String(), want); n != 1 {
		t.Errorf("warning %q told %d times, want once; warnings:\n%s", want, n, f.warn.String())
	}
	if r := s.read.Load(); r > int64(len(firstFlush(sid))) {
		t.Errorf("read %d bytes: more than the small file", r)
	}
}

// TestGrowingFileReadFromOffset: a line appended to a file of 2 MiB is
// read from the synced offset, with at most the hash's two windows of the
// prefix before it (to check it, then to hash the new prefix), by the
// running Syncer and by a restarted one, in chunks however long its lines;
// what is stored is the file; and a rewritten header is still noticed.
func TestGrowingFileReadFromOffset(t *testing.T) {
	f := newFixture(t)
	sid := testutil.SessionID(t)
	path := filepath.Join(f.dir, "s.jsonl")
	var b strings.Builder
	b.WriteString(firstFlush(sid))
	parent, pad := "a0000002", strings.Repeat("x", 1000)
	for k := 3; b.Len() < 2<<20; k++ {
		id := fmt.Sprintf("a%07d", k)
		b.WriteString(entryLine(id, parent, "user", pad) + "\n")
		parent = id
	}
	write(t, path, b.String())
	s, err := New(f.options())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	if sum := s.Summary(); sum.Imported != 1 {
		t.Fatalf("first pass: %+v", sum)
	}
	f.applied(sid)
	bound := func(added int) int64 { return 4*hashWindow + int64(added) }
	for k, next := range []string{"b0000001", "b0000002"} {
		l := entryLine(next, parent, "user", "more") + "\n"
		parent = next
		write(t, path, l)
		if k == 1 {
			// A restart: the state file, and a comparison with the cluster
			// (its export), still no read of the prefix.
			if s, err = New(f.options()); err != nil {
				t.Fatal(err)
			}
		}
		before, appended := s.read.Load(), s.Summary().Appended
		if err := s.Once(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := s.Summary().Appended - appended; got != 1 {
			t.Fatalf("line %s: %d appended", next, got)
		}
		if r := s.read.Load() - before; r > bound(len(l)) {
			t.Errorf("line %s (%d bytes) after %d synced: read %d bytes, want at most %d", next, len(l), b.Len(), r, bound(len(l)))
		}
	}
	// Lines longer than a chunk, many chunks: read whole all the same.
	defer func(c int64) { readChunk = c }(readChunk)
	readChunk = 1000
	var more strings.Builder
	for k := range 50 {
		id := fmt.Sprintf("c%07d", k)
		more.WriteString(entryLine(id, parent, "user", pad) + "\n")
		parent = id
	}
	write(t, path, more.String())
	appended := s.Summary().Appended
	if err := s.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := s.Summary().Appended - appended; got != 50 {
		t.Fatalf("50 lines over chunks of %d bytes: %d appended", readChunk, got)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.export(sid); got != string(data) {
		t.Errorf("export differs from the file (%d bytes, file %d)", len(got), len(data))
	}
	// The windows still see a rewritten header (pi's recovery, a migration).
	rewritten := strings.Replace(string(data), "/home/dev/app", "/home/dev/other", 1)
	if err := os.WriteFile(path, []byte(rewritten), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.warn.String(), path+": rewritten since it was synced") {
		t.Errorf("a rewritten header was not noticed: %s", f.warn.String())
	}
}
