package conformance

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// CheckLeaf compares a leaf id ("" for null) with expected.json's leafId.
func CheckLeaf(t *testing.T, leaf string, exp tree.Value) {
	t.Helper()
	want, _ := Field(exp, "leafId")
	got := tree.Value{Kind: tree.KindString, Str: leaf}
	if leaf == "" {
		got = tree.Value{}
	}
	if d := Diff("leafId", got, want); d != "" {
		t.Error(d)
	}
}

// CheckSession compares sessionId, version, name, labels, tree and entryCount.
func CheckSession(t *testing.T, s *tree.Session, exp tree.Value) {
	t.Helper()
	if want, ok := Field(exp, "sessionId"); ok && want.Str != s.Header.ID {
		t.Errorf("sessionId %q, want %q", s.Header.ID, want.Str)
	}
	if want, ok := Field(exp, "version"); ok && want.Num != float64(s.Header.Version) {
		t.Errorf("version %d, want %v", s.Header.Version, want.Num)
	}
	if want, ok := Field(exp, "entryCount"); ok && want.Num != float64(s.Len()) {
		t.Errorf("entryCount %d, want %v", s.Len(), want.Num)
	}
	wantName, _ := Field(exp, "name")
	gotName := tree.Value{}
	if n, ok := s.Name(); ok {
		gotName = tree.Value{Kind: tree.KindString, Str: n}
	}
	if d := Diff("name", gotName, wantName); d != "" {
		t.Error(d)
	}
	if want, ok := Field(exp, "labels"); ok {
		ls := s.Labels()
		o := []byte{'{'}
		for k, id := range sortedKeys(ls) {
			if k > 0 {
				o = append(o, ',')
			}
			o = jsjson.AppendString(o, id)
			o = append(o, ':')
			o = jsjson.AppendString(o, ls[id])
		}
		CheckJSON(t, "labels", append(o, '}'), want)
	}
	if want, ok := Field(exp, "tree"); ok {
		CheckJSON(t, "tree", s.AppendTreeJSON(nil, s.Tree(), tree.TreeJSONOptions{}), want)
	}
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// CheckContext builds the context for want.leafId and compares every field
// the vector lists. withIDs is false for migrated v1 files (fresh ids).
func CheckContext(t *testing.T, s *tree.Session, want tree.Value, withIDs bool) tree.Context {
	t.Helper()
	leaf, _ := Field(want, "leafId")
	var c tree.Context
	switch {
	case !withIDs:
		i, _ := s.Index(s.LeafID())
		c = s.ContextAt(i)
	case leaf.Kind == tree.KindNull:
		c = s.ContextAt(-1)
	default:
		i, ok := s.Index(leaf.Str)
		if !ok {
			t.Errorf("context leaf %q not in session", leaf.Str)
			return c
		}
		c = s.ContextAt(i)
	}
	name := fmt.Sprintf("context[%s]", leaf.Str)
	got := MustValue(t, c.AppendJSON(nil, tree.ContextOptions{}))
	gotLLM := MustValue(t, c.AppendJSON(nil, tree.ContextOptions{LLM: true}))
	for _, m := range want.Obj {
		var d string
		switch m.Key {
		case "leafId", "path":
			if withIDs {
				g, _ := Field(got, m.Key)
				d = Diff(name+"."+m.Key, g, m.Val)
			}
		case "pathLength":
			if float64(len(c.Path)) != m.Val.Num {
				d = fmt.Sprintf("%s.pathLength: got %d, want %v", name, len(c.Path), m.Val.Num)
			}
		case "thinkingLevel", "model", "messages":
			g, ok := Field(got, m.Key)
			if !ok {
				d = fmt.Sprintf("%s: no %s", name, m.Key)
			} else {
				d = Diff(name+"."+m.Key, g, m.Val)
			}
		case "llmMessages":
			g, _ := Field(gotLLM, "messages")
			d = Diff(name+".llmMessages", g, m.Val)
		default:
			d = fmt.Sprintf("%s: unknown expected field %q", name, m.Key)
		}
		if d != "" {
			t.Error(d)
		}
	}
	return c
}

// MapIDs renames our fresh v1 ids to pi's (entry k to entry k) so the rest of
// the migrated file can be compared byte for byte.
func MapIDs(t *testing.T, s *tree.Session, piFile []byte, ours string) string {
	t.Helper()
	pf, err := tree.Read(piFile, tree.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pf.Len() != s.Len() {
		t.Fatalf("pi's migrated file has %d entries, ours %d", pf.Len(), s.Len())
	}
	var pairs []string
	for i := range s.Len() {
		pairs = append(pairs, `"`+s.Entry(i).ID+`"`, `"`+pf.Entry(i).ID+`"`)
	}
	return strings.NewReplacer(pairs...).Replace(ours)
}
