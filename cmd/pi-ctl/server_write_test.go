package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestCursorCommands sets, reads, lists and removes a cursor, and checks
// that tree and context follow it.
func TestCursorCommands(t *testing.T) {
	forEachTransport(t, func(t *testing.T, n *node, conn []string) {
		_, sid, seq := importedSession(t, n, "/cursors")
		pictl := func(args ...string) string { return mustRun(t, withFlags(conn, args...)...) }

		set := pictl("cursor", "set", sid, "w1", idAnswer1, "--min-seq", jsonNum(seq))
		if !strings.Contains(set, "client     w1\nleaf       "+idAnswer1+"\n") {
			t.Errorf("cursor set:\n%s", set)
		}
		var c wire.CursorView
		mustJSON(t, pictl("cursor", "get", sid, "w1", "--json"), &c)
		if c.LeafID == nil || *c.LeafID != idAnswer1 || c.Revision == 0 || c.Seq < seq {
			t.Fatalf("cursor get --json: %+v", c)
		}

		// The tree marks w1's leaf and the path to it, not the default leaf.
		tree := pictl("tree", sid, "--client", "w1")
		if !strings.Contains(tree, "• "+idAnswer1+" assistant: The salt is not Base64.  ← leaf of w1\n") ||
			strings.Contains(tree, "• "+idFollowUp) || strings.Contains(tree, "← leaf\n") {
			t.Errorf("tree --client w1:\n%s", tree)
		}
		var tr struct {
			LeafID string `json:"leafId"`
		}
		mustJSON(t, pictl("tree", sid, "--client", "w1", "--json"), &tr)
		if tr.LeafID != idAnswer1 {
			t.Errorf("tree --client --json: leafId %q", tr.LeafID)
		}
		if out := pictl("context", sid, "--client", "w1"); !strings.HasPrefix(out, "leaf "+idAnswer1+" · 3 entries on the path") {
			t.Errorf("context --client w1:\n%s", out)
		}
		// A client without a cursor is at the default leaf.
		if out := pictl("tree", sid, "--client", "nobody"); !strings.Contains(out, idFollowUp+" user: And the fix?  ← leaf\n") {
			t.Errorf("tree --client nobody:\n%s", out)
		}

		// Compare-and-set on the revision.
		r := runCLI(t, "", withFlags(conn, "cursor", "set", sid, "w1", "null", "--expect-revision", jsonNum(c.Revision+5))...)
		if r.code != 1 || len(lines(r.stderr)) != 1 || r.stdout != "" {
			t.Errorf("cursor set with a stale revision: exit %d, stderr %q", r.code, r.stderr)
		}
		var moved wire.CursorView
		mustJSON(t, pictl("cursor", "set", sid, "w1", "null", "--expect-revision", jsonNum(c.Revision), "--json"), &moved)
		if moved.LeafID != nil || moved.Revision <= c.Revision {
			t.Errorf("cursor set null: %+v", moved)
		}
		if out := pictl("tree", sid, "--client", "w1"); strings.Contains(out, "•") || !strings.HasSuffix(out, "(w1 is at the null leaf: before the first entry)\n") {
			t.Errorf("tree at the null leaf:\n%s", out)
		}

		pictl("cursor", "set", sid, "w2", idQuestion)
		ls := pictl("cursor", "ls", sid)
		if l := strings.Split(ls, "\n"); len(l) != 4 || !strings.HasPrefix(l[1], "w1      null  ") || !strings.HasPrefix(l[2], "w2      "+idQuestion+"  ") {
			t.Errorf("cursor ls:\n%s", ls)
		}
		if out := pictl("cursor", "rm", sid, "w1"); out != "" {
			t.Errorf("cursor rm printed %q", out)
		}
		pictl("cursor", "rm", sid, "w1") // removing nothing is fine
		r = runCLI(t, "", withFlags(conn, "cursor", "get", sid, "w1")...)
		if r.code != 1 || !strings.Contains(r.stderr, "not found") {
			t.Errorf("cursor get after rm: exit %d, stderr %q", r.code, r.stderr)
		}
	})
}

