package tree

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

const hdr = `{"type":"session","version":3,"id":"01a22ba6-d94f-735d-ac17-131011d6d05b","timestamp":"2026-11-30T08:51:24.626Z","cwd":"/p"}`

func line(id, parent, ts string, extra string) string {
	p := `null`
	if parent != "" {
		p = `"` + parent + `"`
	}
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":%q,"message":{"role":"user","content":"x","timestamp":1}%s}`, id, p, ts, extra)
}

func TestReadLenientSkipsAndReports(t *testing.T) {
	in := strings.Join([]string{
		hdr,
		"",
		"{not json",
		"   ",
		line("a", "", "2026-01-01T00:00:00.000Z", ""),
		"[1,2]",
		`{"type":"message","parentId":null}`,
		hdr,
		`{"type":"session","version":3,"id":"other"}`,
		line("b", "a", "2026-01-01T00:00:00.000Z", ""),
	}, "\n") + "\n"
	f, err := Read([]byte(in), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f.Len() != 2 || f.LeafID() != "b" {
		t.Fatalf("entries %d leaf %q", f.Len(), f.LeafID())
	}
	if f.DuplicateHeaders != 1 {
		t.Errorf("duplicate headers %d", f.DuplicateHeaders)
	}
	var lines []int
	for _, s := range f.Skipped {
		lines = append(lines, s.Line)
	}
	if fmt.Sprint(lines) != "[3 6 7 9]" {
		t.Errorf("skipped lines %v (%v)", lines, f.Skipped)
	}
	if got := string(f.AppendJSONL(nil)); got != hdr+"\n"+line("a", "", "2026-01-01T00:00:00.000Z", "")+"\n"+line("b", "a", "2026-01-01T00:00:00.000Z", "")+"\n" {
		t.Errorf("export:\n%s", got)
	}
}

func TestReadStrictNamesTheLine(t *testing.T) {
	cases := []struct {
		in, want string
	}{
		{hdr + "\n{bad", "line 2: invalid JSON at byte 1"},
		{hdr + "\n" + line("a", "", "", "") + "\n" + line("a", "", "", ""), `line 3: duplicate entry id "a" (first on line 2)`},
		{hdr + "\n\n" + `{"type":"message"}`, `line 3: entry has no string "id"`},
		{hdr + "\n" + `{"type":"session","id":"x"}`, "line 2: another session header"},
		{hdr + "\n" + `5`, "line 2: not a JSON object"},
		{line("a", "", "", ""), "line 1: first line is not a session header"},
		{"\n\n" + `{"type":"session","version":4,"id":"x"}`, "line 3: unsupported session version 4"},
		{`{"type":"session","version":"3","id":"x"}`, `line 1: session header "version" is "3"`},
		{"", "line 1: empty file"},
	}
	for _, c := range cases {
		_, err := Read([]byte(c.in), ReadOptions{Strict: true})
		var le *LineError
		if !errors.As(err, &le) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%.40q: got %v, want prefix %q", c.in, err, c.want)
		}
	}
}

