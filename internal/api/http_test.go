package api_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

func TestCreateAndRead(t *testing.T) {
	e := newEnv(t)
	res := e.create(
		`{"type":"model_change","provider":"anthropic","modelId":"claude"}`,
		userMsg("u1", "hello"),
		assistantMsg("hi"),
	)
	if res.SessionID == "" || len(res.Entries) != 3 || res.Entries[1].ID != "u1" || res.LastSeq != res.Entries[2].Seq {
		t.Fatalf("create result %+v", res)
	}
	sid, q := res.SessionID, fmt.Sprintf("?minSeq=%d", res.LastSeq)

	var info struct {
		SessionID  string            `json:"sessionId"`
		Cwd        string            `json:"cwd"`
		EntryCount int               `json:"entryCount"`
		LastSeq    uint64            `json:"lastSeq"`
		Header     json.RawMessage   `json:"header"`
		Labels     map[string]string `json:"labels"`
		LeafID     *string           `json:"leafId"`
	}
	e.ok(200, "GET", "/v1/sessions/"+sid+q, nil, &info)
	if info.SessionID != sid || info.EntryCount != 3 || info.LastSeq != res.LastSeq || info.LeafID == nil || *info.LeafID != res.Entries[2].ID || !strings.Contains(string(info.Header), sid) {
		t.Fatalf("get: %+v", info)
	}

	var list struct {
		Sessions []struct {
			SessionID string `json:"sessionId"`
		} `json:"sessions"`
		Next string `json:"next"`
	}
	e.ok(200, "GET", "/v1/sessions"+q+"&limit=10", nil, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].SessionID != sid || list.Next != "" {
		t.Fatalf("list: %+v", list)
	}
	e.ok(200, "GET", "/v1/sessions?cwd=/nowhere", nil, &list)
	if len(list.Sessions) != 0 {
		t.Fatalf("list with cwd filter: %+v", list)
	}
	// preview: the first user message, as pi's /resume lists sessions.
	var previews struct {
		Sessions []struct {
			FirstMessage *string `json:"firstMessage"`
		} `json:"sessions"`
	}
	e.ok(200, "GET", "/v1/sessions"+q+"&preview=true", nil, &previews)
	if len(previews.Sessions) != 1 || previews.Sessions[0].FirstMessage == nil || *previews.Sessions[0].FirstMessage != "hello" {
		t.Fatalf("list with preview: %+v", previews)
	}
	if raw := e.ok(200, "GET", "/v1/sessions"+q, nil, nil); strings.Contains(string(raw), "firstMessage") {
		t.Fatalf("list without preview has one: %s", raw)
	}
	e.ok(400, "GET", "/v1/sessions?preview=maybe", nil, nil)

	var ents struct {
		Entries []struct {
			Seq   uint64          `json:"seq"`
			Entry json.RawMessage `json:"entry"`
		} `json:"entries"`
		LastSeq uint64 `json:"lastSeq"`
	}
	e.ok(200, "GET", fmt.Sprintf("/v1/sessions/%s/entries?afterSeq=%d&limit=1", sid, res.Entries[0].Seq), nil, &ents)
	if len(ents.Entries) != 1 || ents.Entries[0].Seq != res.Entries[1].Seq || !strings.Contains(string(ents.Entries[0].Entry), `"id":"u1"`) || ents.LastSeq != res.LastSeq {
		t.Fatalf("entries: %+v", ents)
	}

	tree := e.ok(200, "GET", "/v1/sessions/"+sid+"/tree", nil, nil)
	if !strings.Contains(string(tree), `"type":"model_change"`) || !strings.HasSuffix(string(tree), `"leafId":"`+res.Entries[2].ID+`"}`) {
		t.Fatalf("tree: %s", tree)
	}
	var c struct {
		LeafID   *string           `json:"leafId"`
		Path     []string          `json:"path"`
		Model    map[string]string `json:"model"`
		Messages []json.RawMessage `json:"messages"`
	}
	e.ok(200, "GET", "/v1/sessions/"+sid+"/context?leaf=u1", nil, &c)
	if *c.LeafID != "u1" || len(c.Path) != 2 || len(c.Messages) != 1 || c.Model["modelId"] != "claude" {
		t.Fatalf("context at u1: %+v", c)
	}
	e.ok(200, "GET", "/v1/sessions/"+sid+"/context?leaf=null&format=llm", nil, &c)
	if c.LeafID != nil || len(c.Path) != 0 || len(c.Messages) != 0 {
		t.Fatalf("context at null: %+v", c)
	}

	resp := e.raw("GET", "/v1/sessions/"+sid+"/export", nil)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "application/x-ndjson" {
		t.Fatalf("export: %d %s", resp.StatusCode, ct)
	}
}

