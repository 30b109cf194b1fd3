package secrets_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/secrets"
)

func newCA(t *testing.T) *secrets.CA {
	t.Helper()
	ca, err := secrets.NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func parseCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(certPEM)
	if b == nil {
		t.Fatal("no PEM block")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestIssueVerifies: the leaf verifies against the CA for server and for
// client authentication, under a DNS name, a wildcard and an IP; a name
// it was not issued for does not.
func TestIssueVerifies(t *testing.T) {
	ca := newCA(t)
	certPEM, _, err := ca.Issue([]string{"pi-node-0.example", "*.pi-node.ns.svc.cluster.local", "10.1.2.3"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf := parseCert(t, certPEM)
	if leaf.SerialNumber.BitLen() < 64 || leaf.IsCA {
		t.Errorf("serial %v, IsCA %v", leaf.SerialNumber, leaf.IsCA)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca.CertPEM()) {
		t.Fatal("CertPEM does not parse")
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		for _, name := range []string{"pi-node-0.example", "pi-node-1.pi-node.ns.svc.cluster.local", "10.1.2.3"} {
			if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: pool, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
				t.Errorf("%s for %v: %v", name, usage, err)
			}
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "other.example", Roots: pool}); err == nil {
		t.Error("verifies for a name it does not have")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "10.1.2.3", Roots: x509.NewCertPool()}); err == nil {
		t.Error("verifies without its CA")
	}
}

// TestLoadCA: a CA written and read back issues certificates the original
// verifies; a key that is not the certificate's is refused.
func TestLoadCA(t *testing.T) {
	ca := newCA(t)
	back, err := secrets.LoadCA(ca.CertPEM(), ca.KeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	certPEM, _, err := back.Issue([]string{"localhost"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	if _, err := parseCert(t, certPEM).Verify(x509.VerifyOptions{DNSName: "localhost", Roots: pool}); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.LoadCA(ca.CertPEM(), newCA(t).KeyPEM()); err == nil || !strings.Contains(err.Error(), "not the certificate's key") {
		t.Errorf("mismatched key: %v", err)
	}
	leafCert, leafKey, _ := ca.Issue([]string{"x"}, time.Hour)
	if _, err := secrets.LoadCA(leafCert, leafKey); err == nil || !strings.Contains(err.Error(), "not a CA") {
		t.Errorf("leaf as CA: %v", err)
	}
}

// handshake runs a mutual-TLS handshake over loopback TCP: the server
// trusts serverCA for clients, the client trusts clientCA for the server.
func handshake(t *testing.T, cert tls.Certificate, serverCA, clientCA *secrets.CA) (serverErr, clientErr error) {
	t.Helper()
	pool := func(ca *secrets.CA) *x509.CertPool {
		p := x509.NewCertPool()
		p.AppendCertsFromPEM(ca.CertPEM())
		return p
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool(serverCA), ClientAuth: tls.RequireAndVerifyClientCert})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		done <- c.(*tls.Conn).Handshake()
	}()
	c, err := net.DialTimeout("tcp", ln.Addr().String(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	cli := tls.Client(c, &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool(clientCA), ServerName: "127.0.0.1"})
	clientErr = cli.Handshake()
	if clientErr == nil {
		// In TLS 1.3 the server checks the client's certificate after the
		// client has finished: a read shows whether it was accepted.
		_, clientErr = cli.Read(make([]byte, 1))
		if errors.Is(clientErr, io.EOF) {
			clientErr = nil
		}
	}
	cli.Close()
	return <-done, clientErr
}

// TestMutualTLS: two ends that present the issued certificate and trust
// the CA (as routes do) complete a handshake; with another CA they do not.
func TestMutualTLS(t *testing.T) {
	ca := newCA(t)
	dir := t.TempDir()
	certPEM, keyPEM, err := ca.Issue([]string{"localhost", "127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := secrets.WriteAll(dir, []secrets.File{{Name: "node.pem", Data: certPEM}, {Name: "node-key.pem", Data: keyPEM}}, false); err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "node.pem"), filepath.Join(dir, "node-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if s, c := handshake(t, cert, ca, ca); s != nil || c != nil {
		t.Fatalf("same CA: server %v, client %v", s, c)
	}
	other := newCA(t)
	if s, _ := handshake(t, cert, other, ca); s == nil {
		t.Error("the server accepted a client of another CA")
	}
	if _, c := handshake(t, cert, ca, other); c == nil {
		t.Error("the client accepted a server of another CA")
	}
}

// TestWriteAll: files are 0600 in a 0700 directory; an existing file
// stops the whole set unless force, and force also tightens its mode.
func TestWriteAll(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "secrets")
	files := []secrets.File{{Name: "a", Data: []byte("1")}, {Name: "b", Data: []byte("2")}}
	if err := secrets.WriteAll(dir, files, false); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v", fi.Mode())
	}
	if err := os.Remove(filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "b"), 0o644); err != nil {
		t.Fatal(err)
	}
	var ee *secrets.ExistsError
	if err := secrets.WriteAll(dir, files, false); !errors.As(err, &ee) || ee.Path != filepath.Join(dir, "b") {
		t.Fatalf("second write: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused write wrote a: %v", err)
	}
	files[1].Data = []byte("new")
	if err := secrets.WriteAll(dir, files, true); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		fi, err := os.Stat(filepath.Join(dir, f.Name))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", f.Name, err, fi)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "b")); string(b) != "new" {
		t.Errorf("b: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("temporary files left: %v", ents)
	}
}

// TestRandom: tokens are 43 base64url characters, passwords letters and
// digits, and no two alike.
func TestRandom(t *testing.T) {
	a, b := secrets.Token(), secrets.Token()
	if len(a) != 43 || a == b || strings.ContainsAny(a, "+/=") {
		t.Errorf("tokens %q %q", a, b)
	}
	p, q := secrets.Password(), secrets.Password()
	if len(p) < 22 || p == q || strings.Trim(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") != "" {
		t.Errorf("passwords %q %q", p, q)
	}
}
