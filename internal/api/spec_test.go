package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestSpecCorners sends the requests the other tests leave out — every
// entry type and message role, labels, the null leaf, the LLM format,
// strict and lenient imports, a resumed watch, the backend's status — so
// that apispec.Middleware holds their replies to docs/openapi.yaml too.
// The statuses are checked here; the shapes by the middleware.
func TestSpecCorners(t *testing.T) {
	e := newEnv(t, func(c *api.Config) {
		c.Insecure = []string{"HTTP on 127.0.0.1:0 without a token"} // status's insecure, as pi-node --insecure reports it
		c.EncryptedAtRest = true
		c.Status = func(context.Context) (any, error) {
			return wire.JetStreamStatus{Mode: "embedded", Stream: wire.StreamStatus{Name: "PI_SESSIONS", Replicas: 1}}, nil
		}
	})
	entries := []string{
		`{"type":"model_change","id":"m1","provider":"p","modelId":"m"}`,
		`{"type":"thinking_level_change","id":"t1","thinkingLevel":"high"}`,
		userMsg("u1", "first question"),
		`{"type":"message","id":"a1","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"toolCall","id":"c1","name":"bash","arguments":{"cmd":"ls"}}],"provider":"p","model":"m","usage":{"input":1},"stopReason":"toolUse","timestamp":3}}`,
		`{"type":"message","id":"r1","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"a b"}],"isError":false,"timestamp":4}}`,
		`{"type":"message","id":"b1","message":{"role":"bashExecution","command":"ls","output":"x","exitCode":null,"cancelled":false,"timestamp":5}}`,
		`{"type":"custom","id":"x1","customType":"ext","data":{"k":1}}`,
		`{"type":"custom_message","id":"cm1","customType":"ext","content":"shown","display":true}`,
		`{"type":"compaction","id":"k1","summary":"so far","firstKeptEntryId":"u1","tokensBefore":100}`,
		`{"type":"branch_summary","id":"s1","summary":"tried","fromId":"b1"}`,
		`{"type":"label","id":"l1","targetId":"u1","label":"start"}`,
		`{"type":"session_info","id":"i1","name":"corners"}`,
		`{"type":"future_type","id":"f1","anything":[1,2]}`,
		// pi 1.1's entries, and a role this build does not know.
		`{"type":"message","id":"y1","message":{"role":"system","content":"","sections":{"preamble":"be brief"},"toolsAdded":[{"name":"read"}],"timestamp":6}}`,
		`{"type":"usage","id":"g1","kind":"cache_warm","provider":"p","model":"m","usage":{"input":0,"output":0,"cacheRead":5,"cacheWrite":0,"totalTokens":5,"cost":{"input":0,"output":0,"cacheRead":0.1,"cacheWrite":0,"total":0.1}}}`,
		`{"type":"context_edit","id":"e1","targetId":"r1","replacement":{"content":[{"type":"text","text":"[elided]"}]}}`,
		`{"type":"message","id":"z1","message":{"role":"robot","content":"beep"}}`,
		`{"type":"message","id":"a2","message":{"role":"assistant","content":[],"provider":"p","model":"m","thinkingLevel":"high","responseModel":"m-1"}}`,
	}
	res := e.create(entries...)
	sid := res.SessionID
	base := "/v1/sessions/" + sid
	must := func(want int, method, path string, body any, header ...string) []byte {
		t.Helper()
		code, b := e.do(method, path, body, header...)
		if code != want {
			t.Fatalf("%s %s: %d, want %d: %s", method, path, code, want, b)
		}
		return b
	}
	must(200, "GET", "/v1/sessions?preview=1&limit=10&label=start&since=2000-01-01T00:00:00Z", nil)
	must(200, "GET", "/v1/sessions?name=corn&cwd=&preview=false&consistency=strong", nil)
	must(200, "GET", base+"?consistency=strong", nil)
	must(200, "GET", base+"/entries?afterSeq=3&limit=2", nil)
	must(200, "GET", base+"/tree", nil)
	must(200, "GET", base+"/tree?leaf=null", nil)
	must(200, "GET", base+"/tree?leaf=u1", nil)
	for _, q := range []string{"", "?format=llm", "?format=agent&leaf=cm1", "?leaf=null", "?leaf=b1&format=llm"} {
		must(200, "GET", base+"/context"+q, nil)
	}
	e.fails(404, wire.CodeNotFound, "leaf", "GET", base+"/context?leaf=nope", nil)
	must(200, "GET", base+"/export", nil)

	// Cursors, and the append that moves one.
	must(200, "PUT", base+"/cursors/w1", `{"leafId":null}`)
	must(200, "PUT", base+"/cursors/w1", `{"leafId":"u1","expectRevision":1}`)
	e.fails(409, wire.CodeConflict, "expectRevision", "PUT", base+"/cursors/w1", `{"leafId":"u1","expectRevision":7}`)
	must(200, "POST", base+"/entries", `{"client":"w1","entries":[`+userMsg("u2", "again")+`]}`)
	e.fails(409, wire.CodeConflict, "expectLastSeq", "POST", base+"/entries", `{"expectLastSeq":1,"entries":[`+userMsg("", "late")+`]}`)
	must(200, "GET", base+"/cursors/w1", nil)
	must(200, "GET", base+"/cursors", nil)
	must(200, "GET", base+"/tree?client=w1", nil)
	must(204, "DELETE", base+"/cursors/w1", nil)
	e.fails(404, wire.CodeNotFound, "client", "GET", base+"/cursors/w1", nil)
	must(201, "POST", base+"/fork", `{"entryId":"r1"}`)

	// Imports: lenient with skipped lines, strict refusing them, a v1 file.
	file := fmt.Sprintf(`{"type":"session","version":3,"id":"%s","timestamp":"2026-11-30T09:49:55.816Z","cwd":"/w"}`+"\n", "01a22bdc-6ce8-7741-8406-3ad384bc1b95") +
		userMsg("v1", "q") + "\nnot json\n" + `{"type":"model_change","id":"v2","parentId":"v1"}` + "\n"
	must(201, "POST", "/v1/import", file)
	e.fails(400, wire.CodeInvalid, "line 3", "POST", "/v1/import?strict=true", strings.Replace(file, "bc1b95", "bc1b96", 1))
	v1 := `{"type":"session","id":"01a22bdc-6ce8-7741-8406-3ad384bc1b97","timestamp":"2026-11-30T09:49:55.816Z","cwd":"/w"}` + "\n" +
		`{"type":"message","timestamp":"2026-11-30T09:49:56.816Z","message":{"role":"user","content":"old","timestamp":1}}` + "\n"
	must(201, "POST", "/v1/import", v1)

	// A watch resumed after its second entry.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := e.watch(ctx, base+"/watch?afterSeq=1", "Last-Event-ID", "3")
	s.next(t)
	s.resp.Body.Close()
	e.fails(400, wire.CodeInvalid, "Last-Event-ID", "GET", base+"/watch", nil, "Last-Event-ID", "x")

	if code, body := e.do("GET", "/v1/status", nil); code != http.StatusOK || !strings.Contains(string(body), `"encryptedAtRest":true`) {
		t.Errorf("/v1/status of a node with encryption at rest: %d %s", code, body)
	}
	must(200, "GET", "/healthz", nil)
	must(200, "GET", "/readyz", nil)
	if code, _ := e.do("GET", "/metrics", nil); code != http.StatusOK {
		t.Errorf("/metrics: %d", code)
	}
}
