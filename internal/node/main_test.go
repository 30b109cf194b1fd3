package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/testutil"
)

func TestParseFlagsEnvAndPrecedence(t *testing.T) {
	c := DefaultConfig()
	env := map[string]string{"PI_NODE_HTTP_LISTEN": "0.0.0.0:9000", "PI_NODE_MEMORY_BUDGET": "512MiB", "PI_NODE_REPLICAS": "3", "PI_NODE_LOG_FORMAT": "json"}
	err := c.ParseFlags([]string{"--replicas", "1", "--routes", "nats-route://a:6222,nats-route://b:6222", "--cluster-name", "c", "--cluster-listen", "0.0.0.0:6222", "--insecure"},
		func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPListen != "0.0.0.0:9000" || c.MemoryBudget != 512<<20 || c.Replicas != 1 || c.LogFormat != "json" || len(c.Routes) != 2 {
		t.Fatalf("config %+v", c)
	}
}

func TestParseFlagsErrors(t *testing.T) {
	cases := map[string][]string{
		"--sync must be":            {"--sync", "sometimes"},
		"--replicas must be":        {"--replicas", "2"},
		"--memory-budget":           {"--memory-budget", "lots"},
		"--routes":                  {"--routes", "a:1", "--cluster-name", "c", "--cluster-listen", ":6222"},
		"--cluster-name needs":      {"--cluster-name", "c"},
		"--routes needs":            {"--routes", "nats-route://a:1"},
		"--nats-url connects":       {"--nats-url", "nats://x:4222", "--cluster-name", "c", "--cluster-listen", ":1", "--routes", "nats-route://a:1"},
		"--log-level must be":       {"--log-level", "loud"},
		"unexpected argument":       {"extra"},
		"--tls-cert and --tls-key":  {"--tls-cert", "c.pem"},
		"flag provided but not def": {"--nope"},
		"--previous-encryption-key-file is read during a rotation": {"--previous-encryption-key-file", "old.key"},
		"--encryption-cipher \"des\": want chachapoly or aes":      {"--encryption-key-file", "k", "--encryption-cipher", "des"},
		"--encryption-cipher needs --encryption-key-file":          {"--encryption-cipher", "aes"},
	}
	for want, args := range cases {
		c := DefaultConfig()
		err := c.ParseFlags(args, func(string) string { return "" }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: want error containing %q, got %v", args, want, err)
		}
	}
	c := DefaultConfig()
	if err := c.ParseFlags(nil, func(k string) string {
		if k == "PI_NODE_REPLICAS" {
			return "x"
		}
		return ""
	}, io.Discard); err == nil || !strings.Contains(err.Error(), "PI_NODE_REPLICAS") {
		t.Errorf("bad env: %v", err)
	}
}

// TestMainServes starts a whole node on free ports, writes and reads a
// session over HTTP, and shuts down cleanly.
func TestMainServes(t *testing.T) {
	m, logs := startNode(t, func(*Config) {})
	base := "http://" + m.HTTPAddr
	created := createSession(t, base)
	resp, err := http.Get(fmt.Sprintf("%s/v1/sessions/%s/context?minSeq=%d", base, created.SessionID, created.LastSeq))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"content":"hi"`) {
		t.Fatalf("context: %d %s", resp.StatusCode, body)
	}
	for _, path := range []string{"/healthz", "/readyz", "/v1/status", "/metrics"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "pi-node ready") {
		t.Errorf("no ready line in the log:\n%s", logs.String())
	}
	// Without --shards the store's count is taken: 1 for a new store,
	// which the log must say rather than the flag's 0.
	if !strings.Contains(logs.String(), "shards=1") || strings.Contains(logs.String(), "shards=0") {
		t.Errorf("the log does not say the store has 1 shard:\n%s", logs.String())
	}
}

// startNode runs a node on free ports and a temporary data directory, with
// tune's changes to the configuration; the test closes it.
func startNode(t *testing.T, tune func(*Config)) (*Node, *testutil.SyncBuffer) {
	t.Helper()
	logs := &testutil.SyncBuffer{} // the node logs while the test reads
	c := DefaultConfig()
	c.DataDir = t.TempDir()
	c.HTTPListen = "127.0.0.1:0"
	c.ClientListen = "127.0.0.1:0"
	c.NodeName = "t1"
	c.LogOutput = logs
	tune(&c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel) // Open's context lives as long as the node
	m, err := Open(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	return m, logs
}

type createdSession struct {
	SessionID string `json:"sessionId"`
	LastSeq   uint64 `json:"lastSeq"`
}

// createSession creates a one-entry session over HTTP.
func createSession(t *testing.T, base string) createdSession {
	t.Helper()
	resp, err := http.Post(base+"/v1/sessions", "application/json", strings.NewReader(`{"entries":[{"type":"message","message":{"role":"user","content":"hi"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var created createdSession
	_ = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if resp.StatusCode != 201 || created.SessionID == "" {
		t.Fatalf("create: %d %+v", resp.StatusCode, created)
	}
	return created
}

// TestMetricsListen: with --metrics-listen, /metrics moves to that
// listener (with /healthz and /readyz, which stay on the API's too) and is
// a 404 on the API listener; the metrics listener serves nothing else.
func TestMetricsListen(t *testing.T) {
	c := DefaultConfig()
	if err := c.ParseFlags(nil, func(k string) string {
		if k == "PI_NODE_METRICS_LISTEN" {
			return "127.0.0.1:9464"
		}
		return ""
	}, io.Discard); err != nil || c.MetricsListen != "127.0.0.1:9464" {
		t.Fatalf("PI_NODE_METRICS_LISTEN: %q, %v", c.MetricsListen, err)
	}
	m, logs := startNode(t, func(c *Config) { c.MetricsListen = "127.0.0.1:0" })
	closed := false // a second Close would wait for the servers again
	t.Cleanup(func() {
		if !closed {
			_ = m.Close(context.Background())
		}
	})
	if m.MetricsAddr == "" || m.MetricsAddr == m.HTTPAddr {
		t.Fatalf("metrics on %q, API on %q", m.MetricsAddr, m.HTTPAddr)
	}
	api, metrics := "http://"+m.HTTPAddr, "http://"+m.MetricsAddr
	createSession(t, api)
	get := func(url string) (int, string) { t.Helper(); return httpGet(t, url) }
	if code, body := get(metrics + "/metrics"); code != 200 || !strings.Contains(body, `pi_api_requests_total{code="201",endpoint="create",transport="http"} 1`) {
		t.Errorf("metrics listener /metrics: %d %.300s", code, body)
	}
	if code, body := get(api + "/metrics"); code != 404 || !strings.Contains(body, `"not_found"`) {
		t.Errorf("API listener /metrics: %d %.300s, want 404", code, body)
	}
	for _, base := range []string{api, metrics} {
		for _, path := range []string{"/healthz", "/readyz"} {
			if code, body := get(base + path); code != 200 {
				t.Errorf("%s%s: %d %s", base, path, code, body)
			}
		}
	}
	for _, path := range []string{"/v1/status", "/v1/sessions", "/"} {
		if code, body := get(metrics + path); code != 404 {
			t.Errorf("metrics listener %s: %d %.200s, want 404", path, code, body)
		}
	}
	if !strings.Contains(logs.String(), "metrics="+m.MetricsAddr) {
		t.Errorf("the ready line does not say where /metrics is:\n%s", logs.String())
	}
	closed = true
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(metrics + "/healthz"); err == nil {
		t.Error("the metrics listener still serves after Close")
	}
}

// TestPprofListen: --pprof-listen serves Go's profiles of the process on
// a listener of its own, and nothing else; the API listener does not
// serve them; Close stops it.
func TestPprofListen(t *testing.T) {
	m, logs := startNode(t, func(c *Config) { c.PprofListen = "127.0.0.1:0" })
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = m.Close(context.Background())
		}
	})
	if m.PprofAddr == "" || m.PprofAddr == m.HTTPAddr {
		t.Fatalf("pprof on %q, API on %q", m.PprofAddr, m.HTTPAddr)
	}
	pp, api := "http://"+m.PprofAddr, "http://"+m.HTTPAddr
	if code, body := httpGet(t, pp+"/debug/pprof/goroutine?debug=1"); code != 200 || !strings.Contains(body, "goroutine profile") {
		t.Errorf("goroutine profile: %d %.200s", code, body)
	}
	if code, body := httpGet(t, pp+"/debug/pprof/heap?debug=1"); code != 200 || !strings.Contains(body, "heap profile") {
		t.Errorf("heap profile: %d %.200s", code, body)
	}
	// Not the command line: tokens may be on it.
	for _, path := range []string{"/v1/status", "/metrics", "/", "/debug/pprof/cmdline"} {
		if code, _ := httpGet(t, pp+path); code != 404 {
			t.Errorf("pprof listener %s: %d, want 404", path, code)
		}
	}
	if code, _ := httpGet(t, api+"/debug/pprof/"); code == 200 {
		t.Error("the API listener serves the profiles")
	}
	if !strings.Contains(logs.String(), "pprof="+m.PprofAddr) {
		t.Errorf("the ready line does not say where the profiles are:\n%s", logs.String())
	}
	closed = true
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(pp + "/debug/pprof/"); err == nil {
		t.Error("the pprof listener still serves after Close")
	}
}

// httpGet is one GET: the status and the body.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestNATSFatalStopsNode: a fatal error of the embedded server (which only
// logs it and goes on) reaches Node.Fatal, on which main stops the node
// with a failure status, and the log names it.
func TestNATSFatalStopsNode(t *testing.T) {
	m, logs := startNode(t, func(*Config) {})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	select {
	case msg := <-m.Fatal():
		t.Fatalf("a fatal error before any: %q", msg)
	default:
	}
	m.server.NATS().Fatalf("Error listening on %s port: %d", "gateway", 7222)
	select {
	case msg := <-m.Fatal():
		if msg != "Error listening on gateway port: 7222" {
			t.Fatalf("Fatal delivered %q", msg)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server's fatal error did not reach Node.Fatal")
	}
	if !strings.Contains(logs.String(), "fatal: Error listening on gateway port: 7222") {
		t.Fatalf("the log does not name the fatal error:\n%s", logs.String())
	}
}

// TestNATSNoticesAtInfo: the embedded server's notices are logged at info
// once it has started (a leader elected is what an operator looks for),
// and its start-up banner at debug.
func TestNATSNoticesAtInfo(t *testing.T) {
	m, logs := startNode(t, func(*Config) {})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	if strings.Contains(logs.String(), "Starting nats-server") {
		t.Fatalf("the start-up banner is logged above debug:\n%s", logs.String())
	}
	m.server.NATS().Noticef("JetStream cluster new stream leader for %q", "PI_SESSIONS")
	if !strings.Contains(logs.String(), `level=INFO msg="JetStream cluster new stream leader for \"PI_SESSIONS\""`) {
		t.Fatalf("a notice after the start is not logged at info:\n%s", logs.String())
	}
}

// TestMaxFileStore: with --max-file-store the embedded server's JetStream
// stores no more than that; a write beyond it is refused with a 503 (the
// disk is not filled), and what was stored stays readable.
func TestMaxFileStore(t *testing.T) {
	const limit = 2 << 20
	m, logs := startNode(t, func(c *Config) { c.MaxFileStore = limit })
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	if got := m.server.NATS().JetStreamConfig().MaxStore; got != limit {
		t.Fatalf("the server's JetStream file storage limit is %d, want %d", got, limit)
	}
	base := "http://" + m.HTTPAddr
	first := createSession(t, base)
	big := `{"entries":[{"type":"custom","customType":"filler","data":"` + strings.Repeat("x", 64<<10) + `"}]}`
	refused := 0
	var last *http.Response
	for i := 0; i < 2*limit/(64<<10) && refused == 0; i++ {
		resp, err := http.Post(base+"/v1/sessions", "application/json", strings.NewReader(big))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusCreated:
		case http.StatusServiceUnavailable:
			refused++
			last = resp
			t.Logf("refused after %d writes of 64 KiB: %s", i, body)
		default:
			t.Fatalf("write %d beyond the limit: %d %s", i, resp.StatusCode, body)
		}
	}
	if refused == 0 || last == nil {
		t.Fatalf("twice the limit's worth of writes went through: --max-file-store %d is not in force", limit)
	}
	resp, err := http.Get(base + "/v1/sessions/" + first.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a session stored before the limit was reached: %d", resp.StatusCode)
	}
}

// TestMonitorListen: --monitor-listen serves the embedded server's own
// monitoring endpoints, what NATS tooling reads (prometheus-nats-exporter
// scrapes /varz and /jsz); without it there is none. With --nats-url it is
// refused: the external servers have their own.
func TestMonitorListen(t *testing.T) {
	m, _ := startNode(t, func(c *Config) { c.MonitorListen = "127.0.0.1:0" })
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	if m.MonitorAddr == "" {
		t.Fatal("no monitoring address after Open")
	}
	var varz struct {
		ServerName string `json:"server_name"`
		JetStream  struct {
			Config struct {
				StoreDir string `json:"store_dir"`
			} `json:"config"`
		} `json:"jetstream"`
	}
	getJSON := func(path string, v any) {
		t.Helper()
		resp, err := http.Get("http://" + m.MonitorAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: %v: %s", path, err, body)
		}
	}
	getJSON("/varz", &varz)
	if varz.ServerName != "t1" || varz.JetStream.Config.StoreDir == "" {
		t.Fatalf("/varz: %+v", varz)
	}
	var jsz struct {
		Streams int `json:"streams"`
	}
	getJSON("/jsz", &jsz)
	if jsz.Streams == 0 {
		t.Fatalf("/jsz lists no stream: %+v", jsz)
	}
	var health struct {
		Status string `json:"status"`
	}
	getJSON("/healthz?js-enabled-only=true", &health)
	if health.Status != "ok" {
		t.Fatalf("/healthz: %+v", health)
	}

	plain, _ := startNode(t, func(c *Config) {})
	t.Cleanup(func() { _ = plain.Close(context.Background()) })
	if plain.MonitorAddr != "" {
		t.Fatalf("monitoring on %s without --monitor-listen", plain.MonitorAddr)
	}
	cfg := DefaultConfig()
	if err := cfg.ParseFlags([]string{"--nats-url", "nats://127.0.0.1:4222", "--monitor-listen", "127.0.0.1:8222"}, func(string) string { return "" }, io.Discard); err == nil || !strings.Contains(err.Error(), "--monitor-listen") {
		t.Fatalf("--monitor-listen with --nats-url: %v", err)
	}
}
