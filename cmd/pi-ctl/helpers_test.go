package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/tree"
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

// conformanceDir finds the vectors written by pi's own SessionManager, as
// internal/tree's tests do: $PI_CONFORMANCE_DIR, the shared folder beside
// the repository, or the committed copy in testdata. Missing all of them is
// a failure, never a skip.
func conformanceDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("PI_CONFORMANCE_DIR"); d != "" {
		return d
	}
	root := repoRoot(t)
	for _, d := range []string{
		filepath.Join(root, "..", "shared", "conformance"),
		filepath.Join(root, "testdata", "conformance"),
	} {
		if st, err := os.Stat(filepath.Join(d, "pi-v3")); err == nil && st.IsDir() {
			return d
		}
	}
	t.Fatalf("conformance vectors not found beside the repository (%s/../shared/conformance) nor in testdata/conformance; set PI_CONFORMANCE_DIR", root)
	return ""
}

func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
}

// caseDirs lists <dir>/<version>/<case> folders, sorted.
func caseDirs(t testing.TB, dir, version string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, version))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, filepath.Join(dir, version, e.Name()))
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		t.Fatalf("no %s cases in %s", version, dir)
	}
	return out
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustValue(t testing.TB, raw []byte) tree.Value {
	t.Helper()
	v, err := tree.ParseValue(raw)
	if err != nil {
		t.Fatalf("parse %.80q: %v", raw, err)
	}
	return v
}

func field(v tree.Value, key string) (tree.Value, bool) {
	f, ok := v.Get(key)
	if !ok {
		return tree.Value{}, false
	}
	return *f, true
}

// diff compares JSON values as the conformance README demands: key order
// ignored, array order kept, numbers as numbers, strings code unit for code
// unit. It returns "" when equal, else the first difference and where.
func diff(path string, got, want tree.Value) string {
	if got.Kind != want.Kind {
		return fmt.Sprintf("%s: got %s, want %s", path, short(got), short(want))
	}
	switch got.Kind {
	case tree.KindBool:
		if got.Bool != want.Bool {
			return fmt.Sprintf("%s: got %v, want %v", path, got.Bool, want.Bool)
		}
	case tree.KindNumber:
		if got.Num != want.Num {
			return fmt.Sprintf("%s: got %v, want %v", path, got.Num, want.Num)
		}
	case tree.KindString:
		if got.Str != want.Str {
			return fmt.Sprintf("%s: got %q, want %q", path, got.Str, want.Str)
		}
	case tree.KindArray:
		if len(got.Arr) != len(want.Arr) {
			return fmt.Sprintf("%s: got %d elements, want %d", path, len(got.Arr), len(want.Arr))
		}
		for i := range got.Arr {
			if d := diff(fmt.Sprintf("%s[%d]", path, i), got.Arr[i], want.Arr[i]); d != "" {
				return d
			}
		}
	case tree.KindObject:
		if len(got.Obj) != len(want.Obj) {
			return fmt.Sprintf("%s: got %s, want %s", path, short(got), short(want))
		}
		for _, m := range want.Obj {
			g, ok := got.Get(m.Key)
			if !ok {
				return fmt.Sprintf("%s: missing key %q", path, m.Key)
			}
			if d := diff(path+"."+m.Key, *g, m.Val); d != "" {
				return d
			}
		}
	}
	return ""
}

func short(v tree.Value) string {
	s := string(v.AppendJSON(nil))
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// checkJSON parses our output and compares it with want.
func checkJSON(t *testing.T, what, got string, want tree.Value) {
	t.Helper()
	g, err := tree.ParseValue([]byte(strings.TrimSuffix(got, "\n")))
	if err != nil {
		t.Errorf("%s: our JSON does not parse: %v\n%.300s", what, err, got)
		return
	}
	if d := diff(what, g, want); d != "" {
		t.Error(d)
	}
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
