package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/search"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/wire"
)

// search runs GET /v1/search with q and extra parameters (k=v) and
// decodes the reply.
func (e *env) search(q string, params ...string) wire.SearchReply {
	e.t.Helper()
	var rep wire.SearchReply
	e.ok(200, "GET", searchPath(q, params...), nil, &rep)
	return rep
}

func searchPath(q string, params ...string) string {
	v := url.Values{"q": {q}}
	for _, p := range params {
		k, val, _ := strings.Cut(p, "=")
		v.Set(k, val)
	}
	return "/v1/search?" + v.Encode()
}

func snippetText(h wire.SearchHit) (all, marked string) {
	var m []string
	for _, p := range h.Snippet {
		all += p.Text
		if p.Match {
			m = append(m, p.Text)
		}
	}
	return all, strings.Join(m, ",")
}

// hitIDs are the entry ids of the hits, in order.
func hitIDs(hits []wire.SearchHit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.EntryID)
	}
	return out
}

// TestSearch: a write is found by the search right after it (the node's
// own write, no minSeq); each hit says where it is, whether it is on the
// default path, and marks what matched; branch=path leaves the abandoned
// branch out; paging visits every hit once; an archived (purged) session
// leaves the results; bad input is 400 naming the field.
func TestSearch(t *testing.T) {
	e := newEnv(t)
	res := e.create(userMsg("u1", "where does the salt check fail?"),
		`{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[{"type":"text","text":"The salt check fails in auth.go"},{"type":"toolCall","id":"t1","name":"bash","arguments":{"command":"grep -rn salt src/"}}],"provider":"p","model":"claude-opus","timestamp":2}}`)
	sid := res.SessionID
	// A second branch from u1: a1 is abandoned.
	e.ok(200, "POST", "/v1/sessions/"+sid+"/entries", `{"entries":[`+
		`{"type":"message","id":"a2","parentId":"u1","message":{"role":"assistant","content":[{"type":"text","text":"Salt is fine; the clock skews"}],"provider":"p","model":"gpt-5","timestamp":3}},`+
		`{"type":"session_info","id":"n1","parentId":"a2","name":"Salt hunt"}]}`, nil)

	rep := e.search("salt")
	if got := hitIDs(rep.Hits); len(got) != 4 || rep.Total != 4 || rep.Next != "" {
		t.Fatalf("salt: hits %v, total %d, next %q, want u1, a1, a2, n1 in one page", got, rep.Total, rep.Next)
	}
	byID := map[string]wire.SearchHit{}
	for _, h := range rep.Hits {
		byID[h.EntryID] = h
		if h.SessionID != sid || h.Name == nil || *h.Name != "Salt hunt" || h.Timestamp == "" || h.Score <= 0 {
			t.Fatalf("hit %+v", h)
		}
	}
	if h := byID["a1"]; h.OnPath || h.Type != "message" || h.Role != "assistant" {
		t.Fatalf("a1, on the abandoned branch: %+v", h)
	}
	if h := byID["a2"]; !h.OnPath || h.Role != "assistant" {
		t.Fatalf("a2, on the default path: %+v", h)
	}
	if h := byID["n1"]; h.Type != "session_info" || h.Role != "" || !h.OnPath {
		t.Fatalf("n1: %+v", h)
	}
	if all, marked := snippetText(byID["a1"]); all != "The salt check fails in auth.go bash grep -rn salt src/" || marked != "salt,salt" {
		t.Fatalf("a1's snippet: %q, marked %q", all, marked)
	}
	if _, marked := snippetText(byID["a2"]); marked != "Salt" {
		t.Fatalf("a2's snippet marks %q, want Salt as written", marked)
	}

	if got := hitIDs(e.search("salt", "branch=path").Hits); slices.Contains(got, "a1") || len(got) != 3 {
		t.Fatalf("branch=path: %v, want every hit but a1", got)
	}
	for q, want := range map[string][]string{
		`"salt check"`:              {"u1", "a1"},
		"salt -check":               {"a2", "n1"},
		"sal* role:assistant":       {"a1", "a2"},
		"tool:bash":                 {"a1"},
		"model:claude*":             {"a1"},
		"role:user cwd:/nowhere":    nil,
		"type:session_info":         {"n1"},
		"name:hunt skews":           {"a2"},
		"session:" + sid + " fails": {"a1"},
	} {
		got := hitIDs(e.search(q).Hits)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", q, got, want)
		}
	}

	// Paging: limit 1 visits each hit once, best first, as one page has them.
	var paged []string
	cursor := ""
	for range 10 {
		ps := []string{"limit=1"}
		if cursor != "" {
			ps = append(ps, "cursor="+cursor)
		}
		p := e.search("salt", ps...)
		paged = append(paged, hitIDs(p.Hits)...)
		if cursor = p.Next; cursor == "" {
			break
		}
	}
	if want := hitIDs(rep.Hits); !slices.Equal(paged, want) {
		t.Fatalf("paged %v, want %v", paged, want)
	}

	for _, c := range []struct{ path, field, msg string }{
		{searchPath(""), "q", "required"},
		{searchPath(`salt "open`), "q", "position 6"},
		{searchPath("rol:user"), "q", `position 1: unknown filter "rol:"`},
		{searchPath("salt", "branch=main"), "branch", `"all"`},
		{searchPath("salt", "limit=-1"), "limit", "positive"},
		{searchPath("salt", "cursor=garbage"), "cursor", "not a cursor"},
	} {
		if msg := e.fails(400, "invalid", c.field, "GET", c.path, nil); !strings.Contains(msg, c.msg) {
			t.Errorf("%s: %q, want it to say %q", c.path, msg, c.msg)
		}
	}

	// Archived: the purge's notice reaches the Store and the index; a
	// search that waits for it (minSeq) no longer finds the session.
	if err := e.log.Purge(context.Background(), sid); err != nil {
		t.Fatal(err)
	}
	last, _ := e.log.LastSeq(context.Background())
	if rep := e.search("salt", fmt.Sprintf("minSeq=%d", last)); len(rep.Hits) != 0 || rep.Total != 0 {
		t.Fatalf("after the purge: %+v", rep)
	}
}

