package secrets

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// skew backdates every certificate so that a node whose clock runs a
// little behind the one that issued it accepts it at once.
const skew = time.Hour

// now dates the certificates; a variable so that a test can fix the
// clock.
var now = time.Now

// CA is a certificate authority: its self-signed certificate and its key.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// NewCA makes a self-signed ECDSA P-256 CA named commonName, valid for
// validFor from now. P-256 is what every TLS stack (Go's, NATS clients in
// other languages, browsers) accepts, with short keys and fast handshakes.
func NewCA(commonName string, validFor time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	t := now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             t.Add(-skew),
		NotAfter:              t.Add(validFor),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true, // it signs leaves only, never another CA
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key}, nil
}

// LoadCA reads a CA that CertPEM and KeyPEM wrote, and checks that the key
// is the certificate's and that the certificate may sign.
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	b, _ := pem.Decode(certPEM)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, errors.New("ca certificate: no CERTIFICATE block")
	}
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("ca certificate: %w", err)
	}
	if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, errors.New("ca certificate: not a CA (IsCA and cert-sign usage needed)")
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("ca key: %w", err)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, errors.New("ca key: not the certificate's key")
	}
	return &CA{Cert: cert, Key: key}, nil
}

// CertPEM is the CA's certificate, PEM-encoded: what every peer trusts.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
}

// KeyPEM is the CA's private key, PKCS#8 PEM-encoded.
func (ca *CA) KeyPEM() []byte {
	out, _ := encodeKey(ca.Key) // a P-256 key always marshals
	return out
}

// Issue makes a leaf certificate and key signed by ca, valid for validFor.
// It is for both server and client authentication, because NATS routes
// and gateways dial each other with mutual TLS and present the same
// certificate either way. Each name that parses as an IP address becomes
// an IP SAN, every other one a DNS SAN (wildcards such as
// *.pi-node.ns.svc.cluster.local included); the first name is also the
// subject's common name.
func (ca *CA) Issue(names []string, validFor time.Duration) (certPEM, keyPEM []byte, err error) {
	if len(names) == 0 {
		return nil, nil, errors.New("issue: no names")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, err
	}
	t := now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: names[0]},
		NotBefore:             t.Add(-skew),
		NotAfter:              t.Add(validFor),
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, nil, err
	}
	kp, err := encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), kp, nil
}

// serialNumber is a random 128-bit serial: unique without a registry of
// the serials issued.
func serialNumber() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// parseKey reads an ECDSA key as PKCS#8 or as SEC 1 ("EC PRIVATE KEY",
// what openssl ecparam writes).
func parseKey(data []byte) (*ecdsa.PrivateKey, error) {
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, errors.New("no PEM block")
	}
	if b.Type == "EC PRIVATE KEY" {
		return x509.ParseECPrivateKey(b.Bytes)
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, err
	}
	ec, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("a %T key, not ECDSA", k)
	}
	return ec, nil
}
