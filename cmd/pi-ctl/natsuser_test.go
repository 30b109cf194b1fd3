package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/pifleet/sessionlog/internal/natsauth"
)

// userOf is the user named name in the --nats-auth file at path.
func userOf(t *testing.T, path, name string) natsauth.User {
	t.Helper()
	f, err := natsauth.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range f.Users {
		if u.User == name {
			return u
		}
	}
	t.Fatalf("%s has no user %s", path, name)
	return natsauth.User{}
}

// TestNATSUserNew: the printed object is a valid user whose hash is the
// printed password's; --append rotates a user in place and adds a new
// one; a broken file is refused and left as it was.
func TestNATSUserNew(t *testing.T) {
	out := strings.Split(strings.TrimSpace(mustRun(t, "nats-user", "new", "ci", "--role", "reader")), "\n")
	if len(out) != 2 {
		t.Fatalf("output %q", out)
	}
	var u natsauth.User
	if err := json.Unmarshal([]byte(out[1]), &u); err != nil || u.User != "ci" || u.Role != "reader" || !strings.HasPrefix(out[1], `{"user":"ci","password":"$2`) {
		t.Fatalf("line %s: %v", out[1], err)
	}
	if bcrypt.CompareHashAndPassword([]byte(u.Password), []byte(out[0])) != nil {
		t.Fatal("the hash is not the password's")
	}
	if c, _ := bcrypt.Cost([]byte(u.Password)); c != bcrypt.MinCost {
		t.Errorf("bcrypt cost %d, want %d", c, bcrypt.MinCost)
	}

	dir := t.TempDir()
	mustRun(t, "gen-secrets", "--out", dir, "--names", "n")
	file := filepath.Join(dir, "nats-auth.json")
	oldPassword, _ := os.ReadFile(filepath.Join(dir, "nats-worker.password"))
	newPassword := strings.TrimSpace(mustRun(t, "nats-user", "new", "worker", "--role", "client", "--append", file))
	if strings.Contains(newPassword, "\n") || newPassword == "" {
		t.Fatalf("printed %q", newPassword)
	}
	w := userOf(t, file, "worker")
	if bcrypt.CompareHashAndPassword([]byte(w.Password), []byte(newPassword)) != nil || bcrypt.CompareHashAndPassword([]byte(w.Password), oldPassword) == nil {
		t.Error("worker's hash is not the new password's alone")
	}
	if c, _ := bcrypt.Cost([]byte(w.Password)); c != bcrypt.MinCost {
		t.Errorf("the rotated hash's bcrypt cost %d, want %d", c, bcrypt.MinCost)
	}
	mustRun(t, "nats-user", "new", "dash", "--role", "reader", "--append", file)
	if f, _ := natsauth.Load(file); len(f.Users) != len(genNATSUsers)+1 || f.Routes == nil {
		t.Errorf("after adding: %+v", f)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}

	broken := filepath.Join(dir, "broken.json")
	const content = `{"users":[{"user":"a","password":"plain","role":"client"}]}`
	if err := os.WriteFile(broken, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, "", "nats-user", "new", "a", "--role", "client", "--append", broken); r.code != 1 || !strings.Contains(r.stderr, "not a bcrypt hash") || r.stdout != "" {
		t.Errorf("broken file: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(broken); string(b) != content {
		t.Errorf("broken file changed: %s", b)
	}

	for want, args := range map[string][]string{
		"client, reader, jetstream, admin": {"nats-user", "new", "x", "--role", "root"},
		"missing NAME":                     {"nats-user", "new", "--role", "client"},
		"not a valid user name":            {"nats-user", "new", "a b", "--role", "client"},
	} {
		if r := runCLI(t, "", args...); r.code != 2 || !strings.Contains(r.stderr, want) {
			t.Errorf("%v: exit %d %q, want 2 with %q", args, r.code, r.stderr, want)
		}
	}
}
