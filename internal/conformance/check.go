package conformance

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
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
	// pi 1.1's vectors: the header's cwd, and the usage breakdown.
	if want, ok := Field(exp, "cwd"); ok && want.Str != s.Header.Cwd {
		t.Errorf("cwd %q, want %q", s.Header.Cwd, want.Str)
	}
	if want, ok := Field(exp, "usageBreakdown"); ok {
		CheckJSON(t, "usageBreakdown", tree.AppendUsageJSON(nil, s.UsageBreakdown()), want)
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
		case "contextEntryIds":
			if withIDs {
				d = Diff(name+".contextEntryIds", StringsValue(c.EntryIDs), m.Val)
			}
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

// StringsValue is ss as a JSON array value.
func StringsValue(ss []string) tree.Value {
	v := tree.Value{Kind: tree.KindArray, Arr: make([]tree.Value, len(ss))}
	for k, s := range ss {
		v.Arr[k] = tree.Value{Kind: tree.KindString, Str: s}
	}
	return v
}

// RefusedFile is one file of pi 1.1's p13-refused-files: a file pi will
// not open (Refused), or a zero-byte file it accepts.
type RefusedFile struct {
	Path    string
	Data    []byte
	Refused bool // pi's SessionManager.open throws "not a valid pi session"
}

// IsRefusedFiles reports whether a case folder holds such files (its
// expected.json lists "refused") rather than one session.
func IsRefusedFiles(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		return false
	}
	v, err := jsjson.ParseValue(b)
	if err != nil {
		return false
	}
	_, ok := v.Get("refused")
	return ok
}

// RefusedFiles loads the files of a refused-files case, checking that
// there are some of both kinds.
func RefusedFiles(t testing.TB, dir string) []RefusedFile {
	t.Helper()
	exp := MustValue(t, MustRead(t, filepath.Join(dir, "expected.json")))
	list, _ := Field(exp, "refused")
	var out []RefusedFile
	refused := 0
	for _, r := range list.Arr {
		file, _ := Field(r, "file")
		openErr, _ := Field(r, "openError")
		f := RefusedFile{Path: filepath.Join(dir, file.Str), Refused: openErr.Kind == tree.KindString}
		f.Data = MustRead(t, f.Path)
		if f.Refused {
			refused++
		} else if len(f.Data) != 0 {
			t.Fatalf("%s: pi accepts it, but it is not the zero-byte file", f.Path)
		}
		out = append(out, f)
	}
	if refused == 0 || refused == len(out) {
		t.Fatalf("%s: %d files, %d refused: want both kinds", dir, len(out), refused)
	}
	return out
}

// Damaged reports whether a case is a file damaged after pi wrote it (its
// first call opens an existing file holding lines pi skips): the only
// vectors whose file has lines that are not entries.
func Damaged(t testing.TB, dir string) bool {
	t.Helper()
	ops := MustValue(t, MustRead(t, filepath.Join(dir, "ops.json")))
	if len(ops.Arr) == 0 {
		return false
	}
	op, _ := Field(ops.Arr[0], "op")
	content, _ := Field(ops.Arr[0], "fileContent")
	return op.Str == "openExistingFile" && content.Str != ""
}

// ExportOf is what exporting the file f read from data must give: data
// without its blank lines, the lines Read skipped and repeated identical
// headers — for pi's own files, data itself (but repeated headers).
func ExportOf(data []byte, f *tree.File) []byte {
	skipped := map[int]bool{}
	for _, s := range f.Skipped {
		skipped[s.Line] = true
	}
	var want []byte
	header := false
	for k, line := range bytes.SplitAfter(data, []byte("\n")) {
		body := bytes.TrimSuffix(line, []byte("\n"))
		switch {
		case len(bytes.TrimSpace(body)) == 0, skipped[k+1]:
		case bytes.Equal(body, f.Header.Raw):
			if !header {
				want = append(want, body...)
				want = append(want, '\n')
			}
			header = true
		default:
			// pi appends "\n" to an unterminated last line when it opens
			// the file; export ends every line.
			want = append(want, body...)
			want = append(want, '\n')
		}
	}
	return want
}
