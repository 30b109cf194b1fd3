package main

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// node is a stand-in pi-node: /readyz answers with ready's status, /v1/echo
// echoes the method, the token and the body.
func node(t *testing.T, ready int) (listen string) {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(ready)
		_, _ = io.WriteString(w, `{"status":"x"}`)
	})
	mux.HandleFunc("/v1/echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Pi-Stale", "true")
		_, _ = io.WriteString(w, r.Method+" "+r.Header.Get("Authorization")+" "+string(b))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ready int
		args  []string
		want  int
	}{
		{"ready", 200, nil, 0},
		{"not ready", 503, nil, 1},
		{"expect 503", 503, []string{"-expect", "503"}, 0},
		{"expect any", 500, []string{"-expect", "any"}, 0},
		{"bad expect", 200, []string{"-expect", "ok"}, 2},
		{"two args", 200, []string{"/a", "/b"}, 2},
		{"bad header", 200, []string{"-H", "nocolon"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			listen := node(t, tc.ready)
			var stderr bytes.Buffer
			got := run(tc.args, nil, io.Discard, &stderr, env(map[string]string{"PI_NODE_HTTP_LISTEN": listen}))
			if got != tc.want {
				t.Fatalf("exit %d, want %d (stderr %q)", got, tc.want, stderr.String())
			}
		})
	}
}

func TestUnreachableFails(t *testing.T) {
	listen := node(t, 200)
	// A closed port: take one from a server and stop it.
	srv := httptest.NewServer(http.NotFoundHandler())
	dead := srv.URL
	srv.Close()
	if got := run([]string{dead + "/readyz"}, nil, io.Discard, io.Discard, env(map[string]string{"PI_NODE_HTTP_LISTEN": listen})); got != 1 {
		t.Fatalf("exit %d for a closed port, want 1", got)
	}
}

func TestPrintPostAndToken(t *testing.T) {
	listen := node(t, 200)
	var out bytes.Buffer
	e := env(map[string]string{"PI_NODE_HTTP_LISTEN": listen, "PI_NODE_HTTP_TOKEN": "s3cret"})
	if got := run([]string{"-print", "-X", "POST", "-d", "@-", "/v1/echo"}, strings.NewReader("hello"), &out, io.Discard, e); got != 0 {
		t.Fatalf("exit %d", got)
	}
	resp, err := http.ReadResponse(bufio.NewReader(&out), nil)
	if err != nil {
		t.Fatalf("the printed response does not parse: %v\n%s", err, out.String())
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Pi-Stale") != "true" || string(body) != "POST Bearer s3cret hello" {
		t.Fatalf("got %d %v %q", resp.StatusCode, resp.Header, body)
	}

	// An absolute URL never gets the container's token.
	out.Reset()
	if got := run([]string{"-print", "http://" + listen + "/v1/echo"}, nil, &out, io.Discard, e); got != 0 {
		t.Fatalf("exit %d", got)
	}
	if !strings.HasSuffix(out.String(), "GET  ") {
		t.Fatalf("token sent to an absolute URL: %q", out.String())
	}
}

func TestLocalAddr(t *testing.T) {
	for in, want := range map[string]string{
		"":               "127.0.0.1:8080",
		"0.0.0.0:9000":   "127.0.0.1:9000",
		"[::]:9000":      "127.0.0.1:9000",
		":9000":          "127.0.0.1:9000",
		"127.0.0.2:8080": "127.0.0.2:8080",
		"localhost:8081": "localhost:8081",
		"garbage":        "127.0.0.1:8080",
	} {
		if got := localAddr(in); got != want {
			t.Errorf("localAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestHTTPS: with PI_NODE_HTTP_TLS_CERT the local pi-node is probed over
// HTTPS, verified against -tls-ca or the served certificate; another CA
// fails.
func TestHTTPS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	t.Cleanup(srv.Close)
	// httptest's servers share one certificate: make another.
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	otherDER, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writePEM := func(name string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	served := writePEM("served.pem", srv.Certificate().Raw)
	wrong := writePEM("other.pem", otherDER)
	listen := strings.TrimPrefix(srv.URL, "https://")
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want int
	}{
		{"served certificate", nil, map[string]string{"PI_NODE_HTTP_TLS_CERT": served}, 0},
		{"tls-ca", []string{"-tls-ca", served}, map[string]string{"PI_NODE_HTTP_TLS_CERT": "/nonexistent"}, 0},
		{"wrong ca", []string{"-tls-ca", wrong}, map[string]string{"PI_NODE_HTTP_TLS_CERT": served}, 1},
		{"plain http to https", nil, nil, 1},
		{"url with tls-ca", []string{"-tls-ca", served, srv.URL + "/readyz"}, nil, 0},
		{"missing ca", []string{"-tls-ca", filepath.Join(dir, "none.pem"), srv.URL}, nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := map[string]string{"PI_NODE_HTTP_LISTEN": listen}
			for k, v := range tc.env {
				e[k] = v
			}
			var stderr bytes.Buffer
			if got := run(tc.args, nil, io.Discard, &stderr, env(e)); got != tc.want {
				t.Fatalf("exit %d, want %d (stderr %q)", got, tc.want, stderr.String())
			}
		})
	}
}
