package tree

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// conformanceDir finds the vectors written by pi's own SessionManager. The
// shared folder beside the repository is authoritative; testdata/conformance
// is a committed copy so a clone elsewhere still runs every case. Missing
// both is a failure, never a skip.
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

func mustValue(t testing.TB, raw []byte) Value {
	t.Helper()
	v, err := ParseValue(raw)
	if err != nil {
		t.Fatalf("parse %.80q: %v", raw, err)
	}
	return v
}

func field(v Value, key string) (Value, bool) {
	f, ok := v.Get(key)
	if !ok {
		return Value{}, false
	}
	return *f, true
}

// diff compares JSON values as the README demands: key order ignored, array
// order kept, numbers as numbers, strings code unit for code unit (WTF-8).
// It returns "" when equal, else the first difference and where.
func diff(path string, got, want Value) string {
	if got.Kind != want.Kind {
		return fmt.Sprintf("%s: got %s, want %s", path, short(got), short(want))
	}
	switch got.Kind {
	case KindBool:
		if got.Bool != want.Bool {
			return fmt.Sprintf("%s: got %v, want %v", path, got.Bool, want.Bool)
		}
	case KindNumber:
		if got.Num != want.Num {
			return fmt.Sprintf("%s: got %v, want %v", path, got.Num, want.Num)
		}
	case KindString:
		if got.Str != want.Str {
			return fmt.Sprintf("%s: got %q, want %q", path, got.Str, want.Str)
		}
	case KindArray:
		if len(got.Arr) != len(want.Arr) {
			return fmt.Sprintf("%s: got %d elements, want %d", path, len(got.Arr), len(want.Arr))
		}
		for i := range got.Arr {
			if d := diff(fmt.Sprintf("%s[%d]", path, i), got.Arr[i], want.Arr[i]); d != "" {
				return d
			}
		}
	case KindObject:
		if len(got.Obj) != len(want.Obj) {
			return fmt.Sprintf("%s: got keys %v, want %v", path, keys(got), keys(want))
		}
		for _, m := range want.Obj {
			g, ok := got.Get(m.Key)
			if !ok {
				return fmt.Sprintf("%s: missing key %q (got keys %v)", path, m.Key, keys(got))
			}
			if d := diff(path+"."+m.Key, *g, m.Val); d != "" {
				return d
			}
		}
	}
	return ""
}

func keys(v Value) []string {
	var ks []string
	for _, m := range v.Obj {
		ks = append(ks, m.Key)
	}
	return ks
}

