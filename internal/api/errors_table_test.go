package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/pifleet/sessionlog/internal/apispec"
	"github.com/pifleet/sessionlog/internal/nodetest"
	"github.com/pifleet/sessionlog/internal/wire"
)

// httpReq and natsReq are one request as sent over each transport.
type httpReq struct {
	method, path string
	body         []byte
	header       []string // pairs
	noToken      bool
}

type natsReq struct {
	op     string
	body   []byte
	header nats.Header
}

// errCase is one documented error path. req is sent over both transports
// (as the clients lay it out); h and n are raw requests instead, for what a
// typed request cannot say (malformed JSON, bad parameters), or for a path
// that exists on one transport only.
type errCase struct {
	name   string
	req    wire.Request
	h      *httpReq
	n      *natsReq
	status int
	code   string
	field  string // "" when the error names no input
	// natsField, when set, is the field over NATS (a header there).
	natsField string
	// lastSeq and revision are what a conflict must report; 0 and nil
	// expect none.
	lastSeq  uint64
	revision *uint64
}

// TestErrorsTable walks the error paths of docs/API.md (its error table and
// each operation's section) over HTTP and NATS against a real node: the
// status, the code, the field, the conflict's lastSeq or revision, no
// nats.go text in the message, and nothing stored by a request that failed.
func TestErrorsTable(t *testing.T) {
	const token = "s3cret"
	n := nodetest.Start(t, nodetest.Options{Token: token})
	nc, err := nats.Connect(n.NATSURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx := context.Background()
	// nodetest's pi-node is not ours to wrap: the client holds its traffic
	// to docs/openapi.yaml instead.
	hc := &http.Client{Timeout: time.Minute, Transport: apispec.Transport(t, nil)}
	sendHTTP := func(r httpReq) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(r.method, n.HTTPURL+r.path, bytes.NewReader(r.body))
		if err != nil {
			t.Fatal(err)
		}
		if !r.noToken {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for i := 0; i+1 < len(r.header); i += 2 {
			req.Header.Set(r.header[i], r.header[i+1])
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	sendNATS := func(r natsReq) (int, []byte, string) {
		t.Helper()
		m := nats.NewMsg(wire.SubjectPrefix + r.op)
		m.Data, m.Header = r.body, r.header
		if m.Header == nil {
			m.Header = nats.Header{}
		}
		rep, err := nc.RequestMsg(m, time.Minute)
		if err != nil {
			t.Fatalf("pi.v1.%s: %v", r.op, err)
		}
		checkNATSReply(t, r.op, rep)
		status, _ := strconv.Atoi(rep.Header.Get(micro.ErrorCodeHeader))
		return status, rep.Data, rep.Header.Get(micro.ErrorHeader)
	}
	mustHTTP := func(want int, r httpReq, out any) {
		t.Helper()
		if got, b := sendHTTP(r); got != want {
			t.Fatalf("%s %s: %d %s", r.method, r.path, got, b)
		} else if out != nil {
			if err := json.Unmarshal(b, out); err != nil {
				t.Fatal(err)
			}
		}
	}

	// The state the error paths need: a session (u1, a1) and a cursor at
	// revision 1. (A NATS reply over max_payload is TestNATSErrors', on a
	// server with a small one: a session that large is slow to store.)
	user := func(text string) string {
		return `{"type":"message","message":{"role":"user","content":"` + text + `"}}`
	}
	var res wire.WriteResult
	mustHTTP(201, httpReq{method: "POST", path: "/v1/sessions", body: []byte(`{"entries":[` +
		`{"type":"message","id":"u1","message":{"role":"user","content":"q"}},` +
		`{"type":"message","id":"a1","message":{"role":"assistant","content":[],"provider":"p","model":"m"}}]}`)}, &res)
	sid := res.SessionID
	mustHTTP(200, httpReq{method: "PUT", path: "/v1/sessions/" + sid + "/cursors/worker", body: []byte(`{"leafId":"u1"}`)}, nil)
	last, err := n.Log.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := n.Store.WaitFor(wctx, last); err != nil {
		t.Fatal(err)
	}
	one, seven := uint64(1), uint64(7)
	unknown := "01a22bdc-6ce8-7741-8406-000000000404"
	fresh := "01a22bdc-6ce8-7741-8406-0000000f7e54"
	upper := strings.ToUpper(sid)
	header := `{"type":"session","version":3,"id":"` + fresh + `","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}` + "\n"
	badLine := `{"type":"model_change","id":"m1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","provider":"p"}` + "\n"
	entries := func(es ...string) []json.RawMessage {
		out := make([]json.RawMessage, len(es))
		for k, e := range es {
			out[k] = json.RawMessage(e)
		}
		return out
	}
	many := make([]string, 1001)
	for k := range many {
		many[k] = user("m")
	}
	huge := `{"type":"message","message":{"role":"user","content":"` + strings.Repeat("y", 17<<19) + `"}}` // 8.5 MiB

	cases := []errCase{
		// 400 invalid
		{name: "malformed JSON", h: &httpReq{method: "POST", path: "/v1/sessions", body: []byte(`{"entries":[`)}, n: &natsReq{op: "create", body: []byte(`{"entries":[`)}, status: 400, code: "invalid", field: "body"},
		{name: "field of the wrong type", h: &httpReq{method: "POST", path: "/v1/sessions", body: []byte(`{"entries":"x"}`)}, n: &natsReq{op: "create", body: []byte(`{"entries":"x"}`)}, status: 400, code: "invalid", field: "entries"},
		{name: "bad session id", req: wire.GetRequest{SessionID: "xyz"}, status: 400, code: "invalid", field: "sessionId"},
		// Upper-case ids are not folded onto the canonical lower-case one.
		{name: "upper-case id (get)", req: wire.GetRequest{SessionID: upper}, status: 400, code: "invalid", field: "sessionId"},
		{name: "upper-case id (append)", req: wire.AppendRequest{SessionID: upper, Entries: entries(user("x"))}, status: 400, code: "invalid", field: "sessionId"},
		{name: "upper-case id (entries)", req: wire.EntriesRequest{SessionID: upper}, status: 400, code: "invalid", field: "sessionId"},
		{name: "upper-case id (tree)", req: wire.TreeRequest{SessionID: upper}, status: 400, code: "invalid", field: "sessionId"},
		{name: "upper-case id (context)", req: wire.ContextRequest{SessionID: upper}, status: 400, code: "invalid", field: "sessionId"},
		{name: "upper-case id (export)", req: wire.ExportRequest{SessionID: upper}, status: 400, code: "invalid", field: "sessionId"},
		{name: "upper-case id (fork)", req: wire.ForkRequest{SessionID: upper, EntryID: "u1"}, status: 400, code: "invalid", field: "sessionId"},
		{name: "upper-case id (cursor get)", req: wire.CursorGetRequest{SessionID: upper, Client: "worker"}, status: 400, code: "invalid", field: "sessionId"},
		{name: "upper-case id (cursor set)", req: wire.CursorSetRequest{SessionID: upper, Client: "worker", LeafID: wire.EntryID("u1")}, status: 400, code: "invalid", field: "sessionId"},
		{name: "upper-case id (cursor delete)", req: wire.CursorDeleteRequest{SessionID: upper, Client: "worker"}, status: 400, code: "invalid", field: "sessionId"},
		{name: "upper-case id (cursors)", req: wire.CursorListRequest{SessionID: upper}, status: 400, code: "invalid", field: "sessionId"},
		{name: "upper-case id (archive restore)", req: wire.ArchiveRestoreRequest{SessionID: upper}, status: 400, code: "invalid", field: "sessionId"},
		{name: "upper-case id (watch)", h: &httpReq{method: "GET", path: "/v1/sessions/" + upper + "/watch"}, status: 400, code: "invalid", field: "sessionId"},
		{name: "upper-case id (NATS body)", n: &natsReq{op: "get", body: []byte(`{"sessionId":"` + upper + `"}`)}, status: 400, code: "invalid", field: "sessionId"},
		{name: "upper-case header.id (create)", req: wire.CreateRequest{Header: json.RawMessage(`{"id":"` + strings.ToUpper(fresh) + `"}`), Entries: entries(user("x"))}, status: 400, code: "invalid", field: "header.id"},
		{name: "upper-case header id (import)", req: wire.ImportRequest{File: []byte(strings.Replace(header, fresh, strings.ToUpper(fresh), 1))}, status: 400, code: "invalid", field: "line 1.id"},
		{name: "upper-case header id after a blank line (import)", req: wire.ImportRequest{File: []byte("\n" + strings.Replace(header, fresh, strings.ToUpper(fresh), 1))}, status: 400, code: "invalid", field: "line 2.id"},
		{name: "bad client id", req: wire.CursorGetRequest{SessionID: sid, Client: "a.b"}, status: 400, code: "invalid", field: "client"},
		{name: "unknown parent", req: wire.AppendRequest{SessionID: sid, Entries: entries(`{"type":"message","parentId":"nope","message":{"role":"user","content":"x"}}`)}, status: 400, code: "invalid", field: "entries[0].parentId"},
		{name: "label of an unknown entry", req: wire.AppendRequest{SessionID: sid, Entries: entries(`{"type":"label","targetId":"nope","label":"x"}`)}, status: 400, code: "invalid", field: "entries[0].targetId"},
		{name: "entry without type", req: wire.AppendRequest{SessionID: sid, Entries: entries(user("ok"), `{"message":{}}`)}, status: 400, code: "invalid", field: "entries[1].type"},
		// pi 1.1's appendContextEdit refuses these four (p05-context-edits'
		// refused calls): a bad replacement, an unknown target, a target
		// off the branch, a target without model content.
		{name: "context edit with a bad replacement", req: wire.AppendRequest{SessionID: sid, Entries: entries(`{"type":"context_edit","targetId":"u1","replacement":{"content":{"type":"text"}}}`)}, status: 400, code: "invalid", field: "entries[0].replacement.content"},
		{name: "context edit of an unknown entry", req: wire.AppendRequest{SessionID: sid, Entries: entries(`{"type":"context_edit","targetId":"nope","replacement":null}`)}, status: 400, code: "invalid", field: "entries[0].targetId"},
		{name: "context edit off the branch", req: wire.AppendRequest{SessionID: sid, Entries: entries(`{"type":"message","id":"o1","parentId":"u1","message":{"role":"user","content":"other"}}`, `{"type":"context_edit","parentId":"a1","targetId":"o1","replacement":null}`)}, status: 400, code: "invalid", field: "entries[1].targetId"},
		{name: "context edit of a model change", req: wire.AppendRequest{SessionID: sid, Entries: entries(`{"type":"model_change","id":"m1","provider":"p","modelId":"m"}`, `{"type":"context_edit","targetId":"m1","replacement":null}`)}, status: 400, code: "invalid", field: "entries[1].targetId"},
		{name: "context edit off the branch (create)", req: wire.CreateRequest{Entries: entries(`{"type":"message","id":"q1","message":{"role":"user","content":"a"}}`, `{"type":"message","id":"q2","parentId":null,"message":{"role":"user","content":"b"}}`, `{"type":"context_edit","targetId":"q1","replacement":null}`)}, status: 400, code: "invalid", field: "entries[2].targetId"},
		{name: "no entries", req: wire.AppendRequest{SessionID: sid}, status: 400, code: "invalid", field: "entries"},
		{name: "header version", req: wire.CreateRequest{Header: json.RawMessage(`{"version":2}`)}, status: 400, code: "invalid", field: "header.version"},
		{name: "bad limit", h: &httpReq{method: "GET", path: "/v1/sessions?limit=0"}, n: &natsReq{op: "list", body: []byte(`{"limit":-1}`)}, status: 400, code: "invalid", field: "limit"},
		{name: "limit over a page", req: wire.ListRequest{Limit: 5000}, status: 400, code: "invalid", field: "limit"},
		{name: "bad since", req: wire.ListRequest{Since: "yesterday"}, status: 400, code: "invalid", field: "since"},
		{name: "bad include (tree)", req: wire.TreeRequest{SessionID: sid, Include: "all"}, status: 400, code: "invalid", field: "include"},
		{name: "bad include (get)", req: wire.GetRequest{SessionID: sid, Include: "entries"}, status: 400, code: "invalid", field: "include"},
		{name: "bad client (create)", req: wire.CreateRequest{Client: "a.b"}, status: 400, code: "invalid", field: "client"},
		{name: "context of no entries", req: wire.ContextBuildRequest{}, status: 400, code: "invalid", field: "entries"},
		{name: "context at a leaf not given", req: wire.ContextBuildRequest{Entries: entries(user("x")), Leaf: wire.EntryID("nope")}, status: 400, code: "invalid", field: "leaf"},
		{name: "context of an entry without type", req: wire.ContextBuildRequest{Entries: entries(user("ok"), `{"message":{}}`)}, status: 400, code: "invalid", field: "entries[1].type"},
		{name: "context with entries on pi.v1.context (NATS)", n: &natsReq{op: "context", body: []byte(`{"entries":[{"type":"message","id":"x1","message":{"role":"user","content":"x"}}],"leaf":"nope"}`)}, status: 400, code: "invalid", field: "leaf"},
		{name: "bad format", req: wire.ContextRequest{SessionID: sid, Format: "xml"}, status: 400, code: "invalid", field: "format"},
		{name: "bad minSeq", h: &httpReq{method: "GET", path: "/v1/sessions/" + sid + "?minSeq=abc"}, n: &natsReq{op: "get", body: []byte(`{"sessionId":"` + sid + `","minSeq":"abc"}`)}, status: 400, code: "invalid", field: "minSeq"},
		{name: "cursor at an unknown entry", req: wire.CursorSetRequest{SessionID: sid, Client: "worker", LeafID: wire.EntryID("nope")}, status: 400, code: "invalid", field: "leafId"},
		{name: "fork without entryId", req: wire.ForkRequest{SessionID: sid}, status: 400, code: "invalid", field: "entryId"},
		{name: "import without a body", req: wire.ImportRequest{File: []byte("\n")}, status: 400, code: "invalid", field: "body"},
		{name: "import without a header", req: wire.ImportRequest{File: []byte(`{"type":"message","id":"a"}`)}, status: 400, code: "invalid", field: "line 1"},
		{name: "strict import of a bad entry", req: wire.ImportRequest{File: []byte(header + badLine), Strict: true}, status: 400, code: "invalid", field: "line 2.modelId"},
		{name: "strict import of a malformed line", req: wire.ImportRequest{File: []byte(header + "{oops\n" + badLine), Strict: true}, status: 400, code: "invalid", field: "line 2"},
		{name: "bad strict", h: &httpReq{method: "POST", path: "/v1/import?strict=maybe", body: []byte(header)}, n: &natsReq{op: "import", body: []byte(header), header: nats.Header{wire.HeaderStrict: {"maybe"}}}, status: 400, code: "invalid", field: "strict", natsField: wire.HeaderStrict},
		{name: "bad Last-Event-ID", h: &httpReq{method: "GET", path: "/v1/sessions/" + sid + "/watch", header: []string{"Last-Event-ID", "x"}}, status: 400, code: "invalid", field: "Last-Event-ID"},

		// 401 unauthorized (HTTP only)
		{name: "no token", h: &httpReq{method: "GET", path: "/v1/sessions/" + sid, noToken: true}, status: 401, code: "unauthorized"},

		// 404 not_found
		{name: "no such session", req: wire.GetRequest{SessionID: unknown}, status: 404, code: "not_found", field: "sessionId"},
		{name: "entries of no session", req: wire.EntriesRequest{SessionID: unknown}, status: 404, code: "not_found", field: "sessionId"},
		{name: "append to no session", req: wire.AppendRequest{SessionID: unknown, Entries: entries(user("x"))}, status: 404, code: "not_found", field: "sessionId"},
		{name: "cursors of no session", req: wire.CursorListRequest{SessionID: unknown}, status: 404, code: "not_found", field: "sessionId"},
		{name: "no such leaf (context)", req: wire.ContextRequest{SessionID: sid, Leaf: wire.EntryID("nope")}, status: 404, code: "not_found", field: "leaf"},
		{name: "no such leaf (tree)", req: wire.TreeRequest{SessionID: sid, Leaf: wire.EntryID("nope")}, status: 404, code: "not_found", field: "leaf"},
		{name: "fork of no entry", req: wire.ForkRequest{SessionID: sid, EntryID: "nope"}, status: 404, code: "not_found", field: "entryId"},
		{name: "no cursor", req: wire.CursorGetRequest{SessionID: sid, Client: "nobody"}, status: 404, code: "not_found", field: "client"},
		{name: "no archive", req: wire.ArchiveListRequest{}, status: 404, code: "not_found"},
		{name: "no route", h: &httpReq{method: "GET", path: "/v1/nothing"}, status: 404, code: "not_found"},
		{name: "watch no session", h: &httpReq{method: "GET", path: "/v1/sessions/" + unknown + "/watch"}, status: 404, code: "not_found", field: "sessionId"},

		// 409 conflict
		{name: "create an existing id", req: wire.CreateRequest{Header: json.RawMessage(`{"id":"` + sid + `"}`)}, status: 409, code: "conflict", field: "header.id"},
		{name: "import an existing id", req: wire.ImportRequest{File: []byte(strings.Replace(header, fresh, sid, 1))}, status: 409, code: "conflict"},
		{name: "stale expectLastSeq", req: wire.AppendRequest{SessionID: sid, Entries: entries(user("late")), ExpectLastSeq: &one}, status: 409, code: "conflict", field: "expectLastSeq", lastSeq: res.LastSeq},
		{name: "id stored with other content", req: wire.AppendRequest{SessionID: sid, Entries: entries(`{"type":"message","id":"u1","message":{"role":"user","content":"other"}}`)}, status: 409, code: "conflict", field: "entries[0].id", lastSeq: res.LastSeq},
		{name: "part of the entries stored", req: wire.AppendRequest{SessionID: sid, Entries: entries(`{"type":"message","id":"u1","message":{"role":"user","content":"q"}}`, user("new"))}, status: 409, code: "conflict", field: "entries[0].id", lastSeq: res.LastSeq},
		{name: "stale expectRevision", req: wire.CursorSetRequest{SessionID: sid, Client: "worker", LeafID: wire.EntryID("a1"), ExpectRevision: &seven}, status: 409, code: "conflict", field: "expectRevision", revision: &one},

		// 413 too_large
		{name: "more entries than a batch", req: wire.AppendRequest{SessionID: sid, Entries: entries(many...)}, status: 413, code: "too_large", field: "entries"},
		{name: "create of more than a batch", req: wire.CreateRequest{Entries: entries(many[:1000]...)}, status: 413, code: "too_large", field: "entries"},
		{name: "entry over the record limit", h: &httpReq{method: "POST", path: "/v1/sessions/" + sid + "/entries", body: []byte(`{"entries":[` + user("a") + `,` + huge + `]}`)}, status: 413, code: "too_large", field: "entries[1]"},
		{name: "body over the limit", h: &httpReq{method: "POST", path: "/v1/sessions", body: []byte(`{"entries":[` + huge + `,` + huge[:len(huge)/2] + `]}`)}, status: 413, code: "too_large", field: "body"},

		// 504 timeout
		{name: "minSeq not applied", req: wire.GetRequest{SessionID: sid, MinSeq: 1 << 40}, status: 504, code: "timeout", field: "minSeq"},
	}
	// The malformed entries every write refuses, by create and append.
	for _, m := range []struct{ entry, field string }{
		{`{"type":"message"}`, "message"},
		{`{"type":"message","message":"not an object"}`, "message"},
		{`{"type":"message","message":{"role":42}}`, "message.role"},
		{`{"type":"model_change"}`, "provider"},
		{`{"type":"model_change","provider":"p"}`, "modelId"},
		{`{"type":"compaction","summary":5,"firstKeptEntryId":"u1","tokensBefore":1}`, "summary"},
	} {
		cases = append(cases,
			errCase{name: "create " + m.entry, req: wire.CreateRequest{Entries: entries(user("a"), m.entry)}, status: 400, code: "invalid", field: "entries[1]." + m.field},
			errCase{name: "append " + m.entry, req: wire.AppendRequest{SessionID: sid, Entries: entries(m.entry)}, status: 400, code: "invalid", field: "entries[0]." + m.field})
	}
	cases = append(cases, errCase{name: "a block pi does not allow", status: 400, code: "invalid", field: "entries[2].message.content[1].type",
		req: wire.AppendRequest{SessionID: sid, Entries: entries(user("a"), user("b"), `{"type":"message","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"video"}]}}`)}})

	for _, c := range cases {
		h, nr := c.h, c.n
		if c.req != nil {
			hr, err := wire.EncodeHTTP(c.req, 0)
			if err != nil {
				t.Fatal(err)
			}
			path := hr.Path
			if len(hr.Query) > 0 {
				path += "?" + hr.Query.Encode()
			}
			h = &httpReq{method: hr.Method, path: path, body: hr.Body}
			if !c.req.Op().HTTPOnly() {
				_, body, err := wire.EncodeNATS(c.req, 0)
				if err != nil {
					t.Fatal(err)
				}
				nr = &natsReq{op: c.req.Op().Name, body: body, header: wire.NATSHeader(c.req)}
			}
		}
		before, err := n.Log.LastSeq(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if h != nil {
			status, b := sendHTTP(*h)
			checkErrorCase(t, "HTTP "+c.name, c, status, b, "")
		}
		if nr != nil {
			status, b, desc := sendNATS(*nr)
			if c.natsField != "" {
				c.field = c.natsField
			}
			checkErrorCase(t, "NATS "+c.name, c, status, b, desc)
		}
		if after, err := n.Log.LastSeq(ctx); err != nil || after != before {
			t.Errorf("%s: the log changed (last seq %d -> %d, %v)", c.name, before, after, err)
		}
	}

	// Without strict the same file imports, and the reply says which line
	// was skipped and why.
	status, b, _ := sendNATS(natsReq{op: "import", body: []byte(header + badLine)})
	var ir wire.ImportResult
	if err := json.Unmarshal(b, &ir); status != 0 || err != nil || len(ir.Skipped) != 1 || ir.Skipped[0].Line != 2 || ir.Skipped[0].Field != "modelId" || ir.Entries != 0 {
		t.Errorf("lenient import: %d %s", status, b)
	}
}

func checkErrorCase(t *testing.T, what string, c errCase, status int, body []byte, desc string) {
	t.Helper()
	var eb wire.ErrorBody
	if err := json.Unmarshal(body, &eb); err != nil {
		t.Errorf("%s: error body does not parse: %v: %.200s", what, err, body)
		return
	}
	d := eb.Error
	if status != c.status || d.Code != c.code || d.Field != c.field {
		t.Errorf("%s: %d %s field %q (%s), want %d %s field %q", what, status, d.Code, d.Field, d.Message, c.status, c.code, c.field)
	}
	if d.LastSeq != c.lastSeq || (d.Revision == nil) != (c.revision == nil) || d.Revision != nil && *d.Revision != *c.revision {
		t.Errorf("%s: lastSeq %d revision %v, want %d %v", what, d.LastSeq, d.Revision, c.lastSeq, c.revision)
	}
	for _, s := range []string{d.Message, desc} {
		if strings.Contains(s, "nats:") || strings.Contains(s, "err_code") {
			t.Errorf("%s: NATS text reaches the client: %q", what, s)
		}
	}
	if d.Message == "" || c.field != "" && !strings.HasPrefix(d.Message, c.field+": ") {
		t.Errorf("%s: message %q does not start with the field", what, d.Message)
	}
	if strings.HasPrefix(c.name, "upper-case") && !strings.Contains(d.Message, "lower-case form") {
		t.Errorf("%s: message %q does not point at the lower-case form", what, d.Message)
	}
	if desc != "" && desc != d.Message {
		t.Errorf("%s: NATS description %q, message %q", what, desc, d.Message)
	}
}
