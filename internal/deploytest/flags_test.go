package deploytest

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/natsauth"
)

// repoRoot is the module root, where the deployment files live.
func repoRoot(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		t.Fatal("not inside the module")
	}
	return filepath.Dir(mod)
}

var (
	flagsOnce sync.Once
	flagSet   map[string]bool
	flagsErr  string
	piNodeBin string // the pi-node piNodeFlags built, which checkFailClosed and the metrics checks run
	binDir    string // where it is; TestMain removes it
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range []string{binDir, toolsDir} {
		if d != "" {
			os.RemoveAll(d)
		}
	}
	os.Exit(code)
}

// flagLine matches a flag in the output of flag.PrintDefaults.
var flagLine = regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)\b`)

// piNodeFlags returns the flags of pi-node as its --help lists them: the
// binary is built from this tree, so the deployment files are checked
// against the pi-node they ship, not against a copy of its flag list.
func piNodeFlags(t testing.TB) map[string]bool {
	t.Helper()
	flagsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pi-node-flags")
		if err != nil {
			flagsErr = err.Error()
			return
		}
		binDir = dir
		bin := filepath.Join(dir, "pi-node")
		build := exec.Command("go", "build", "-o", bin, "./cmd/pi-node")
		build.Dir = repoRoot(t)
		if out, err := build.CombinedOutput(); err != nil {
			flagsErr = "go build ./cmd/pi-node: " + err.Error() + "\n" + string(out)
			return
		}
		var help bytes.Buffer
		cmd := exec.Command(bin, "--help")
		cmd.Stdout, cmd.Stderr = &help, &help
		cmd.Env = []string{} // no PI_NODE_* from the test's environment
		if err := cmd.Run(); err != nil {
			flagsErr = "pi-node --help: " + err.Error() + "\n" + help.String()
			return
		}
		piNodeBin = bin
		flagSet = map[string]bool{}
		for _, m := range flagLine.FindAllStringSubmatch(help.String(), -1) {
			flagSet[m[1]] = true
		}
		if !flagSet["http-listen"] || !flagSet["data-dir"] {
			flagsErr = "pi-node --help lists no --http-listen or --data-dir:\n" + help.String()
		}
	})
	if flagsErr != "" {
		t.Fatal(flagsErr)
	}
	return flagSet
}

// envFlag maps PI_NODE_HTTP_LISTEN to http-listen, as pi-node does; ok is
// false for a variable that is not PI_NODE_*.
func envFlag(name string) (flag string, ok bool) {
	rest, ok := strings.CutPrefix(name, "PI_NODE_")
	if !ok {
		return "", false
	}
	return strings.ToLower(strings.ReplaceAll(rest, "_", "-")), true
}

// settings is what a deployment hands pi-node: flags from the command line
// and PI_NODE_* variables, merged as pi-node merges them (flags win).
type settings struct {
	values map[string]string // flag name -> value
	source map[string]string // flag name -> where it was set, for messages
}

func newSettings() *settings {
	return &settings{values: map[string]string{}, source: map[string]string{}}
}

// env records PI_NODE_* variables; others are ignored by the caller.
func (s *settings) env(t testing.TB, flags map[string]bool, where, name, value string) {
	t.Helper()
	f, ok := envFlag(name)
	if !ok {
		return
	}
	if !flags[f] {
		t.Errorf("%s: %s is no pi-node flag (--%s does not exist)", where, name, f)
		return
	}
	if _, set := s.source[f]; set && strings.HasPrefix(s.source[f], "flag") {
		return // a flag on the command line wins
	}
	s.values[f], s.source[f] = value, where+" "+name
}

// args records --flag=value and --flag value arguments.
func (s *settings) args(t testing.TB, flags map[string]bool, where string, args []string) {
	t.Helper()
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			t.Errorf("%s: argument %q is not a flag (pi-node takes only flags)", where, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !flags[name] {
			t.Errorf("%s: --%s is no pi-node flag", where, name)
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				t.Errorf("%s: --%s has no value", where, name)
				continue
			}
			i++
			value = args[i]
		}
		s.values[name], s.source[name] = value, "flag --"+name+" in "+where
	}
}

// port returns the port of a host:port flag, failing when it is not set.
func (s *settings) port(t testing.TB, flag string) string {
	t.Helper()
	v, ok := s.values[flag]
	if !ok {
		t.Errorf("--%s is not set (pi-node's default listens on loopback only)", flag)
		return ""
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		t.Errorf("--%s=%q (%s): %v", flag, v, s.source[flag], err)
		return ""
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		t.Errorf("--%s=%q (%s): a container must listen on every interface (0.0.0.0), not %q", flag, v, s.source[flag], host)
	}
	return port
}

// securityFlags are pi-node's flags that name a secret file: a deployment
// sets each to a file of its mounted secrets, none to a literal secret.
var securityFlags = []string{
	"nats-auth", "http-tokens",
	"nats-tls-cert", "nats-tls-key",
	"cluster-tls-cert", "cluster-tls-key", "cluster-tls-ca",
	"http-tls-cert", "http-tls-key",
}

// secretFiles are the files pi-ctl gen-secrets writes at the top of its
// directory, all a deployment may refer to (the CA's key goes to ca/,
// which no node needs).
var secretFiles = []string{
	"ca.pem", "node.pem", "node-key.pem", "nats-auth.json",
	"nats-admin.password", "nats-worker.password", "nats-reader.password", "nats-jsworker.password",
	"http-tokens", "http-admin.token", "http-worker.token", "http-reader.token",
}

// checkSecuredSettings checks that st names every security flag, each a
// file of gen-secrets under dir (where the deployment mounts them).
func checkSecuredSettings(t *testing.T, where string, st *settings, dir string, extra ...string) {
	t.Helper()
	for _, f := range append(slices.Clone(securityFlags), extra...) {
		v, ok := st.values[f]
		if !ok {
			t.Errorf("%s: --%s is not set: pi-node ships secured", where, f)
			continue
		}
		if filepath.Dir(v) != dir || !slices.Contains(secretFiles, filepath.Base(v)) {
			t.Errorf("%s: --%s=%q (%s): want a file of pi-ctl gen-secrets in %s (%v)", where, f, v, st.source[f], dir, secretFiles)
		}
	}
	for _, f := range []string{"http-token", "nats-token", "insecure"} {
		if v, ok := st.values[f]; ok && v != "" && v != "false" {
			t.Errorf("%s: --%s=%q (%s): the secrets are files of the mounted directory, and nothing runs insecure", where, f, v, st.source[f])
		}
	}
}

// checkFailClosed runs the pi-node binary with the settings st (the
// PI_NODE_* environment and flags of a deployment) and fails the test when
// pi-node rejects them (exit status 2: a configuration error, the
// fail-closed check included). The secret files are replaced by files in a
// temporary directory: a valid --nats-auth file (ParseFlags reads it), the
// others missing, so pi-node stops right after the check, when it loads
// the first certificate, before it listens anywhere.
func checkFailClosed(t *testing.T, where string, st *settings, dir string) {
	t.Helper()
	piNodeFlags(t) // builds piNodeBin
	run := func(drop string) (int, string) {
		tmp := t.TempDir()
		auth := &natsauth.File{
			Users:    []natsauth.User{{User: "admin", Password: "$2a$11$" + strings.Repeat("a", 53), Role: natsauth.RoleAdmin}},
			Routes:   &natsauth.Peer{User: "route", Password: "route-secret"},
			Gateways: &natsauth.Peer{User: "gateway", Password: "gateway-secret"},
		}
		if err := os.WriteFile(filepath.Join(tmp, "nats-auth.json"), auth.Marshal(), 0o600); err != nil {
			t.Fatal(err)
		}
		env := []string{"PATH=" + os.Getenv("PATH")}
		var args []string
		for f, v := range st.values {
			if f == drop {
				continue
			}
			if filepath.Dir(v) == dir {
				v = filepath.Join(tmp, filepath.Base(v))
			}
			if f == "data-dir" {
				v = filepath.Join(tmp, "data")
			}
			args = append(args, "--"+f+"="+v)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, piNodeBin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			return -1, string(out) // still running: past the check
		}
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%s: running pi-node: %v", where, err)
		}
		return code, string(out)
	}
	code, out := run("")
	t.Logf("%s: pi-node with the settings: exit %d after the check: %s", where, code, lastLine(out))
	if code == 2 {
		t.Errorf("%s: pi-node rejects the settings (exit 2):\n%s", where, out)
	} else if strings.Contains(out, "refusing to start") {
		t.Errorf("%s: pi-node refuses to start:\n%s", where, out)
	}
	// The control: without the users file the same settings are refused,
	// so the run above did reach the check.
	if code, out := run("nats-auth"); code != 2 || !strings.Contains(out, "refusing to start") {
		t.Errorf("%s: without --nats-auth pi-node should refuse to start (exit 2), got exit %d:\n%s", where, code, out)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// piCtlHelp returns the flags of a pi-ctl command as its --help lists
// them, from a pi-ctl built from this tree.
func piCtlHelp(t testing.TB, command ...string) map[string]bool {
	t.Helper()
	piNodeFlags(t) // makes binDir
	bin := filepath.Join(binDir, "pi-ctl")
	if _, err := os.Stat(bin); err != nil {
		build := exec.Command("go", "build", "-o", bin, "./cmd/pi-ctl")
		build.Dir = repoRoot(t)
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build ./cmd/pi-ctl: %v\n%s", err, out)
		}
	}
	var help bytes.Buffer
	cmd := exec.Command(bin, append(command, "--help")...)
	cmd.Stdout, cmd.Stderr = &help, &help
	cmd.Env = []string{}
	if err := cmd.Run(); err != nil {
		t.Fatalf("pi-ctl %s --help: %v\n%s", strings.Join(command, " "), err, help.String())
	}
	flags := map[string]bool{}
	for _, m := range flagLine.FindAllStringSubmatch(help.String(), -1) {
		flags[m[1]] = true
	}
	return flags
}
