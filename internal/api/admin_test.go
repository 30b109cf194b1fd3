package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

func TestToken(t *testing.T) {
	e := newEnv(t, func(c *api.Config) { c.Token = "s3cret" })
	for _, h := range [][]string{
		nil,
		{"Authorization", "Bearer wrong"},
		{"Authorization", "Bearer s3cret-and-more"},
		{"Authorization", "Basic s3cret"},
		{"Authorization", "s3cret"},
	} {
		e.fails(401, wire.CodeUnauthorized, "", "GET", "/v1/sessions", nil, h...)
	}
	resp := e.raw("GET", "/v1/status", nil)
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("401 without WWW-Authenticate: %d %v", resp.StatusCode, resp.Header)
	}
	// Writes and watches are refused before their bodies are looked at,
	// and unknown /v1 paths do not reveal that they are unknown.
	e.fails(401, wire.CodeUnauthorized, "", "POST", "/v1/sessions", `{"entries":[]}`)
	e.fails(401, wire.CodeUnauthorized, "", "GET", "/v1/sessions/01a22ba6-0000-7000-8000-000000000000/watch", nil)
	e.fails(401, wire.CodeUnauthorized, "", "GET", "/v1/nothing", nil)

	auth := []string{"Authorization", "Bearer s3cret"}
	if code, b := e.do("GET", "/v1/sessions", nil, auth...); code != 200 {
		t.Fatalf("with the token: %d %s", code, b)
	}
	if code, b := e.do("GET", "/v1/sessions", nil, "Authorization", "bearer s3cret"); code != 200 {
		t.Fatalf("scheme is case-insensitive: %d %s", code, b)
	}
	e.fails(404, wire.CodeNotFound, "", "GET", "/v1/nothing", nil, auth...)
	// Every reply names its node: an unknown route's and the probes' too.
	for _, path := range []string{"/v1/nothing", "/healthz", "/readyz", "/metrics"} {
		resp := e.raw("GET", path, nil, auth...)
		resp.Body.Close()
		if resp.Header.Get("Pi-Node") != "n1" {
			t.Errorf("GET %s: Pi-Node %q, want n1", path, resp.Header.Get("Pi-Node"))
		}
	}
	for _, open := range []string{"/healthz", "/metrics"} {
		if code, b := e.do("GET", open, nil); code != 200 {
			t.Fatalf("%s needs no token: %d %s", open, code, b)
		}
	}
}

func TestReadyz(t *testing.T) {
	var backendErr atomic.Pointer[error]
	e := newEnv(t, func(c *api.Config) {
		c.Ready = func(ctx context.Context) error {
			if p := backendErr.Load(); p != nil {
				return *p
			}
			return nil
		}
	})
	// The Store polls the log at once on Open; it is caught up soon.
	testutil.WaitFor(t, 10*time.Second, func() error {
		if code, b := e.do("GET", "/readyz", nil); code != 200 {
			return fmt.Errorf("%d %s", code, b)
		}
		return nil
	})
	err := errors.New("stream PI_SESSIONS not found")
	backendErr.Store(&err)
	msg := e.fails(503, wire.CodeUnavailable, "", "GET", "/readyz", nil)
	if !strings.Contains(msg, "PI_SESSIONS") {
		t.Fatalf("readyz should say why: %s", msg)
	}
	if code, _ := e.do("GET", "/healthz", nil); code != 200 {
		t.Fatalf("healthz follows the process, not the backend: %d", code)
	}
}

func TestStatus(t *testing.T) {
	e := newEnv(t, func(c *api.Config) {
		c.Status = func(context.Context) (any, error) {
			return map[string]any{"mode": "single", "stream": map[string]any{"replicas": 1}}, nil
		}
	})
	res := e.create(userMsg("u1", "q"))
	var st struct {
		Node    string `json:"node"`
		Service string `json:"service"`
		Store   struct {
			Applied, Sessions int
			Search            *wire.SearchStatus
		}
		JetStream struct{ Mode string }
	}
	e.ok(200, "GET", fmt.Sprintf("/v1/status?minSeq=%d", res.LastSeq), nil, &st)
	if st.Node != "n1" || st.Service != "pi-sessions" || st.Store.Sessions != 1 || st.Store.Applied < int(res.LastSeq) || st.JetStream.Mode != "single" {
		t.Fatalf("status: %+v", st)
	}
	// The index follows the log on its own: it reaches the create's
	// sequence soon after.
	testutil.WaitFor(t, 10*time.Second, func() error {
		e.ok(200, "GET", "/v1/status", nil, &st)
		if s := st.Store.Search; s == nil || s.Applied < res.LastSeq || !s.CaughtUp || s.Lag != 0 {
			return fmt.Errorf("store.search: %+v", s)
		}
		return nil
	})

	e2 := newEnv(t, func(c *api.Config) {
		c.Status = func(context.Context) (any, error) { return nil, errors.New("no JetStream") }
	})
	var st2 struct {
		JetStream map[string]string `json:"jetstream"`
	}
	e2.ok(200, "GET", "/v1/status", nil, &st2)
	if st2.JetStream["error"] != "no JetStream" {
		t.Fatalf("status with a failing backend: %+v", st2)
	}
}

