package main

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/natsauth"
	"github.com/pifleet/sessionlog/internal/seal"
	"github.com/pifleet/sessionlog/internal/secrets"
)

// readDir is every file under dir by its path relative to dir; files
// must be 0600 and directories 0700.
func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, de os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, _ := de.Info()
		rel, _ := filepath.Rel(dir, path)
		if de.IsDir() {
			if fi.Mode().Perm() != 0o700 {
				t.Errorf("%s/: mode %v, want 0700", rel, fi.Mode())
			}
			return nil
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", rel, fi.Mode())
		}
		out[rel], err = os.ReadFile(path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGenSecrets: every file is written 0600 and holds what pi-node and
// the clients need, consistent with each other; nothing secret is
// printed; a second run refuses and changes nothing; --force rewrites.
func TestGenSecrets(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "secrets")
	out := mustRun(t, "gen-secrets", "--out", dir, "--names", "pi-node-0.example, *.pi-node.ns.svc.cluster.local,10.0.0.7")
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir: %v %v", err, fi)
	}
	files := readDir(t, dir)
	if got, want := len(files), len(genSecretsFiles()); got != want {
		t.Errorf("%d files, want %d", got, want)
	}
	for _, name := range genSecretsFiles() {
		if files[name] == nil {
			t.Errorf("%s not written", name)
		}
		if !strings.Contains(out, name) {
			t.Errorf("summary does not list %s:\n%s", name, out)
		}
	}
	for _, want := range []string{"--nats-auth " + dir + "/nats-auth.json", "--cluster-tls-ca " + dir + "/ca.pem", "kubectl create secret generic pi-node-secrets --from-file=" + dir} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}

	auth, err := natsauth.Load(filepath.Join(dir, "nats-auth.json"))
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]string{"admin": "admin", "worker": "client", "reader": "reader", "jsworker": "jetstream", "sys": "system"}
	if len(auth.Users) != len(roles) || auth.Routes == nil || auth.Gateways == nil {
		t.Fatalf("nats-auth.json: %+v", auth)
	}
	for _, u := range auth.Users {
		password := files["nats-"+u.User+".password"]
		if roles[u.User] != u.Role || bcrypt.CompareHashAndPassword([]byte(u.Password), password) != nil || bytes.ContainsAny(password, "\n") {
			t.Errorf("user %s (%s): the password file %q does not match", u.User, u.Role, password)
		}
		// Random passwords need no work factor, and a failed login costs
		// the server the hash's time (docs/SECURITY.md).
		if c, err := bcrypt.Cost([]byte(u.Password)); err != nil || c != bcrypt.MinCost {
			t.Errorf("user %s: bcrypt cost %d (%v), want %d", u.User, c, err, bcrypt.MinCost)
		}
		if strings.Contains(out, string(password)) {
			t.Errorf("the summary prints %s's password", u.User)
		}
	}

	if k, err := seal.ParseSecret(files["encryption.key"]); err != nil || len(k) != 64 || strings.Contains(out, string(k)) {
		t.Errorf("encryption.key: %d bytes (%v), want 64 hex digits pi-node takes, not printed", len(k), err)
	}

	if _, err := api.ParseTokens(files["http-tokens"]); err != nil {
		t.Fatalf("pi-node does not take http-tokens: %v", err)
	}
	scopes := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(files["http-tokens"])), "\n") {
		var tl tokenLine
		if err := json.Unmarshal([]byte(line), &tl); err != nil {
			t.Fatal(err)
		}
		scopes[tl.SHA256] = tl.Scopes
	}
	for name, want := range map[string][]string{"admin": {"admin"}, "worker": {"read", "write"}, "reader": {"read"}} {
		secret := string(files["http-"+name+".token"])
		if got := scopes[api.HashToken(secret)]; !slices.Equal(got, want) || strings.Contains(secret, "\n") {
			t.Errorf("token %s: scopes %v, want %v", name, got, want)
		}
		if strings.Contains(out, secret) || strings.Contains(string(files["http-tokens"]), secret) {
			t.Errorf("token %s printed or stored in the clear", name)
		}
	}

	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(files["ca.pem"]) {
		t.Fatal("ca.pem does not parse")
	}
	if _, err := secrets.LoadCA(files["ca.pem"], files[caKeyFile]); err != nil {
		t.Errorf("the CA and its key (%s): %v", caKeyFile, err)
	}
	b, _ := pem.Decode(files["node.pem"])
	leaf, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"pi-node-0.example", "pi-node-2.pi-node.ns.svc.cluster.local", "10.0.0.7", "localhost", "127.0.0.1"} {
		for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
				t.Errorf("node.pem for %s: %v", name, err)
			}
		}
	}

	r := runCLI(t, "", "gen-secrets", "--out", dir, "--names", "x")
	if r.code != 1 || !strings.Contains(r.stderr, filepath.Join(dir, "ca.pem")) || !strings.Contains(r.stderr, "--force") {
		t.Errorf("second run: exit %d %q", r.code, r.stderr)
	}
	if again := readDir(t, dir); !mapsEqual(again, files) {
		t.Error("a refused run changed the files")
	}
	if err := os.Remove(filepath.Join(dir, "ca.pem")); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, "", "gen-secrets", "--out", dir, "--names", "x"); r.code != 1 || !strings.Contains(r.stderr, "ca-key.pem") {
		t.Errorf("run over a partial set: exit %d %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "ca.pem")); err == nil {
		t.Error("a refused run wrote ca.pem")
	}

	mustRun(t, "gen-secrets", "--out", dir, "--names", "x", "--force")
	forced := readDir(t, dir)
	if bytes.Equal(forced["node-key.pem"], files["node-key.pem"]) || bytes.Equal(forced["http-tokens"], files["http-tokens"]) || forced["ca.pem"] == nil {
		t.Error("--force did not rewrite the files")
	}
}

func mapsEqual(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(b[k], v) {
			return false
		}
	}
	return true
}

// TestGenSecretsUsage: a missing or bad flag is a usage error (exit 2).
func TestGenSecretsUsage(t *testing.T) {
	dir := t.TempDir()
	for want, args := range map[string][]string{
		"--out is required":   {"gen-secrets", "--names", "a"},
		"--names is required": {"gen-secrets", "--out", dir},
		"invalid value":       {"gen-secrets", "--out", dir, "--names", "a", "--valid-for", "a year"},
		"must be positive":    {"gen-secrets", "--out", dir, "--names", "a", "--valid-for", "-1h"},
	} {
		if r := runCLI(t, "", args...); r.code != 2 || !strings.Contains(r.stderr, want) {
			t.Errorf("%v: exit %d %q, want 2 with %q", args, r.code, r.stderr, want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("a usage error wrote %v", ents)
	}
}
