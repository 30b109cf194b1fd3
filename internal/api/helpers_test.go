package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/apispec"
	"github.com/pifleet/sessionlog/internal/search"
	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// env is one API server over a MemLog, MemCursors and a real Store.
type env struct {
	t       *testing.T
	log     *session.MemLog
	shards  []*session.MemLog // newShardedEnv's, by shard
	cursors *faultyCursors
	svc     *service.Service
	api     *api.Server
	http    *httptest.Server
	logs    *testutil.SyncBuffer
}

// maxRecord is the MemLog's record limit: small, so 413 is cheap to reach.
const maxRecord = 256 << 10

func newEnv(t *testing.T, mods ...func(*api.Config)) *env {
	t.Helper()
	return newEnvFeed(t, func(l *session.MemLog) session.Feed { return l }, mods...)
}

// newEnvFeed is newEnv with the Store following feed(log) instead of the
// log itself (a node that lags).
func newEnvFeed(t *testing.T, feed func(*session.MemLog) session.Feed, mods ...func(*api.Config)) *env {
	t.Helper()
	l := session.NewMemLog(1000, maxRecord)
	st := store.New(feed(l), store.Options{Log: l, Search: openSearch(t)})
	if err := st.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	e := &env{t: t, log: l, cursors: &faultyCursors{MemCursors: session.NewMemCursors()}, logs: &testutil.SyncBuffer{}}
	e.svc = &service.Service{Log: l, Store: st, Cursors: e.cursors}
	return e.serve(mods...)
}

