package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestTenant: a token with a cwdPrefix sees and touches only the sessions
// whose cwd is under it; others are 404 exactly like missing ones, and
// creating or importing elsewhere is 403.
func TestTenant(t *testing.T) {
	te := newTenantEnv(t, "q")
	e, adm, a, mine, others := te.env, te.adm, te.a, te.mine, te.others
	create := func(tok []string, cwd string) (int, writeResult, []byte) {
		code, b := e.do("POST", "/v1/sessions", fmt.Sprintf(`{"header":{"cwd":%q},"entries":[%s]}`, cwd, userMsg("u1", "q")), tok...)
		var res writeResult
		_ = json.Unmarshal(b, &res)
		return code, res, b
	}

	var list wire.ListReply
	_, b := e.do("GET", "/v1/sessions", nil, a...)
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != len(mine) {
		t.Fatalf("list shows %d sessions, want the %d under the prefix: %s", len(list.Sessions), len(mine), b)
	}
	for _, in := range list.Sessions {
		if !mine[in.SessionID] {
			t.Fatalf("list shows %s (%s)", in.SessionID, in.Cwd)
		}
	}
	for sid := range mine {
		if code, b := e.do("GET", "/v1/sessions/"+sid, nil, a...); code != 200 {
			t.Fatalf("own session: %d %s", code, b)
		}
		if code, b := e.do("POST", "/v1/sessions/"+sid+"/entries", `{"entries":[`+userMsg("", "more")+`]}`, a...); code != 200 {
			t.Fatalf("append to own session: %d %s", code, b)
		}
	}

	// Another tenant's session answers as a session that does not exist.
	const missing = "01a22ba6-0000-7000-8000-0000000000ee"
	reqs := []struct{ method, path, body string }{
		{"GET", "/v1/sessions/%s", ""},
		{"GET", "/v1/sessions/%s/entries", ""},
		{"GET", "/v1/sessions/%s/tree", ""},
		{"GET", "/v1/sessions/%s/context", ""},
		{"GET", "/v1/sessions/%s/export", ""},
		{"GET", "/v1/sessions/%s/watch", ""},
		{"GET", "/v1/sessions/%s/cursors", ""},
		{"GET", "/v1/sessions/%s/cursors/c1", ""},
		{"PUT", "/v1/sessions/%s/cursors/c1", `{"leaf":null}`},
		{"DELETE", "/v1/sessions/%s/cursors/c1", ""},
		{"POST", "/v1/sessions/%s/entries", `{"entries":[` + userMsg("", "x") + `]}`},
		{"POST", "/v1/sessions/%s/fork", `{"entryId":"u1"}`},
		{"DELETE", "/v1/sessions/%s", ""},
	}
	for _, r := range reqs {
		wantCode, want := doBounded(t, e, r.method, fmt.Sprintf(r.path, missing), r.body, a)
		for _, sid := range others {
			code, got := doBounded(t, e, r.method, fmt.Sprintf(r.path, sid), r.body, a)
			if code != 404 || code != wantCode || strings.ReplaceAll(string(got), sid, missing) != string(want) {
				t.Errorf("%s %s of another tenant's session: %d %s, want what a missing one gets: %d %s", r.method, r.path, code, got, wantCode, want)
			}
		}
	}
	// Nothing was written to the others' sessions, nor erased.
	for _, sid := range others {
		code, b := e.do("GET", "/v1/sessions/"+sid+"/entries", nil, adm...)
		if code != 200 {
			t.Fatalf("%s after the other tenant's requests: %d %s", sid, code, b)
		}
		if strings.Contains(string(b), `"x"`) {
			t.Fatalf("a write reached %s: %s", sid, b)
		}
	}

	// Creating or importing outside the prefix is 403.
	for _, cwd := range []string{"/work/team-b", "/work/team-ab", "/work/team-a/../team-b", ""} {
		if code, _, b := create(a, cwd); code != 403 || !strings.Contains(string(b), wire.CodeForbidden) {
			t.Errorf("create with cwd %q: %d %s", cwd, code, b)
		}
	}
	if code, _, b := create(a, "/work/team-a/new"); code != 201 {
		t.Fatalf("create under the prefix: %d %s", code, b)
	}
	file := func(id, cwd string) string {
		return `{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-01-01T00:00:00.000Z","cwd":"` + cwd + `"}` + "\n" +
			`{"type":"message","id":"e1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}` + "\n"
	}
	e.fails(403, wire.CodeForbidden, "cwd", "POST", "/v1/import", file("01a22ba6-0000-7000-8000-0000000000b1", "/work/team-b"), a...)
	if code, b := e.do("POST", "/v1/import", file("01a22ba6-0000-7000-8000-0000000000a1", "/work/team-a/imp"), a...); code != 201 {
		t.Fatalf("import under the prefix: %d %s", code, b)
	}
}

// doBounded is e.do with a deadline: a watch that wrongly streams must
// fail the test, not hang it.
func doBounded(t *testing.T, e *env, method, path, body string, header []string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, e.http.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(header[0], header[1])
	resp, err := e.http.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v (a stream where a 404 was due?)", method, path, err)
	}
	return resp.StatusCode, b
}

func TestParseTokensTenant(t *testing.T) {
	h := api.HashToken("x")
	for want, l := range map[string]string{
		"must be an absolute path": fmt.Sprintf(`{"name":"a","sha256":%q,"scopes":["read"],"cwdPrefix":"work/a"}`, h),
		"cannot have scope admin":  fmt.Sprintf(`{"name":"a","sha256":%q,"scopes":["read","admin"],"cwdPrefix":"/work/a"}`, h),
	} {
		if _, err := api.ParseTokens([]byte(l)); err == nil || !strings.Contains(err.Error(), "line 1: ") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want an error on line 1 with %q, got %v", l, want, err)
		}
	}
}
