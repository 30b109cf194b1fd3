package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestTenantSessionIDsGlobal pins what docs/API.md (Auth, Tenants) says of
// session ids: they are global, so a tenant's create or import with an id
// another tenant's session has is 409, with the very body its own
// session's id gets (the id, and nothing of the session: not its cwd),
// while a fresh id is 201. The existence of an id is all it tells, and
// ids are UUIDv7s with at least 32 random bits past their time (62 for
// pi-node's): not found by guessing.
func TestTenantSessionIDsGlobal(t *testing.T) {
	e := newEnv(t, func(c *api.Config) {
		c.Tokens = mustTokens(t, tokenLine("a", "/work/team-a", "read", "write")+tokenLine("b", "/work/team-b", "read", "write"))
	})
	a, b := bearer("a"), bearer("b")
	create := func(tok []string, id, cwd string) (int, []byte) {
		return e.do("POST", "/v1/sessions", fmt.Sprintf(`{"header":{"id":%q,"cwd":%q},"entries":[%s]}`, id, cwd, userMsg("u1", "q")), tok...)
	}
	const (
		own   = "01a22ba6-0000-7000-8000-0000000000a1"
		other = "01a22ba6-0000-7000-8000-0000000000b1"
		fresh = "01a22ba6-0000-7000-8000-0000000000f1"
	)
	if code, body := create(a, own, "/work/team-a"); code != 201 {
		t.Fatalf("a's create: %d %s", code, body)
	}
	if code, body := create(b, other, "/work/team-b/secret-project"); code != 201 {
		t.Fatalf("b's create: %d %s", code, body)
	}
	// b's session is a 404 to a, as if it did not exist (TestTenant)...
	if code, body := e.do("GET", "/v1/sessions/"+other, nil, a...); code != 404 {
		t.Fatalf("a's get of b's session: %d %s", code, body)
	}
	// ...but its id is taken: 409, as a's own id is.
	wantCode, want := create(a, own, "/work/team-a")
	if wantCode != 409 || !strings.Contains(string(want), wire.CodeConflict) {
		t.Fatalf("a's create with its own id: %d %s", wantCode, want)
	}
	code, got := create(a, other, "/work/team-a")
	if code != wantCode || strings.ReplaceAll(string(got), other, own) != string(want) {
		t.Errorf("a's create with b's id: %d %s, want what its own id gets: %d %s", code, got, wantCode, want)
	}
	if strings.Contains(string(got), "secret-project") {
		t.Errorf("the 409 tells b's cwd: %s", got)
	}
	file := func(id string) string {
		return `{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/work/team-a/imp"}` + "\n" +
			`{"type":"message","id":"e1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}` + "\n"
	}
	wantCode, want = e.do("POST", "/v1/import", file(own), a...)
	code, got = e.do("POST", "/v1/import", file(other), a...)
	if wantCode != 409 || code != wantCode || strings.ReplaceAll(string(got), other, own) != string(want) {
		t.Errorf("a's import with b's id: %d %s, want what its own id gets: 409 %d %s", code, got, wantCode, want)
	}
	// A fresh id is a new session.
	if code, body := create(a, fresh, "/work/team-a"); code != 201 {
		t.Errorf("a's create with a fresh id: %d %s", code, body)
	}
}
