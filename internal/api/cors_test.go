package api_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/apispec"
)

// TestCORS: a page of an allowed origin gets its preflights answered and
// may read the replies' headers; any other origin's preflight is refused,
// and without --http-cors-origins nothing changes. Every exchange is held
// to docs/openapi.yaml, preflights and the CORS headers included.
func TestCORS(t *testing.T) {
	e := newEnv(t, func(c *api.Config) { c.Token = "s3cret" })
	srv, err := api.New(api.Config{Service: e.svc, NodeName: "n1", Token: "s3cret", CORSOrigins: []string{"https://app.example", "http://localhost:5173"}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(apispec.Middleware(t, srv.Handler()))
	t.Cleanup(hs.Close)
	send := func(method, path string, header ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, hs.URL+path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}

	pre := send("OPTIONS", "/v1/sessions", "Origin", "https://app.example", "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization,content-type")
	if pre.StatusCode != 204 || pre.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(pre.Header.Get("Access-Control-Allow-Headers"), "Authorization") || !strings.Contains(pre.Header.Get("Access-Control-Allow-Methods"), "PUT") {
		t.Fatalf("preflight of an allowed origin: %d %v", pre.StatusCode, pre.Header)
	}
	if got := send("OPTIONS", "/v1/sessions", "Origin", "https://evil.example", "Access-Control-Request-Method", "GET"); got.StatusCode != 403 || got.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight of another origin: %d %v", got.StatusCode, got.Header)
	}
	get := send("GET", "/v1/sessions", "Origin", "http://localhost:5173", "Authorization", "Bearer s3cret")
	if get.StatusCode != 200 || get.Header.Get("Access-Control-Allow-Origin") != "http://localhost:5173" ||
		!strings.Contains(get.Header.Get("Access-Control-Expose-Headers"), "Pi-Applied-Seq") || !strings.Contains(get.Header.Get("Vary"), "Origin") {
		t.Fatalf("GET from an allowed origin: %d %v", get.StatusCode, get.Header)
	}
	// The token is still required; the page just learns that it was refused.
	if got := send("GET", "/v1/sessions", "Origin", "https://app.example"); got.StatusCode != 401 || got.Header.Get("Access-Control-Allow-Origin") == "" {
		t.Fatalf("GET without a token from an allowed origin: %d %v", got.StatusCode, got.Header)
	}
	if got := send("GET", "/v1/sessions", "Origin", "https://evil.example", "Authorization", "Bearer s3cret"); got.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("GET from another origin carries CORS headers: %v", got.Header)
	}
	if got := send("GET", "/v1/sessions", "Authorization", "Bearer s3cret"); got.Header.Get("Access-Control-Allow-Origin") != "" || got.Header.Get("Vary") != "Origin" {
		t.Fatalf("GET without Origin: CORS headers, or no Vary: Origin: %v", got.Header)
	}

	// Without CORSOrigins (the default) a preflight is an unknown route.
	resp := e.raw("OPTIONS", "/v1/sessions", nil, "Origin", "https://app.example", "Access-Control-Request-Method", "POST", "Authorization", "Bearer s3cret")
	resp.Body.Close()
	if resp.StatusCode < 400 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight without CORS origins: %d %v", resp.StatusCode, resp.Header)
	}

	// An origin configured in upper case matches what browsers send.
	mixed, err := api.New(api.Config{Service: e.svc, CORSOrigins: []string{"https://App.Example"}})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/v1/status", nil)
	req.Header.Set("Origin", "https://app.example")
	apispec.Middleware(t, mixed.Handler()).ServeHTTP(rec, req)
	if rec.Header().Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Fatalf("mixed-case origin: %v", rec.Header())
	}

	star, err := api.New(api.Config{Service: e.svc, CORSOrigins: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	rec = httptest.NewRecorder()
	req = httptest.NewRequest("GET", "/v1/status", nil)
	req.Header.Set("Origin", "https://anywhere.example")
	apispec.Middleware(t, star.Handler()).ServeHTTP(rec, req)
	if rec.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf(`"*": %v`, rec.Header())
	}

	for _, bad := range [][]string{{"https://app.example/console"}, {"app.example"}, {"*", "https://a.example"}, {"ftp://a.example"}} {
		if err := api.CheckCORSOrigins(bad); err == nil {
			t.Errorf("CheckCORSOrigins(%q) accepted", bad)
		}
	}
}