// TestSearchNATS: pi.v1.search answers what GET /v1/search does, and a
// bad query the same error.
func TestSearchNATS(t *testing.T) {
	e, nc, _ := natsEnv(t)
	var c writeResult
	reqOK(t, nc, "create", `{"entries":[`+userMsg("u1", "salt check")+`,`+assistantMsg("salt is fine")+`]}`, &c)
	got := reqOK(t, nc, "search", fmt.Sprintf(`{"q":"salt","minSeq":%d}`, c.LastSeq), nil)
	want := e.ok(200, "GET", searchPath("salt", fmt.Sprintf("minSeq=%d", c.LastSeq)), nil, nil)
	if string(got) != string(want) {
		t.Fatalf("pi.v1.search differs from GET /v1/search:\n%s\n%s", got, want)
	}
	var rep wire.SearchReply
	if err := json.Unmarshal(got, &rep); err != nil || len(rep.Hits) != 2 {
		t.Fatalf("%s", got)
	}
	reqFails(t, nc, "search", `{"q":"-"}`, 400, "invalid", "q")
}

// TestSearchTenant: a token confined to a cwd prefix finds only its own
// sessions' entries, whatever the query asks for.
func TestSearchTenant(t *testing.T) {
	te := newTenantEnv(t, "salt")
	e, adm, a, mine, others := te.env, te.adm, te.a, te.mine, te.others
	for _, q := range []string{"salt", "cwd:/work salt", "cwd:/work/team-b", "-cwd:/work/team-a", "session:" + others[0], "role:user"} {
		code, b := e.do("GET", searchPath(q), nil, a...)
		var rep wire.SearchReply
		if code != 200 || json.Unmarshal(b, &rep) != nil {
			t.Fatalf("%s: %d %s", q, code, b)
		}
		for _, h := range rep.Hits {
			if !mine[h.SessionID] {
				t.Fatalf("%s: the tenant sees %s (%s)", q, h.SessionID, h.Cwd)
			}
		}
		if q == "salt" && (len(rep.Hits) != len(mine) || rep.Total != len(mine)) {
			t.Fatalf("salt: %d hits (total %d), want the %d sessions under the prefix", len(rep.Hits), rep.Total, len(mine))
		}
	}
	code, b := e.do("GET", searchPath("salt"), nil, adm...)
	var rep wire.SearchReply
	if code != 200 || json.Unmarshal(b, &rep) != nil || len(rep.Hits) != len(mine)+len(others) {
		t.Fatalf("admin: %d %s", code, b)
	}
}

