package api_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/apispec"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// natsEnv starts an in-process nats-server (no JetStream: micro needs only
// core NATS), the env's micro service on it, and a client connection.
func natsEnv(t *testing.T, mods ...func(*api.Config)) (*env, *nats.Conn, micro.Service) {
	t.Helper()
	ns := startNATS(t)
	e := newEnv(t, mods...)
	srvConn, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srvConn.Close)
	svc, err := e.api.StartNATS(srvConn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return e, nc, svc
}

// startNATS starts an in-process nats-server (core NATS only).
func startNATS(t *testing.T) *server.Server {
	t.Helper()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	return ns
}

// req sends a request to pi.v1.<op> and returns the reply.
func req(t *testing.T, nc *nats.Conn, op string, body string) *nats.Msg {
	t.Helper()
	m, err := nc.Request("pi.v1."+op, []byte(body), 10*time.Second)
	if err != nil {
		t.Fatalf("pi.v1.%s: %v", op, err)
	}
	checkNATSReply(t, op, m)
	return m
}

// checkNATSReply validates a NATS reply's body against the response
// docs/openapi.yaml declares for the operation and status: NATS replies are
// the HTTP response bodies, so the spec describes them too.
func checkNATSReply(t *testing.T, op string, m *nats.Msg) {
	t.Helper()
	i := slices.IndexFunc(wire.Ops, func(o wire.Op) bool { return o.Name == op })
	if i < 0 {
		return // not an operation's subject
	}
	status := wire.Ops[i].Status
	if code := m.Header.Get(micro.ErrorCodeHeader); code != "" {
		fmt.Sscan(code, &status)
	}
	if err := apispec.Load(t).ValidateNATSReply(wire.Ops[i], status, m.Data); err != nil {
		t.Errorf("pi.v1.%s: the reply does not match docs/openapi.yaml: %v\n%s", op, err, m.Data)
	}
}

// reqOK sends a request that must succeed and decodes the reply into out.
func reqOK(t *testing.T, nc *nats.Conn, op, body string, out any) []byte {
	t.Helper()
	m := req(t, nc, op, body)
	if code := m.Header.Get(micro.ErrorCodeHeader); code != "" {
		t.Fatalf("pi.v1.%s: error %s: %s", op, code, m.Data)
	}
	if n := m.Header.Get("Pi-Node"); n != "n1" {
		t.Fatalf("pi.v1.%s: Pi-Node %q, want the answering node n1", op, n)
	}
	if out != nil {
		if err := json.Unmarshal(m.Data, out); err != nil {
			t.Fatalf("pi.v1.%s: %v: %s", op, err, m.Data)
		}
	}
	return m.Data
}

// reqFails sends a request that must fail with the status (as the micro
// error code) and the same JSON error object as HTTP.
func reqFails(t *testing.T, nc *nats.Conn, op, body string, status int, code, field string) {
	t.Helper()
	m := req(t, nc, op, body)
	got := 0
	fmt.Sscan(m.Header.Get(micro.ErrorCodeHeader), &got)
	msg := checkError(t, "pi.v1."+op, got, m.Data, status, code, field)
	if n := m.Header.Get("Pi-Node"); n != "n1" {
		t.Fatalf("pi.v1.%s: error reply with Pi-Node %q, want n1", op, n)
	}
	if m.Header.Get(micro.ErrorHeader) != msg {
		t.Fatalf("pi.v1.%s: description %q, want the message %q", op, m.Header.Get(micro.ErrorHeader), msg)
	}
}

