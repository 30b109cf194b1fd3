package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/conformance"
)

// TestServerUsage: show and context of a stored pi 1.1 session carry its
// usage breakdown as the file commands print it for the same file, and
// show --json pi's usageBreakdown; a session that spent nothing shows none.
func TestServerUsage(t *testing.T) {
	file := filepath.Join(conformance.Dir(t), "pi-v3-1.1", "example-auth-salt-debugging-1.1", "session.jsonl")
	exp := conformance.MustValue(t, conformance.MustRead(t, filepath.Join(filepath.Dir(file), "expected.json")))
	wantUsage, _ := conformance.Field(exp, "usageBreakdown")
	if len(wantUsage.Arr) == 0 {
		t.Fatal("the vector has no usage breakdown to show")
	}
	infoUsage := usageLines(mustRun(t, "file", "info", file), "usage ")
	ctxUsage := tailFrom(mustRun(t, "file", "context", file), "usage of the session:")
	if len(infoUsage) != len(wantUsage.Arr) || ctxUsage == "" {
		t.Fatalf("file info shows %d usage rows (want %d), file context %q", len(infoUsage), len(wantUsage.Arr), ctxUsage)
	}
	// Imported once, before the transports' subtests run side by side.
	var imp importResult
	if err := json.Unmarshal([]byte(mustRun(t, "import", file, "--json", "--http", sharedNode(t).httpURL)), &imp); err != nil || imp.Result != "ok" {
		t.Fatalf("import: %v %+v", err, imp)
	}
	forEachTransport(t, func(t *testing.T, n *node, conn []string) {
		pictl := func(args ...string) string { return mustRun(t, withFlags(conn, args...)...) }
		sid, _ := conformance.Field(exp, "sessionId")
		if got := usageLines(pictl("show", sid.Str, "--min-seq", jsonNum(imp.LastSeq)), "usage "); strings.Join(got, "\n") != strings.Join(infoUsage, "\n") {
			t.Errorf("show's usage:\n%s\nwant file info's:\n%s", strings.Join(got, "\n"), strings.Join(infoUsage, "\n"))
		}
		if got := tailFrom(pictl("context", sid.Str, "--min-seq", jsonNum(imp.LastSeq)), "usage of the session:"); got != ctxUsage {
			t.Errorf("context ends with %q, want file context's %q", got, ctxUsage)
		}
		shown := conformance.MustValue(t, []byte(pictl("show", sid.Str, "--json", "--min-seq", jsonNum(imp.LastSeq))))
		got, _ := conformance.Field(shown, "usageBreakdown")
		if d := conformance.Diff("show --json usageBreakdown", got, wantUsage); d != "" {
			t.Error(d)
		}

		_, plain, _ := importedSession(t, n, testCwd(t, "/usage/"))
		if out := pictl("show", plain); strings.Contains(out, "usage ") {
			t.Errorf("show of a session without usage:\n%s", out)
		}
		if out := pictl("context", plain); strings.Contains(out, "usage of the session") {
			t.Errorf("context of a session without usage:\n%s", out)
		}
	})
}

// usageLines are the lines of a key-value listing under key (its first
// line and the indented ones after it), without the key column.
func usageLines(out, key string) []string {
	var rows []string
	in := false
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, key):
			in = true
		case in && strings.HasPrefix(l, "          "):
		default:
			in = false
		}
		if in {
			rows = append(rows, strings.TrimSpace(l[len(key):]))
		}
	}
	return rows
}

// tailFrom is out from the line that starts with marker on.
func tailFrom(out, marker string) string {
	if i := strings.Index(out, "\n"+marker); i >= 0 {
		return out[i+1:]
	}
	return ""
}

// TestForkPi11: fork --pi11 forks as pi 1.1 (pi-v3-1.1's p09-forks.fork1:
// the entry after a dropped label is re-chained to the entry before it),
// and without it as pi 0.73.1 (that entry keeps the label as its parent,
// an orphan root).
func TestForkPi11(t *testing.T) {
	dir := filepath.Join(conformance.Dir(t), "pi-v3-1.1")
	file := filepath.Join(dir, "p09-forks", "session.jsonl")
	const leaf, label, before = "d35bf8e4", "141c6860", "8b5aaeba" // fork1's fork point, its parent (a label), the entry before that
	// Imported once, before the transports' subtests run side by side.
	var imp importResult
	if err := json.Unmarshal([]byte(mustRun(t, "import", file, "--json", "--http", sharedNode(t).httpURL)), &imp); err != nil || imp.SessionID == "" {
		t.Fatalf("import: %v %+v", err, imp)
	}
	forEachTransport(t, func(t *testing.T, n *node, conn []string) {
		pictl := func(args ...string) string { return mustRun(t, withFlags(conn, args...)...) }
		sid := imp.SessionID
		for _, c := range []struct {
			flags  []string
			parent string
		}{{[]string{"--pi11"}, before}, {nil, label}} {
			var fork struct {
				SessionID string `json:"sessionId"`
				LastSeq   uint64 `json:"lastSeq"`
			}
			mustJSON(t, pictl(append([]string{"fork", sid, leaf, "--json", "--min-seq", jsonNum(imp.LastSeq)}, c.flags...)...), &fork)
			exp := pictl("export", fork.SessionID, "--min-seq", jsonNum(fork.LastSeq))
			if want := `"id":"` + leaf + `","parentId":"` + c.parent + `"`; !strings.Contains(exp, want) {
				t.Errorf("fork %v: %s's parent is not %s:\n%s", c.flags, leaf, c.parent, exp)
			}
		}
	})
}
