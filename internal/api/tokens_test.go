package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/wire"
)

// tokensFile is a tokens file of one token per scope combination; the
// secret of each is its name reversed (tests only).
func tokensFile(names map[string][]string) string {
	var b strings.Builder
	b.WriteString("# test tokens\n\n")
	for name, scopes := range names {
		fmt.Fprintf(&b, `{"name":%q,"sha256":%q,"scopes":["%s"]}`+"\n", name, api.HashToken(secretOf(name)), strings.Join(scopes, `","`))
	}
	return b.String()
}

func secretOf(name string) string { return "s3cret-" + name }

func bearer(name string) []string { return []string{"Authorization", "Bearer " + secretOf(name)} }

func mustTokens(t *testing.T, file string) *api.Tokens {
	t.Helper()
	tk, err := api.ParseTokens([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestScopesPerOp decides, for every operation of wire.Ops, which scope it
// needs, and checks each token against each operation over HTTP: a new
// operation fails here until it has a row.
func TestScopesPerOp(t *testing.T) {
	want := map[string]string{
		"list": "read", "get": "read", "entries": "read", "tree": "read", "context": "read", "context.build": "read", "export": "read",
		"watch": "read", "cursor.get": "read", "cursor.list": "read", "status": "read", "search": "read",
		"create": "write", "append": "write", "cursor.set": "write", "cursor.delete": "write", "fork": "write", "import": "write", "delete": "write",
		"archive.list": "admin", "archive.restore": "admin", "archive.run": "admin",
	}
	tokens := map[string][]string{"r": {"read"}, "w": {"write"}, "rw": {"read", "write"}, "adm": {"admin"}}
	e := newEnv(t, func(c *api.Config) { c.Tokens = mustTokens(t, tokensFile(tokens)) })
	// A session that does not exist: every allowed operation ends in 404
	// or 400 at worst, and a watch does not stay open.
	const sid = "01a22ba6-0000-7000-8000-0000000000ee"
	for _, o := range wire.Ops {
		scope, ok := want[o.Name]
		if !ok {
			t.Errorf("operation %s: no scope decided in this test", o.Name)
			continue
		}
		if got := api.ScopeOf(o.Name); got != scope {
			t.Errorf("operation %s: scope %q, want %q", o.Name, got, scope)
		}
		path := strings.NewReplacer("{id}", sid, "{client}", "c1").Replace(o.Path)
		var body any
		if o.Body == wire.JSONBody {
			body = "{}"
		}
		for name, scopes := range tokens {
			allowed := scope == "read" && strings.Contains(name, "r") || scope == "write" && strings.Contains(name, "w") || name == "adm"
			t.Run(o.Name+"/"+name, func(t *testing.T) {
				code, b := e.do(o.Method, path, body, bearer(name)...)
				switch {
				case allowed && (code == 401 || code == 403):
					t.Fatalf("%s with scopes %v: %d %s", o.Name, scopes, code, b)
				case !allowed:
					msg := checkError(t, o.Name, code, b, 403, wire.CodeForbidden, "")
					if !strings.Contains(msg, `scope "`+scope+`"`) || !strings.Contains(msg, name) {
						t.Fatalf("403 does not name the missing scope %q and the token: %s", scope, msg)
					}
				}
			})
		}
		e.fails(401, wire.CodeUnauthorized, "", o.Method, path, body)
		e.fails(401, wire.CodeUnauthorized, "", o.Method, path, body, "Authorization", "Bearer "+api.HashToken(secretOf("adm")))
	}
}

func TestParseTokensErrors(t *testing.T) {
	h := api.HashToken("x")
	ok := fmt.Sprintf(`{"name":"a","sha256":%q,"scopes":["read"]}`, h)
	cases := map[string]string{
		"line 2: not a token object":       "# c\nnot json\n",
		"line 3: name must be":             "\n\n" + fmt.Sprintf(`{"name":"","sha256":%q,"scopes":["read"]}`, h),
		"line 2: name \"a\" is also on":    ok + "\n" + fmt.Sprintf(`{"name":"a","sha256":%q,"scopes":["read"]}`, api.HashToken("y")),
		"line 2: the same token as line 1": ok + "\n" + fmt.Sprintf(`{"name":"b","sha256":%q,"scopes":["read"]}`, h),
		"line 1: sha256 must be 64":        `{"name":"a","sha256":"x","scopes":["read"]}`,
		"line 1: sha256 must be 64 hex":    fmt.Sprintf(`{"name":"a","sha256":%q,"scopes":["read"]}`, strings.Repeat("z", 64)),
		"line 1: no scopes":                fmt.Sprintf(`{"name":"a","sha256":%q}`, h),
		"line 1: unknown scope \"root\"":   fmt.Sprintf(`{"name":"a","sha256":%q,"scopes":["root"]}`, h),
		"line 1: not a token object":       fmt.Sprintf(`{"name":"a","token":"plain","sha256":%q,"scopes":["read"]}`, h),
		"line 1: more than one":            ok + ok,
	}
	for want, file := range cases {
		_, err := api.ParseTokens([]byte(file))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: want an error containing %q, got %v", file, want, err)
		}
	}
	tk, err := api.ParseTokens([]byte("# only comments\n\n" + ok + "\r\n"))
	if err != nil || tk.Len() != 1 {
		t.Fatalf("valid file: %v %d", err, tk.Len())
	}
	if _, err := api.LoadTokens(t.TempDir() + "/none"); err == nil || !strings.Contains(err.Error(), "tokens file") {
		t.Fatalf("missing file: %v", err)
	}
}

// TestSetTokensReload swaps the set as a reload does: the old token stops
// working at once, the new one works, --http-token stays valid.
func TestSetTokensReload(t *testing.T) {
	e := newEnv(t, func(c *api.Config) {
		c.Token = "single"
		c.Tokens = mustTokens(t, tokensFile(map[string][]string{"old": {"read"}}))
	})
	if code, b := e.do("GET", "/v1/sessions", nil, bearer("old")...); code != 200 {
		t.Fatalf("old token before the reload: %d %s", code, b)
	}
	e.api.SetTokens(mustTokens(t, tokensFile(map[string][]string{"new": {"read"}})))
	e.fails(401, wire.CodeUnauthorized, "", "GET", "/v1/sessions", nil, bearer("old")...)
	if code, b := e.do("GET", "/v1/sessions", nil, bearer("new")...); code != 200 {
		t.Fatalf("new token: %d %s", code, b)
	}
	if code, b := e.do("GET", "/v1/archive", nil, "Authorization", "Bearer single"); code == 401 || code == 403 {
		t.Fatalf("--http-token is admin and survives reloads: %d %s", code, b)
	}
	// An empty file still requires a token (nothing is open by accident).
	e.api.SetTokens(mustTokens(t, ""))
	e.fails(401, wire.CodeUnauthorized, "", "GET", "/v1/sessions", nil, bearer("new")...)
}

// TestAudit checks the log lines and counters of admin operations and of
// refused requests, and that no secret reaches the log.
func TestAudit(t *testing.T) {
	arch := &fakeArchive{}
	e := newEnv(t, func(c *api.Config) {
		c.Archive = arch
		c.Status = func(context.Context) (any, error) { return map[string]string{"leader": "n1"}, nil }
		c.Tokens = mustTokens(t, tokensFile(map[string][]string{"ops": {"admin"}, "reader": {"read"}}))
	})
	if code, b := e.do("GET", "/v1/archive", nil, bearer("ops")...); code != 200 {
		t.Fatalf("archive.list: %d %s", code, b)
	}
	arch.err = fmt.Errorf("bucket gone: %w", wire.ErrUnavailable)
	if code, _ := e.do("POST", "/v1/archive/run", `{"olderThan":"1h"}`, bearer("ops")...); code != 503 {
		t.Fatalf("archive.run with a failing archive: %d", code)
	}
	e.fails(403, wire.CodeForbidden, "", "POST", "/v1/archive/run", `{}`, bearer("reader")...)
	e.fails(401, wire.CodeUnauthorized, "", "GET", "/v1/sessions", nil, "Authorization", "Bearer guessed-secret")
	e.fails(401, wire.CodeUnauthorized, "", "GET", "/v1/nothing", nil)

	logs := e.logs.String()
	for _, line := range []string{
		`msg="audit: admin operation" who=ops transport=http op=archive.list outcome=ok status=200`,
		`msg="audit: admin operation" who=ops transport=http op=archive.run outcome=unavailable status=503`,
		`msg="audit: forbidden" who=reader transport=http op=archive.run outcome=forbidden`,
		`msg="audit: unauthorized" who=- transport=http op=list outcome=unauthorized`,
		`msg="audit: unauthorized" who=- transport=http op=unknown outcome=unauthorized`,
	} {
		if !strings.Contains(logs, line) {
			t.Errorf("no log line with %s in:\n%s", line, logs)
		}
	}
	for _, secret := range []string{secretOf("ops"), secretOf("reader"), "guessed-secret"} {
		if strings.Contains(logs, secret) {
			t.Errorf("a secret in the log: %s", secret)
		}
	}
	_, metrics := e.do("GET", "/metrics", nil)
	for _, m := range []string{
		`pi_api_auth_total{outcome="ok"} 2`,
		`pi_api_auth_total{outcome="forbidden"} 1`,
		`pi_api_auth_total{outcome="unauthorized"} 2`,
		`pi_api_admin_ops_total{op="archive.list",outcome="ok"} 1`,
		`pi_api_admin_ops_total{op="archive.run",outcome="unavailable"} 1`,
	} {
		if !strings.Contains(string(metrics), m) {
			t.Errorf("metrics lack %s", m)
		}
	}

	// status: the backend's details only for admin.
	_, b := e.do("GET", "/v1/status", nil, bearer("reader")...)
	if strings.Contains(string(b), "leader") {
		t.Errorf("status with read shows the backend: %s", b)
	}
	_, b = e.do("GET", "/v1/status", nil, bearer("ops")...)
	if !strings.Contains(string(b), `"leader":"n1"`) {
		t.Errorf("status with admin lacks the backend: %s", b)
	}
}

// TestAuditNATS: an admin operation over NATS is audited as "nats" (the
// NATS server authorizes that transport; tokens do not apply to it).
func TestAuditNATS(t *testing.T) {
	e, nc, _ := natsEnv(t, func(c *api.Config) {
		c.Archive = &fakeArchive{}
		c.Tokens = mustTokens(t, tokensFile(map[string][]string{"reader": {"read"}}))
	})
	req(t, nc, "archive.list", `{}`)
	line := `msg="audit: admin operation" who=nats transport=nats op=archive.list outcome=ok status=200`
	if !strings.Contains(e.logs.String(), line) {
		t.Fatalf("no %s in:\n%s", line, e.logs.String())
	}
}