func TestNATSDiscovery(t *testing.T) {
	_, nc, svc := natsEnv(t)
	m, err := nc.Request("$SRV.PING", nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var ping micro.Ping
	if err := json.Unmarshal(m.Data, &ping); err != nil || ping.Name != api.ServiceName || ping.ID != svc.Info().ID {
		t.Fatalf("ping: %+v (%v)", ping, err)
	}
	m, err = nc.Request("$SRV.INFO.pi-sessions", nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var info micro.Info
	if err := json.Unmarshal(m.Data, &info); err != nil {
		t.Fatal(err)
	}
	var subjects []string
	for _, ep := range info.Endpoints {
		if ep.Subject != "pi.v1."+strings.ReplaceAll(ep.Name, "_", ".") {
			t.Errorf("endpoint %s on subject %s", ep.Name, ep.Subject)
		}
		subjects = append(subjects, ep.Subject)
	}
	slices.Sort(subjects)
	want := []string{"append", "archive.list", "archive.restore", "archive.run", "context", "context.build", "create", "cursor.delete", "cursor.get", "cursor.list", "cursor.set", "delete", "entries", "export", "fork", "get", "import", "list", "search", "status", "tree"}
	for k := range want {
		want[k] = "pi.v1." + want[k]
	}
	if info.Name != "pi-sessions" || info.Version != "1.0.0" || !slices.Equal(subjects, want) {
		t.Fatalf("info: %s %s %v", info.Name, info.Version, subjects)
	}
}

func TestNATSRoundTrip(t *testing.T) {
	e, nc, _ := natsEnv(t)
	// The create and append bodies are the HTTP ones.
	var c writeResult
	reqOK(t, nc, "create", `{"entries":[`+userMsg("u1", "q")+`,`+assistantMsg("a")+`]}`, &c)
	var w writeResult
	reqOK(t, nc, "append", fmt.Sprintf(`{"sessionId":%q,"client":"w1","entries":[%s]}`, c.SessionID, userMsg("u2", "more")), &w)
	if len(w.Entries) != 1 || w.Entries[0].ID != "u2" || w.LastSeq <= c.LastSeq {
		t.Fatalf("append: %+v", w)
	}
	sid, minSeq := c.SessionID, w.LastSeq

	// Replies are byte for byte what HTTP answers.
	same := func(op, natsBody, httpPath string) []byte {
		t.Helper()
		got := reqOK(t, nc, op, natsBody, nil)
		want := e.ok(200, "GET", httpPath, nil, nil)
		if string(got) != string(want) {
			t.Fatalf("pi.v1.%s differs from GET %s:\n%s\n%s", op, httpPath, got, want)
		}
		return got
	}
	q := fmt.Sprintf("?minSeq=%d", minSeq)
	same("get", fmt.Sprintf(`{"sessionId":%q,"minSeq":%d}`, sid, minSeq), "/v1/sessions/"+sid+q)
	same("entries", fmt.Sprintf(`{"sessionId":%q,"afterSeq":%d,"limit":1}`, sid, c.LastSeq-1), "/v1/sessions/"+sid+fmt.Sprintf("/entries?afterSeq=%d&limit=1", c.LastSeq-1))
	same("tree", fmt.Sprintf(`{"sessionId":%q,"client":"w1"}`, sid), "/v1/sessions/"+sid+"/tree?client=w1")
	ctxJSON := same("context", fmt.Sprintf(`{"sessionId":%q,"leaf":"u1","format":"llm"}`, sid), "/v1/sessions/"+sid+"/context?leaf=u1&format=llm")
	if !strings.Contains(string(ctxJSON), `"leafId":"u1"`) {
		t.Fatalf("context: %s", ctxJSON)
	}
	same("context", fmt.Sprintf(`{"sessionId":%q,"leaf":null}`, sid), "/v1/sessions/"+sid+"/context?leaf=null")
	same("cursor.get", fmt.Sprintf(`{"sessionId":%q,"client":"w1"}`, sid), "/v1/sessions/"+sid+"/cursors/w1")
	same("list", `{"limit":5}`, "/v1/sessions?limit=5")
	export := same("export", fmt.Sprintf(`{"sessionId":%q}`, sid), "/v1/sessions/"+sid+"/export")

	reqOK(t, nc, "cursor.set", fmt.Sprintf(`{"sessionId":%q,"client":"w2","leafId":null}`, sid), nil)
	var cl struct {
		Cursors []struct{ Client string } `json:"cursors"`
	}
	reqOK(t, nc, "cursor.list", fmt.Sprintf(`{"sessionId":%q}`, sid), &cl)
	if len(cl.Cursors) != 2 {
		t.Fatalf("cursor.list: %+v", cl)
	}
	if got := reqOK(t, nc, "cursor.delete", fmt.Sprintf(`{"sessionId":%q,"client":"w2"}`, sid), nil); string(got) != "{}" {
		t.Fatalf("cursor.delete: %s", got)
	}
	var f struct{ SessionID string }
	reqOK(t, nc, "fork", fmt.Sprintf(`{"sessionId":%q,"entryId":"u1"}`, sid), &f)

	// Import takes the JSONL bytes as they are: the export, under a new id.
	other := strings.ReplaceAll(string(export), sid, "01a22ba6-0000-7000-8000-0000000000aa")
	var imp importResult
	reqOK(t, nc, "import", other, &imp)
	if imp.SessionID != "01a22ba6-0000-7000-8000-0000000000aa" || imp.EntryCount != 3 {
		t.Fatalf("import: %+v", imp)
	}
	var st struct{ Node string }
	reqOK(t, nc, "status", "", &st)
	if st.Node != "n1" {
		t.Fatalf("status: %+v", st)
	}
}

func TestNATSErrors(t *testing.T) {
	_, nc, _ := natsEnv(t, func(c *api.Config) { c.MinSeqTimeout = 100 * time.Millisecond })
	c := writeResult{}
	reqOK(t, nc, "create", `{"entries":[`+userMsg("u1", "q")+`]}`, &c)
	sid := c.SessionID
	reqFails(t, nc, "get", `{"sessionId":"nope"}`, 400, wire.CodeInvalid, "sessionId")
	reqFails(t, nc, "get", `{"sessionId":"01a22ba6-0000-7000-8000-000000000000"}`, 404, wire.CodeNotFound, "")
	reqFails(t, nc, "get", `{"sessionId":`, 400, wire.CodeInvalid, "body")
	reqFails(t, nc, "get", `{"sessionId":42}`, 400, wire.CodeInvalid, "sessionId")
	reqFails(t, nc, "context", fmt.Sprintf(`{"sessionId":%q,"leaf":7}`, sid), 400, wire.CodeInvalid, "leaf")
	reqFails(t, nc, "append", fmt.Sprintf(`{"sessionId":%q,"entries":[%s],"expectLastSeq":1}`, sid, userMsg("", "x")), 409, wire.CodeConflict, "")
	reqFails(t, nc, "create", fmt.Sprintf(`{"header":{"id":%q}}`, sid), 409, wire.CodeConflict, "")
	reqFails(t, nc, "cursor.get", fmt.Sprintf(`{"sessionId":%q}`, sid), 400, wire.CodeInvalid, "client")
	reqFails(t, nc, "import", "", 400, wire.CodeInvalid, "body")
	reqFails(t, nc, "get", fmt.Sprintf(`{"sessionId":%q,"minSeq":99999999}`, sid), 504, wire.CodeTimeout, "")

	// A reply over the server's max_payload (1 MiB) is 413, not silence.
	blob := `{"type":"custom","customType":"blob","data":"` + strings.Repeat("b", 200<<10) + `"}`
	for range 6 {
		reqOK(t, nc, "append", fmt.Sprintf(`{"sessionId":%q,"entries":[%s]}`, sid, blob), &c)
	}
	reqFails(t, nc, "export", fmt.Sprintf(`{"sessionId":%q,"minSeq":%d}`, sid, c.LastSeq), 413, wire.CodeTooLarge, "")
}

// TestNATSConcurrency checks that a request waiting for minSeq does not hold
// up the next one on the same endpoint, and that Close drains the service
// after the requests in flight.
func TestNATSConcurrency(t *testing.T) {
	e, nc, svc := natsEnv(t, func(c *api.Config) { c.MinSeqTimeout = testutil.Scale(2 * time.Second) })
	var c writeResult
	reqOK(t, nc, "create", `{"entries":[`+userMsg("u1", "q")+`]}`, &c)
	dispatched := func(n int) func() error {
		// micro counts a request when the handler has dispatched it
		return func() error {
			for _, ep := range svc.Stats().Endpoints {
				if ep.Name == "get" && ep.NumRequests >= n {
					return nil
				}
			}
			return fmt.Errorf("%d get requests not dispatched yet", n)
		}
	}
	slow := make(chan *nats.Msg, 1)
	go func() {
		m, err := nc.Request("pi.v1.get", fmt.Appendf(nil, `{"sessionId":%q,"minSeq":99999999}`, c.SessionID), time.Minute)
		if err != nil {
			t.Error(err)
		}
		slow <- m
	}()
	testutil.WaitFor(t, 10*time.Second, dispatched(1))
	// The fast request is answered while the slow one still waits for its
	// minSeq: had it been queued behind it, the slow one's 504 would come
	// first. An order, not a duration, decides.
	reqOK(t, nc, "get", fmt.Sprintf(`{"sessionId":%q,"minSeq":%d}`, c.SessionID, c.LastSeq), nil)
	if len(slow) != 0 {
		t.Fatal("a fast request was answered only after the slow one it was sent behind")
	}
	testutil.WaitFor(t, 10*time.Second, dispatched(2))
	if err := e.api.Close(); err != nil {
		t.Fatal(err)
	}
	if !svc.Stopped() {
		t.Fatal("Close did not stop the micro service")
	}
	select {
	case m := <-slow:
		if m == nil || m.Header.Get(micro.ErrorCodeHeader) == "" {
			t.Fatalf("the request in flight got no error reply: %v", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request in flight got no reply")
	}
}
