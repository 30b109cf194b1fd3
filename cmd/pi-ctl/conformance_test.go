package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/conformance"
	"github.com/pifleet/sessionlog/internal/tree"
)

// TestFileConformanceV3 drives "file tree/info/context --json" over every
// case of pi 0.73.1 and pi 1.1 that has a session file and compares with
// pi's own answers; pi 1.1's refused files are refused.
func TestFileConformanceV3(t *testing.T) {
	ran := 0
	var cases []string
	for _, set := range []string{"pi-v3", "pi-v3-1.1"} {
		cases = append(cases, conformance.Cases(t, conformance.Dir(t), set)...)
	}
	for _, dir := range cases {
		if conformance.IsRefusedFiles(dir) {
			ran++
			t.Run(conformance.CaseName(dir), func(t *testing.T) { checkRefusedFiles(t, dir) })
			continue
		}
		session := filepath.Join(dir, "session.jsonl")
		if _, err := os.Stat(session); err != nil {
			continue // pi wrote no file for this case (fileWritten: false)
		}
		ran++
		t.Run(conformance.CaseName(dir), func(t *testing.T) {
			t.Parallel()
			exp := conformance.MustValue(t, conformance.MustRead(t, filepath.Join(dir, "expected.json")))
			run := mustRun
			if conformance.Damaged(t, dir) {
				run = runWarned // the lines pi skips are reported on stderr
			}
			wantTree, _ := conformance.Field(exp, "tree")
			conformance.CheckJSON(t, "tree", []byte(run(t, "file", "tree", session, "--json")), wantTree)
			info := run(t, "file", "info", "--json", session)
			checkInfo(t, info, exp, true)
			if s, _ := conformance.Field(conformance.MustValue(t, []byte(info)), "skippedLines"); len(s.Arr) != 0 && !conformance.Damaged(t, dir) {
				t.Errorf("info: pi's own file has skipped lines: %s", conformance.Short(s))
			}

			ctxs, _ := conformance.Field(exp, "contexts")
			wantLeaf, _ := conformance.Field(exp, "leafId")
			for _, want := range sampleContexts(ctxs.Arr, wantLeaf) {
				leaf, _ := conformance.Field(want, "leafId")
				arg := "null"
				if leaf.Kind == tree.KindString {
					arg = leaf.Str
				}
				checkContext(t, want, func(extra ...string) string {
					return run(t, append([]string{"file", "context", session, "--leaf", arg}, extra...)...)
				})
			}
			// Without --leaf: pi's default leaf, the last entry.
			for _, want := range ctxs.Arr {
				if leaf, _ := conformance.Field(want, "leafId"); conformance.Diff("", leaf, wantLeaf) == "" {
					checkContext(t, want, func(extra ...string) string {
						return run(t, append([]string{"file", "context", session}, extra...)...)
					})
				}
			}
		})
	}
	if ran < 30 {
		t.Fatalf("only %d cases with a session file", ran)
	}
}

// checkRefusedFiles: "file info" refuses the files pi 1.1 will not open,
// naming the line, and says a zero-byte file (pi writes a header into it)
// holds no session.
func checkRefusedFiles(t *testing.T, dir string) {
	for _, f := range conformance.RefusedFiles(t, dir) {
		r := runCLI(t, "", "file", "info", f.Path)
		name := filepath.Base(f.Path)
		if r.code == 0 || !strings.Contains(r.stderr, name+":") {
			t.Errorf("%s: exit %d, stderr %q: want a refusal naming the file and line", name, r.code, r.stderr)
		}
		if !f.Refused && !strings.Contains(r.stderr, "empty file") {
			t.Errorf("%s: %q, want an empty file", name, r.stderr)
		}
	}
}

// sampleContexts picks the null leaf (listed first), about eight spread
// over the rest, the last one and the default leaf.
func sampleContexts(all []tree.Value, defaultLeaf tree.Value) []tree.Value {
	step := max(1, len(all)/8)
	var out []tree.Value
	for k := range all {
		leaf, _ := conformance.Field(all[k], "leafId")
		if k%step == 0 || k == len(all)-1 || conformance.Diff("", leaf, defaultLeaf) == "" {
			out = append(out, all[k])
		}
	}
	return out
}

// checkContext compares "context --json" and "context --json --llm" (run
// through ctx) with one expected context. Keys the vector leaves out (the
// ids of a migrated version-1 file) are not compared.
func checkContext(t *testing.T, want tree.Value, ctx func(extra ...string) string) {
	t.Helper()
	leaf, _ := conformance.Field(want, "leafId")
	name := "context[" + conformance.Short(leaf) + "]"
	got := conformance.MustValue(t, []byte(ctx("--json")))
	for _, m := range want.Obj {
		switch m.Key {
		case "pathLength":
			path, _ := conformance.Field(got, "path")
			if float64(len(path.Arr)) != m.Val.Num {
				t.Errorf("%s: path of %d entries, want %v", name, len(path.Arr), m.Val.Num)
			}
		case "llmMessages":
			llm := conformance.MustValue(t, []byte(ctx("--json", "--llm")))
			g, _ := conformance.Field(llm, "messages")
			if d := conformance.Diff(name+".llmMessages", g, m.Val); d != "" {
				t.Error(d)
			}
		default:
			g, ok := conformance.Field(got, m.Key)
			if !ok {
				t.Errorf("%s: no %q in our output", name, m.Key)
			} else if d := conformance.Diff(name+"."+m.Key, g, m.Val); d != "" {
				t.Error(d)
			}
		}
	}
	for _, m := range got.Obj {
		// contextEntryIds: pi 1.1's vectors list them, 0.73.1's do not.
		if _, ok := want.Get(m.Key); !ok && m.Key != "leafId" && m.Key != "path" && m.Key != "contextEntryIds" {
			t.Errorf("%s: unexpected key %q", name, m.Key)
		}
	}
}

