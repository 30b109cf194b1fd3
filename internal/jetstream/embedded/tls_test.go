package embedded

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// With TLS on the client listener (a certificate of a CA the process does
// not trust), the in-process connection still connects: InProcessURL is
// nats://, and the server requires no TLS of an in-process client. A
// network client gets TLS.
func TestInProcessWithClientTLS(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	s, _ := authServer(t, func(s *Server) { s.TLS = ServerTLSConfig(func() *tls.Certificate { return cert }) })
	if !strings.HasPrefix(s.ClientURL(), "tls://") || !strings.HasPrefix(s.InProcessURL(), "nats://") {
		t.Fatalf("ClientURL %s, InProcessURL %s", s.ClientURL(), s.InProcessURL())
	}
	nc, err := nats.Connect(s.InProcessURL(), append(s.InProcess(), nats.NoReconnect(), nats.Timeout(5*time.Second))...)
	if err != nil {
		t.Fatalf("in process: %v", err)
	}
	defer nc.Close()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	leaf, _ := x509.ParseCertificate(der)
	pool.AddCert(leaf)
	tc, err := dial(t, s, "client", nats.Secure(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	if err != nil {
		t.Fatalf("over TLS: %v", err)
	}
	if !tc.TLSRequired() {
		t.Error("the network client was not required TLS")
	}
}
