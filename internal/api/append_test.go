package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

func TestAppend(t *testing.T) {
	e := newEnv(t)
	res := e.create(userMsg("u1", "q"), assistantMsg("a"))
	sid := res.SessionID
	path := "/v1/sessions/" + sid + "/entries"

	// A chain: the first entry's parent is the default leaf, the second's
	// the first; ids and timestamps are filled in.
	var w writeResult
	e.ok(200, "POST", path, `{"entries":[`+userMsg("", "one")+`,`+assistantMsg("two")+`]}`, &w)
	if len(w.Entries) != 2 || w.Entries[0].ID == "" || w.Entries[1].Seq != w.LastSeq || w.LastSeq <= res.LastSeq {
		t.Fatalf("append result %+v", w)
	}

	// An idempotent retry: the same ids and content return the original
	// result, whatever was appended in between.
	body := fmt.Sprintf(`{"entries":[{"type":"message","id":"r1","parentId":"u1","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"retry","timestamp":3}}],"expectLastSeq":%d}`, w.LastSeq)
	var first, again writeResult
	e.ok(200, "POST", path, body, &first)
	e.ok(200, "POST", path, `{"entries":[`+userMsg("", "between")+`]}`, nil)
	e.ok(200, "POST", path, body, &again)
	if !reflect.DeepEqual(first.Entries, again.Entries) {
		t.Fatalf("retry returned %+v, first %+v", again.Entries, first.Entries)
	}

	// A retry that left parentId and timestamp to the server (a chain with
	// client ids) is recognized too, though the default leaf has moved.
	chain := `{"entries":[` + userMsg("c1", "one") + `,` + assistantMsg("two")[:1] + `"id":"c2",` + assistantMsg("two")[1:] + `]}`
	e.ok(200, "POST", path, chain, &first)
	e.ok(200, "POST", path, `{"entries":[`+userMsg("", "between")+`]}`, nil)
	e.ok(200, "POST", path, chain, &again)
	if !reflect.DeepEqual(first.Entries, again.Entries) {
		t.Fatalf("chain retry returned %+v, first %+v", again, first)
	}

	// The same id with other content, and a stale expectLastSeq: 409.
	e.fails(409, wire.CodeConflict, "", "POST", path, `{"entries":[{"type":"message","id":"r1","parentId":"u1","message":{"role":"user","content":"other"}}]}`)
	e.fails(409, wire.CodeConflict, "", "POST", path, fmt.Sprintf(`{"entries":[%s],"expectLastSeq":%d}`, userMsg("", "late"), res.LastSeq))

	// Invalid entries name the field.
	e.fails(400, wire.CodeInvalid, "entries[0].parentId", "POST", path, `{"entries":[{"type":"message","parentId":"nope","message":{"role":"user","content":"x"}}]}`)
	e.fails(400, wire.CodeInvalid, "entries[1].type", "POST", path, `{"entries":[`+userMsg("", "ok")+`,{"message":{}}]}`)
	e.fails(400, wire.CodeInvalid, "entries", "POST", path, `{"entries":[]}`)
	e.fails(400, wire.CodeInvalid, "entries", "POST", path, `{}`)
	e.fails(400, wire.CodeInvalid, "client", "POST", path, `{"client":"a.b","entries":[`+userMsg("", "x")+`]}`)
	e.fails(400, wire.CodeInvalid, "sessionId", "POST", "/v1/sessions/xyz/entries", `{"entries":[`+userMsg("", "x")+`]}`)
	e.fails(404, wire.CodeNotFound, "", "POST", "/v1/sessions/01a22ba6-0000-7000-8000-000000000000/entries", `{"entries":[`+userMsg("", "x")+`]}`)

	// An entry over the log's record limit is 413 (the body itself fits).
	big := `{"type":"custom","customType":"blob","data":"` + strings.Repeat("x", maxRecord) + `"}`
	e.fails(413, wire.CodeTooLarge, "", "POST", path, `{"entries":[`+big+`]}`)
}

