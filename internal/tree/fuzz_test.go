package tree

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// FuzzRead feeds arbitrary bytes to the JSONL reader in both modes: it must
// never panic or hang, and what it accepts must be self-consistent.
func FuzzRead(f *testing.F) {
	f.Add([]byte(hdr + "\n" + line("a", "", "2026-01-01T00:00:00.000Z", "") + "\n"))
	f.Add([]byte(`{"type":"session","id":"x"}` + "\n" + `{"type":"compaction","firstKeptEntryIndex":0}`))
	f.Add([]byte(`{"type":"session","version":2,"id":"x"}` + "\n" + `{"type":"message","id":"u1","parentId":null,"message":{"role":"hookMessage"}}`))
	f.Add([]byte("\ufeff" + hdr + "\n\u2028\n{\"a\":[[[[\"\\ud83d\"]]]]}"))
	if dir := conformanceDirIfPresent(); dir != "" {
		for _, name := range []string{"pi-v3/p05-compactions/session.jsonl", "pi-v1/v1-edge-malformed-line-index/original.jsonl", "pi-v2/v2-hook-tree/original.jsonl"} {
			if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, strict := range []bool{false, true} {
			file, err := Read(data, ReadOptions{Strict: strict, Rand: bytes.NewReader(make([]byte, 1<<12))})
			if err != nil {
				continue
			}
			checkInvariants(t, file.Session)
			// What we export reads back to the same session.
			again, err := Read(file.AppendJSONL(nil), ReadOptions{})
			if err != nil {
				t.Fatalf("export does not read back: %v", err)
			}
			if again.Len() != file.Len() || again.LeafID() != file.LeafID() {
				t.Fatalf("export reads back as %d entries, leaf %q; had %d, %q", again.Len(), again.LeafID(), file.Len(), file.LeafID())
			}
		}
		_ = Check(data, ReadOptions{})
	})
}

// FuzzTree builds sessions over arbitrary parent graphs (cycles, self-parents,
// duplicate ids, late parents) from a compact encoding: each byte pair is
// (id, parent) drawn from 16 ids, parent 0xf meaning null.
func FuzzTree(f *testing.F) {
	f.Add([]byte{0x0f, 0x10, 0x21, 0x32})
	f.Add([]byte{0x01, 0x10})             // a two-cycle
	f.Add([]byte{0x00, 0x0f, 0x10, 0x01}) // self-parent, duplicate
	f.Fuzz(func(t *testing.T, data []byte) {
		// s is also built compacted halfway (c): appends after a
		// compaction must find and re-point the entries before it.
		s, c := NewSession(NewHeader("s", "", "", "")), NewSession(NewHeader("s", "", "", ""))
		for k, b := range data {
			id, parent := fmt.Sprintf("%x", b>>4), ""
			if b&0xf != 0xf {
				parent = fmt.Sprintf("%x", b&0xf)
			}
			e, err := NewBranchSummary(Meta{ID: id, ParentID: parent, Timestamp: fmt.Sprintf("2026-01-01T00:00:%02d.000Z", (k*7)%60)}, "root", "s", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			s.Append(e)
			c.Append(e)
			if k == len(data)/2 {
				c.Compact()
			}
		}
		checkInvariants(t, s)
		opts := TreeJSONOptions{Type: true, Label: true}
		if a, b := s.AppendTreeJSON(nil, s.Tree(), opts), c.AppendTreeJSON(nil, c.Tree(), opts); !bytes.Equal(a, b) {
			t.Fatalf("compacted tree differs:\n%s\n%s", a, b)
		}
		for i := range s.Len() {
			sc, cc := s.ContextAt(i), c.ContextAt(i)
			a, b := sc.AppendJSON(nil, ContextOptions{}), cc.AppendJSON(nil, ContextOptions{})
			if !bytes.Equal(a, b) {
				t.Fatalf("compacted context at %d differs:\n%s\n%s", i, a, b)
			}
		}
	})
}

// checkInvariants: the tree visits every entry at most once with consistent
// depths, every path ends at the leaf without repeats, and every context builds.
func checkInvariants(t *testing.T, s *Session) {
	t.Helper()
	seen := make(map[int]bool)
	var depthStack []int
	for _, n := range s.Tree() {
		if seen[n.Index] {
			t.Fatalf("entry %d twice in the tree", n.Index)
		}
		seen[n.Index] = true
		if n.Depth > len(depthStack) {
			t.Fatalf("depth jumps to %d", n.Depth)
		}
		depthStack = append(depthStack[:n.Depth], n.Index)
		if n.Depth > 0 && s.Parent(n.Index) != depthStack[n.Depth-1] {
			t.Fatalf("entry %d under %d, parent is %d", n.Index, depthStack[n.Depth-1], s.Parent(n.Index))
		}
	}
	if !Valid(s.AppendTreeJSON(nil, s.Tree(), TreeJSONOptions{Type: true, Label: true})) {
		t.Fatal("tree JSON invalid")
	}
	for i := range s.Len() {
		p := s.PathIndices(i)
		if len(p) == 0 || int(p[len(p)-1]) != i {
			t.Fatalf("path of %d does not end at it: %v", i, p)
		}
		dup := make(map[int32]bool)
		for _, j := range p {
			if dup[j] {
				t.Fatalf("path of %d repeats %d", i, j)
			}
			dup[j] = true
		}
		if i > 64 && i != s.Len()-1 {
			continue // contexts are O(depth): sample them on big inputs
		}
		c := s.ContextAt(i)
		for _, js := range [][]byte{c.AppendJSON(nil, ContextOptions{}), c.AppendJSON(nil, ContextOptions{LLM: true})} {
			if !Valid(js) {
				t.Fatalf("context JSON of %d invalid: %.200s", i, js)
			}
		}
	}
}

// conformanceDirIfPresent is conformanceDir for seeding: no failure when absent.
func conformanceDirIfPresent() string {
	for _, d := range []string{os.Getenv("PI_CONFORMANCE_DIR"), "../../../shared/conformance", "../../testdata/conformance"} {
		if d == "" {
			continue
		}
		if st, err := os.Stat(filepath.Join(d, "pi-v3")); err == nil && st.IsDir() {
			return d
		}
	}
	return ""
}

// conformanceDir is conformance.Dir for this package's internal tests
// (which cannot import internal/conformance: it imports tree).
func conformanceDir(t testing.TB) string {
	t.Helper()
	d := conformanceDirIfPresent()
	if d == "" {
		t.Fatal("conformance vectors not found (../shared/conformance or testdata/conformance)")
	}
	return d
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
