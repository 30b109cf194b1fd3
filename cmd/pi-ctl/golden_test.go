package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/conformance"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// TestGolden pins the text output of tree, info and context. Regenerate with
// "go test ./cmd/pi-ctl -update" and review the diff before committing.
func TestGolden(t *testing.T) {
	v3 := filepath.Join(conformance.Dir(t), "pi-v3")
	auth := filepath.Join(v3, "example-auth-salt-debugging", "session.jsonl")
	branching := filepath.Join(v3, "p08-branching", "session.jsonl")
	// pi 1.1: system messages, a context edit, usage entries.
	auth11 := filepath.Join(conformance.Dir(t), "pi-v3-1.1", "example-auth-salt-debugging-1.1", "session.jsonl")
	for _, c := range []struct {
		golden string
		args   []string
	}{
		{"tree-auth-salt", []string{"file", "tree", auth}},
		{"info-auth-salt", []string{"file", "info", auth}},
		{"context-auth-salt", []string{"file", "context", auth}},
		{"context-auth-salt-root-cause-llm", []string{"file", "context", auth, "--leaf", "84c91d9d", "--llm"}},
		{"tree-p08-branching", []string{"file", "tree", branching}},
		{"tree-p08-branching-w60", []string{"file", "tree", branching, "--width", "60"}},
		{"info-p08-branching", []string{"file", "info", branching}},
		{"context-p08-branching", []string{"file", "context", branching, "--leaf", "3ef4a429"}},
		{"info-auth-salt-1.1", []string{"file", "info", auth11}},
		{"context-auth-salt-1.1", []string{"file", "context", auth11}},
		{"context-auth-salt-1.1-llm", []string{"file", "context", auth11, "--llm"}},
	} {
		t.Run(c.golden, func(t *testing.T) { checkGolden(t, c.golden, mustRun(t, c.args...)) })
	}
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run 'go test ./cmd/pi-ctl -update' to create it)", err)
	}
	if got == string(want) {
		return
	}
	g, w := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		if i >= len(g) || i >= len(w) || g[i] != w[i] {
			t.Fatalf("%s differs at line %d:\n got: %q\nwant: %q\n(run 'go test ./cmd/pi-ctl -update' if the change is intended)",
				path, i+1, at(g, i), at(w, i))
		}
	}
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "<end>"
}

// TestTreeTextAuthSalt asserts what the golden file must show: the two
// branches under the first question, the label and the leaf.
func TestTreeTextAuthSalt(t *testing.T) {
	auth := filepath.Join(conformance.Dir(t), "pi-v3", "example-auth-salt-debugging", "session.jsonl")
	lines := strings.Split(strings.TrimSuffix(mustRun(t, "file", "tree", auth), "\n"), "\n")
	if len(lines) != 11 {
		t.Fatalf("%d lines, want one per entry (11):\n%s", len(lines), strings.Join(lines, "\n"))
	}
	find := func(id string) (int, string) {
		for i, l := range lines {
			if strings.Contains(l, id+" ") {
				return i, l
			}
		}
		t.Fatalf("no line for %s", id)
		return 0, ""
	}
	q, question := find("c697d88b")
	a, first := find("80a35bff")
	b, second := find("403bedf5")
	if !strings.HasPrefix(question, "• c697d88b user: auth.ts") {
		t.Errorf("the question should be a top-level user line: %q", question)
	}
	if a != q+1 || !strings.HasPrefix(first, "├─ ") || !strings.Contains(first, "→ read(src/auth.ts)") {
		t.Errorf("first branch should follow the question with ├─ and its tool call: %q", first)
	}
	if b <= a || !strings.HasPrefix(second, "└─ ") || !strings.Contains(second, "user: 先帮我看") {
		t.Errorf("second branch should come later with └─: %q", second)
	}
	for _, l := range lines[a+1 : b] {
		if !strings.HasPrefix(l, "│") {
			t.Errorf("lines of the first branch should hang on the gutter: %q", l)
		}
	}
	if _, l := find("84c91d9d"); !strings.Contains(l, "[root_cause_found] assistant:") {
		t.Errorf("label missing on the labelled entry: %q", l)
	}
	if n := strings.Count(strings.Join(lines, "\n"), "← leaf"); n != 1 {
		t.Errorf("%d leaf marks, want 1", n)
	}
	if _, l := find("91f2d527"); !strings.HasSuffix(l, "← leaf") || !strings.Contains(l, "• 91f2d527") {
		t.Errorf("the leaf line should be on the path and marked: %q", l)
	}
	if _, l := find("1935e072"); strings.Contains(l, "•") {
		t.Errorf("the abandoned branch is not on the leaf's path: %q", l)
	}
}