func TestReadErrors(t *testing.T) {
	e := newEnv(t)
	res := e.create(userMsg("u1", "q"))
	sid := res.SessionID
	missing := "01a22ba6-0000-7000-8000-000000000000"
	e.fails(400, wire.CodeInvalid, "sessionId", "GET", "/v1/sessions/not-a-uuid", nil)
	e.fails(404, wire.CodeNotFound, "", "GET", "/v1/sessions/"+missing, nil)
	e.fails(404, wire.CodeNotFound, "", "GET", "/v1/sessions/"+missing+"/export", nil)
	q := fmt.Sprintf("?minSeq=%d", res.LastSeq)
	e.fails(400, wire.CodeInvalid, "format", "GET", "/v1/sessions/"+sid+"/context"+q+"&format=html", nil)
	e.fails(404, wire.CodeNotFound, "", "GET", "/v1/sessions/"+sid+"/context?leaf=nope", nil)
	e.fails(400, wire.CodeInvalid, "client", "GET", "/v1/sessions/"+sid+"/tree?client=a.b", nil)
	e.fails(400, wire.CodeInvalid, "minSeq", "GET", "/v1/sessions/"+sid+"?minSeq=-1", nil)
	e.fails(400, wire.CodeInvalid, "afterSeq", "GET", "/v1/sessions/"+sid+"/entries?afterSeq=x", nil)
	e.fails(400, wire.CodeInvalid, "limit", "GET", "/v1/sessions?limit=0", nil)
	e.fails(400, wire.CodeInvalid, "since", "GET", "/v1/sessions?since=yesterday", nil)
	e.fails(404, wire.CodeNotFound, "", "GET", "/v1/nothing-here", nil)
}

func TestMinSeq(t *testing.T) {
	e := newEnv(t, func(c *api.Config) { c.MinSeqTimeout = 150 * time.Millisecond })
	res := e.create(userMsg("", "q"))
	sid := res.SessionID
	for i := range 10 {
		var w writeResult
		e.ok(200, "POST", "/v1/sessions/"+sid+"/entries", `{"entries":[`+userMsg(fmt.Sprintf("m%d", i), "x")+`]}`, &w)
		// Read our own write at once: minSeq makes this node wait for it.
		var ents struct {
			Entries []struct{ Seq uint64 } `json:"entries"`
		}
		e.ok(200, "GET", fmt.Sprintf("/v1/sessions/%s/entries?minSeq=%d&afterSeq=%d", sid, w.LastSeq, w.LastSeq-1), nil, &ents)
		if len(ents.Entries) != 1 || ents.Entries[0].Seq != w.LastSeq {
			t.Fatalf("write %d (seq %d) not read back: %+v", i, w.LastSeq, ents)
		}
	}
	start := time.Now()
	msg := e.fails(504, wire.CodeTimeout, "", "GET", "/v1/sessions/"+sid+"?minSeq=999999", nil)
	if d := time.Since(start); d > testutil.Scale(2*time.Second) {
		t.Fatalf("504 after %v, want about 150ms", d)
	}
	if !strings.Contains(msg, "999999") {
		t.Fatalf("timeout message should name the sequence: %s", msg)
	}
}