// TestWriteCommands labels, renames and forks through the append and fork
// operations, and reads the results back with --min-seq.
func TestWriteCommands(t *testing.T) {
	forEachTransport(t, func(t *testing.T, n *node, conn []string) {
		_, sid, seq := importedSession(t, n, "/writes")
		pictl := func(args ...string) string { return mustRun(t, withFlags(conn, args...)...) }
		type detail struct {
			Name          *string           `json:"name"`
			Labels        map[string]string `json:"labels"`
			LeafID        string            `json:"leafId"`
			EntryCount    int               `json:"entryCount"`
			ParentSession *string           `json:"parentSession"`
		}
		show := func(id string, minSeq uint64) detail {
			var d detail
			mustJSON(t, pictl("show", id, "--json", "--min-seq", jsonNum(minSeq)), &d)
			return d
		}

		var fork struct {
			SessionID string `json:"sessionId"`
			LastSeq   uint64 `json:"lastSeq"`
		}
		mustJSON(t, pictl("fork", sid, idAnswer1, "--json", "--min-seq", jsonNum(seq)), &fork)
		if d := show(fork.SessionID, fork.LastSeq); d.EntryCount != 3 || d.LeafID != idAnswer1 || d.ParentSession == nil {
			t.Errorf("the fork: %+v", d)
		}
		if out := pictl("fork", sid, idQuestion); len(out) != 37 || out == fork.SessionID+"\n" {
			t.Errorf("fork prints %q, want a new session id", out)
		}

		out := pictl("label", sid, idAnswer1, "root <cause>", "--client", "w9")
		if !strings.HasPrefix(out, `labeled `+idAnswer1+` "root <cause>": entry `) {
			t.Errorf("label: %q", out)
		}
		last := seqOf(t, pictl("label", sid, idQuestion, "question", "--json"))
		if d := show(sid, last); d.Labels[idAnswer1] != "root <cause>" || d.Labels[idQuestion] != "question" {
			t.Errorf("labels after label: %v", d.Labels)
		}
		// --client w9 hung the first label under w9's leaf (the default
		// leaf then) and moved w9 to it.
		var c wire.CursorView
		mustJSON(t, pictl("cursor", "get", sid, "w9", "--json"), &c)
		if c.LeafID == nil || !strings.Contains(out, *c.LeafID) {
			t.Errorf("w9's cursor %+v is not at the label entry (%q)", c, out)
		}
		last = seqOf(t, pictl("label", sid, idAnswer1, "--clear", "--json"))
		if d := show(sid, last); len(d.Labels) != 1 || d.Labels[idQuestion] != "question" {
			t.Errorf("labels after --clear: %v", d.Labels)
		}
		r := runCLI(t, "", withFlags(conn, "label", sid, "zzzzzzzz", "x")...)
		if r.code != 1 || !strings.Contains(r.stderr, `has no entry "zzzzzzzz"`) {
			t.Errorf("label of an unknown entry: exit %d, stderr %q", r.code, r.stderr)
		}

		last = seqOf(t, pictl("rename", sid, "salt bug 🧂", "--json"))
		if d := show(sid, last); d.Name == nil || *d.Name != "salt bug 🧂" {
			t.Errorf("name after rename: %v", d.Name)
		}
		if out := pictl("ls", "--name", "SALT BUG"); !strings.Contains(out, sid) {
			t.Errorf("ls --name misses the renamed session:\n%s", out)
		}
		if out := pictl("ls", "--label", "question"); !strings.Contains(out, sid) {
			t.Errorf("ls --label misses the labeled session:\n%s", out)
		}
	})
}

// TestLogFollow runs "log -f" in the background, appends, and waits for
// the new entry to be printed exactly once; an interrupt ends it with exit
// status 0.
func TestLogFollow(t *testing.T) {
	forEachTransport(t, func(t *testing.T, n *node, conn []string) {
		_, sid, seq := importedSession(t, n, "/follow")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stdout, stderr, wait := background(ctx, withFlags(conn, "log", sid, "-f", "--min-seq", jsonNum(seq))...)
		testutil.WaitFor(t, 10*time.Second, func() error {
			if lineCount(stdout.String()) != 5 {
				return errors.New("backlog of 5 entries: " + stdout.String() + stderr.String())
			}
			return nil
		})
		for _, name := range []string{"first", "second"} {
			mustRun(t, withFlags(conn, "rename", sid, name)...)
		}
		testutil.WaitFor(t, 10*time.Second, func() error {
			if !strings.Contains(stdout.String(), "[name second]") {
				return errors.New("the new entries: " + stdout.String() + stderr.String())
			}
			return nil
		})
		cancel()
		if code := wait(); code != 0 || stderr.String() != "" {
			t.Errorf("log -f after an interrupt: exit %d, stderr %q", code, stderr.String())
		}
		out := stdout.String()
		if lineCount(out) != 7 || strings.Count(out, "[name first]") != 1 || strings.Index(out, "[name first]") > strings.Index(out, "[name second]") {
			t.Errorf("log -f printed:\n%s", out)
		}
	})
}

// TestLogFollowJSON: -f --json prints the entries API's objects.
func TestLogFollowJSON(t *testing.T) {
	n := sharedNode(t)
	_, sid, seq := importedSession(t, n, "/follow-json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, _, wait := background(ctx, "log", sid, "-f", "--json", "--after-seq", jsonNum(seq-1), "--http", n.httpURL)
	testutil.WaitFor(t, 10*time.Second, func() error {
		if lineCount(stdout.String()) != 1 {
			return errors.New(stdout.String())
		}
		return nil
	})
	cancel()
	wait()
	var e seqEntry
	mustJSON(t, stdout.String(), &e)
	var entry struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(e.Entry, &entry); err != nil || e.Seq != seq || entry.ID != idFollowUp {
		t.Errorf("log -f --json: %s (%v)", stdout.String(), err)
	}
}
