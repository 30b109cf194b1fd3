package pisync

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestSymlinkedFileNotSynced: a *.jsonl link in a sessions directory is
// not followed — its target, outside (any file the user can read), was
// uploaded — and is told once, naming it; a link to a file inside leaves
// that file synced once, under its own name.
func TestSymlinkedFileNotSynced(t *testing.T) {
	f := newFixture(t)
	outside := filepath.Join(t.TempDir(), "secret.jsonl")
	secret := testutil.SessionID(t)
	write(t, outside, firstFlush(secret))
	inside := filepath.Join(f.dir, "--home-dev-app--", "s.jsonl")
	write(t, inside, firstFlush(testutil.SessionID(t)))
	out, in := filepath.Join(f.dir, "out.jsonl"), filepath.Join(f.dir, "in.jsonl")
	if err := os.Symlink(outside, out); err != nil {
		t.Skip(err)
	}
	if err := os.Symlink(inside, in); err != nil {
		t.Fatal(err)
	}
	s, err := New(f.options())
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Once(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if sum := s.Summary(); sum.Imported != 1 || sum.Files != 1 {
		t.Errorf("summary %+v, want the one real file imported", sum)
	}
	if _, err := f.c.Do(context.Background(), wire.ExportRequest{SessionID: secret}); !apiclient.IsStatus(err, 404) {
		t.Errorf("the link's target was uploaded: export: %v", err)
	}
	warn := f.warn.String()
	for _, p := range []string{out, in} {
		if n := strings.Count(warn, p+": a symbolic link: not synced"); n != 1 {
			t.Errorf("%s told %d times:\n%s", p, n, warn)
		}
	}
}