func TestCursors(t *testing.T) {
	e := newEnv(t)
	res := e.create(userMsg("u1", "q"), assistantMsg("a"), userMsg("u2", "q2"))
	sid := res.SessionID
	base := "/v1/sessions/" + sid + "/cursors"
	q := fmt.Sprintf("?minSeq=%d", res.LastSeq)

	var cur struct {
		Client   string  `json:"client"`
		LeafID   *string `json:"leafId"`
		Revision uint64  `json:"revision"`
	}
	e.ok(200, "PUT", base+"/w1"+q, `{"leafId":"u1"}`, &cur)
	if cur.Client != "w1" || *cur.LeafID != "u1" || cur.Revision == 0 {
		t.Fatalf("put: %+v", cur)
	}
	rev := cur.Revision
	e.fails(409, wire.CodeConflict, "", "PUT", base+"/w1", fmt.Sprintf(`{"leafId":"u2","expectRevision":%d}`, rev+100))
	e.ok(200, "PUT", base+"/w1", fmt.Sprintf(`{"leafId":null,"expectRevision":%d}`, rev), &cur)
	if cur.LeafID != nil || cur.Revision <= rev {
		t.Fatalf("put null: %+v", cur)
	}
	e.ok(200, "PUT", base+"/w1", `{"leafId":"u1"}`, nil)
	e.ok(200, "GET", base+"/w1", nil, &cur)
	if *cur.LeafID != "u1" {
		t.Fatalf("get: %+v", cur)
	}
	// The cursor selects the leaf of context and tree, and the parent of
	// an append with that client; the append moves it.
	var c struct {
		LeafID string `json:"leafId"`
	}
	e.ok(200, "GET", "/v1/sessions/"+sid+"/context?client=w1", nil, &c)
	if c.LeafID != "u1" {
		t.Fatalf("context via cursor: %+v", c)
	}
	var w writeResult
	e.ok(200, "POST", "/v1/sessions/"+sid+"/entries", `{"client":"w1","entries":[`+userMsg("b1", "branch")+`]}`, &w)
	var detail struct {
		Entry struct {
			ParentID string `json:"parentId"`
		} `json:"entry"`
	}
	var ents struct {
		Entries []json.RawMessage `json:"entries"`
	}
	e.ok(200, "GET", fmt.Sprintf("/v1/sessions/%s/entries?minSeq=%d&afterSeq=%d", sid, w.LastSeq, w.LastSeq-1), nil, &ents)
	if err := json.Unmarshal(ents.Entries[0], &detail); err != nil || detail.Entry.ParentID != "u1" {
		t.Fatalf("append with client: parent %q, want u1 (%v)", detail.Entry.ParentID, err)
	}
	e.ok(200, "GET", base+"/w1", nil, &cur)
	if *cur.LeafID != "b1" {
		t.Fatalf("append did not move the cursor: %+v", cur)
	}
	e.ok(200, "PUT", base+"/w2", `{"leafId":"u2"}`, nil)
	var list struct {
		Cursors []struct{ Client string } `json:"cursors"`
	}
	e.ok(200, "GET", base, nil, &list)
	if len(list.Cursors) != 2 || list.Cursors[0].Client != "w1" || list.Cursors[1].Client != "w2" {
		t.Fatalf("list: %+v", list)
	}
	if code, b := e.do("DELETE", base+"/w2", nil); code != 204 || len(b) != 0 {
		t.Fatalf("delete: %d %s", code, b)
	}
	e.fails(404, wire.CodeNotFound, "", "GET", base+"/w2", nil)

	e.fails(400, wire.CodeInvalid, "leafId", "PUT", base+"/w1", `{}`)
	e.fails(400, wire.CodeInvalid, "leafId", "PUT", base+"/w1", `{"leafId":""}`)
	e.fails(400, wire.CodeInvalid, "leafId", "PUT", base+"/w1", `{"leafId":42}`)
	e.fails(400, wire.CodeInvalid, "leafId", "PUT", base+"/w1", `{"leafId":"nope"}`)
	e.fails(400, wire.CodeInvalid, "expectRevision", "PUT", base+"/w1", `{"leafId":"u1","expectRevision":"1"}`)
	e.fails(400, wire.CodeInvalid, "client", "PUT", base+"/"+url.PathEscape("a b"), `{"leafId":"u1"}`)
}

