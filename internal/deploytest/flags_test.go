package deploytest

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
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
)

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
		defer os.RemoveAll(dir)
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
