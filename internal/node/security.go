package node

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/jetstream/embedded"
	"github.com/pifleet/sessionlog/internal/natsauth"
	"github.com/pifleet/sessionlog/internal/region"
)

// beyondLoopback reports whether a listener on hostport can be reached
// from another host: any address but a loopback one (an empty host and
// 0.0.0.0 are every interface; a name other than localhost may resolve to
// anything).
func beyondLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return true // check() reports the address itself
	}
	if host == "localhost" {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

// loadAuth reads --nats-auth (nil without it).
func (c *Config) loadAuth() (*natsauth.File, error) {
	if c.NATSAuth == "" {
		return nil, nil
	}
	return natsauth.Load(c.NATSAuth)
}

// exposures are the listeners that would serve beyond loopback without
// the protection they need, each with what to add; auth is the loaded
// --nats-auth file. pi-node refuses to start with any (fail closed),
// unless --insecure.
func (c *Config) exposures(auth *natsauth.File) []string {
	var out []string
	if c.HTTPListen != "" && beyondLoopback(c.HTTPListen) && c.HTTPToken == "" && c.HTTPTokens == "" {
		out = append(out, fmt.Sprintf("the HTTP API on %s has no auth: add --http-tokens FILE (pi-ctl gen-secrets) or --http-token", c.HTTPListen))
	}
	if c.PprofListen != "" && beyondLoopback(c.PprofListen) {
		out = append(out, fmt.Sprintf("the profiling endpoints on %s have no auth (and show the process's internals): keep --pprof-listen on 127.0.0.1", c.PprofListen))
	}
	if c.NATSURL != "" {
		return out // the external cluster's listeners are its own
	}
	if c.MonitorListen != "" && beyondLoopback(c.MonitorListen) {
		out = append(out, fmt.Sprintf("the NATS monitoring port on %s has no auth (nats-server serves it without): keep it on 127.0.0.1 for an exporter next to the node", c.MonitorListen))
	}
	if beyondLoopback(c.ClientListen) && auth == nil && c.NATSToken == "" && c.NATSUser == "" {
		out = append(out, fmt.Sprintf("the NATS client port on %s has no auth: add --nats-auth FILE (pi-ctl gen-secrets)", c.ClientListen))
	}
	peer := func(what, flag, listen string, creds *natsauth.Peer) {
		if listen == "" || !beyondLoopback(listen) {
			return
		}
		if c.ClusterTLSCert == "" {
			out = append(out, fmt.Sprintf("the %s on %s have no TLS: add --cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca", what, listen))
		}
		if creds == nil {
			out = append(out, fmt.Sprintf("the %s on %s have no credentials: add %q to the --nats-auth file", what, listen, flag))
		}
	}
	var routes, gateways *natsauth.Peer
	if auth != nil {
		routes, gateways = auth.Routes, auth.Gateways
	}
	if c.ClusterName != "" {
		peer("routes", "routes", c.ClusterListen, routes)
	}
	if c.Region != "" {
		peer("gateways", "gateways", c.GatewayListen, gateways)
	}
	return out
}

// checkExposure is check's fail-closed part.
func (c *Config) checkExposure() error {
	auth, err := c.loadAuth()
	if err != nil {
		return err
	}
	if list := c.exposures(auth); len(list) > 0 && !c.Insecure {
		return fmt.Errorf("refusing to start: %s; or listen on 127.0.0.1, or pass --insecure to run unprotected (docs/SECURITY.md)", strings.Join(list, "; "))
	}
	return nil
}

// certReloader holds a certificate and key pair read from files and swaps
// it on reload; handshakes in progress keep the one they got.
type certReloader struct {
	flag              string // the flag named in errors
	certFile, keyFile string
	cert              atomic.Pointer[tls.Certificate]
}

func newCertReloader(flag, certFile, keyFile string) (*certReloader, error) {
	r := &certReloader{flag: flag, certFile: certFile, keyFile: keyFile}
	return r, r.reload()
}

// reload reads the pair again; on an error the previous one stays.
func (r *certReloader) reload() error {
	c, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("%s %s, key %s: %w", r.flag, r.certFile, r.keyFile, err)
	}
	r.cert.Store(&c)
	return nil
}

