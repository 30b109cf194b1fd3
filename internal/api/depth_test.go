package api_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// deepBody is the attack: a valid request with an unknown field holding n
// '[' (never closed), which segmentio's decoder descended one stack frame
// per level into: 2,000,000 overflowed the stack and killed the process.
func deepBody(n int) []byte {
	return []byte(`{"entries":[],"x":` + strings.Repeat("[", n) + "}")
}

// deepOffset is where deepBody's level 513 opens.
const deepOffset = len(`{"entries":[],"x":`) + tree.MaxDepth - 1

// wantDepthMsg is the error naming the depth and where it was passed.
var wantDepthMsg = "body: JSON nested deeper than 512 levels at byte offset " + itoa(deepOffset)

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// deepEntry is an entry whose "data" nests n levels below the entry object
// (level 1), inside a body that adds 2.
func deepEntry(n int) string {
	return `{"type":"custom","customType":"x","data":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
}

// TestDeepJSONHTTP: 2,000,000 '[' in a read-scope request is a 400 naming
// the depth, and the node goes on serving.
func TestDeepJSONHTTP(t *testing.T) {
	e := newEnv(t)
	// The handler itself: the spec's request validator is not the subject.
	srv := httptest.NewServer(e.api.Handler())
	t.Cleanup(srv.Close)
	resp, err := srv.Client().Post(srv.URL+"/v1/context", "application/json", strings.NewReader(string(deepBody(2000000))))
	if err != nil {
		t.Fatal(err)
	}
	msg := checkError(t, "POST /v1/context", resp.StatusCode, []byte(readAll(t, resp)), 400, wire.CodeInvalid, "body")
	if msg != wantDepthMsg {
		t.Errorf("message %q, want %q", msg, wantDepthMsg)
	}

	// Alive, and an entry at the limit (body level 512) is stored; one
	// level more is refused where it passes the limit.
	res := e.create(userMsg("u1", "hi"))
	base := "/v1/sessions/" + res.SessionID
	e.ok(200, "POST", base+"/entries", `{"entries":[`+deepEntry(tree.MaxDepth-3)+`]}`, nil)
	body := `{"entries":[` + deepEntry(tree.MaxDepth-2) + `]}`
	msg = e.fails(400, wire.CodeInvalid, "body", "POST", base+"/entries", body)
	if want := "body: JSON nested deeper than 512 levels at byte offset " + itoa(strings.LastIndex(body, `"data":[`)+len(`"data":`)+tree.MaxDepth-3); msg != want {
		t.Errorf("message %q, want %q", msg, want)
	}
	e.ok(200, "GET", base+"/context", nil, nil)
}

// TestDeepJSONNATS: the same over NATS, on the reader role's pi.v1.context.
func TestDeepJSONNATS(t *testing.T) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, MaxPayload: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	e := newEnv(t)
	conn := func() *nats.Conn {
		nc, err := nats.Connect(ns.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	svc, err := e.api.StartNATS(conn())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	nc := conn()

	m := req(t, nc, "context", string(deepBody(2000000)))
	var eb wire.ErrorBody
	if err := json.Unmarshal(m.Data, &eb); err != nil || eb.Error.Message != wantDepthMsg || eb.Error.Field != "body" {
		t.Fatalf("reply %s (%v), want the message %q", m.Data, err, wantDepthMsg)
	}
	reqFails(t, nc, "context", string(deepBody(tree.MaxDepth+1)), 400, wire.CodeInvalid, "body")
	// Alive: the context of entries in the request, at the limit.
	reqOK(t, nc, "context", `{"entries":[`+userMsg("u1", "hi")+`]}`, nil)
}

// TestDeepJSONForwarded: a request forwarded between nodes (pi.fwd) is
// checked by the holder too.
func TestDeepJSONForwarded(t *testing.T) {
	p := newForwardPair(t)
	m, err := p.nc.Request("pi.fwd.0.context", deepBody(1000000), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var eb wire.ErrorBody
	if err := json.Unmarshal(m.Data, &eb); err != nil || m.Header.Get("Pi-Fwd-Status") != "400" || eb.Error.Message != wantDepthMsg {
		t.Fatalf("status %q, reply %s (%v), want 400 %q", m.Header.Get("Pi-Fwd-Status"), m.Data, err, wantDepthMsg)
	}
}

// TestDeepJSONImport: an import line nested too deep refuses the file,
// naming the line, strict or not (skipping it would drop what pi keeps).
func TestDeepJSONImport(t *testing.T) {
	e := newEnv(t)
	header := `{"type":"session","version":3,"id":"01a22bdc-6ce8-7741-8406-3ad384bc1b95","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}` + "\n"
	line := func(n int) string {
		return `{"type":"custom","customType":"x","id":"c1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","data":` +
			strings.Repeat("[", n) + strings.Repeat("]", n) + "}\n"
	}
	for _, path := range []string{"/v1/import", "/v1/import?strict=true"} {
		msg := e.fails(400, wire.CodeInvalid, "line 2", "POST", path, header+line(tree.MaxDepth))
		if want := "line 2: JSON nested deeper than 512 levels at byte offset " + itoa(strings.Index(line(1), "[")+tree.MaxDepth-1); msg != want {
			t.Errorf("%s: message %q, want %q", path, msg, want)
		}
		e.fails(400, wire.CodeInvalid, "line 3", "POST", path, header+line(1)+strings.Repeat("[", 2000000)+"\n")
	}
	e.ok(201, "POST", "/v1/import?strict=true", header+line(tree.MaxDepth-1), nil)
}
