package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestForksAcrossShards forks one session of a 4-shard node by reference
// eight times (forks land in other shards' streams than their parent's),
// then checks each fork's export — the parent's path, byte for byte, after
// a header naming it — through the Store that applied it, after the
// parent's erasure, and after a restart from the snapshots; a node that
// holds one shard of the four reads the forks of the shards it does not
// hold from the log, across shards, the same.
func TestForksAcrossShards(t *testing.T) {
	dir := t.TempDir()
	for _, hold := range []int{0, 1} {
		t.Run(fmt.Sprintf("hold=%d", hold), func(t *testing.T) {
			tune := func(c *Config) { c.Shards, c.Hold, c.DataDir = 4, hold, fmt.Sprintf("%s/%d", dir, hold) }
			m, _ := startNode(t, tune)
			base := "http://" + m.HTTPAddr
			var entries []string
			for i := range 12 {
				word := ""
				if i == 2 {
					word = " quokka"
				}
				entries = append(entries, fmt.Sprintf(`{"type":"message","message":{"role":"user","content":"line %d%s"}}`, i, word))
			}
			var parent struct {
				SessionID string `json:"sessionId"`
				Entries   []struct {
					ID string `json:"id"`
				} `json:"entries"`
			}
			do(t, "POST", base+"/v1/sessions", `{"entries":[`+strings.Join(entries, ",")+`]}`, 201, &parent)
			pfile := do(t, "GET", base+"/v1/sessions/"+parent.SessionID+"/export", "", 200, nil)
			plines := bytes.Split(bytes.TrimSuffix(pfile, []byte("\n")), []byte("\n"))

			want := map[string][]byte{}
			shards := map[int]bool{}
			for k := range 8 {
				at := 3 + k
				var fork struct {
					SessionID string `json:"sessionId"`
					LastSeq   uint64 `json:"lastSeq"`
				}
				do(t, "POST", base+"/v1/sessions/"+parent.SessionID+"/fork", fmt.Sprintf(`{"entryId":%q}`, parent.Entries[at].ID), 201, &fork)
				got := do(t, "GET", fmt.Sprintf("%s/v1/sessions/%s/export?minSeq=%d", base, fork.SessionID, fork.LastSeq), "", 200, nil)
				header := fmt.Sprintf(`"id":%q`, fork.SessionID)
				lines := bytes.Split(bytes.TrimSuffix(got, []byte("\n")), []byte("\n"))
				if !bytes.Contains(lines[0], []byte(header)) || !bytes.Contains(lines[0], []byte(`"parentSession":"`+parent.SessionID+`"`)) {
					t.Fatalf("fork header %s", lines[0])
				}
				if len(lines) != at+2 || !bytes.Equal(bytes.Join(lines[1:], []byte("\n")), bytes.Join(plines[1:at+2], []byte("\n"))) {
					t.Fatalf("fork at entry %d exports %d lines:\n%s\nthe parent's path:\n%s", at, len(lines), got, bytes.Join(plines[:at+2], []byte("\n")))
				}
				if recs, err := m.svc.Log.Read(context.Background(), fork.SessionID, 0); err != nil || len(recs) != 1 || recs[0].Fork == nil {
					t.Fatalf("fork %s stored %d records (want its header only), err %v", fork.SessionID, len(recs), err)
				}
				want[fork.SessionID] = got
				shards[m.sharded.Map().Of(fork.SessionID)] = true
			}
			if len(shards) < 2 {
				t.Fatalf("the forks all landed in shard(s) %v", shards)
			}
			check := func(when, base string) {
				t.Helper()
				for id, w := range want {
					if got := do(t, "GET", base+"/v1/sessions/"+id+"/export", "", 200, nil); !bytes.Equal(got, w) {
						t.Fatalf("%s, fork %s exports:\n%s\nwant:\n%s", when, id, got, w)
					}
					// Paged by sequence, two at a time: the inherited
					// entries' sequences increase below the fork's own.
					paged := w[:bytes.IndexByte(w, '\n')+1]
					for after := uint64(0); ; {
						var page struct {
							Entries []struct {
								Seq   uint64          `json:"seq"`
								Entry json.RawMessage `json:"entry"`
							} `json:"entries"`
						}
						do(t, "GET", fmt.Sprintf("%s/v1/sessions/%s/entries?afterSeq=%d&limit=2", base, id, after), "", 200, &page)
						from := after
						for _, e := range page.Entries {
							// One sequence may repeat within a page (a
							// header early in its stream), never across.
							if e.Seq <= from || e.Seq < after {
								t.Fatalf("%s, fork %s: sequence %d in the page after %d, after %d", when, id, e.Seq, from, after)
							}
							paged, after = append(append(paged, e.Entry...), '\n'), e.Seq
						}
						if len(page.Entries) < 2 {
							break
						}
					}
					if !bytes.Equal(paged, w) {
						t.Fatalf("%s, fork %s paged:\n%s\nwant:\n%s", when, id, paged, w)
					}
				}
			}
			check("just forked", base)
			// Its forks, listed by their parent (across shards).
			var page struct {
				Sessions []struct {
					SessionID string `json:"sessionId"`
				} `json:"sessions"`
			}
			do(t, "GET", base+"/v1/sessions?limit=100&consistency=strong&parentSession="+parent.SessionID, "", 200, &page)
			listed := map[string]bool{}
			for _, s := range page.Sessions {
				listed[s.SessionID] = true
			}
			for id := range want {
				if !listed[id] || len(listed) != len(want) {
					t.Fatalf("the forks of %s list as %v", parent.SessionID, listed)
				}
			}
			do(t, "GET", base+"/v1/sessions?parentSession=nope", "", 400, nil)
			do(t, "DELETE", base+"/v1/sessions/"+parent.SessionID, "", 200, nil)
			do(t, "GET", base+"/v1/sessions/"+parent.SessionID+"/export", "", 404, nil)
			check("after the parent's erasure", base)
			// The forks' inherited entries are searchable under them now
			// (under the parent before).
			var found struct {
				Hits []struct {
					SessionID string `json:"sessionId"`
				} `json:"hits"`
			}
			do(t, "GET", base+"/v1/search?q=quokka&consistency=strong&limit=100", "", 200, &found)
			hit := map[string]bool{}
			for _, h := range found.Hits {
				hit[h.SessionID] = true
			}
			for id := range want {
				if !hit[id] || len(hit) != len(want) {
					t.Fatalf("after the parent's erasure, a search finds %v, want the %d forks", hit, len(want))
				}
			}
			if err := m.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			m, _ = startNode(t, tune)
			defer m.Close(context.Background())
			check("after a restart", "http://"+m.HTTPAddr)
		})
	}
}

// do sends a request and checks its status; with out it decodes the body
// into it. It returns the body.
func do(t *testing.T, method, url, body string, status int, out any) []byte {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("%s %s: %d %s, want %d", method, url, resp.StatusCode, b, status)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatal(err)
		}
	}
	return b
}