func TestMetrics(t *testing.T) {
	e := newEnv(t)
	res := e.create(userMsg("u1", "q"))
	path := "/v1/sessions/" + res.SessionID + "/entries"
	e.ok(200, "POST", path, `{"entries":[`+userMsg("", "x")+`]}`, nil)
	e.fails(409, wire.CodeConflict, "", "POST", path, `{"entries":[`+userMsg("", "x")+`],"expectLastSeq":1}`)
	e.fails(404, wire.CodeNotFound, "", "GET", "/v1/sessions/01a22ba6-0000-7000-8000-000000000000", nil)
	testutil.WaitFor(t, 10*time.Second, func() error {
		_, b := e.do("GET", "/metrics", nil)
		for _, want := range []string{
			`pi_api_requests_total{code="201",endpoint="create",transport="http"} 1`,
			`pi_api_requests_total{code="404",endpoint="get",transport="http"} 1`,
			`pi_appends_total{result="ok"} 1`,
			`pi_appends_total{result="conflict"} 1`,
			`pi_append_duration_seconds_count 2`,
			`pi_api_request_duration_seconds_bucket{endpoint="append",transport="http",le="+Inf"} 2`,
			`pi_store_sessions 1`,
			`pi_store_records_applied_total 3`,
			`pi_store_consumer_lag 0`,
			`pi_search_applied_seq 3`,
			`pi_search_lag 0`,
			`pi_store_bytes `,
			`go_goroutines `,
		} {
			if !strings.Contains(string(b), want) {
				return fmt.Errorf("/metrics lacks %q", want)
			}
		}
		return nil
	})
	// Each Server has its own registry: a second one starts from zero.
	e2 := newEnv(t)
	_, b := e2.do("GET", "/metrics", nil)
	if strings.Contains(string(b), `pi_appends_total{result="ok"}`) {
		t.Fatal("metrics leaked between servers")
	}
	if e.api.Registry() == e2.api.Registry() {
		t.Fatal("servers share a registry")
	}
}

// TestReadsCarryFreshness: every read says how far the node has applied the
// log, and flags itself stale when the Store has not been caught up lately
// (a partitioned node serves what it has, flagged).
func TestReadsCarryFreshness(t *testing.T) {
	var offset atomic.Int64
	e := newEnv(t, func(c *api.Config) {
		c.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	})
	sid := e.create(`{"type":"message","message":{"role":"user","content":"q"}}`).SessionID
	testutil.WaitFor(t, 5*time.Second, func() error {
		resp := e.raw("GET", "/v1/sessions/"+sid, nil)
		resp.Body.Close()
		if resp.Header.Get("Pi-Applied-Seq") == "" {
			return fmt.Errorf("no Pi-Applied-Seq header")
		}
		if resp.Header.Get("Pi-Stale") != "" {
			return fmt.Errorf("a caught-up node says stale")
		}
		if lag := resp.Header.Get("Pi-Lag"); lag != "0" {
			return fmt.Errorf("a caught-up node says Pi-Lag %q", lag)
		}
		return nil
	})
	offset.Store(int64(3 * time.Second)) // as if the log had not answered for 3 s
	resp := e.raw("GET", "/v1/sessions/"+sid, nil)
	resp.Body.Close()
	if resp.Header.Get("Pi-Stale") != "true" {
		t.Fatal("a node behind for 3 s is not flagged stale")
	}
}

// TestStatusCluster: every read token sees where the data lives (each
// stream's leader and replicas, the members) under "cluster", the web
// console's cluster view; the backend's details under "jetstream" stay
// admin's.
func TestStatusCluster(t *testing.T) {
	js := wire.JetStreamStatus{Mode: "embedded-cluster", Server: "n1", Connected: "nats://10.0.0.1:4222", Bucket: "PI_CURSORS",
		Stream: wire.StreamStatus{Name: "PI_SESSIONS", Replicas: 3, Leader: "n2", LastSeq: 9,
			Followers: []wire.PeerStatus{{Name: "n1", Current: true, Active: "120ms"}, {Name: "n3", Lag: 4, Active: "80ms"}}},
		Hold: 2, Members: []wire.MemberStatus{{Node: "n1", Held: []int{0}, Ready: []int{0}}}}
	e := newEnv(t, func(c *api.Config) {
		c.Tokens = mustTokens(t, tokensFile(map[string][]string{"r": {"read"}, "adm": {"admin"}}))
		c.Status = func(context.Context) (any, error) { return js, nil }
	})
	var st struct {
		JetStream map[string]any      `json:"jetstream"`
		Cluster   *wire.ClusterStatus `json:"cluster"`
	}
	_, b := e.do("GET", "/v1/status", nil, bearer("r")...)
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if st.JetStream != nil || strings.Contains(string(b), "10.0.0.1") {
		t.Errorf("a read token got the backend's details: %s", b)
	}
	if c := st.Cluster; c == nil || c.Mode != "embedded-cluster" || len(c.Streams) != 1 || c.Streams[0].Leader != "n2" ||
		len(c.Streams[0].Followers) != 2 || c.Streams[0].Followers[1].Lag != 4 || c.Hold != 2 || len(c.Members) != 1 {
		t.Errorf("a read token's cluster: %s", b)
	}
	_, b = e.do("GET", "/v1/status", nil, bearer("adm")...)
	st.JetStream, st.Cluster = nil, nil
	if err := json.Unmarshal(b, &st); err != nil || st.JetStream["connected"] != "nats://10.0.0.1:4222" || st.Cluster == nil {
		t.Errorf("an admin's status: %s", b)
	}
	js.Shards = []wire.StreamStatus{js.Stream, {Name: "PI_SESSIONS_1", Leader: "n3"}}
	_, b = e.do("GET", "/v1/status", nil, bearer("r")...)
	st.Cluster = nil
	if err := json.Unmarshal(b, &st); err != nil || len(st.Cluster.Streams) != 2 || st.Cluster.Streams[1].Leader != "n3" {
		t.Errorf("a sharded cluster: %s", b)
	}
}
