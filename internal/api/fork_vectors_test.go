package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/conformance"
)

// TestForkVectors forks, through the API, every parent of a fork case of
// both vector sets at the entry pi forked at — as pi 0.73.1 (pi-v3) and
// with pi11 as pi 1.1 (pi-v3-1.1) — and compares the new session's entries
// with the file pi's createBranchedSession wrote: the same entries, in
// order, with the same parents (orphans where 0.73.1 leaves them, none with
// pi11) and compaction pointers; the labels pi re-creates at the end name
// the same entries.
func TestForkVectors(t *testing.T) {
	e := newEnv(t)
	dir := conformance.Dir(t)
	imported := map[string]string{} // parent case → its session id
	forks := 0
	for _, set := range []struct {
		name string
		pi11 bool
	}{{"pi-v3", false}, {"pi-v3-1.1", true}} {
		for _, c := range conformance.Cases(t, dir, set.name) {
			if !strings.Contains(filepath.Base(c), ".fork") {
				continue
			}
			var ops []struct {
				Op       string `json:"op"`
				FromCase string `json:"fromCase"`
				LeafID   string `json:"leafId"`
			}
			if err := json.Unmarshal(conformance.MustRead(t, filepath.Join(c, "ops.json")), &ops); err != nil || len(ops) == 0 || ops[0].Op != "createBranchedSession" {
				t.Fatalf("%s: ops.json does not start with createBranchedSession: %v", c, err)
			}
			want, err := os.ReadFile(filepath.Join(c, "session.jsonl"))
			if os.IsNotExist(err) {
				continue // pi wrote no file for this fork
			}
			parent := filepath.Join(filepath.Dir(c), ops[0].FromCase)
			forks++
			t.Run(conformance.CaseName(c), func(t *testing.T) {
				sid, ok := imported[parent]
				if !ok {
					var res importResult
					e.ok(201, "POST", "/v1/import", conformance.MustRead(t, filepath.Join(parent, "session.jsonl")), &res)
					sid, imported[parent] = res.SessionID, res.SessionID
				}
				var fork struct {
					SessionID string `json:"sessionId"`
					LastSeq   uint64 `json:"lastSeq"`
				}
				e.ok(201, "POST", "/v1/sessions/"+sid+"/fork", fmt.Sprintf(`{"entryId":%q,"pi11":%v}`, ops[0].LeafID, set.pi11), &fork)
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
					if set.pi11 && l.ParentID != "" && !ids[l.ParentID] {
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
	if forks < 6 {
		t.Fatalf("only %d fork cases with a file", forks)
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
