package deploytest

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pifleet/sessionlog/internal/natsauth"
	"github.com/pifleet/sessionlog/internal/proctest"
)

var (
	toolsOnce sync.Once
	tools     map[string]string // pi-ctl and natsconf, built from this tree
	toolsDir  string            // TestMain removes it
	toolsErr  error
)

// secretTools builds pi-ctl (for gen-secrets) and deploy/natsconf once;
// PI_CTL_BIN names a pi-ctl to use instead.
func secretTools(t testing.TB) map[string]string {
	t.Helper()
	toolsOnce.Do(func() {
		tools, toolsDir, _, toolsErr = proctest.Build("deploytest-tools-", proctest.PiCtl,
			proctest.Bin{Name: "natsconf", Pkg: "github.com/pifleet/sessionlog/deploy/natsconf"})
	})
	if toolsErr != nil {
		t.Fatal(toolsErr)
	}
	if bin := os.Getenv("PI_CTL_BIN"); bin != "" {
		// Another pi-ctl for gen-secrets (a release build, or one from a
		// branch not merged yet).
		return map[string]string{"pi-ctl": bin, "natsconf": tools["natsconf"]}
	}
	return tools
}

// secrets is a directory of pi-ctl gen-secrets' files, as make secrets
// leaves it, and what the test reads of it to be a client.
type secrets struct {
	dir       string
	tokens    map[string]string // http-<name>.token: admin, worker, reader
	passwords map[string]string // nats-<name>.password: admin, worker, reader, jsworker
	ca        *x509.CertPool
	cert      tls.Certificate // node.pem: server and client auth
}

// genSecrets runs the real pi-ctl gen-secrets for names into a directory
// under build/ (inside the repository, so the Docker engine can bind-mount
// it wherever it runs the checkout from), then does what make secrets does:
// nats-peers.conf for the tie-breaker, files 0640 for the containers'
// group. The directory is removed with the test.
func genSecrets(t *testing.T, root, project string, names []string) *secrets {
	t.Helper()
	bins := secretTools(t)
	dir := filepath.Join(root, "build", "test-secrets", project)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	out, err := exec.Command(bins["pi-ctl"], "gen-secrets", "--out", dir, "--names", strings.Join(names, ",")).CombinedOutput()
	if err != nil {
		t.Fatalf("pi-ctl gen-secrets: %v\n%s", err, out)
	}
	peers, err := exec.Command(bins["natsconf"], filepath.Join(dir, "nats-auth.json")).Output()
	if err != nil {
		t.Fatalf("natsconf: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "nats-peers.conf"), peers, 0o600); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := &secrets{dir: dir, tokens: map[string]string{}, passwords: map[string]string{}}
	for _, e := range entries {
		if e.IsDir() { // ca/: the CA's key, which no container needs
			continue
		}
		p := filepath.Join(dir, e.Name())
		if fi, err := e.Info(); err != nil || fi.Mode().Perm()&0o077 != 0 && e.Name() != "nats-peers.conf" {
			t.Errorf("gen-secrets wrote %s with mode %v, want 0600", e.Name(), fi.Mode())
		}
		if err := os.Chmod(p, 0o640); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name := e.Name()
		if n, ok := strings.CutPrefix(name, "http-"); ok && strings.HasSuffix(n, ".token") {
			s.tokens[strings.TrimSuffix(n, ".token")] = strings.TrimSpace(string(b))
		}
		if n, ok := strings.CutPrefix(name, "nats-"); ok && strings.HasSuffix(n, ".password") {
			s.passwords[strings.TrimSuffix(n, ".password")] = strings.TrimSpace(string(b))
		}
	}
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	for _, f := range secretFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("gen-secrets did not write %s: %v", f, err)
		}
	}
	ca, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	s.ca = x509.NewCertPool()
	if !s.ca.AppendCertsFromPEM(ca) {
		t.Fatal("ca.pem holds no certificate")
	}
	if s.cert, err = tls.LoadX509KeyPair(filepath.Join(dir, "node.pem"), filepath.Join(dir, "node-key.pem")); err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{"admin", "worker", "reader"} {
		if s.tokens[who] == "" || s.passwords[who] == "" {
			t.Fatalf("no HTTP token or NATS password for %s in %s", who, dir)
		}
	}
	return s
}

// env is what the compose files read to mount the directory.
func (s *secrets) env() []string {
	return []string{"PI_SECRETS=" + s.dir, "PI_SECRETS_GID=" + strconv.Itoa(os.Getgid())}
}

// tlsConfig verifies the nodes with the deployment's CA; withCert adds
// the node certificate as the client's.
func (s *secrets) tlsConfig(withCert bool) *tls.Config {
	c := &tls.Config{RootCAs: s.ca, MinVersion: tls.VersionTLS12}
	if withCert {
		c.Certificates = []tls.Certificate{s.cert}
	}
	return c
}

// natsConnect connects to hostPort as user (no credentials for ""), over
// TLS verified with the CA; discovered servers (container addresses) are
// ignored.
func (s *secrets) natsConnect(hostPort, user string) (*nats.Conn, error) {
	opts := []nats.Option{nats.IgnoreDiscoveredServers(), nats.NoReconnect(), nats.Timeout(5 * time.Second),
		nats.Secure(s.tlsConfig(false))}
	if user != "" {
		pw, ok := s.passwords[user]
		if !ok {
			return nil, fmt.Errorf("no password for NATS user %s", user)
		}
		opts = append(opts, nats.UserInfo(user, pw), nats.CustomInboxPrefix(natsauth.InboxPrefix(user)))
	}
	return nats.Connect("tls://"+hostPort, opts...)
}
