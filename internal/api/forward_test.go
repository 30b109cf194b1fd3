package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// holding serves the shards set in it.
type holding struct {
	n      int
	serves map[int]bool
}

func (h *holding) Shard(sid string) int { return shard.OneMap(h.n).Of(sid) }
func (h *holding) Serves(k int) bool    { return h.serves[k] }

// forwardPair is two API servers over one log of two shards on one NATS
// server: "holder" follows both shards and answers their forwarded
// requests; "front" holds neither (Unheld Stores) and forwards.
type forwardPair struct {
	front, holder *env
	// second holds both shards too, through gates, and answers for them
	// only once a test calls ServeShard on it.
	second *env
	gates  []*gatedFeed // the holder's Stores follow the log through them
	nc     *nats.Conn
}

func newForwardPair(t *testing.T, mods ...func(*api.Config)) *forwardPair {
	t.Helper()
	ns := startNATS(t)
	conn := func() *nats.Conn {
		nc, err := nats.Connect(ns.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	const n = 2
	cursors := &faultyCursors{MemCursors: session.NewMemCursors()}
	var logs []session.Log
	var held, lagging, unheld []*store.Store
	var gates []*gatedFeed
	for k := range n {
		m := session.NewMemLog(1000, maxRecord)
		sl := &shard.Log{Log: m, Feed: m, Shard: k}
		g := &gatedFeed{MemLog: m}
		gates = append(gates, g)
		for _, feed := range []session.Feed{sl, &shard.Log{Log: m, Feed: g, Shard: k}} {
			opts := store.Options{Log: sl, Writer: sl}
			if feed == sl {
				opts.Search = openSearch(t) // the holder's searches
			}
			st := store.New(feed, opts)
			if err := st.Open(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			if feed == sl {
				held = append(held, st)
			} else {
				lagging = append(lagging, st)
			}
		}
		logs, unheld = append(logs, sl), append(unheld, store.Unheld(sl))
	}
	all, err := shard.NewSharded(shard.OneMap(n), logs)
	if err != nil {
		t.Fatal(err)
	}
	p := &forwardPair{nc: conn(), gates: gates}
	mk := func(name string, stores []*store.Store, h *holding) *env {
		set, err := store.NewSet(shard.OneMap(n), stores)
		if err != nil {
			t.Fatal(err)
		}
		e := &env{t: t, cursors: cursors, logs: &testutil.SyncBuffer{}}
		e.svc = &service.Service{Log: all, Store: set, Cursors: cursors}
		return e.serve(append([]func(*api.Config){func(c *api.Config) { c.NodeName, c.Holding, c.Forward = name, h, conn() }}, mods...)...)
	}
	p.holder = mk("holder", held, &holding{n: n, serves: map[int]bool{0: true, 1: true}})
	p.second = mk("second", lagging, &holding{n: n, serves: map[int]bool{0: true, 1: true}})
	p.front = mk("front", unheld, &holding{n: n, serves: map[int]bool{}})
	for k := range n {
		if err := p.holder.api.ServeShard(k); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.front.api.StartNATS(conn()); err != nil {
		t.Fatal(err)
	}
	return p
}

// get is a GET through e and the node that served it (Pi-Served-By).
func get(e *env, path string) (int, []byte, string) {
	e.t.Helper()
	resp := e.raw("GET", path, nil)
	b := readAll(e.t, resp)
	return resp.StatusCode, []byte(b), resp.Header.Get("Pi-Served-By")
}

// TestForwarding: a node that holds no shard answers every per-session
// operation through a holder, over both transports — the same bytes, the
// same errors, read your writes without minSeq, the catalog gathered from
// the holders — and, once no holder answers, from the log itself.
func TestForwarding(t *testing.T) {
	p := newForwardPair(t)
	f, h := p.front, p.holder

	var sids []string
	for range 6 { // both shards
		res := f.create(userMsg("u1", "hi"), assistantMsg("hello"))
		sids = append(sids, res.SessionID)
	}
	sid := sids[0]
	// An append through the front is answered by the holder.
	resp := f.raw("POST", "/v1/sessions/"+sid+"/entries", `{"entries":[{"type":"label","id":"l1","parentId":"u1","targetId":"u1","label":"start"}]}`)
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Pi-Served-By") != "holder" {
		t.Fatalf("append via the front: %d, served by %q: %s", resp.StatusCode, resp.Header.Get("Pi-Served-By"), body)
	}
	// Read your writes without minSeq, through the node that was written to.
	for range 20 {
		f.ok(http.StatusOK, "POST", "/v1/sessions/"+sid+"/entries", `{"entries":[{"type":"custom","customType":"x","data":{}}]}`, nil)
		code, b, by := get(f, "/v1/sessions/"+sid+"/entries")
		if code != http.StatusOK || by != "holder" {
			t.Fatalf("entries via the front: %d by %q: %s", code, by, b)
		}
		code2, b2 := h.do("GET", "/v1/sessions/"+sid+"/entries", nil)
		if code2 != http.StatusOK || string(b) != string(b2) {
			t.Fatalf("the front's read differs from the holder's:\n%s\n%s", b, b2)
		}
	}
	// A write forwarded to one holder, then the session's read forwarded
	// to another that has not applied it: the read waits for it.
	for _, g := range p.gates {
		g.close()
	}
	wr := f.ok(http.StatusOK, "POST", "/v1/sessions/"+sid+"/entries", `{"entries":[{"type":"custom","customType":"lagged","data":{}}]}`, nil)
	for k := range 2 {
		if err := h.api.StopShard(k); err != nil {
			t.Fatal(err)
		}
		if err := p.second.api.ServeShard(k); err != nil {
			t.Fatal(err)
		}
	}
	read := make(chan string, 1)
	go func() {
		_, b, by := get(f, "/v1/sessions/"+sid+"/entries")
		read <- by + " " + string(b)
	}()
	select {
	case b := <-read:
		t.Fatalf("the front read the session before its holder applied the write it forwarded (%s): %s", wr, b)
	case <-time.After(300 * time.Millisecond):
	}
	for _, g := range p.gates {
		g.open()
	}
	if b := <-read; !strings.HasPrefix(b, "second ") || !strings.Contains(b, `"lagged"`) {
		t.Fatalf("the second holder's read lacks the write the front forwarded: %s", b)
	}
	for k := range 2 {
		if err := p.second.api.StopShard(k); err != nil {
			t.Fatal(err)
		}
		if err := h.api.ServeShard(k); err != nil {
			t.Fatal(err)
		}
	}
	// Monotonic reads through the front: it showed a write made straight
	// on the holder; its next read, reaching a holder that lags, waits
	// until that one has applied as much.
	for _, g := range p.gates {
		g.close()
	}
	h.ok(http.StatusOK, "POST", "/v1/sessions/"+sid+"/entries", `{"entries":[{"type":"custom","customType":"mono","data":{}}]}`, nil)
	if _, b, by := get(f, "/v1/sessions/"+sid+"/entries"); by != "holder" || !strings.Contains(string(b), `"mono"`) {
		t.Fatalf("the front's read by %q lacks the write: %s", by, b)
	}
	for k := range 2 {
		if err := h.api.StopShard(k); err != nil {
			t.Fatal(err)
		}
		if err := p.second.api.ServeShard(k); err != nil {
			t.Fatal(err)
		}
	}
	go func() {
		_, b, by := get(f, "/v1/sessions/"+sid+"/entries")
		read <- by + " " + string(b)
	}()
	select {
	case b := <-read:
		t.Fatalf("the front's next read went back in time on a lagging holder: %s", b)
	case <-time.After(300 * time.Millisecond):
	}
	for _, g := range p.gates {
		g.open()
	}
	if b := <-read; !strings.HasPrefix(b, "second ") || !strings.Contains(b, `"mono"`) {
		t.Fatalf("the front's next read lacks what its last one showed: %s", b)
	}
	for k := range 2 {
		if err := p.second.api.StopShard(k); err != nil {
			t.Fatal(err)
		}
		if err := h.api.ServeShard(k); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range []string{"", "/tree", "/context", "/export", "/cursors"} {
		code, b, by := get(f, "/v1/sessions/"+sid+path)
		code2, b2 := h.do("GET", "/v1/sessions/"+sid+path, nil)
		if code != http.StatusOK || by != "holder" || code2 != code || string(b) != string(b2) {
			t.Fatalf("GET %s: front %d by %q, holder %d:\n%s\n%s", path, code, by, code2, b, b2)
		}
	}
	// The holder's errors, as they are: status, code, field.
	f.fails(http.StatusBadRequest, "invalid", "entries[0].parentId", "POST", "/v1/sessions/"+sid+"/entries",
		`{"entries":[{"type":"custom","customType":"x","parentId":"nope"}]}`)
	f.fails(http.StatusNotFound, "not_found", "sessionId", "GET", "/v1/sessions/"+testutil.SessionID(t), nil)
	f.fails(http.StatusNotFound, "not_found", "client", "GET", "/v1/sessions/"+sid+"/cursors/w1", nil)
	f.ok(http.StatusOK, "PUT", "/v1/sessions/"+sid+"/cursors/w1", `{"leafId":"u1"}`, nil)
	f.ok(http.StatusOK, "GET", "/v1/sessions/"+sid+"/cursors/w1", nil, nil)

	// The catalog: both shards' sessions, from the holder, as it lists them.
	code, lb, _ := get(f, "/v1/sessions?limit=1000")
	code2, lb2 := h.do("GET", "/v1/sessions?limit=1000", nil)
	if code != http.StatusOK || string(lb) != string(lb2) {
		t.Fatalf("list: front %d, holder %d:\n%s\n%s", code, code2, lb, lb2)
	}
	for _, s := range sids {
		if !strings.Contains(string(lb), s) {
			t.Fatalf("the front's catalog lacks %s: %s", s, lb)
		}
	}
	// Paged: the same pages.
	code, pb, _ := get(f, "/v1/sessions?limit=2")
	_, pb2 := h.do("GET", "/v1/sessions?limit=2", nil)
	if code != http.StatusOK || string(pb) != string(pb2) {
		t.Fatalf("a page: front %s, holder %s", pb, pb2)
	}
	// A search: each shard's page from the holder (Pi-Fwd-Shard), merged
	// as the holder merges its own.
	code, sb, _ := get(f, searchPath("hi", "limit=100"))
	_, sb2 := h.do("GET", searchPath("hi", "limit=100"), nil)
	var sr wire.SearchReply
	if code != http.StatusOK || string(sb) != string(sb2) || json.Unmarshal(sb, &sr) != nil || sr.Total != len(sids) {
		t.Fatalf("search: front %d %s, holder %s; want the %d sessions", code, sb, sb2, len(sids))
	}

	// NATS callers are forwarded too.
	m, err := p.nc.Request("pi.v1.get", []byte(`{"sessionId":"`+sid+`"}`), 10*time.Second)
	if err != nil || m.Header.Get("Pi-Served-By") != "holder" || m.Header.Get("Nats-Service-Error-Code") != "" {
		t.Fatalf("pi.v1.get via the front: %v %v %s", err, m.Header, m.Data)
	}

	// No holder answers: the front reads the log itself.
	for k := range 2 {
		if err := h.api.StopShard(k); err != nil {
			t.Fatal(err)
		}
	}
	code, b, by := get(f, "/v1/sessions/"+sid+"/entries")
	_, b2 := h.do("GET", "/v1/sessions/"+sid+"/entries", nil)
	if code != http.StatusOK || by != "" || string(b) != string(b2) {
		t.Fatalf("entries with no holder up: %d by %q:\n%s\nwant\n%s", code, by, b, b2)
	}
	f.ok(http.StatusOK, "POST", "/v1/sessions/"+sid+"/entries", `{"entries":[{"type":"custom","customType":"y","data":{}}]}`, nil)
	code, b, _ = get(f, "/v1/sessions/"+sid+"/tree")
	if code != http.StatusOK || !strings.Contains(string(b), `"customType":"y"`) && !strings.Contains(string(b), `"type":"custom"`) {
		t.Fatalf("tree with no holder up: %d %s", code, b)
	}
	// But not the catalog: without a holder it would look whole and not be.
	f.fails(http.StatusServiceUnavailable, "unavailable", "", "GET", "/v1/sessions", nil)
	// Nor a search: the front's Stores index nothing.
	if msg := f.fails(http.StatusServiceUnavailable, "unavailable", "", "GET", searchPath("hi"), nil); !strings.Contains(msg, "no node serves shard") {
		t.Fatalf("search with no holder up: %q", msg)
	}
}