func TestFork(t *testing.T) {
	e := newEnv(t)
	res := e.create(userMsg("u1", "q"), assistantMsg("a"), userMsg("u2", "q2"))
	sid := res.SessionID
	var f struct {
		SessionID string `json:"sessionId"`
		LastSeq   uint64 `json:"lastSeq"`
	}
	e.ok(201, "POST", fmt.Sprintf("/v1/sessions/%s/fork?minSeq=%d", sid, res.LastSeq), `{"entryId":"u1"}`, &f)
	var info struct {
		ParentSession *string `json:"parentSession"`
		EntryCount    int     `json:"entryCount"`
	}
	e.ok(200, "GET", fmt.Sprintf("/v1/sessions/%s?minSeq=%d", f.SessionID, f.LastSeq), nil, &info)
	if info.ParentSession == nil || *info.ParentSession != sid || info.EntryCount != 1 {
		t.Fatalf("forked session: %+v", info)
	}
	e.fails(400, wire.CodeInvalid, "entryId", "POST", "/v1/sessions/"+sid+"/fork", `{}`)
	e.fails(404, wire.CodeNotFound, "", "POST", "/v1/sessions/"+sid+"/fork", `{"entryId":"nope"}`)
}

func TestInternalAndUnavailableErrors(t *testing.T) {
	e := newEnv(t)
	sid := e.create(userMsg("u1", "q")).SessionID
	path := "/v1/sessions/" + sid + "/cursors/w1"
	e.cursors.fail(fmt.Errorf("kv get: secret backend detail"))
	msg := e.fails(500, wire.CodeInternal, "", "GET", path, nil)
	if strings.Contains(msg, "secret") {
		t.Fatalf("internal error leaked: %s", msg)
	}
	if !strings.Contains(e.logs.String(), "secret backend detail") {
		t.Fatalf("internal error not logged: %s", e.logs.String())
	}
	e.cursors.fail(fmt.Errorf("kv get: %w", wire.ErrUnavailable))
	e.fails(503, wire.CodeUnavailable, "", "GET", path, nil)
}

func TestHTTPServerTimeouts(t *testing.T) {
	e := newEnv(t)
	hs := e.api.HTTPServer(":0")
	if hs.ReadHeaderTimeout == 0 || hs.ReadTimeout == 0 || hs.IdleTimeout == 0 || hs.Handler == nil {
		t.Fatalf("HTTPServer without timeouts: %+v", hs)
	}
	if _, err := api.New(api.Config{}); err == nil {
		t.Fatal("New without a Service must fail")
	}
}

// TestEntriesPaging pages through a session larger than the service's
// default page, and asks for more than the maximum.
func TestEntriesPaging(t *testing.T) {
	e := newEnv(t)
	sid := e.create().SessionID
	var w writeResult
	for range 2 {
		batch := make([]string, 600)
		for k := range batch {
			batch[k] = userMsg("", "x")
		}
		e.ok(200, "POST", "/v1/sessions/"+sid+"/entries", `{"entries":[`+strings.Join(batch, ",")+`]}`, &w)
	}
	type page struct {
		Entries []struct{ Seq uint64 } `json:"entries"`
		LastSeq uint64                 `json:"lastSeq"`
	}
	var all page
	e.ok(200, "GET", fmt.Sprintf("/v1/sessions/%s/entries?minSeq=%d&limit=20000", sid, w.LastSeq), nil, &all)
	if len(all.Entries) != 1200 {
		t.Fatalf("limit over the maximum: %d entries, want all 1200", len(all.Entries))
	}
	var after uint64
	n := 0
	for {
		var p page
		e.ok(200, "GET", fmt.Sprintf("/v1/sessions/%s/entries?afterSeq=%d&limit=500", sid, after), nil, &p)
		n += len(p.Entries)
		if len(p.Entries) == 0 || p.Entries[len(p.Entries)-1].Seq == p.LastSeq {
			break
		}
		after = p.Entries[len(p.Entries)-1].Seq
	}
	if n != 1200 {
		t.Fatalf("paged %d entries, want 1200", n)
	}
}
