package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/conformance"
)

// TestBinary runs the real pi-ctl (built once for the package's tests, see
// builtBinary) end to end, so main's wiring of os.Args, stdio and exit
// codes is covered too.
func TestBinary(t *testing.T) {
	bin := builtBinary(t, "pi-ctl")
	session := filepath.Join(conformance.Dir(t), "pi-v3", "example-auth-salt-debugging", "session.jsonl")
	for _, c := range []struct {
		args         []string
		code         int
		stdout, errs string
	}{
		{[]string{"file", "check", session}, 0, "ok: 11 entries\n", ""},
		{[]string{"file", "tree", session, "--json"}, 0, `[{"id":"3a897473","children":[{"id":"c697d88b"`, ""},
		{[]string{"file", "context", session, "--leaf", "nope"}, 1, "", `unknown leaf "nope"`},
		{[]string{"file", "tree"}, 2, "", "pi-ctl file tree: missing FILE"},
		{[]string{"--help"}, 0, "pi-ctl operates sessionlog", ""},
	} {
		cmd := exec.Command(bin, c.args...)
		cmd.Env = append(os.Environ(), "COLUMNS=")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatalf("pi-ctl %q: %v", c.args, err)
		}
		if code != c.code || !strings.HasPrefix(stdout.String(), c.stdout) || !strings.Contains(stderr.String(), c.errs) {
			t.Errorf("pi-ctl %q: exit %d (want %d)\nstdout %.120q (want prefix %q)\nstderr %q (want %q)",
				c.args, code, c.code, stdout.String(), c.stdout, stderr.String(), c.errs)
		}
	}
}
