package tree

import (
	"errors"
	"strings"
	"testing"
)

func nest(n int, open, close string) string {
	return strings.Repeat(open, n) + strings.Repeat(close, n)
}

func TestCheckDepth(t *testing.T) {
	at := nest(MaxDepth, "[", "]")
	cases := []struct {
		name string
		in   string
		off  int // -1: accepted
	}{
		{"empty", "", -1},
		{"scalar", `"x"`, -1},
		{"at the limit", at, -1},
		{"objects at the limit", strings.Repeat(`{"a":`, MaxDepth) + "1" + strings.Repeat("}", MaxDepth), -1},
		{"over", nest(MaxDepth+1, "[", "]"), MaxDepth},
		{"over, objects", strings.Repeat(`{"a":`, MaxDepth+1) + "1", 5 * MaxDepth},
		{"siblings do not add up", strings.Repeat("[[]],", 3*MaxDepth) + "1", -1},
		{"unclosed", strings.Repeat("[", 2000000), MaxDepth},
		{"brackets in a string", `{"a":"` + strings.Repeat("[{", 2*MaxDepth) + `"}`, -1},
		{"escaped quotes", `["\"` + strings.Repeat("[", 2*MaxDepth) + `\""]`, -1},
		{"escaped backslash ends the string", `["\\"` + strings.Repeat("[", MaxDepth) + `]`, 5 + MaxDepth - 1},
		{"three backslashes and a quote", `["\\\"[[[[[[` + `"` + strings.Repeat("[", MaxDepth-1) + `]`, -1},
		{"unterminated string", `[["` + strings.Repeat("[", 2*MaxDepth), -1},
		{"closers do not go below zero", strings.Repeat("]", 100) + nest(MaxDepth+1, "[", "]"), 100 + MaxDepth},
		{"key with brackets", `{"[[[\"{{{":` + at + `}`, 12 + MaxDepth - 1},
	}
	for _, c := range cases {
		err := CheckDepth([]byte(c.in))
		var de *DepthError
		switch {
		case c.off < 0 && err != nil:
			t.Errorf("%s: %v, want nil", c.name, err)
		case c.off >= 0 && !errors.As(err, &de):
			t.Errorf("%s: %v, want a *DepthError", c.name, err)
		case c.off >= 0 && de.Offset != c.off:
			t.Errorf("%s: offset %d, want %d (%v)", c.name, de.Offset, c.off, err)
		case c.off >= 0 && c.in[de.Offset] != '[' && c.in[de.Offset] != '{':
			t.Errorf("%s: offset %d is %q, not an opening bracket", c.name, de.Offset, c.in[de.Offset])
		}
	}
	if err := CheckDepth([]byte(nest(MaxDepth+1, "[", "]"))); err == nil || err.Error() != "JSON nested deeper than 512 levels at byte offset 512" {
		t.Errorf("message: %v", err)
	}
}

func TestCheckDepthAllocatesNothing(t *testing.T) {
	in := []byte(`{"a":"x\"y","b":` + nest(MaxDepth-1, "[", "]") + `}`)
	if n := testing.AllocsPerRun(100, func() { _ = CheckDepth(in) }); n != 0 {
		t.Errorf("%v allocations per check", n)
	}
}

// TestLineDepth holds the line scanner (ParseEntry, ParseHeader, Read) to
// the same limit as CheckDepth, at the same offset.
func TestLineDepth(t *testing.T) {
	line := func(depth int) string {
		// The entry object is level 1, "data" level 2.
		return `{"type":"custom","customType":"x","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","data":` + nest(depth-1, "[", "]") + `}`
	}
	if _, err := ParseEntry([]byte(line(MaxDepth))); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	over := line(MaxDepth + 1)
	_, err := ParseEntry([]byte(over))
	var de *DepthError
	if !errors.As(err, &de) {
		t.Fatalf("over the limit: %v, want a *DepthError", err)
	}
	if want := CheckDepth([]byte(over)).(*DepthError); de.Offset != want.Offset {
		t.Errorf("offset %d, CheckDepth's %d", de.Offset, want.Offset)
	}
	msg := `{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":` + nest(MaxDepth-1, "[", "]") + `}}`
	if _, err := ParseEntry([]byte(msg)); !errors.As(err, &de) {
		t.Errorf("over the limit inside message: %v", err)
	}
	if _, err := ParseHeader([]byte(`{"type":"session","id":"s","x":[` + strings.Repeat("{},", 2*MaxDepth) + `{}]}`)); err != nil {
		t.Errorf("a header of siblings: %v", err)
	}

	// Read refuses the file at the line, strict or not: skipping it would
	// drop what pi keeps.
	for _, strict := range []bool{false, true} {
		for _, bad := range []string{over, nest(MaxDepth+1, "[", "]"), strings.Repeat("[", 2000000)} {
			_, err := Read([]byte(hdr+"\n"+line(3)+"\n"+bad+"\n"), ReadOptions{Strict: strict, Validate: true})
			var le *LineError
			if !errors.As(err, &le) || le.Line != 3 || !strings.Contains(le.Reason, "nested deeper than 512 levels") {
				t.Errorf("strict %v, %d bytes: %v", strict, len(bad), err)
			}
		}
	}
	f, err := Read([]byte(hdr+"\n"+line(MaxDepth)+"\n"), ReadOptions{Strict: true, Validate: true})
	if err != nil || f.Len() != 1 {
		t.Fatalf("a line at the limit: %v", err)
	}
	// Valid stays unbounded: the tree JSON of a long chain nests deeper.
	if !Valid([]byte(nest(MaxDepth+1, "[", "]"))) {
		t.Error("Valid refuses deep JSON")
	}
}

// BenchmarkCheckDepth: the attack is refused after its first levels; a
// body of ordinary entries (mostly string bytes) is crossed at memory speed.
func BenchmarkCheckDepth(b *testing.B) {
	attack := []byte(`{"entries":[],"x":` + strings.Repeat("[", 2000000) + "}")
	entry := `{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"assistant","content":[{"type":"text","text":"` +
		strings.Repeat(`some \"quoted\" text with [brackets] and {braces}\n`, 40) + `"},{"type":"toolCall","id":"t1","name":"edit","arguments":{"path":"/a","edits":[{"old":"x","new":"y"}]}}],"provider":"p","model":"m","timestamp":2}}`
	body := []byte(`{"entries":[` + strings.Repeat(entry+",", 1<<20/len(entry)) + entry + `]}`)
	for _, c := range []struct {
		name string
		in   []byte
	}{{"attack", attack}, {"entries1MiB", body}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.in)))
			b.ReportAllocs()
			for b.Loop() {
				_ = CheckDepth(c.in)
			}
		})
	}
}
