package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/conformance"
	"github.com/pifleet/sessionlog/internal/termtext"
)

// TestTreeWidth checks that every line fits the width, from --width and
// from $COLUMNS, and that 0 means no limit.
func TestTreeWidth(t *testing.T) {
	wide := filepath.Join(conformance.Dir(t), "pi-v3", "p12-wide", "session.jsonl")
	longest := func(out string) int {
		n := 0
		for _, l := range strings.Split(out, "\n") {
			n = max(n, termtext.Width(l))
		}
		return n
	}
	if n := longest(mustRun(t, "file", "tree", wide)); n > 100 {
		t.Errorf("default width: a line of %d columns", n)
	}
	if n := longest(mustRun(t, "file", "tree", wide, "--width", "50")); n > 50 {
		t.Errorf("--width 50: a line of %d columns", n)
	}
	if n := longest(mustRun(t, "file", "tree", wide, "--width", "0")); n <= 100 {
		t.Errorf("--width 0 should not cut, longest line %d columns", n)
	}
	var out bytes.Buffer
	columns := func(k string) string {
		if k == "COLUMNS" {
			return "70"
		}
		return ""
	}
	if code := run(context.Background(), []string{"file", "tree", wide}, nil, &out, &out, columns); code != 0 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	if n := longest(out.String()); n > 70 || n < 65 {
		t.Errorf("$COLUMNS=70: longest line %d columns", n)
	}
}

// deepChain is a session of n entries, each the child of the previous.
func deepChain(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"session","version":3,"id":"01a22ba6-0000-7000-8000-000000000001","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}` + "\n")
	parent := "null"
	for i := range n {
		id := fmt.Sprintf("%08x", i+1)
		fmt.Fprintf(&b, `{"type":"message","id":"%s","parentId":%s,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"step %d","timestamp":1}}`+"\n", id, parent, i)
		parent = `"` + id + `"`
	}
	return b.String()
}

// TestDeepChain draws, prints and walks a 100,000-entry chain: nothing may
// recurse, and a chain stays at the left margin.
func TestDeepChain(t *testing.T) {
	const n = 100_000
	path := writeFile(t, "deep.jsonl", deepChain(n))
	out := mustRun(t, "file", "tree", path)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("%d lines, want %d", len(lines), n)
	}
	for _, k := range []int{0, n / 2, n - 1} {
		if want := fmt.Sprintf("• %08x user: step %d", k+1, k); !strings.HasPrefix(lines[k], want) {
			t.Errorf("line %d = %q, want prefix %q", k+1, lines[k], want)
		}
	}
	if !strings.HasSuffix(lines[n-1], "← leaf") {
		t.Errorf("last line %q is not marked as the leaf", lines[n-1])
	}
	if js := mustRun(t, "file", "tree", "--json", path); strings.Count(js, `"children":[`) != n {
		t.Errorf("tree --json does not hold %d nodes", n)
	}
	info := conformance.MustValue(t, []byte(mustRun(t, "file", "info", "--json", path)))
	if d, _ := conformance.Field(info, "depth"); d.Num != n {
		t.Errorf("info depth %v, want %d", d.Num, n)
	}
	ctx := conformance.MustValue(t, []byte(mustRun(t, "file", "context", "--json", path)))
	if p, _ := conformance.Field(ctx, "path"); len(p.Arr) != n {
		t.Errorf("context path of %d entries, want %d", len(p.Arr), n)
	}
}

// TestCombTree draws a tree that branches at every entry (each entry has a
// leaf child and a child that goes on): pi's layout indents at every
// level, so the drawing must elide the left side to stay within the width.
func TestCombTree(t *testing.T) {
	const depth = 2000
	var b strings.Builder
	b.WriteString(`{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}` + "\n")
	parent := "null"
	for i := range depth {
		spine, leaf := fmt.Sprintf("s%07d", i), fmt.Sprintf("l%07d", i)
		for _, id := range []string{leaf, spine} {
			fmt.Fprintf(&b, `{"type":"custom","id":"%s","parentId":%s,"timestamp":"2026-01-01T00:00:00.000Z","customType":"c"}`+"\n", id, parent)
		}
		parent = `"` + spine + `"`
	}
	out := mustRun(t, "file", "tree", writeFile(t, "comb.jsonl", b.String()), "--width", "80")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2*depth {
		t.Fatalf("%d lines, want %d", len(lines), 2*depth)
	}
	for i, l := range lines {
		if w := termtext.Width(l); w > 80 {
			t.Fatalf("line %d is %d columns wide: %q", i+1, w, l)
		}
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "⋯") || !strings.HasSuffix(last, "← leaf") {
		t.Errorf("deepest line should be elided on the left and be the leaf: %q", last)
	}
}
