package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// Dir finds the vectors written by pi's own SessionManager. The
// shared folder beside the repository is authoritative; testdata/conformance
// is a committed copy so a clone elsewhere still runs every case. Missing
// both is a failure, never a skip.
func Dir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("PI_CONFORMANCE_DIR"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "pi-v3")); err != nil {
			t.Fatalf("PI_CONFORMANCE_DIR=%s: %v", d, err)
		}
		return d
	}
	root := RepoRoot(t)
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

// RepoRoot is the directory of go.mod above the test.
func RepoRoot(t testing.TB) string {
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

// Cases lists <dir>/<version>/<case> folders, sorted.
func Cases(t testing.TB, dir, version string) []string {
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

func MustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func MustValue(t testing.TB, raw []byte) tree.Value {
	t.Helper()
	v, err := jsjson.ParseValue(raw)
	if err != nil {
		t.Fatalf("parse %.80q: %v", raw, err)
	}
	return v
}

func Field(v tree.Value, key string) (tree.Value, bool) {
	f, ok := v.Get(key)
	if !ok {
		return tree.Value{}, false
	}
	return *f, true
}

// Diff compares JSON values as the README demands: key order ignored, array
// order kept, numbers as numbers, strings code unit for code unit (WTF-8).
// It returns "" when equal, else the first difference and where.
func Diff(path string, got, want tree.Value) string {
	if got.Kind != want.Kind {
		return fmt.Sprintf("%s: got %s, want %s", path, Short(got), Short(want))
	}
	switch got.Kind {
	case tree.KindBool:
		if got.Bool != want.Bool {
			return fmt.Sprintf("%s: got %v, want %v", path, got.Bool, want.Bool)
		}
	case tree.KindNumber:
		if got.Num != want.Num {
			return fmt.Sprintf("%s: got %v, want %v", path, got.Num, want.Num)
		}
	case tree.KindString:
		if got.Str != want.Str {
			return fmt.Sprintf("%s: got %q, want %q", path, got.Str, want.Str)
		}
	case tree.KindArray:
		if len(got.Arr) != len(want.Arr) {
			return fmt.Sprintf("%s: got %d elements, want %d", path, len(got.Arr), len(want.Arr))
		}
		for i := range got.Arr {
			if d := Diff(fmt.Sprintf("%s[%d]", path, i), got.Arr[i], want.Arr[i]); d != "" {
				return d
			}
		}
	case tree.KindObject:
		if len(got.Obj) != len(want.Obj) {
			return fmt.Sprintf("%s: got keys %v, want %v", path, keys(got), keys(want))
		}
		for _, m := range want.Obj {
			g, ok := got.Get(m.Key)
			if !ok {
				return fmt.Sprintf("%s: missing key %q (got keys %v)", path, m.Key, keys(got))
			}
			if d := Diff(path+"."+m.Key, *g, m.Val); d != "" {
				return d
			}
		}
	}
	return ""
}

func keys(v tree.Value) []string {
	var ks []string
	for _, m := range v.Obj {
		ks = append(ks, m.Key)
	}
	return ks
}

// Short renders v as compact JSON, cut at 120 bytes, for messages.
func Short(v tree.Value) string {
	s := string(v.AppendJSON(nil))
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// CheckJSON compares our JSON bytes with an expected value.
func CheckJSON(t *testing.T, what string, got []byte, want tree.Value) {
	t.Helper()
	g, err := jsjson.ParseValue(got)
	if err != nil {
		t.Errorf("%s: our JSON does not parse: %v\n%s", what, err, got)
		return
	}
	if d := Diff(what, g, want); d != "" {
		t.Error(d)
	}
}

// CaseName is "<set>/<case>" of a case folder, a subtest name that tells
// pi-v3/p01-basic from pi-v3-1.1/p01-basic.
func CaseName(dir string) string {
	return filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
}

// ForkCase is a case pi wrote by forking (createBranchedSession): its
// folder, its parent case's folder, the entry pi forked at, and whether pi
// 1.1 forked it (the pi-v3-1.1 set). Only cases where pi wrote a file.
type ForkCase struct {
	Dir, Parent, LeafID string
	Pi11                bool
}

// ForkCases are the fork cases of both vector sets, in order.
func ForkCases(t testing.TB) []ForkCase {
	t.Helper()
	dir := Dir(t)
	var out []ForkCase
	for _, set := range []struct {
		name string
		pi11 bool
	}{{"pi-v3", false}, {"pi-v3-1.1", true}} {
		for _, c := range Cases(t, dir, set.name) {
			if !strings.Contains(filepath.Base(c), ".fork") {
				continue
			}
			var ops []struct {
				Op       string `json:"op"`
				FromCase string `json:"fromCase"`
				LeafID   string `json:"leafId"`
			}
			if err := json.Unmarshal(MustRead(t, filepath.Join(c, "ops.json")), &ops); err != nil || len(ops) == 0 || ops[0].Op != "createBranchedSession" {
				t.Fatalf("%s: ops.json does not start with createBranchedSession: %v", c, err)
			}
			if _, err := os.Stat(filepath.Join(c, "session.jsonl")); os.IsNotExist(err) {
				continue // pi wrote no file for this fork
			}
			out = append(out, ForkCase{Dir: c, Parent: filepath.Join(filepath.Dir(c), ops[0].FromCase), LeafID: ops[0].LeafID, Pi11: set.pi11})
		}
	}
	if len(out) < 6 {
		t.Fatalf("only %d fork cases with a file", len(out))
	}
	return out
}
