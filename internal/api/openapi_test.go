package api_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/pifleet/sessionlog/docs"
	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestOpenAPIRoute: /v1/openapi.yaml serves docs/openapi.yaml as it is, to
// a reader's token and no other, like the API it describes.
func TestOpenAPIRoute(t *testing.T) {
	e := newEnv(t)
	resp := e.raw("GET", "/v1/openapi.yaml", nil)
	b := readAll(t, resp)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/yaml" || b != string(docs.OpenAPI) {
		t.Fatalf("GET /v1/openapi.yaml: %d %q, %d bytes; want 200 application/yaml, docs/openapi.yaml's %d bytes",
			resp.StatusCode, resp.Header.Get("Content-Type"), len(b), len(docs.OpenAPI))
	}
	if got := resp.Header.Get("Pi-Node"); got != "n1" {
		t.Errorf("Pi-Node %q, want n1", got)
	}

	tokens := map[string][]string{"r": {"read"}, "w": {"write"}, "adm": {"admin"}}
	e = newEnv(t, func(c *api.Config) { c.Tokens = mustTokens(t, tokensFile(tokens)) })
	e.fails(http.StatusUnauthorized, wire.CodeUnauthorized, "", "GET", "/v1/openapi.yaml", nil)
	e.fails(http.StatusForbidden, wire.CodeForbidden, "", "GET", "/v1/openapi.yaml", nil, bearer("w")...)
	for _, name := range []string{"r", "adm"} {
		if code, b := e.do("GET", "/v1/openapi.yaml", nil, bearer(name)...); code != http.StatusOK || !bytes.Equal(b, docs.OpenAPI) {
			t.Errorf("token %s: %d, %d bytes", name, code, len(b))
		}
	}
}
