package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPasswordFileAndEnv: every connection command takes the NATS password
// from --password-file or $PI_CTL_PASSWORD, not only from --password,
// which every user of the host reads in ps. Against a pi-node with the
// users of gen-secrets.
func TestPasswordFileAndEnv(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "secrets")
	mustRun(t, "gen-secrets", "--out", dir, "--names", "localhost")
	n := startNode(t, "pw", "", "--nats-auth", filepath.Join(dir, "nats-auth.json"))
	pwFile := filepath.Join(dir, "nats-worker.password")
	pw, err := os.ReadFile(pwFile)
	if err != nil {
		t.Fatal(err)
	}
	conn := []string{"--server", n.natsURL, "--user", "worker"}
	for _, cmd := range [][]string{{"status"}, {"ls"}} {
		args := append(append([]string{}, cmd...), conn...)
		if r := runCLI(t, "", append(args, "--password-file", pwFile)...); r.code != 0 {
			t.Errorf("pi-ctl %s --password-file: exit %d: %s", cmd[0], r.code, r.stderr)
		}
		if r := runCLIEnv(t, map[string]string{"PI_CTL_PASSWORD": strings.TrimSpace(string(pw))}, args...); r.code != 0 {
			t.Errorf("pi-ctl %s with $PI_CTL_PASSWORD: exit %d: %s", cmd[0], r.code, r.stderr)
		}
		// The flag wins over the variable; without either the node refuses.
		if r := runCLIEnv(t, map[string]string{"PI_CTL_PASSWORD": "wrong"}, append(args, "--password-file", pwFile)...); r.code != 0 {
			t.Errorf("pi-ctl %s --password-file with a wrong $PI_CTL_PASSWORD: exit %d: %s", cmd[0], r.code, r.stderr)
		}
		if r := runCLI(t, "", args...); r.code == 0 {
			t.Errorf("pi-ctl %s without a password: exit 0", cmd[0])
		}
	}
	// $PI_CTL_PASSWORD set for NATS does not break a command over HTTP.
	if r := runCLIEnv(t, map[string]string{"PI_CTL_PASSWORD": "x"}, "status", "--http", n.httpURL); r.code != 0 {
		t.Errorf("status --http with $PI_CTL_PASSWORD: exit %d: %s", r.code, r.stderr)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"ls", "--user", "worker", "--password", "p", "--password-file", pwFile}, 2, "give one"},
		{[]string{"ls", "--password-file", pwFile}, 2, "--password needs --user"},
		{[]string{"ls", "--user", "worker", "--password-file", empty}, 1, "is empty"},
		{[]string{"ls", "--http", n.httpURL, "--user", "worker", "--password-file", pwFile}, 2, "not --http"},
	} {
		if r := runCLI(t, "", tc.args...); r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("pi-ctl %s: exit %d, stderr %q; want exit %d and %q", strings.Join(tc.args, " "), r.code, r.stderr, tc.code, tc.want)
		}
	}
}
