package embedded_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/pifleet/sessionlog/internal/jetstream/embedded"
	"github.com/pifleet/sessionlog/internal/jetstream/embedded/embeddedtest"
	"github.com/pifleet/sessionlog/internal/natsauth"
	"github.com/pifleet/sessionlog/internal/secrets"
)

// peerCreds is a CA, a certificate it issued for 127.0.0.1 and one from
// another CA.
type peerCreds struct {
	pool          *x509.CertPool
	cert, foreign tls.Certificate
}

func newPeerCreds(t *testing.T) peerCreds {
	t.Helper()
	var out peerCreds
	for i, c := range []*tls.Certificate{&out.cert, &out.foreign} {
		ca, err := secrets.NewCA(fmt.Sprintf("test CA %d", i), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		certPEM, keyPEM, err := ca.Issue([]string{"127.0.0.1", "localhost"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if *c, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			out.pool = x509.NewCertPool()
			out.pool.AppendCertsFromPEM(ca.CertPEM())
		}
	}
	return out
}

// routeHandshake dials a route port as a server would: TLS with cert
// (nil: none), the INFO, a route CONNECT with user and pass, a PING. It
// returns the first line that answers: PONG, or the refusal.
func routeHandshake(t *testing.T, addr string, pool *x509.CertPool, cert *tls.Certificate, user, pass string) (string, error) {
	t.Helper()
	raw, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	_ = raw.SetDeadline(time.Now().Add(10 * time.Second))
	// A route listener with TLS starts with the handshake, before its INFO.
	cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	if cert != nil { // sent even when its CA is not the one the server asks for
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	c := tls.Client(raw, cfg)
	if err := c.Handshake(); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	info, err := r.ReadString('\n') // TLS 1.3: a refused client certificate shows here
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(info, "INFO ") {
		return "", fmt.Errorf("route port's INFO: %q", info)
	}
	fmt.Fprintf(c, "CONNECT {\"user\":%q,\"pass\":%q,\"tls_required\":true,\"name\":\"rogue\",\"cluster\":\"pi-test\"}\r\nPING\r\n", user, pass)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		if line = strings.TrimSpace(line); line == "PONG" || strings.HasPrefix(line, "-ERR") {
			return line, nil
		}
	}
}

// Routes with mutual TLS and credentials: the cluster forms; a server
// without a certificate, with another CA's, or without the credentials
// is refused.
func TestSecuredRoutes(t *testing.T) {
	pc := newPeerCreds(t)
	h, _ := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	auth := &natsauth.File{
		Users:  []natsauth.User{{User: "ops", Password: string(h), Role: natsauth.RoleAdmin}},
		Routes: &natsauth.Peer{User: "route", Password: "routepw"},
	}
	servers := embeddedtest.RunCluster(t, 3, func(s *embedded.Server) {
		s.Auth = auth
		s.PeerTLS = embedded.PeerTLSConfig(func() *tls.Certificate { return &pc.cert }, pc.pool)
	})
	addr := servers[0].NATS().ClusterAddr().String()
	for _, c := range []struct {
		name       string
		cert       *tls.Certificate
		user, pass string
		want       string // "": refused during TLS
	}{
		{"the cluster's certificate and credentials", &pc.cert, "route", "routepw", "PONG"},
		{"no certificate", nil, "route", "routepw", ""},
		{"another CA's certificate", &pc.foreign, "route", "routepw", ""},
		{"a wrong password", &pc.cert, "route", "nope", "-ERR 'Authorization Violation'"},
		{"no credentials", &pc.cert, "", "", "-ERR 'Authorization Violation'"},
	} {
		got, err := routeHandshake(t, addr, pc.pool, c.cert, c.user, c.pass)
		t.Logf("%s: %q, %v", c.name, got, err)
		switch {
		case c.want == "" && err == nil:
			t.Errorf("%s: admitted (%s)", c.name, got)
		case c.want != "" && got != c.want:
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}