func TestBadBodies(t *testing.T) {
	e := newEnv(t, func(c *api.Config) { c.MaxBody = 4096; c.MaxImportBody = 8192 })
	sid := e.create(userMsg("u1", "q")).SessionID
	path := "/v1/sessions/" + sid + "/entries"

	msg := e.fails(400, wire.CodeInvalid, "body", "POST", path, `{"entries":[`)
	if !strings.Contains(msg, "malformed JSON") {
		t.Fatalf("malformed JSON message: %s", msg)
	}
	e.fails(400, wire.CodeInvalid, "body", "POST", path, `{"entries":[]} trailing`)
	e.fails(400, wire.CodeInvalid, "body", "POST", path, `[1,2]`)
	e.fails(400, wire.CodeInvalid, "entries", "POST", path, `{"entries":{"type":"message"}}`)
	e.fails(400, wire.CodeInvalid, "expectLastSeq", "POST", path, `{"entries":[],"expectLastSeq":-1}`)
	e.fails(400, wire.CodeInvalid, "header", "POST", "/v1/sessions", `{"header":"x","entries":[]}`)
	e.fails(400, wire.CodeInvalid, "header.version", "POST", "/v1/sessions", `{"header":{"version":2},"entries":[]}`)
	e.fails(400, wire.CodeInvalid, "header.id", "POST", "/v1/sessions", `{"header":{"id":"x"},"entries":[]}`)

	// Unknown top-level fields are ignored; entries keep theirs.
	var w writeResult
	e.ok(200, "POST", path, `{"entries":[`+userMsg("", "x")+`],"futureField":{"a":1}}`, &w)
	var c writeResult
	e.ok(201, "POST", "/v1/sessions", `{"someday":true}`, &c)
	if c.SessionID == "" || len(c.Entries) != 0 {
		t.Fatalf("create without entries: %+v", c)
	}

	// Bodies over the limit: 413, declared or not.
	huge := `{"entries":[` + userMsg("", strings.Repeat("y", 5000)) + `]}`
	e.fails(413, wire.CodeTooLarge, "", "POST", path, huge)
	// A reader of unknown length goes out chunked: the server must count.
	resp := e.raw("POST", path, io.MultiReader(strings.NewReader(huge)))
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Fatalf("chunked oversize body: %d", resp.StatusCode)
	}
	e.fails(413, wire.CodeTooLarge, "", "POST", "/v1/import", strings.Repeat("z", 9000))
}

// TestCreateWithClient: create's client gets a cursor at the last entry in
// the same request (the null leaf without entries), and create and append
// report it.
func TestCreateWithClient(t *testing.T) {
	e := newEnv(t)
	var res wire.WriteResult
	e.ok(201, "POST", "/v1/sessions", `{"client":"worker-1","entries":[`+userMsg("q1", "q")+`,`+assistantMsg("a")+`]}`, &res)
	if res.Cursor == nil || res.Cursor.Client != "worker-1" || res.Cursor.LeafID == nil || *res.Cursor.LeafID != res.Entries[1].ID ||
		res.Cursor.Seq != res.LastSeq || res.Cursor.Revision == 0 {
		t.Fatalf("create's cursor: %+v (entries %+v)", res.Cursor, res.Entries)
	}
	var got wire.CursorView
	e.ok(200, "GET", "/v1/sessions/"+res.SessionID+"/cursors/worker-1", nil, &got)
	if !reflect.DeepEqual(got, *res.Cursor) {
		t.Fatalf("cursor.get %+v, create said %+v", got, *res.Cursor)
	}
	// The cursor is where the client's next append goes.
	var app wire.WriteResult
	e.ok(200, "POST", "/v1/sessions/"+res.SessionID+"/entries", `{"client":"worker-1","entries":[`+userMsg("", "more")+`]}`, &app)
	if app.Cursor == nil || *app.Cursor.LeafID != app.Entries[0].ID || app.Cursor.Revision <= res.Cursor.Revision {
		t.Fatalf("append's cursor: %+v after %+v", app.Cursor, res.Cursor)
	}
	var ctxReply struct {
		Path []string `json:"path"`
	}
	e.ok(200, "GET", "/v1/sessions/"+res.SessionID+"/context?client=worker-1", nil, &ctxReply)
	if len(ctxReply.Path) != 3 || ctxReply.Path[2] != app.Entries[0].ID {
		t.Fatalf("context at worker-1's cursor: path %v", ctxReply.Path)
	}

	// The session is stored first, then the cursor (docs/API.md, create):
	// a cursor that cannot be written fails the request, and the session
	// is there without it.
	e.cursors.failPut(fmt.Errorf("kv put: %w", wire.ErrUnavailable))
	body := `{"header":{"id":"01a22ba6-0000-7000-8000-0000000c0de1"},"client":"worker-2","entries":[` + userMsg("q2", "q") + `]}`
	e.fails(503, wire.CodeUnavailable, "", "POST", "/v1/sessions", body)
	e.cursors.failPut(nil)
	var stored wire.Detail
	e.ok(200, "GET", "/v1/sessions/01a22ba6-0000-7000-8000-0000000c0de1", nil, &stored)
	if stored.EntryCount != 1 {
		t.Fatalf("after the cursor failed: %+v", stored)
	}
	e.fails(404, wire.CodeNotFound, "client", "GET", "/v1/sessions/01a22ba6-0000-7000-8000-0000000c0de1/cursors/worker-2", nil)

	// Without entries the cursor is the null leaf; without client there is none.
	var empty wire.WriteResult
	e.ok(201, "POST", "/v1/sessions", `{"client":"w2"}`, &empty)
	if empty.Cursor == nil || empty.Cursor.LeafID != nil {
		t.Fatalf("create without entries: cursor %+v", empty.Cursor)
	}
	var plain wire.WriteResult
	if b := e.ok(201, "POST", "/v1/sessions", `{"entries":[`+userMsg("", "q")+`]}`, &plain); plain.Cursor != nil || strings.Contains(string(b), "cursor") {
		t.Fatalf("create without client: %s", b)
	}
}

