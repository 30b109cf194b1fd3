package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/conformance"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/tree"
)

// vector is one pi-v3 conformance case with a session file.
type vector struct {
	name, file string
	data       []byte
	exp        tree.Value
	sid        string
}

// v3Vectors loads the pi-v3 cases pi wrote a file for.
func v3Vectors(t *testing.T) (dir string, vs []vector) {
	t.Helper()
	dir = filepath.Join(conformance.Dir(t), "pi-v3")
	for _, c := range conformance.Cases(t, conformance.Dir(t), "pi-v3") {
		file := filepath.Join(c, "session.jsonl")
		data, err := os.ReadFile(file)
		if os.IsNotExist(err) {
			continue // fileWritten: false
		}
		exp := conformance.MustValue(t, conformance.MustRead(t, filepath.Join(c, "expected.json")))
		sid, _ := conformance.Field(exp, "sessionId")
		vs = append(vs, vector{name: filepath.Base(c), file: file, data: data, exp: exp, sid: sid.Str})
	}
	if len(vs) < 10 {
		t.Fatalf("only %d pi-v3 cases with a session file in %s", len(vs), dir)
	}
	return dir, vs
}

// TestEndToEnd is the acceptance test of pi-node through pi-ctl: start a
// node on free ports with a temp dir, import every public v3 vector, check
// that export reproduces each file and that context --json equals
// expected.json for every listed leaf; kill -9 the node, restart it on the
// same data, and check the same again. A "log -f" over HTTP runs across
// the crash and must resume without gaps or duplicates.
func TestEndToEnd(t *testing.T) {
	dir, vs := v3Vectors(t)
	n := startNode(t, "e2e", "")
	nats := []string{"--server", n.natsURL}

	// The real binary imports the whole directory (it finds the
	// session.jsonl files and skips expected.json and ops.json).
	out, err := exec.Command(builtBinary(t, "pi-ctl"), "import", dir, "--json", "--server", n.natsURL).Output()
	if err != nil {
		t.Fatalf("pi-ctl import: %v\n%s", err, out)
	}
	var minSeq uint64
	ok := map[string]bool{}
	for _, l := range lines(string(out)) {
		var r importResult
		mustJSON(t, l, &r)
		if r.Result != "ok" || len(r.Skipped) != 0 {
			t.Errorf("import: %s", l)
		}
		ok[r.SessionID] = true
		minSeq = max(minSeq, r.LastSeq)
	}
	for _, v := range vs {
		if !ok[v.sid] {
			t.Errorf("%s: session %s not imported", v.name, v.sid)
		}
	}
	ms := []string{"--min-seq", jsonNum(minSeq)}
	// t.Run returns once the parallel subtests are done: all checks
	// happen before the crash.
	t.Run("before", func(t *testing.T) { checkVectors(t, vs, append(nats, ms...)) })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	follow := vs[0].sid
	stdout, stderr, wait := background(ctx, "log", follow, "-f", "--http", n.httpURL)
	backlog := lineCount(mustRun(t, "log", follow, "--http", n.httpURL))
	testutil.WaitFor(t, 10*time.Second, func() error {
		if lineCount(stdout.String()) != backlog {
			return errors.New(stdout.String())
		}
		return nil
	})

	n.kill9(t)
	if err := n.start(builtBinary(t, "pi-node")); err != nil {
		t.Fatal(err)
	}
	// Same results from the log on disk; the follower reconnects by itself.
	t.Run("after", func(t *testing.T) { checkVectors(t, vs, append(nats, ms...)) })
	mustRun(t, "rename", follow, "after the crash", "--server", n.natsURL)
	testutil.WaitFor(t, 15*time.Second, func() error {
		if !strings.Contains(stdout.String(), "[name after the crash]") {
			return errors.New("the follower after the restart: " + stdout.String() + stderr.String())
		}
		return nil
	})
	cancel()
	if code := wait(); code != 0 {
		t.Errorf("log -f: exit %d, stderr %q", code, stderr.String())
	}
	if got := lineCount(stdout.String()); got != backlog+1 {
		t.Errorf("log -f across the crash printed %d lines, want %d:\n%s", got, backlog+1, stdout.String())
	}
	// The binary exports byte for byte too (stdout of a real process).
	exp, err := exec.Command(builtBinary(t, "pi-ctl"), "export", vs[1].sid, "--http", n.httpURL).Output()
	if err != nil || string(exp) != expectedExport(t, vs[1].data) {
		t.Errorf("pi-ctl export (binary) of %s: %v, %d bytes", vs[1].name, err, len(exp))
	}
}

// checkVectors checks export, show, tree and context of every vector
// through pi-ctl with the connection flags conn.
func checkVectors(t *testing.T, vs []vector, conn []string) {
	t.Helper()
	for _, v := range vs {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			pictl := func(args ...string) string { return mustRun(t, withFlags(conn, args...)...) }
			if got, want := pictl("export", v.sid), expectedExport(t, v.data); got != want {
				t.Errorf("export differs from the file (%d bytes, want %d)", len(got), len(want))
			}
			got := conformance.MustValue(t, []byte(pictl("show", v.sid, "--json")))
			for _, k := range []string{"name", "labels", "leafId", "entryCount"} {
				want, _ := conformance.Field(v.exp, k)
				g, _ := conformance.Field(got, k)
				if d := conformance.Diff("show."+k, g, want); d != "" {
					t.Error(d)
				}
			}
			var tr struct {
				Tree json.RawMessage `json:"tree"`
			}
			mustJSON(t, pictl("tree", v.sid, "--json"), &tr)
			wantTree, _ := conformance.Field(v.exp, "tree")
			conformance.CheckJSON(t, "tree", idsOnly(t, tr.Tree), wantTree)

			ctxs, _ := conformance.Field(v.exp, "contexts")
			defaultLeaf, _ := conformance.Field(v.exp, "leafId")
			for _, want := range ctxs.Arr {
				leaf, _ := conformance.Field(want, "leafId")
				arg := "null"
				if leaf.Kind == tree.KindString {
					arg = leaf.Str
				}
				checkContext(t, want, func(extra ...string) string {
					return pictl(append([]string{"context", v.sid, "--leaf", arg}, extra...)...)
				})
				if conformance.Diff("", leaf, defaultLeaf) == "" { // and without --leaf
					checkContext(t, want, func(extra ...string) string {
						return pictl(append([]string{"context", v.sid}, extra...)...)
					})
				}
			}
		})
	}
}

// idsOnly reduces the API's tree to expected.json's shape: the id and
// children of each node (the API adds type and label).
func idsOnly(t *testing.T, raw []byte) []byte {
	t.Helper()
	v := conformance.MustValue(t, raw)
	var strip func(v *tree.Value)
	strip = func(v *tree.Value) {
		for k := range v.Arr {
			v.Arr[k].Delete("type")
			v.Arr[k].Delete("label")
			if c, ok := v.Arr[k].Get("children"); ok {
				strip(c)
			}
		}
	}
	strip(&v)
	return v.AppendJSON(nil)
}

// expectedExport is conformance.ExpectedExport: the file less what pi
// skips.
func expectedExport(t testing.TB, data []byte) string {
	t.Helper()
	return conformance.ExpectedExport(t, data)
}
