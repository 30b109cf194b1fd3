package tree_test

import (
	"bytes"
	"github.com/pifleet/sessionlog/internal/conformance"
	"github.com/pifleet/sessionlog/internal/tree"
	"os"
	"path/filepath"
	"testing"
)

// TestForkMatchesPi forks each parent case at the leaf its fork case names
// and compares the result with the start of pi's fork file: the same path
// lines byte for byte, then the re-created labels (ids are random: compared
// without them, each chained from the entry before it). Fork is pi
// 0.73.1's, Fork11 pi 1.1.0's (the path re-chained over dropped labels).
func TestForkMatchesPi(t *testing.T) {
	dir := conformance.Dir(t)
	for version, fork := range map[string]func(*tree.Session, int, tree.Header, tree.IDGen) (*tree.Session, error){"pi-v3": tree.Fork, "pi-v3-1.1": tree.Fork11} {
		if _, err := os.Stat(filepath.Join(dir, version)); err != nil {
			t.Errorf("%s: %v", version, err)
			continue
		}
		t.Run(version, func(t *testing.T) { checkForks(t, dir, version, fork) })
	}
}

func checkForks(t *testing.T, dir, version string, fork func(*tree.Session, int, tree.Header, tree.IDGen) (*tree.Session, error)) {
	checked := 0
	for _, c := range conformance.Cases(t, dir, version) {
		if _, err := os.Stat(filepath.Join(c, "ops.json")); err != nil {
			continue // p13: files pi refuses
		}
		ops := conformance.MustValue(t, conformance.MustRead(t, filepath.Join(c, "ops.json")))
		first := ops.Arr[0]
		if op, _ := conformance.Field(first, "op"); op.Str != "createBranchedSession" {
			continue
		}
		from, _ := conformance.Field(first, "fromCase")
		leafID, _ := conformance.Field(first, "leafId")
		parentData, err := os.ReadFile(filepath.Join(dir, version, from.Str, "session.jsonl"))
		if err != nil {
			t.Fatalf("%s: parent case: %v", c, err)
		}
		parent, err := tree.Read(parentData, tree.ReadOptions{Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		child, err := tree.Read(conformance.MustRead(t, filepath.Join(c, "session.jsonl")), tree.ReadOptions{Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		leaf, ok := parent.Index(leafID.Str)
		if !ok {
			t.Fatalf("%s: leaf %s not in parent", c, leafID.Str)
		}
		forked, err := fork(parent.Session, leaf, child.Header, tree.IDGen{})
		if err != nil {
			t.Fatal(err)
		}
		if forked.Len() > child.Len() {
			t.Fatalf("%s: fork has %d entries, pi's file only %d", c, forked.Len(), child.Len())
		}
		for i := range forked.Len() {
			got, want := forked.Entry(i), child.Entry(i)
			if got.Kind == tree.KindLabel {
				g, _, _, _ := got.LabelChange()
				w, _, _, _ := want.LabelChange()
				gl, _ := forked.Label(g)
				wl, _ := child.Label(w)
				if g != w || gl != wl || got.ParentID != forked.Entry(i-1).ID || want.ParentID != child.Entry(i-1).ID || got.TimestampString() != want.TimestampString() {
					t.Errorf("%s entry %d: label %s=%q (parent %s, %s), pi %s=%q (parent %s, %s)", filepath.Base(c), i, g, gl, got.ParentID, got.TimestampString(), w, wl, want.ParentID, want.TimestampString())
				}
				continue
			}
			if !bytes.Equal(got.Raw, want.Raw) {
				t.Errorf("%s entry %d:\n got %.200s\nwant %.200s", filepath.Base(c), i, got.Raw, want.Raw)
			}
		}
		checked++
	}
	if checked < 3 {
		t.Fatalf("only %d fork cases checked", checked)
	}
}
