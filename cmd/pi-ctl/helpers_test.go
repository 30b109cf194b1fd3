package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// result is what one in-process run of pi-ctl produced.
type result struct {
	code           int
	stdout, stderr string
}

// runCLI runs pi-ctl in-process with stdin and an empty environment (so
// $COLUMNS on the developer's machine cannot change the output).
func runCLI(t testing.TB, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errb, func(string) string { return "" })
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// mustRun runs pi-ctl and fails the test unless it exits 0 with nothing on
// stderr.
func mustRun(t testing.TB, args ...string) string {
	t.Helper()
	r := runCLI(t, "", args...)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("pi-ctl %s: exit %d, stderr:\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

// writeFile writes content to name in a fresh temp dir and returns its path.
func writeFile(t testing.TB, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
