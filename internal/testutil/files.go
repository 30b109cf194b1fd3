package testutil

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FilesHolding lists the files under dirs that hold any of needles, each
// as "<dir's base>/<path in dir> holds <needle>": what the erasure and
// encryption tests search data directories with. A file removed while it
// walks (a snapshot replaced, a segment merged) is skipped.
func FilesHolding(tb testing.TB, dirs []string, needles ...string) []string {
	tb.Helper()
	var found []string
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			if d.IsDir() {
				return nil
			}
			b, err := os.ReadFile(p)
			if os.IsNotExist(err) {
				return nil
			}
			if err != nil {
				return err
			}
			for _, n := range needles {
				if bytes.Contains(b, []byte(n)) {
					rel, _ := filepath.Rel(filepath.Dir(dir), p)
					found = append(found, rel+" holds "+n)
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	return found
}

// WaitFiles polls cond, which reads files (FilesHolding over data dirs),
// once a second — WaitFor's 100 ms would read them ten times as often,
// load the tests beside it feel — until it returns nil or timeout (scaled)
// passes, then fails tb with cond's last error.
func WaitFiles(tb testing.TB, timeout time.Duration, cond func() error) {
	tb.Helper()
	deadline := time.Now().Add(Scale(timeout))
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("not within %v: %v", Scale(timeout), err)
		}
		<-tick.C
	}
}

// WriteKeyFile writes an encryption key file into dir as pi-ctl
// gen-secrets does (64 hex digits, mode 0600) and returns its path.
func WriteKeyFile(tb testing.TB, dir, name string) string {
	tb.Helper()
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(hex.EncodeToString(b)+"\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}