// openSearch is a full-text index in memory, for a test Store.
func openSearch(t *testing.T) *search.Index {
	t.Helper()
	idx, err := search.Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// serve starts the API over e.svc.
func (e *env) serve(mods ...func(*api.Config)) *env {
	t := e.t
	cfg := api.Config{Service: e.svc, NodeName: "n1", Logger: slog.New(slog.NewTextHandler(e.logs, nil))}
	for _, m := range mods {
		m(&cfg)
	}
	srv, err := api.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.api = srv
	// Every request and response of the tests is held to docs/openapi.yaml.
	e.http = httptest.NewServer(apispec.Middleware(t, srv.Handler()))
	t.Cleanup(func() {
		_ = srv.Close()
		e.http.Close()
	})
	return e
}

// newShardedEnv is newEnv over a log of n shards, a MemLog each (e.log is
// shard 0's; e.shards every shard's).
func newShardedEnv(t *testing.T, n int, mods ...func(*api.Config)) *env {
	t.Helper()
	var logs []session.Log
	var stores []*store.Store
	e := &env{t: t, cursors: &faultyCursors{MemCursors: session.NewMemCursors()}, logs: &testutil.SyncBuffer{}}
	for k := range n {
		m := session.NewMemLog(1000, maxRecord)
		sl := &shard.Log{Log: m, Feed: m, Shard: k}
		st := store.New(sl, store.Options{Log: sl, Writer: sl, Search: openSearch(t)})
		if err := st.Open(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		logs, stores, e.shards = append(logs, sl), append(stores, st), append(e.shards, m)
	}
	e.log = e.shards[0]
	all, err := shard.NewSharded(shard.OneMap(n), logs)
	if err != nil {
		t.Fatal(err)
	}
	set, err := store.NewSet(shard.OneMap(n), stores)
	if err != nil {
		t.Fatal(err)
	}
	e.svc = &service.Service{Log: all, Store: set, Cursors: e.cursors}
	return e.serve(mods...)
}

// faultyCursors is MemCursors whose Get (fail) or Put (failPut) can be
// made to fail, to reach the error codes that only a broken backend
// produces.
type faultyCursors struct {
	*session.MemCursors
	mu     sync.Mutex
	err    error
	putErr error
}

func (f *faultyCursors) failPut(err error) {
	f.mu.Lock()
	f.putErr = err
	f.mu.Unlock()
}

func (f *faultyCursors) Put(ctx context.Context, s, c string, cur session.Cursor) (uint64, error) {
	f.mu.Lock()
	err := f.putErr
	f.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return f.MemCursors.Put(ctx, s, c, cur)
}

func (f *faultyCursors) fail(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

func (f *faultyCursors) Get(ctx context.Context, s, c string) (session.CursorEntry, error) {
	f.mu.Lock()
	err := f.err
	f.mu.Unlock()
	if err != nil {
		return session.CursorEntry{}, err
	}
	return f.MemCursors.Get(ctx, s, c)
}

// do sends a request (body: string, []byte or nil) with optional header
// pairs and returns the status and body.
func (e *env) do(method, path string, body any, header ...string) (int, []byte) {
	e.t.Helper()
	resp := e.raw(method, path, body, header...)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, b
}

func (e *env) raw(method, path string, body any, header ...string) *http.Response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	case io.Reader:
		rd = b
	}
	req, err := http.NewRequest(method, e.http.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := e.http.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

// ok sends a request that must answer want, and decodes the body into out.
func (e *env) ok(want int, method, path string, body any, out any) []byte {
	e.t.Helper()
	code, b := e.do(method, path, body)
	if code != want {
		e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, code, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			e.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return b
}

// fails sends a request that must fail with status, code and (if not "")
// field, and returns the message.
func (e *env) fails(status int, code, field, method, path string, body any, header ...string) string {
	e.t.Helper()
	got, b := e.do(method, path, body, header...)
	return checkError(e.t, fmt.Sprintf("%s %s", method, path), got, b, status, code, field)
}

func checkError(t *testing.T, what string, got int, b []byte, status int, code, field string) string {
	t.Helper()
	var eb wire.ErrorBody
	if err := json.Unmarshal(b, &eb); err != nil {
		t.Fatalf("%s: error body does not parse: %v: %s", what, err, b)
	}
	if got != status || eb.Error.Code != code || field != "" && eb.Error.Field != field {
		t.Fatalf("%s: got %d %s field %q (%s), want %d %s field %q", what, got, eb.Error.Code, eb.Error.Field, eb.Error.Message, status, code, field)
	}
	if eb.Error.Message == "" {
		t.Fatalf("%s: empty error message", what)
	}
	return eb.Error.Message
}

type writeResult struct {
	SessionID string `json:"sessionId"`
	LastSeq   uint64 `json:"lastSeq"`
	Entries   []struct {
		ID  string `json:"id"`
		Seq uint64 `json:"seq"`
	} `json:"entries"`
}

// create makes a session from entry JSON objects and returns the result.
func (e *env) create(entries ...string) writeResult {
	e.t.Helper()
	var res writeResult
	e.ok(http.StatusCreated, "POST", "/v1/sessions", `{"entries":[`+strings.Join(entries, ",")+`]}`, &res)
	return res
}

func userMsg(id, text string) string {
	idField := ""
	if id != "" {
		idField = `"id":"` + id + `",`
	}
	return `{"type":"message",` + idField + `"message":{"role":"user","content":"` + text + `","timestamp":1}}`
}

func assistantMsg(text string) string {
	return `{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"` + text + `"}],"provider":"p","model":"m","timestamp":2}}`
}

// tokenLine is a tokens file line for name (its secret secretOf(name)),
// confined to the cwd prefix when it is not "".
func tokenLine(name, prefix string, scopes ...string) string {
	b, _ := json.Marshal(api.TokenLine{Name: name, SHA256: api.HashToken(secretOf(name)), Scopes: scopes, CwdPrefix: prefix})
	return string(b) + "\n"
}

// tenantEnv is TestTenant's and TestSearchTenant's setting: an env with two
// tokens, "a" (read and write, confined to /work/team-a/) and "adm" (an
// admin), and one session per cwd of tenantCwds, created by adm.
type tenantEnv struct {
	*env
	adm, a []string        // the tokens' Authorization headers
	mine   map[string]bool // the sessions under a's prefix
	others []string        // the rest: beside it, or only seemingly under it
}

// tenantCwds: two under a's prefix, then a sibling, a name that merely
// starts like the prefix, a path that climbs out of it, and a relative one.
var tenantCwds = []string{"/work/team-a", "/work/team-a/sub", "/work/team-b", "/work/team-ab", "/work/team-a/../team-b", "relative/work/team-a"}

// newTenantEnv builds a tenantEnv; each session's one user message (id u1)
// says text and its cwd ("salt in /work/team-b").
func newTenantEnv(t *testing.T, text string) *tenantEnv {
	t.Helper()
	e := newEnv(t, func(c *api.Config) {
		c.Tokens = mustTokens(t, tokenLine("a", "/work/team-a/", "read", "write")+tokenLine("adm", "", "admin"))
	})
	te := &tenantEnv{env: e, adm: bearer("adm"), a: bearer("a"), mine: map[string]bool{}}
	for _, cwd := range tenantCwds {
		code, b := e.do("POST", "/v1/sessions", fmt.Sprintf(`{"header":{"cwd":%q},"entries":[%s]}`, cwd, userMsg("u1", text+" in "+cwd)), te.adm...)
		var res writeResult
		if code != 201 || json.Unmarshal(b, &res) != nil {
			t.Fatalf("create %s: %d %s", cwd, code, b)
		}
		if strings.HasPrefix(cwd, "/work/team-a") && !strings.Contains(cwd, "..") && cwd != "/work/team-ab" {
			te.mine[res.SessionID] = true
		} else {
			te.others = append(te.others, res.SessionID)
		}
	}
	return te
}