func TestReadLongLinesAndLineSeparators(t *testing.T) {
	big := strings.Repeat("é\u2028x", 40000) // > 64 KiB, raw U+2028 inside a string
	in := hdr + "\r\n" + line("a", "", "2026-01-01T00:00:00.000Z", `,"big":"`+big+`"`) + "\n"
	f, err := Read([]byte(in), ReadOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if f.Len() != 1 || len(f.Entry(0).Raw) < 64*1024 {
		t.Fatalf("got %d entries", f.Len())
	}
	if string(f.AppendJSONL(nil)) != in { // "\r" is JSON whitespace and stays in the line
		t.Error("export not byte-identical")
	}
}

func TestReadTrimsLikeJavaScript(t *testing.T) {
	// content.trim() strips a BOM and U+3000 around the file, not U+0085.
	in := "\ufeff\u3000\n" + hdr + "\n" + line("a", "", "", "") + "\n\u2029"
	f, err := Read([]byte(in), ReadOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if f.HeaderLine != 2 || f.Len() != 1 {
		t.Fatalf("header line %d, entries %d", f.HeaderLine, f.Len())
	}
	if _, err := Read([]byte("\u0085"+hdr), ReadOptions{Strict: true}); err == nil {
		t.Error("U+0085 before the header must not be trimmed")
	}
}

func TestDeepChainNoRecursion(t *testing.T) {
	const n = 100000
	var b strings.Builder
	b.WriteString(hdr + "\n")
	for i := range n {
		parent := ""
		if i > 0 {
			parent = fmt.Sprintf("%08x", i-1)
		}
		b.WriteString(line(fmt.Sprintf("%08x", i), parent, "2026-01-01T00:00:00.000Z", ""))
		b.WriteByte('\n')
	}
	f, err := Read([]byte(b.String()), ReadOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if p := f.Path(f.LeafID()); len(p) != n || p[0] != "00000000" {
		t.Fatalf("path length %d", len(p))
	}
	nodes := f.Tree()
	if len(nodes) != n || nodes[n-1].Depth != n-1 {
		t.Fatalf("tree nodes %d", len(nodes))
	}
	js := f.AppendTreeJSON(nil, nodes, TreeJSONOptions{})
	if !Valid(js) {
		t.Fatal("tree JSON invalid")
	}
	c := f.ContextAt(n - 1)
	if len(c.Messages) != n {
		t.Fatalf("context messages %d", len(c.Messages))
	}
	// Ids and messages need no escaping here: the hint covers the output,
	// so a buffer of that capacity is never regrown.
	if out := c.AppendJSON(nil, ContextOptions{}); len(out) > c.SizeHint() {
		t.Fatalf("context JSON of %d bytes, size hint %d", len(out), c.SizeHint())
	}
}

func TestMalformedGraphs(t *testing.T) {
	ts := "2026-01-01T00:00:00.000Z"
	in := strings.Join([]string{
		hdr,
		line("a", "b", ts, ""), // cycle a <-> b
		line("b", "a", ts, ""),
		line("s", "s", ts, ""),  // self-parent: a root
		line("o", "zz", ts, ""), // orphan: a root
		line("c", "o", ts, ""),
		line("c", "s", ts, ""), // duplicate id: the last wins
		line("d", "c", ts, ""),
	}, "\n")
	f, err := Read([]byte(in), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(f.Path("a")); got != "[b a]" {
		t.Errorf("cycle path %s", got)
	}
	if got := fmt.Sprint(f.Path("s")); got != "[s]" {
		t.Errorf("self-parent path %s", got)
	}
	if got := fmt.Sprint(f.Path("d")); got != "[s c d]" {
		t.Errorf("duplicate-id path %s", got)
	}
	got := string(f.AppendTreeJSON(nil, f.Tree(), TreeJSONOptions{}))
	want := `[{"id":"s","children":[{"id":"c","children":[{"id":"d","children":[]}]}]},{"id":"o","children":[{"id":"c","children":[]}]}]`
	if got != want {
		t.Errorf("tree\n got %s\nwant %s", got, want)
	}
	probs := Check([]byte(in), ReadOptions{})
	var reasons []string
	for _, p := range probs {
		reasons = append(reasons, fmt.Sprintf("%d:%s", p.Line, strings.Fields(p.Reason)[0]))
	}
	if g := strings.Join(reasons, " "); g != "2:entry 3:entry 4:entry 5:parent 7:duplicate" {
		t.Errorf("check: %s\n%v", g, probs)
	}
}

func TestLateParentResolves(t *testing.T) {
	s := NewSession(NewHeader("id", "", "", ""))
	child, _ := NewModelChange(Meta{ID: "c", ParentID: "p", Timestamp: "2026-01-01T00:00:00.000Z"}, "x", "y")
	s.Append(child)
	if s.Parent(0) != -1 {
		t.Fatal("orphan has a parent")
	}
	parent, _ := NewModelChange(Meta{ID: "p", Timestamp: "2026-01-01T00:00:00.000Z"}, "x", "y")
	s.Append(parent)
	if s.Parent(0) != 1 || fmt.Sprint(s.Path("c")) != "[p c]" {
		t.Fatalf("late parent not resolved: %v", s.Path("c"))
	}
}

func TestChildrenOrderByTimeStable(t *testing.T) {
	s := NewSession(NewHeader("id", "", "", ""))
	add := func(id, parent, ts string) {
		e, err := NewThinkingLevelChange(Meta{ID: id, ParentID: parent, Timestamp: ts}, "off")
		if err != nil {
			t.Fatal(err)
		}
		s.Append(e)
	}
	add("r", "", "2026-01-01T00:00:00.000Z")
	add("c3", "r", "2026-01-01T00:00:03.000Z")
	add("c1", "r", "2026-01-01T00:00:01.000Z")
	add("c1b", "r", "2026-01-01T00:00:01.000Z")
	add("bad", "r", "yesterday") // invalid date: compares equal, stays put
	if got := fmt.Sprint(s.Children("r")); got != "[c1 c1b c3 bad]" && got != "[c1 c1b bad c3]" {
		t.Errorf("children %s", got)
	}
}

func TestLabelsAndName(t *testing.T) {
	s := NewSession(NewHeader("id", "", "", ""))
	ts := "2026-01-01T00:00:00.000Z"
	add := func(e Entry, err error) {
		if err != nil {
			t.Fatal(err)
		}
		s.Append(e)
	}
	str := func(s string) *string { return &s }
	add(NewModelChange(Meta{ID: "a", Timestamp: ts}, "p", "m"))
	add(NewLabel(Meta{ID: "l1", ParentID: "a", Timestamp: ts}, "a", str(" ")))
	add(NewLabel(Meta{ID: "l2", ParentID: "l1", Timestamp: ts}, "zz", str("x")))
	add(NewLabel(Meta{ID: "l3", ParentID: "l2", Timestamp: ts}, "zz", nil))
	add(NewSessionInfo(Meta{ID: "n1", ParentID: "l3", Timestamp: ts}, "  first  "))
	if l, _ := s.Label("a"); l != " " {
		t.Errorf("label %q", l)
	}
	if _, ok := s.Label("zz"); ok {
		t.Error("cleared label still set")
	}
	if n, _ := s.Name(); n != "first" {
		t.Errorf("name %q", n)
	}
	add(NewSessionInfo(Meta{ID: "n2", ParentID: "n1", Timestamp: ts}, "\u3000\ufeff"))
	if n, ok := s.Name(); ok {
		t.Errorf("empty last name must clear, got %q", n)
	}
}