// TestSearchShards: over four shards, one search merges every shard's
// hits in ranking order, and paging through it visits each once.
func TestSearchShards(t *testing.T) {
	e := newShardedEnv(t, 4)
	want := map[string]bool{}
	// At least 24 sessions, and more until every shard has one (by the
	// shard map, not by whether its Store has applied it yet): else the
	// test would not merge.
	placed := map[*store.Store]bool{}
	for i := 0; i < 24 || len(placed) < len(e.svc.Store.All()); i++ {
		if i == 200 {
			t.Fatalf("200 sessions and only %d of the shards hold one", len(placed))
		}
		words := strings.Repeat("salt ", 1+i%5)
		res := e.create(userMsg("u1", words+fmt.Sprintf("question %d", i)), assistantMsg("no match here"))
		want[res.SessionID] = true
		placed[e.svc.Store.For(res.SessionID)] = true
	}
	rep := e.search("salt", "limit=100")
	if len(rep.Hits) != len(want) || rep.Total != len(want) {
		t.Fatalf("%d hits, total %d, want %d", len(rep.Hits), rep.Total, len(want))
	}
	for i := 1; i < len(rep.Hits); i++ {
		if rep.Hits[i].Score > rep.Hits[i-1].Score {
			t.Fatalf("hit %d scores %v, above hit %d's %v", i, rep.Hits[i].Score, i-1, rep.Hits[i-1].Score)
		}
	}
	seen := map[string]bool{}
	cursor := ""
	for range 10 {
		ps := []string{"limit=5"}
		if cursor != "" {
			ps = append(ps, "cursor="+cursor)
		}
		p := e.search("salt", ps...)
		for _, h := range p.Hits {
			if seen[h.SessionID] || !want[h.SessionID] {
				t.Fatalf("hit %s twice or unknown", h.SessionID)
			}
			seen[h.SessionID] = true
		}
		if cursor = p.Next; cursor == "" {
			break
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("paged through %d sessions, want %d", len(seen), len(want))
	}

	// A phrase, its pages cut short by a budget of 2 entries checked
	// against their text, over entries holding both words in another
	// order: every hit once, through the merge of cut pages.
	for i := range 12 {
		e.create(userMsg("u1", fmt.Sprintf("question %d before the salt", i)), assistantMsg("no match here"))
	}
	defer func(was int) { search.CheckBudget = was }(search.CheckBudget)
	search.CheckBudget = 2
	seen, cursor = map[string]bool{}, ""
	short := 0
	for range 100 {
		ps := []string{"limit=5"}
		if cursor != "" {
			ps = append(ps, "cursor="+cursor)
		}
		p := e.search(`"salt question"`, ps...)
		for _, h := range p.Hits {
			if seen[h.SessionID] || !want[h.SessionID] {
				t.Fatalf("hit %s twice or unknown", h.SessionID)
			}
			seen[h.SessionID] = true
		}
		if p.Next != "" && len(p.Hits) < 5 {
			short++
		}
		if cursor = p.Next; cursor == "" {
			break
		}
	}
	if len(seen) != len(want) || short == 0 {
		t.Fatalf("the phrase paged through %d sessions (want %d), %d pages cut short", len(seen), len(want), short)
	}
}