func short(v Value) string {
	s := string(v.AppendJSON(nil))
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// checkJSON compares our JSON bytes with an expected value.
func checkJSON(t *testing.T, what string, got []byte, want Value) {
	t.Helper()
	g, err := ParseValue(got)
	if err != nil {
		t.Errorf("%s: our JSON does not parse: %v\n%s", what, err, got)
		return
	}
	if d := diff(what, g, want); d != "" {
		t.Error(d)
	}
}

func TestConformance(t *testing.T) {
	dir := conformanceDir(t)
	t.Run("pi-v3", func(t *testing.T) {
		cases := caseDirs(t, dir, "pi-v3")
		if len(cases) == 0 {
			t.Fatal("no pi-v3 cases")
		}
		for _, c := range cases {
			t.Run(filepath.Base(c), func(t *testing.T) { runV3Case(t, c) })
		}
	})
	for _, v := range []string{"pi-v1", "pi-v2"} {
		t.Run(v, func(t *testing.T) {
			cases := caseDirs(t, dir, v)
			if len(cases) == 0 {
				t.Fatalf("no %s cases", v)
			}
			for _, c := range cases {
				t.Run(filepath.Base(c), func(t *testing.T) { runMigrationCase(t, c) })
			}
		})
	}
}

func runV3Case(t *testing.T, dir string) {
	exp := mustValue(t, mustRead(t, filepath.Join(dir, "expected.json")))
	var s *Session
	if written, _ := field(exp, "fileWritten"); written.Kind == KindBool && !written.Bool {
		if _, err := os.Stat(filepath.Join(dir, "session.jsonl")); err == nil {
			t.Fatal("fileWritten is false but session.jsonl exists")
		}
		var leaf string
		s, leaf = replayOps(t, dir)
		checkLeaf(t, leaf, exp)
	} else {
		data := mustRead(t, filepath.Join(dir, "session.jsonl"))
		f, err := Read(data, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Skipped) != 0 {
			t.Errorf("pi's own file has skipped lines: %v", f.Skipped)
		}
		s = f.Session
		checkLeaf(t, s.LeafID(), exp)
		// Export reproduces the file, minus repeated identical headers.
		var want []byte
		for k, line := range bytes.SplitAfter(data, []byte("\n")) {
			if k == 0 || !bytes.Equal(bytes.TrimSuffix(line, []byte("\n")), s.Header.Raw) {
				want = append(want, line...)
			}
		}
		if got := s.AppendJSONL(nil); !bytes.Equal(got, want) {
			t.Errorf("export differs from the file")
		}
	}
	checkSession(t, s, exp)
	ctxs, _ := field(exp, "contexts")
	for _, want := range ctxs.Arr {
		checkContext(t, s, want, true)
	}
}

func checkLeaf(t *testing.T, leaf string, exp Value) {
	t.Helper()
	want, _ := field(exp, "leafId")
	got := Value{Kind: KindString, Str: leaf}
	if leaf == "" {
		got = Value{}
	}
	if d := diff("leafId", got, want); d != "" {
		t.Error(d)
	}
}

// checkSession compares sessionId, version, name, labels, tree and entryCount.
func checkSession(t *testing.T, s *Session, exp Value) {
	t.Helper()
	if want, ok := field(exp, "sessionId"); ok && want.Str != s.Header.ID {
		t.Errorf("sessionId %q, want %q", s.Header.ID, want.Str)
	}
	if want, ok := field(exp, "version"); ok && want.Num != float64(s.Header.Version) {
		t.Errorf("version %d, want %v", s.Header.Version, want.Num)
	}
	if want, ok := field(exp, "entryCount"); ok && want.Num != float64(s.Len()) {
		t.Errorf("entryCount %d, want %v", s.Len(), want.Num)
	}
	wantName, _ := field(exp, "name")
	gotName := Value{}
	if n, ok := s.Name(); ok {
		gotName = Value{Kind: KindString, Str: n}
	}
	if d := diff("name", gotName, wantName); d != "" {
		t.Error(d)
	}
	if want, ok := field(exp, "labels"); ok {
		o := newObj(64)
		ls := s.Labels()
		for _, k := range sortedKeys(ls) {
			o.str(k, ls[k])
		}
		checkJSON(t, "labels", o.done(), want)
	}
	if want, ok := field(exp, "tree"); ok {
		checkJSON(t, "tree", s.AppendTreeJSON(nil, s.Tree(), TreeJSONOptions{}), want)
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

// checkContext builds the context for want.leafId and compares every field
// the vector lists. withIDs is false for migrated v1 files (fresh ids).
func checkContext(t *testing.T, s *Session, want Value, withIDs bool) Context {
	t.Helper()
	leaf, _ := field(want, "leafId")
	var c Context
	switch {
	case !withIDs:
		i, _ := s.Index(s.LeafID())
		c = s.ContextAt(i)
	case leaf.Kind == KindNull:
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
	got := mustValue(t, c.AppendJSON(nil, ContextOptions{}))
	gotLLM := mustValue(t, c.AppendJSON(nil, ContextOptions{LLM: true}))
	for _, m := range want.Obj {
		var d string
		switch m.Key {
		case "leafId", "path":
			if withIDs {
				g, _ := field(got, m.Key)
				d = diff(name+"."+m.Key, g, m.Val)
			}
		case "pathLength":
			if float64(len(c.Path)) != m.Val.Num {
				d = fmt.Sprintf("%s.pathLength: got %d, want %v", name, len(c.Path), m.Val.Num)
			}
		case "thinkingLevel", "model", "messages":
			g, ok := field(got, m.Key)
			if !ok {
				d = fmt.Sprintf("%s: no %s", name, m.Key)
			} else {
				d = diff(name+"."+m.Key, g, m.Val)
			}
		case "llmMessages":
			g, _ := field(gotLLM, "messages")
			d = diff(name+".llmMessages", g, m.Val)
		default:
			d = fmt.Sprintf("%s: unknown expected field %q", name, m.Key)
		}
		if d != "" {
			t.Error(d)
		}
	}
	return c
}

func runMigrationCase(t *testing.T, dir string) {
	exp := mustValue(t, mustRead(t, filepath.Join(dir, "expected.json")))
	f, err := Read(mustRead(t, filepath.Join(dir, "original.jsonl")), ReadOptions{Rand: rand.NewChaCha8([32]byte{1})})
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := field(exp, "sourceVersion"); want.Num != float64(f.SourceVersion) {
		t.Errorf("sourceVersion %d, want %v", f.SourceVersion, want.Num)
	}
	idsPreserved, _ := field(exp, "idsPreserved")
	s := f.Session
	if idsPreserved.Bool {
		checkLeaf(t, s.LeafID(), exp)
		checkSession(t, s, exp)
	} else {
		// Ids are fresh: compare what does not depend on them.
		for _, k := range []string{"labels", "tree", "leafId"} {
			if _, ok := field(exp, k); ok {
				t.Errorf("idsPreserved is false but expected.json has %q", k)
			}
		}
		checkSession(t, s, exp)
	}
	ctxs, _ := field(exp, "contexts")
	if len(ctxs.Arr) != 1 {
		t.Fatalf("want exactly one context, have %d", len(ctxs.Arr))
	}
	checkContext(t, s, ctxs.Arr[0], idsPreserved.Bool)

	migratedPath := filepath.Join(dir, "migrated.jsonl")
	want, err := os.ReadFile(migratedPath)
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	got := string(s.AppendJSONL(nil))
	if !idsPreserved.Bool {
		got = mapIDs(t, s, want, got)
	}
	if got != string(want) {
		t.Errorf("migrated file differs from pi's:\n got: %.600s\nwant: %.600s", got, want)
	}
}

// mapIDs renames our fresh v1 ids to pi's (entry k to entry k) so the rest of
// the migrated file can be compared byte for byte.
func mapIDs(t *testing.T, s *Session, piFile []byte, ours string) string {
	t.Helper()
	pf, err := Read(piFile, ReadOptions{})
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
