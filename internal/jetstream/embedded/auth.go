package embedded

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/pifleet/sessionlog/internal/natsauth"
)

// authOptions adds the users of s.Auth (with their roles' permissions),
// pi-node's own in-process user, and the route and gateway credentials,
// to opts. Without Auth it does nothing (Token or User/Password, if set,
// apply as before).
func (s *Server) authOptions(opts *server.Options) error {
	if s.Auth == nil {
		return nil
	}
	if s.Token != "" || s.User != "" {
		return errors.New("server: a users file and a shared token or user exclude each other (nats-server admits one kind)")
	}
	if s.internalPass == "" {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		// Made at each start and never written anywhere: the one
		// credential with every right is held only by this process.
		s.internalPass = hex.EncodeToString(b)
	}
	// An authorization block, as a config file would have one: declaring
	// the system account below with only the global one beside it would
	// otherwise make nats-server add a user for connections without
	// credentials (its "system account only" convenience), admitting them.
	if err := opts.ProcessConfigString("authorization { timeout: 2 }"); err != nil {
		return err
	}
	opts.Users = []*server.User{{Username: natsauth.InternalUser, Password: s.internalPass}}
	// The system account, named as nats-server names its default one (every
	// server of a cluster must agree, and servers without a users file use
	// the default), declared so the system role's users can be put in it,
	// at start and on a reload alike. The other users stay in the global
	// account, the one with JetStream.
	sys := server.NewAccount(server.DEFAULT_SYSTEM_ACCOUNT)
	opts.Accounts, opts.SystemAccount = []*server.Account{sys}, sys.Name
	for _, u := range s.Auth.Users {
		perms := serverPerms(natsauth.Permissions(u.Role, u.Name(), s.Logs))
		var acc *server.Account // the global account
		if u.Role == natsauth.RoleSystem {
			acc = sys
		}
		if u.NKey != "" {
			opts.Nkeys = append(opts.Nkeys, &server.NkeyUser{Nkey: u.NKey, Permissions: perms, Account: acc})
			continue
		}
		opts.Users = append(opts.Users, &server.User{Username: u.User, Password: u.Password, Permissions: perms, Account: acc})
	}
	if p := s.Auth.Gateways; p != nil && opts.Gateway.Name != "" {
		// The server checks these on inbound gateways and sends them on
		// outbound ones whose URL has no user of its own.
		opts.Gateway.Username, opts.Gateway.Password = p.User, p.Password
	}
	return nil
}

// serverPerms translates a role's subjects to nats-server's permissions.
func serverPerms(p *natsauth.Perms) *server.Permissions {
	if p == nil {
		return nil
	}
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: p.Publish},
		Subscribe: &server.SubjectPermission{Allow: p.Subscribe},
	}
}

// tlsOptions puts TLS on the client listener (s.TLS) and mutual TLS on
// routes and gateways (s.PeerTLS): the server verifies the dialling
// server's certificate against the CA, and the dialling server the
// listener's.
func (s *Server) tlsOptions(opts *server.Options) {
	if s.TLS != nil {
		opts.TLSConfig = s.TLS
		opts.TLSTimeout = tlsTimeout
	}
	if s.PeerTLS == nil {
		return
	}
	if opts.Cluster.Name != "" {
		opts.Cluster.TLSConfig = s.PeerTLS
		opts.Cluster.TLSTimeout = tlsTimeout
	}
	if opts.Gateway.Name != "" {
		opts.Gateway.TLSConfig = s.PeerTLS
		opts.Gateway.TLSTimeout = tlsTimeout
	}
}

// tlsTimeout bounds a TLS handshake (seconds, as nats-server counts).
const tlsTimeout = 5.0

// InProcessURL is the URL to go with InProcess: nats:// even when the
// client listener has TLS. An in-process connection needs none (the server
// does not require it of one), and tls:// would make the client start TLS
// over the pipe and verify the listener's certificate against its own
// roots, which fails for a deployment's private CA.
func (s *Server) InProcessURL() string {
	return strings.Replace(s.ClientURL(), "tls://", "nats://", 1)
}

// InProcess are the options that connect a client to this server in
// process, with every right: pi-node's own connection, which never
// crosses a network and needs no credential of the users file.
func (s *Server) InProcess() []nats.Option {
	return append(s.clientAuth(), nats.InProcessServer(s.ns))
}

// Reload applies another users file to the running server: added users
// may connect, removed ones and those whose password changed are
// disconnected, every other connection stays. Route and gateway
// credentials are read at start only.
func (s *Server) Reload(auth *natsauth.File) error {
	if s.ns == nil {
		return errors.New("server: not started")
	}
	if s.Auth == nil || auth == nil {
		return errors.New("server: a users file can be reloaded, not added or removed")
	}
	if err := auth.Check(); err != nil {
		return err
	}
	prev := s.Auth
	s.Auth = auth
	opts, err := s.options()
	if err == nil {
		err = s.ns.ReloadOptions(opts)
	}
	if err != nil {
		s.Auth = prev
		return fmt.Errorf("server: reload users: %w", err)
	}
	return nil
}

// ServerTLSConfig is the client listener's TLS configuration over a
// certificate getter, which the caller swaps on reload.
func ServerTLSConfig(getCert func() *tls.Certificate) *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return getCert(), nil },
	}
}

// PeerTLSConfig is the mutual-TLS configuration of routes and gateways
// over a certificate getter (swapped by the caller on reload) and the
// pool of the CA that signed every server's certificate: each side
// presents its certificate and verifies the other's.
func PeerTLSConfig(getCert func() *tls.Certificate, ca *x509.CertPool) *tls.Config {
	return &tls.Config{
		MinVersion:           tls.VersionTLS12,
		GetCertificate:       func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return getCert(), nil },
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return getCert(), nil },
		ClientAuth:           tls.RequireAndVerifyClientCert,
		ClientCAs:            ca,
		RootCAs:              ca,
	}
}
