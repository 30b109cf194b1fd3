package console

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHandler: the page and every embedded file are served under Prefix
// with the policy that keeps the page to this origin; /console redirects;
// what is not embedded is a 404.
func TestHandler(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := noRedirect.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, body := get("/console/")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, "<html") {
		t.Fatalf("/console/: %d %q %.100s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	for _, h := range []string{"default-src 'self'", "script-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(resp.Header.Get("Content-Security-Policy"), h) {
			t.Errorf("Content-Security-Policy %q lacks %q", resp.Header.Get("Content-Security-Policy"), h)
		}
	}
	if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Error("no X-Content-Type-Options: nosniff")
	}
	if resp, _ := get("/console"); resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != Prefix {
		t.Errorf("/console: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ := get("/console/no-such-file.js"); resp.StatusCode != 404 {
		t.Errorf("a file not embedded: %d", resp.StatusCode)
	}
	err := fs.WalkDir(assets, "assets", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path == "assets/index.html" { // index.html is Prefix itself
			return err
		}
		resp, _ := get(Prefix + strings.TrimPrefix(path, "assets/"))
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
		if strings.HasSuffix(path, ".js") && !strings.Contains(resp.Header.Get("Content-Type"), "javascript") {
			t.Errorf("%s: Content-Type %q: a module must be served as JavaScript", path, resp.Header.Get("Content-Type"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
