package tree_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/conformance"
	"github.com/pifleet/sessionlog/internal/tree"
)

func TestConformance(t *testing.T) {
	dir := conformance.Dir(t)
	// pi 0.73.1's files and pi 1.1's, by the same rules; migrations from
	// versions 1 and 2.
	for _, v := range []string{"pi-v3", "pi-v3-1.1", "pi-v1", "pi-v2"} {
		t.Run(v, func(t *testing.T) {
			cases := conformance.Cases(t, dir, v)
			if len(cases) == 0 {
				t.Fatalf("no %s cases", v)
			}
			for _, c := range cases {
				run := runV3Case
				switch {
				case v == "pi-v1" || v == "pi-v2":
					run = runMigrationCase
				case conformance.IsRefusedFiles(c):
					run = runRefusedCase
				}
				t.Run(filepath.Base(c), func(t *testing.T) { run(t, c) })
			}
		})
	}
}

func runV3Case(t *testing.T, dir string) {
	exp := conformance.MustValue(t, conformance.MustRead(t, filepath.Join(dir, "expected.json")))
	var s *tree.Session
	var data, want []byte // the file, and what export must give
	if written, _ := conformance.Field(exp, "fileWritten"); written.Kind == tree.KindBool && !written.Bool {
		if _, err := os.Stat(filepath.Join(dir, "session.jsonl")); err == nil {
			t.Fatal("fileWritten is false but session.jsonl exists")
		}
		var leaf string
		s, leaf = replayOps(t, dir)
		conformance.CheckLeaf(t, leaf, exp)
	} else {
		data = conformance.MustRead(t, filepath.Join(dir, "session.jsonl"))
		f, err := tree.Read(data, tree.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Skipped) != 0 && !conformance.Damaged(t, dir) {
			t.Errorf("pi's own file has skipped lines: %v", f.Skipped)
		}
		s = f.Session
		want = conformance.ExportOf(data, f)
	}
	check := func() {
		t.Helper()
		if data != nil {
			conformance.CheckLeaf(t, s.LeafID(), exp)
			if got := s.AppendJSONL(nil); !bytes.Equal(got, want) {
				t.Errorf("export differs from the file")
			}
		}
		conformance.CheckSession(t, s, exp)
		ctxs, _ := conformance.Field(exp, "contexts")
		for _, want := range ctxs.Arr {
			conformance.CheckContext(t, s, want, true)
		}
	}
	check()
	// Compacted, the session answers the same; its lines (and the ids and
	// labels decoded from them) no longer live in the file's buffer, which
	// is overwritten to prove it.
	s.Compact()
	for i := range data {
		data[i] = '#'
	}
	check()
}

func runMigrationCase(t *testing.T, dir string) {
	exp := conformance.MustValue(t, conformance.MustRead(t, filepath.Join(dir, "expected.json")))
	f, err := tree.Read(conformance.MustRead(t, filepath.Join(dir, "original.jsonl")), tree.ReadOptions{Rand: rand.NewChaCha8([32]byte{1})})
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := conformance.Field(exp, "sourceVersion"); want.Num != float64(f.SourceVersion) {
		t.Errorf("sourceVersion %d, want %v", f.SourceVersion, want.Num)
	}
	idsPreserved, _ := conformance.Field(exp, "idsPreserved")
	s := f.Session
	if idsPreserved.Bool {
		conformance.CheckLeaf(t, s.LeafID(), exp)
		conformance.CheckSession(t, s, exp)
	} else {
		// Ids are fresh: compare what does not depend on them.
		for _, k := range []string{"labels", "tree", "leafId"} {
			if _, ok := conformance.Field(exp, k); ok {
				t.Errorf("idsPreserved is false but expected.json has %q", k)
			}
		}
		conformance.CheckSession(t, s, exp)
	}
	ctxs, _ := conformance.Field(exp, "contexts")
	if len(ctxs.Arr) != 1 {
		t.Fatalf("want exactly one context, have %d", len(ctxs.Arr))
	}
	conformance.CheckContext(t, s, ctxs.Arr[0], idsPreserved.Bool)

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
		got = conformance.MapIDs(t, s, want, got)
	}
	if got != string(want) {
		t.Errorf("migrated file differs from pi's:\n got: %.600s\nwant: %.600s", got, want)
	}
}

// runRefusedCase: the files pi 1.1 refuses to open are refused, naming the
// line; the zero-byte file pi accepts (it writes a new header into it)
// holds no session to read, and Read says so.
func runRefusedCase(t *testing.T, dir string) {
	for _, f := range conformance.RefusedFiles(t, dir) {
		_, err := tree.Read(f.Data, tree.ReadOptions{})
		var le *tree.LineError
		if !errors.As(err, &le) || le.Line < 1 {
			t.Errorf("%s: %v, want a *LineError naming the line", filepath.Base(f.Path), err)
			continue
		}
		if !f.Refused && !strings.Contains(le.Reason, "empty file") {
			t.Errorf("%s: %v, want an empty file", filepath.Base(f.Path), err)
		}
	}
}
