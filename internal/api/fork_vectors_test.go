package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pifleet/sessionlog/internal/conformance"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestForkVectors forks (copying, and by reference), through the API, every parent of a fork case of
// both vector sets at the entry pi forked at — as pi 0.73.1 (pi-v3) and
// with pi11 as pi 1.1 (pi-v3-1.1) — and compares the new session's entries
// with the file pi's createBranchedSession wrote: the same entries, in
// order, with the same parents (orphans where 0.73.1 leaves them, none with
// pi11) and compaction pointers; the labels pi re-creates at the end name
// the same entries.
func TestForkVectors(t *testing.T) {
	t.Run("copy", func(t *testing.T) { testForkVectors(t, newEnv(t)) })
	t.Run("by-reference", func(t *testing.T) {
		e := newEnv(t)
		e.svc.Forks = session.NewMemForks()
		testForkVectors(t, e)
	})
}

func testForkVectors(t *testing.T, e *env) {
	imported := map[string]string{} // parent case → its session id
	for _, c := range conformance.ForkCases(t) {
		t.Run(conformance.CaseName(c.Dir), func(t *testing.T) {
			want := conformance.MustRead(t, filepath.Join(c.Dir, "session.jsonl"))
			sid, ok := imported[c.Parent]
			if !ok {
				var res importResult
				e.ok(201, "POST", "/v1/import", conformance.MustRead(t, filepath.Join(c.Parent, "session.jsonl")), &res)
				sid, imported[c.Parent] = res.SessionID, res.SessionID
			}
			var fork struct {
				SessionID string `json:"sessionId"`
				LastSeq   uint64 `json:"lastSeq"`
			}
			e.ok(201, "POST", "/v1/sessions/"+sid+"/fork", fmt.Sprintf(`{"entryId":%q,"pi11":%v}`, c.LeafID, c.Pi11), &fork)
			got := forkEntries(t, e.ok(200, "GET", fmt.Sprintf("/v1/sessions/%s/export?minSeq=%d", fork.SessionID, fork.LastSeq), nil, nil))
			pis := forkEntries(t, want)
			// pi's file goes on after the fork with what was appended to it.
			var kept, labels []forkLine
			for _, l := range got {
				if l.Type == "label" {
					labels = append(labels, l)
				} else {
					kept = append(kept, l)
				}
			}
			if len(pis) < len(got) {
				t.Fatalf("the fork has %d entries, pi's file %d", len(got), len(pis))
			}
			ids := map[string]bool{}
			for i, l := range kept {
				if w := pis[i]; l.ID != w.ID || l.ParentID != w.ParentID || l.FirstKept != w.FirstKept || !bytes.Equal(l.canon, w.canon) {
					t.Errorf("entry %d: %s (parent %q, firstKept %q), pi's %s (parent %q, firstKept %q)", i, l.ID, l.ParentID, l.FirstKept, w.ID, w.ParentID, w.FirstKept)
				}
				if c.Pi11 && l.ParentID != "" && !ids[l.ParentID] {
					t.Errorf("entry %s: parent %q is not before it (an orphan) in a pi 1.1 fork", l.ID, l.ParentID)
				}
				ids[l.ID] = true
			}
			for i, l := range labels {
				if w := pis[len(kept)+i]; w.Type != "label" || l.TargetID != w.TargetID || l.Label != w.Label {
					t.Errorf("re-created label %d: on %s %q, pi's %s on %s %q", i, l.TargetID, l.Label, w.Type, w.TargetID, w.Label)
				}
			}
		})
	}
}

// forkLine is what TestForkVectors compares of an entry.
type forkLine struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	ParentID  string `json:"parentId"`
	FirstKept string `json:"firstKeptEntryId"`
	TargetID  string `json:"targetId"`
	Label     string `json:"label"`
	canon     []byte // the entry as a JSON value, its id fields left out
}

// forkEntries are the entries of a session file (the header and any
// repeated header left out).
func forkEntries(t *testing.T, file []byte) []forkLine {
	t.Helper()
	var out []forkLine
	for _, raw := range bytes.Split(file, []byte("\n")) {
		var l forkLine
		var m map[string]any
		if json.Unmarshal(raw, &l) != nil || json.Unmarshal(raw, &m) != nil || l.Type == "session" {
			continue
		}
		for _, k := range []string{"parentId", "firstKeptEntryId"} {
			delete(m, k)
		}
		l.canon, _ = json.Marshal(m)
		out = append(out, l)
	}
	return out
}

// TestListForks: parentSession lists a session's forks, whether their
// header names it by id (a node's fork) or by its file's path (a fork pi
// wrote, imported), and only those; a value that is no session id is 400.
func TestListForks(t *testing.T) {
	e := newEnv(t)
	e.svc.Forks = session.NewMemForks()
	dir := conformance.Dir(t)
	var parent, piFork importResult
	e.ok(201, "POST", "/v1/import", conformance.MustRead(t, filepath.Join(dir, "pi-v3", "p04-forks", "session.jsonl")), &parent)
	e.ok(201, "POST", "/v1/import", conformance.MustRead(t, filepath.Join(dir, "pi-v3", "p04-forks.fork1", "session.jsonl")), &piFork)
	var other importResult
	e.ok(201, "POST", "/v1/import", conformance.MustRead(t, filepath.Join(dir, "pi-v3", "p01-basic", "session.jsonl")), &other)
	var fork struct {
		SessionID string `json:"sessionId"`
		LastSeq   uint64 `json:"lastSeq"`
	}
	e.ok(201, "POST", "/v1/sessions/"+parent.SessionID+"/fork", `{"entryId":"19e78280"}`, &fork)
	var page struct {
		Sessions []struct {
			SessionID string `json:"sessionId"`
		} `json:"sessions"`
	}
	e.ok(200, "GET", fmt.Sprintf("/v1/sessions?parentSession=%s&minSeq=%d", parent.SessionID, fork.LastSeq), nil, &page)
	var got []string
	for _, s := range page.Sessions {
		got = append(got, s.SessionID)
	}
	if want := []string{piFork.SessionID, fork.SessionID}; !slices.Equal(got, want) {
		t.Fatalf("the forks of %s list as %v, want %v", parent.SessionID, got, want)
	}
	e.fails(400, wire.CodeInvalid, "parentSession", "GET", "/v1/sessions?parentSession=x", nil)
}
