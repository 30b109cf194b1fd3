package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileServer answers like a pi-node that is wrong or malicious: its
// catalog lists a session id made of path segments, and the export of a
// real-looking id has a header whose timestamp is a path. The real
// pi-node refuses both (it validates ids and headers); pi-ctl must not
// trust that a server does.
func hostileServer(t *testing.T) string {
	const good = "019a0000-0000-7000-8000-000000000001"
	const evil = "x/../../../../escape/co"
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/sessions":
			fmt.Fprintf(w, `{"sessions":[{"sessionId":%q,"lastSeq":1,"entries":1},{"sessionId":%q,"lastSeq":1,"entries":1}]}`, evil, good)
		case strings.HasSuffix(r.URL.Path, "/export"):
			w.Header().Set("Content-Type", "application/x-ndjson")
			fmt.Fprintf(w, `{"type":"session","version":3,"id":%q,"timestamp":"../../../../stamp/x","cwd":"/w"}`+"\n", good)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// TestHostileServerIDs: checkout --all, checkout SID and export --all
// write nothing outside the directory they were given, and say why.
func TestHostileServerIDs(t *testing.T) {
	url := hostileServer(t)
	root := t.TempDir()
	dir := filepath.Join(root, "a", "b", "c", "d", "sessions")
	for _, args := range [][]string{
		{"checkout", "--all", "--dir", dir},
		{"checkout", "019a0000-0000-7000-8000-000000000001", "--dir", dir},
		{"export", "--all", "-o", dir},
	} {
		r := runCLI(t, "", append(args, "--http", url)...)
		if r.code == 0 {
			t.Errorf("pi-ctl %v: exit 0 on a hostile server:\n%s%s", args, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout+r.stderr, "refused") {
			t.Errorf("pi-ctl %v does not say what it refused:\n%s%s", args, r.stdout, r.stderr)
		}
	}
	// Nothing anywhere under root but inside dir, and inside dir no folder
	// a timestamp made.
	err := filepath.Walk(root, func(path string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if strings.HasPrefix(rel, "..") || strings.Count(rel, string(filepath.Separator)) > 1 {
			t.Errorf("pi-ctl wrote %s, outside its directory or in a folder a timestamp made", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
