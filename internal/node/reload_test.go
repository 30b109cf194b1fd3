package node

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 (its own CA)
// and its key to dir, named by serial; it returns the two paths.
func selfSigned(t *testing.T, dir string, serial int64) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "pi-node test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, fmt.Sprintf("cert%d.pem", serial)), filepath.Join(dir, fmt.Sprintf("key%d.pem", serial))
	writeFile(t, certFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	writeFile(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})))
	return certFile, keyFile
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// tokenLines is a tokens file: name → scopes; each secret is "secret-"+name.
func tokenLines(tokens map[string][]string) string {
	var b strings.Builder
	for name, scopes := range tokens {
		line, _ := json.Marshal(api.TokenLine{Name: name, SHA256: api.HashToken("secret-" + name), Scopes: scopes})
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// TestHTTPSTokensReload: a node with --http-tokens and --http-tls-cert is
// reached over https with the CA (pi-ctl's client), a read token is 403 on
// append, and SIGHUP rotates tokens and certificate: the removed token stops
// working, while a keep-alive connection of a kept token goes on.
func TestHTTPSTokensReload(t *testing.T) {
	dir := t.TempDir()
	cert, key := selfSigned(t, dir, 1)
	tokensFile := filepath.Join(dir, "tokens")
	writeFile(t, tokensFile, "# test\n"+tokenLines(map[string][]string{"reader": {"read"}, "worker": {"read", "write"}}))
	m, logs := startNode(t, func(c *Config) {
		c.HTTPTokens, c.HTTPTLSCert, c.HTTPTLSKey = tokensFile, cert, key
	})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	base := "https://" + m.HTTPAddr
	ctx := context.Background()

	// pi-ctl's client, with the CA file.
	worker, err := apiclient.NewHTTP(apiclient.HTTPOptions{URL: base, Token: "secret-worker", TLSCA: cert, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	var created wire.WriteResult
	if err := apiclient.Call(ctx, worker, wire.CreateRequest{Entries: []json.RawMessage{json.RawMessage(`{"type":"message","message":{"role":"user","content":"hi"}}`)}}, &created); err != nil {
		t.Fatalf("create over https with the CA: %v", err)
	}
	reader, err := apiclient.NewHTTP(apiclient.HTTPOptions{URL: base, Token: "secret-reader", TLSCA: cert, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	appendReq := wire.AppendRequest{SessionID: created.SessionID, Entries: []json.RawMessage{json.RawMessage(`{"type":"message","message":{"role":"user","content":"more"}}`)}}
	if err := apiclient.Call(ctx, reader, appendReq, nil); !errors.Is(err, wire.ErrForbidden) || !strings.Contains(err.Error(), `"write"`) {
		t.Fatalf("append with a read token: want 403 naming scope write, got %v", err)
	}
	if err := apiclient.Call(ctx, reader, wire.GetRequest{SessionID: created.SessionID, MinSeq: created.LastSeq}, nil); err != nil {
		t.Fatalf("get with a read token: %v", err)
	}
	// Plain http on the TLS listener: net/http's 400, never the API.
	if resp, err := http.Get("http://" + m.HTTPAddr + "/v1/status"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("plain http on the TLS listener: %d", resp.StatusCode)
		}
	}

	// One keep-alive connection of the worker, open across the reload.
	pool := x509.NewCertPool()
	pem, _ := os.ReadFile(cert)
	pool.AppendCertsFromPEM(pem)
	keep := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer keep.CloseIdleConnections()
	var conns []httptrace.GotConnInfo
	list := func(c *http.Client, secret string) (int, error) {
		req, _ := http.NewRequest("GET", base+"/v1/sessions", nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(i httptrace.GotConnInfo) { conns = append(conns, i) },
		}))
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := list(keep, "secret-worker"); code != 200 {
		t.Fatalf("worker before the reload: %d %v", code, err)
	}

	// A file that does not parse: the old set stays, the error is logged.
	writeFile(t, tokensFile, `{"name":"worker","sha256":"not-a-hash","scopes":["read"]}`+"\n")
	if err := m.Reload(); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("reload of a bad file: %v", err)
	}
	if !strings.Contains(logs.String(), "reload: keeping the previous tokens") {
		t.Fatalf("no error line for the bad file:\n%s", logs.String())
	}
	if err := apiclient.Call(ctx, reader, wire.ListRequest{}, nil); err != nil {
		t.Fatalf("reader after a failed reload: %v", err)
	}

	// Rotate: reader removed, a new certificate; then SIGHUP.
	writeFile(t, tokensFile, tokenLines(map[string][]string{"worker": {"read", "write"}, "reader2": {"read"}}))
	cert2, key2 := selfSigned(t, dir, 2)
	if err := os.Rename(cert2, cert); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(key2, key); err != nil {
		t.Fatal(err)
	}
	hup := make(chan os.Signal, 1)
	sigCtx, stop := context.WithCancel(ctx)
	defer stop()
	go m.ReloadOn(sigCtx, hup)
	// A new handshake gets the new certificate (the old CA no longer
	// verifies it; the new one does).
	pool2 := x509.NewCertPool()
	pem2, _ := os.ReadFile(cert)
	pool2.AppendCertsFromPEM(pem2)
	fresh := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool2}}}
	defer fresh.CloseIdleConnections()
	hup <- syscall.SIGHUP
	// Until both are in force: Reload swaps the tokens first and the
	// certificate last.
	testutil.WaitFor(t, 10*time.Second, func() error {
		if err := apiclient.Call(ctx, reader, wire.ListRequest{}, nil); !errors.Is(err, wire.ErrUnauthorized) {
			return fmt.Errorf("removed token: %v", err)
		}
		if code, err := list(fresh, "secret-reader2"); code != 200 {
			return fmt.Errorf("new token over a new handshake with the new CA: %d %v", code, err)
		}
		return nil
	})
	if code, err := list(keep, "secret-worker"); code != 200 {
		t.Fatalf("worker after the reload: %d %v", code, err)
	}
	// The worker's first request, and its last (the fresh client's are in between).
	if first, last := conns[0], conns[len(conns)-1]; !last.Reused || first.Conn != last.Conn {
		t.Fatalf("the worker's second request did not reuse its connection: %+v", conns)
	}
	if code, _ := list(keep, "secret-reader"); code != 401 {
		t.Fatalf("removed token on the kept connection: %d", code)
	}
	old := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if _, err := list(old, "secret-worker"); err == nil {
		t.Fatal("a new handshake still presents the old certificate")
	}
}

func TestParseFlagsHTTPTLS(t *testing.T) {
	c := DefaultConfig()
	if err := c.ParseFlags([]string{"--http-tls-cert", "c.pem"}, func(string) string { return "" }, io.Discard); err == nil || !strings.Contains(err.Error(), "--http-tls-cert and --http-tls-key") {
		t.Fatalf("cert without key: %v", err)
	}
	c = DefaultConfig()
	env := map[string]string{"PI_NODE_HTTP_TOKENS": "/etc/pi/tokens", "PI_NODE_HTTP_TLS_CERT": "c.pem", "PI_NODE_HTTP_TLS_KEY": "k.pem"}
	if err := c.ParseFlags(nil, func(k string) string { return env[k] }, io.Discard); err != nil || c.HTTPTokens != "/etc/pi/tokens" || c.HTTPTLSCert != "c.pem" || c.HTTPTLSKey != "k.pem" {
		t.Fatalf("from the environment: %v %+v", err, c)
	}
}