func (r *certReloader) current() *tls.Certificate { return r.cert.Load() }

// loadCA reads a PEM file of CA certificates into a pool.
func loadCA(flag, path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s %s: no PEM certificate in it", flag, path)
	}
	return pool, nil
}

// secureEmbedded sets the embedded server's users and TLS from the
// configuration: the users file (auth, loaded) with the session logs its
// roles may reach, TLS on the client listener, mutual TLS on routes and
// gateways.
func (m *Node) secureEmbedded(s *embedded.Server, auth *natsauth.File) error {
	c := &m.Config
	if auth != nil {
		s.Auth, s.Logs = auth, m.logNames()
	}
	if c.NATSTLSCert != "" {
		r, err := newCertReloader("--nats-tls-cert", c.NATSTLSCert, c.NATSTLSKey)
		if err != nil {
			return err
		}
		m.natsCerts = r
		s.TLS = embedded.ServerTLSConfig(r.current)
	}
	if c.ClusterTLSCert != "" {
		r, err := newCertReloader("--cluster-tls-cert", c.ClusterTLSCert, c.ClusterTLSKey)
		if err != nil {
			return err
		}
		pool, err := loadCA("--cluster-tls-ca", c.ClusterTLSCA)
		if err != nil {
			return err
		}
		m.peerCerts = r
		s.PeerTLS = embedded.PeerTLSConfig(r.current, pool)
	}
	return nil
}

// logNames are the session logs on this server, for the roles' subjects:
// the configured one, or in cross-region mode every region's copy.
func (m *Node) logNames() []natsauth.Names {
	c := &m.Config
	n := natsauth.Names{Stream: c.Stream, SubjectPrefix: c.SubjectPrefix, Bucket: c.Bucket}
	if c.Region == "" {
		// Every shard's stream: a JetStream worker writes to each.
		cfg := jetstream.Config{Stream: c.Stream, SubjectPrefix: c.SubjectPrefix}
		out := []natsauth.Names{n}
		for k := 1; k < c.Shards; k++ {
			sk := cfg.Shard(k)
			out = append(out, natsauth.Names{Stream: sk.Stream, SubjectPrefix: sk.SubjectPrefix, Bucket: c.Bucket})
		}
		return out
	}
	regions := map[string]bool{c.Region: true}
	for r := range c.Gateways {
		regions[r] = true
	}
	// Every shard of every region's copy; a node started without
	// --shards takes the record's count, which is not known here: its
	// users file's jetstream role then reaches shard 0 only (CROSS-REGION.md).
	var out []natsauth.Names
	for r := range regions {
		a := region.Assets(jetstream.Config{}, region.Names{Stream: n.Stream, SubjectPrefix: n.SubjectPrefix, Bucket: n.Bucket}, r, 0)
		for k := range max(c.Shards, 1) {
			ak := a.Shard(k)
			out = append(out, natsauth.Names{Stream: ak.Stream, SubjectPrefix: ak.SubjectPrefix, Bucket: a.Bucket})
		}
	}
	return out
}

// reloadNATS reads the users file and the NATS certificates again.
func (m *Node) reloadNATS() []error {
	var errs []error
	if m.Config.NATSAuth != "" && m.server != nil {
		auth, err := m.Config.loadAuth()
		if err == nil {
			err = m.server.Reload(auth)
		}
		if err != nil {
			errs = append(errs, err)
			m.Logger.Error("reload: keeping the previous NATS users", "err", err)
		} else {
			m.Logger.Info("reload: NATS users", "file", m.Config.NATSAuth, "users", len(auth.Users))
		}
	}
	for _, r := range []*certReloader{m.natsCerts, m.peerCerts} {
		if r == nil {
			continue
		}
		if err := r.reload(); err != nil {
			errs = append(errs, err)
			m.Logger.Error("reload: keeping the previous certificate", "err", err)
		} else {
			m.Logger.Info("reload: certificate", "flag", r.flag, "cert", r.certFile)
		}
	}
	return errs
}
