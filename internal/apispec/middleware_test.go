package apispec_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/pifleet/sessionlog/internal/apispec"
)

// recordingTB keeps the errors Middleware reports instead of failing.
type recordingTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recordingTB) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

const sid = "01a22ba6-0000-7000-8000-000000000001"

// TestMiddlewareCatches: a wrong reply to a good request, and a success
// for a request the spec rejects, are reported; a proper error for a bad
// request, and a right reply, are not.
func TestMiddlewareCatches(t *testing.T) {
	cases := []struct {
		name, method, path, body string
		status                   int
		ctype, reply             string
		header                   map[string]string
		wantErr                  string // "" for none
	}{
		{"good", "GET", "/v1/sessions/" + sid + "/cursors", "", 200, "application/json", `{"cursors":[]}`,
			map[string]string{"Pi-Applied-Seq": "3", "Pi-Lag": "0"}, ""},
		{"missing read header", "GET", "/v1/sessions/" + sid + "/cursors", "", 200, "application/json", `{"cursors":[]}`,
			map[string]string{"Pi-Lag": "0"}, "Pi-Applied-Seq"},
		{"undeclared header", "GET", "/v1/sessions/" + sid + "/cursors", "", 200, "application/json", `{"cursors":[]}`,
			map[string]string{"Pi-Applied-Seq": "3", "Pi-Lag": "0", "X-Powered-By": "pi"}, "X-Powered-By"},
		{"wrong reply", "GET", "/v1/sessions/" + sid + "/cursors", "", 200, "application/json", `{"cursors":[{"client":"c"}]}`,
			map[string]string{"Pi-Applied-Seq": "3", "Pi-Lag": "0"}, "does not match"},
		{"undeclared status", "GET", "/v1/sessions/" + sid + "/cursors", "", 418, "application/json", `{"error":{"code":"invalid","message":"m"}}`,
			nil, "does not match"},
		{"bad request answered 200", "POST", "/v1/sessions", `{"entries":[{"type":"message"}]}`, 201, "application/json", `{"sessionId":"` + sid + `","lastSeq":2,"entries":[]}`,
			nil, "must answer 4xx"},
		{"bad request answered 400", "POST", "/v1/sessions", `{"entries":[{"type":"message"}]}`, 400, "application/json", `{"error":{"code":"invalid","message":"entries[0].message: required: an object","field":"entries[0].message"}}`,
			nil, ""},
		{"bad request, bad error", "POST", "/v1/sessions", `{"entries":[{"type":"message"}]}`, 400, "application/json", `{"error":{"code":"nope","message":"m"}}`,
			nil, "no ErrorBody"},
		{"field not leading the message", "GET", "/v1/sessions/NOPE", "", 400, "application/json", `{"error":{"code":"invalid","message":"bad","field":"sessionId"}}`,
			nil, "must start with"},
		{"unknown route", "GET", "/v1/nope", "", 404, "application/json", `{"error":{"code":"not_found","message":"no route"}}`,
			nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := &recordingTB{TB: t}
			h := apispec.Middleware(rec, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.ReadAll(r.Body)
				for k, v := range c.header {
					w.Header().Set(k, v)
				}
				w.Header().Set("Content-Type", c.ctype)
				w.WriteHeader(c.status)
				_, _ = io.WriteString(w, c.reply)
			}))
			srv := httptest.NewServer(h)
			defer srv.Close()
			req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			got := rec.got()
			switch {
			case c.wantErr == "" && len(got) > 0:
				t.Errorf("reported %q", got)
			case c.wantErr != "" && (len(got) == 0 || !strings.Contains(strings.Join(got, "\n"), c.wantErr)):
				t.Errorf("reported %q, want an error with %q", got, c.wantErr)
			}
		})
	}
}

// TestUnobserved: a property of a reply the spec declares and no reply
// carried is named, with the objects of top-level arrays; one that came
// is not.
func TestUnobserved(t *testing.T) {
	h := apispec.Middleware(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Pi-Applied-Seq", "3")
		w.Header().Set("Pi-Lag", "0")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"cursors":[]}`)
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/v1/sessions/" + sid + "/cursors")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	got := strings.Join(apispec.Unobserved(), "\n")
	const op = "GET /v1/sessions/{id}/cursors 200: "
	if !strings.Contains(got, op+"cursors[].client") || !strings.Contains(got, op+"cursors[].revision") {
		t.Errorf("Unobserved does not name the cursors' fields no reply had:\n%s", got)
	}
	if strings.Contains(got, op+"cursors\n") || strings.HasSuffix(got, op+"cursors") {
		t.Errorf("Unobserved names cursors, which the reply had:\n%s", got)
	}
}
