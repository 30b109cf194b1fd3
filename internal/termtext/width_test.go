package termtext

import "testing"

// TestCut: a cut line ends in "…" and never takes more than its columns,
// wide and zero-width characters included.
func TestCut(t *testing.T) {
	for _, c := range []struct {
		in   string
		w    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello world", 6, "hello…"},
		{"中文中文", 5, "中文…"},
		{"e\u0301e\u0301e\u0301", 2, "e\u0301…"},
		{"👍👍👍", 4, "👍…"},
		{"anything", 0, "anything"},
	} {
		if got := Cut(c.in, c.w); got != c.want || (c.w > 0 && Width(got) > c.w) {
			t.Errorf("Cut(%q, %d) = %q (%d columns), want %q", c.in, c.w, got, Width(got), c.want)
		}
	}
}
