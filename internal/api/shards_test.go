package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestShardedAPI: over a log of four shards, sessions land on the shard
// their id names, every sequence the API hands out is of that shard, the
// catalog pages through all shards in id order, and waits by sequence go
// to the sequence's shard.
func TestShardedAPI(t *testing.T) {
	const n, sessions = 4, 40
	e := newShardedEnv(t, n)
	var res []writeResult
	onShard := make([]int, n)
	for i := range sessions {
		r := e.create(userMsg("", fmt.Sprint("hi ", i)), assistantMsg("hello"))
		k := shard.Of(r.SessionID, n)
		if shard.OfSeq(r.LastSeq) != k {
			t.Fatalf("session %s (shard %d) written at %d, a sequence of shard %d", r.SessionID, k, r.LastSeq, shard.OfSeq(r.LastSeq))
		}
		if last, err := e.shards[k].SessionLastSeq(t.Context(), r.SessionID); err != nil || last != shard.Raw(r.LastSeq) {
			t.Fatalf("shard %d's log has %s at %d, %v; want %d", k, r.SessionID, last, err, shard.Raw(r.LastSeq))
		}
		onShard[k]++
		res = append(res, r)
	}
	for k, c := range onShard {
		if c == 0 {
			t.Fatalf("no session of %d on shard %d: %v", sessions, k, onShard)
		}
	}

	// Read your writes, with another session's (another shard's) lastSeq
	// as minSeq, and linearizable.
	a, b := res[0], res[1]
	for _, r := range res[1:] {
		if shard.OfSeq(r.LastSeq) != shard.OfSeq(a.LastSeq) {
			b = r
			break
		}
	}
	var d struct {
		LastSeq uint64 `json:"lastSeq"`
	}
	e.ok(200, "GET", fmt.Sprintf("/v1/sessions/%s?minSeq=%d", a.SessionID, b.LastSeq), nil, &d)
	if d.LastSeq != a.LastSeq {
		t.Fatalf("lastSeq %d, want %d", d.LastSeq, a.LastSeq)
	}
	e.ok(200, "GET", "/v1/sessions/"+a.SessionID+"?consistency=strong", nil, nil)
	// A sequence of a shard the log does not have is no position at all.
	e.fails(400, wire.CodeInvalid, "minSeq", "GET", fmt.Sprintf("/v1/sessions/%s?minSeq=%d", a.SessionID, shard.Seq(9, 1)), nil)
	// Appending with another shard's sequence as the expectation: a
	// conflict, as any sequence that is not the session's last.
	e.fails(409, wire.CodeConflict, "", "POST", "/v1/sessions/"+a.SessionID+"/entries",
		fmt.Sprintf(`{"entries":[%s],"expectLastSeq":%d}`, userMsg("", "late"), b.LastSeq))

	// The catalog: every session once, in id order, over pages that cross
	// shards; and linearizable over every shard.
	var seen []string
	for after := ""; ; {
		var page struct {
			Sessions []wire.Info `json:"sessions"`
			Next     string      `json:"next"`
		}
		e.ok(200, "GET", "/v1/sessions?limit=7&consistency=strong&cursor="+after, nil, &page)
		for _, in := range page.Sessions {
			if len(seen) > 0 && in.SessionID <= seen[len(seen)-1] {
				t.Fatalf("catalog out of order: %s after %s", in.SessionID, seen[len(seen)-1])
			}
			seen = append(seen, in.SessionID)
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	if len(seen) != sessions {
		t.Fatalf("catalog listed %d sessions, want %d", len(seen), sessions)
	}

	// Status: each shard's Store, and sums above.
	var st wire.StatusReply
	e.ok(http.StatusOK, "GET", "/v1/status", nil, &st)
	if len(st.Store.Shards) != n || st.Store.Sessions != sessions {
		t.Fatalf("status store: %d shards, %d sessions; want %d and %d", len(st.Store.Shards), st.Store.Sessions, n, sessions)
	}
	total := 0
	for k, sh := range st.Store.Shards {
		if sh.Shard != k || sh.Sessions != onShard[k] || sh.Applied != 0 && shard.OfSeq(sh.Applied) != k {
			t.Fatalf("status shard %d: %+v, want %d sessions", k, sh, onShard[k])
		}
		total += int(shard.Raw(sh.Applied))
	}
	if st.Store.Applied != uint64(total) || st.Store.Lag != 0 {
		t.Fatalf("status store applied %d lag %d, want the shards' sum %d and 0", st.Store.Applied, st.Store.Lag, total)
	}
	// The catalog's freshness is of every shard, whichever shard its one
	// session came from.
	resp := e.raw("GET", "/v1/sessions?cursor="+seen[len(seen)-2], nil) // the last session alone
	resp.Body.Close()
	if got := resp.Header.Get("Pi-Applied-Seq"); got != fmt.Sprint(total) {
		t.Fatalf("catalog page of one: Pi-Applied-Seq %s, want the shards' sum %d", got, total)
	}
}