// checkInfo compares "info --json" with the fields expected.json has;
// withIDs is false for version-1 files, whose ids are fresh.
func checkInfo(t *testing.T, out string, exp tree.Value, withIDs bool) {
	t.Helper()
	got := conformance.MustValue(t, []byte(out))
	keys := []string{"sessionId", "version", "sourceVersion", "name", "entryCount", "cwd", "usageBreakdown"}
	if withIDs {
		keys = append(keys, "leafId", "labels")
	}
	for _, k := range keys {
		want, ok := conformance.Field(exp, k)
		if !ok {
			if k == "sourceVersion" { // pi-v3 vectors: the file is current
				want = tree.Value{Kind: tree.KindNumber, Num: 3}
			} else {
				continue
			}
		}
		g, ok := conformance.Field(got, k)
		if !ok {
			t.Errorf("info: no %q", k)
		} else if d := conformance.Diff("info."+k, g, want); d != "" {
			t.Error(d)
		}
	}
}

// TestFileConformanceMigration runs info, context and migrate on the
// version 1 and 2 inputs.
func TestFileConformanceMigration(t *testing.T) {
	dir := conformance.Dir(t)
	for _, version := range []string{"pi-v1", "pi-v2"} {
		for _, c := range conformance.Cases(t, dir, version) {
			t.Run(version+"/"+filepath.Base(c), func(t *testing.T) {
				t.Parallel()
				exp := conformance.MustValue(t, conformance.MustRead(t, filepath.Join(c, "expected.json")))
				ids, _ := conformance.Field(exp, "idsPreserved")
				orig := filepath.Join(c, "original.jsonl")
				checkInfo(t, runWarned(t, "file", "info", "--json", orig), exp, ids.Bool)
				ctxs, _ := conformance.Field(exp, "contexts")
				want := ctxs.Arr[0]
				if !ids.Bool { // fresh ids: compare everything but them
					want.Delete("leafId")
					want.Delete("path")
				}
				checkContext(t, want, func(extra ...string) string {
					return runWarned(t, append([]string{"file", "context", orig}, extra...)...)
				})
				checkMigrate(t, c, orig, ids.Bool)
			})
		}
	}
}

// checkMigrate migrates orig and compares with pi's migrated.jsonl: byte
// for byte where ids are kept, line for line with ids renamed for version 1.
func checkMigrate(t *testing.T, dir, orig string, idsPreserved bool) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.jsonl")
	runWarned(t, "file", "migrate", orig, "-o", out, "--seed", "7")
	if got := mustRun(t, "file", "check", out); !strings.HasPrefix(got, "ok: ") {
		t.Errorf("check of the migrated file: %q", got)
	}
	piFile, err := os.ReadFile(filepath.Join(dir, "migrated.jsonl"))
	if os.IsNotExist(err) {
		return
	}
	ours := string(conformance.MustRead(t, out))
	if !idsPreserved {
		ours = renameIDs(t, []byte(ours), piFile)
	}
	if ours != string(piFile) {
		t.Errorf("migrated file differs from pi's:\n got: %.400s\nwant: %.400s", ours, piFile)
	}
}

// renameIDs replaces our fresh version-1 ids with pi's, entry by entry.
func renameIDs(t *testing.T, ours, pis []byte) string {
	t.Helper()
	a, errA := tree.Read(ours, tree.ReadOptions{})
	b, errB := tree.Read(pis, tree.ReadOptions{})
	if errA != nil || errB != nil || a.Len() != b.Len() {
		t.Fatalf("cannot pair entries: %v %v", errA, errB)
	}
	var pairs []string
	for i := range a.Len() {
		pairs = append(pairs, `"`+a.Entry(i).ID+`"`, `"`+b.Entry(i).ID+`"`)
	}
	return strings.NewReplacer(pairs...).Replace(string(ours))
}

// runWarned is mustRun for inputs with lines pi skips: exit 0, and nothing
// on stderr but "skipped" warnings.
func runWarned(t testing.TB, args ...string) string {
	t.Helper()
	r := runCLI(t, "", args...)
	for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		if l != "" && !strings.Contains(l, ": skipped: ") {
			t.Errorf("pi-ctl %s: unexpected stderr line %q", strings.Join(args, " "), l)
		}
	}
	if r.code != 0 {
		t.Fatalf("pi-ctl %s: exit %d", strings.Join(args, " "), r.code)
	}
	return r.stdout
}