// TestContextBuild: POST /v1/context and pi.v1.context with entries build
// pi's context over the request's entries, at the last one by default, at
// leaf, or at the null leaf; nothing is stored.
func TestContextBuild(t *testing.T) {
	e, nc, _ := natsEnv(t)
	body := `{"entries":[{"type":"model_change","id":"m1","provider":"p","modelId":"big"},` + userMsg("q1", "why?") + `,` + strings.Replace(assistantMsg("because"), `{"type":"message",`, `{"type":"message","id":"a1",`, 1) + `]`
	type context struct {
		LeafID        *string           `json:"leafId"`
		Path          []string          `json:"path"`
		ThinkingLevel string            `json:"thinkingLevel"`
		Model         map[string]string `json:"model"`
		Messages      []json.RawMessage `json:"messages"`
	}
	var last, atQ, null, overNATS context
	e.ok(200, "POST", "/v1/context", body+`}`, &last)
	if len(last.Path) != 3 || last.Path[2] != "a1" || last.Path[0] != "m1" || last.Path[1] != "q1" || len(last.Messages) != 2 || last.Model["modelId"] != "m" {
		t.Fatalf("context at the last entry: %+v", last)
	}
	e.ok(200, "POST", "/v1/context", body+`,"leaf":"q1","format":"llm"}`, &atQ)
	if *atQ.LeafID != "q1" || len(atQ.Messages) != 1 || atQ.Model["modelId"] != "big" {
		t.Fatalf("context at q1: %+v", atQ)
	}
	e.ok(200, "POST", "/v1/context", body+`,"leaf":null}`, &null)
	if null.LeafID != nil || len(null.Messages) != 0 || null.ThinkingLevel != "off" {
		t.Fatalf("context at the null leaf: %+v", null)
	}
	reqOK(t, nc, "context", body+`}`, &overNATS)
	if !reflect.DeepEqual(overNATS, last) {
		t.Fatalf("pi.v1.context with entries: %+v, HTTP %+v", overNATS, last)
	}
	reqOK(t, nc, "context.build", body+`,"leaf":"q1","format":"llm"}`, &overNATS)
	if !reflect.DeepEqual(overNATS, atQ) {
		t.Fatalf("pi.v1.context.build: %+v, HTTP %+v", overNATS, atQ)
	}
	var list wire.ListReply
	e.ok(200, "GET", "/v1/sessions", nil, &list)
	if len(list.Sessions) != 0 {
		t.Fatalf("context.build stored something: %+v", list.Sessions)
	}
	// The metrics name what ran: both NATS requests were context.build.
	// A request is counted once its reply is sent, so the second count may
	// land just after the test has the reply.
	want := `pi_api_requests_total{code="200",endpoint="context.build",transport="nats"} 2`
	testutil.WaitFor(t, 5*time.Second, func() error {
		if metrics := string(e.ok(200, "GET", "/metrics", nil, nil)); !strings.Contains(metrics, want) {
			return fmt.Errorf("metrics lack %s", want)
		}
		return nil
	})
}
