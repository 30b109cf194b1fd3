package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/api"
)

// TestTokenNew: the printed line is one pi-node parses, and its hash is
// that of the printed token.
func TestTokenNew(t *testing.T) {
	out := strings.Split(strings.TrimSpace(mustRun(t, "token", "new", "worker-fleet", "--scopes", "read,write,read")), "\n")
	if len(out) != 2 || !strings.HasPrefix(out[0], "pi_") {
		t.Fatalf("output: %q", out)
	}
	secret, line := out[0], out[1]
	if _, err := api.ParseTokens([]byte(line)); err != nil {
		t.Fatalf("pi-node does not take the line %s: %v", line, err)
	}
	if want := `{"name":"worker-fleet","sha256":"` + api.HashToken(secret) + `","scopes":["read","write"]}`; line != want {
		t.Fatalf("line %s, want %s", line, want)
	}
	if got := strings.TrimSpace(runCLI(t, secret+"\n", "token", "hash").stdout); got != api.HashToken(secret) {
		t.Fatalf("token hash: %s", got)
	}
	again := strings.Split(mustRun(t, "token", "new", "worker-fleet", "--scopes", "read"), "\n")[0]
	if again == secret {
		t.Fatal("two tokens alike")
	}

	file := filepath.Join(t.TempDir(), "tokens")
	s1 := strings.TrimSpace(mustRun(t, "token", "new", "a", "--scopes", "admin", "--append", file))
	s2 := strings.TrimSpace(mustRun(t, "token", "new", "b", "--scopes", "read", "--cwd-prefix", "/work/b", "--append", file))
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), s1) || strings.Contains(string(data), s2) || strings.Contains(s1, "\n") {
		t.Fatalf("a secret in the file, or more than the secret printed: %s", data)
	}
	if tk, err := api.ParseTokens(data); err != nil || tk.Len() != 2 || !strings.Contains(string(data), `"cwdPrefix":"/work/b"`) {
		t.Fatalf("appended file: %v\n%s", err, data)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}

	for want, args := range map[string][]string{
		"--scopes is required": {"token", "new", "x"},
		`unknown scope "root"`: {"token", "new", "x", "--scopes", "read,root"},
		"missing NAME":         {"token", "new", "--scopes", "read"},
		"no spaces":            {"token", "new", "a b", "--scopes", "read"},
		"must be an absolute":  {"token", "new", "x", "--scopes", "read", "--cwd-prefix", "work"},
		"exclude each other":   {"token", "new", "x", "--scopes", "admin", "--cwd-prefix", "/work"},
	} {
		if r := runCLI(t, "", args...); r.code != 2 || !strings.Contains(r.stderr, want) {
			t.Errorf("%v: exit %d %q, want 2 with %q", args, r.code, r.stderr, want)
		}
	}
}
