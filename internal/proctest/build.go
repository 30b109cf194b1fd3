package proctest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Bin is a command to build: its binary's name, its package, and the
// environment variable naming a binary built already.
type Bin struct{ Name, Pkg, Env string }

// The binaries the process tests run.
var (
	PiNode     = Bin{"pi-node", "github.com/pifleet/sessionlog/cmd/pi-node", "PI_NODE_BIN"}
	PiCtl      = Bin{"pi-ctl", "github.com/pifleet/sessionlog/cmd/pi-ctl", "PI_CTL_BIN"}
	NATSServer = Bin{"nats-server", "github.com/nats-io/nats-server/v2", "PI_NATS_SERVER_BIN"} // at the version go.mod pins
)

// prebuilt is the binary b's variable names, if any: .ci/run builds the
// three once and every process suite runs them, instead of each package
// linking its own (a link of pi-node is seconds of both cores).
func prebuilt(b Bin) string {
	if b.Env == "" {
		return ""
	}
	return os.Getenv(b.Env)
}

// Build builds bins into a new temporary directory (named after prefix),
// so a test runs the exact code under review; go test puts its own go
// first on PATH, so this is the same toolchain. One go build for all of
// them: separate builds in parallel would each compile the dependencies
// they share on a cold cache. PI_NODE_BIN, PI_CTL_BIN and
// PI_NATS_SERVER_BIN name binaries to use instead of building them (a
// release build, a snapshot while the tree is mid-edit, or the ones
// .ci/run built once for every suite). It returns the paths by name, the directory, and a
// cleanup that removes it.
func Build(prefix string, bins ...Bin) (map[string]string, string, func(), error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	paths := make(map[string]string, len(bins))
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, b := range bins {
		if p := prebuilt(b); p != "" {
			paths[b.Name] = p
			continue
		}
		// go build names each binary after its package path's last
		// element, the major-version suffix left out: Bin.Name.
		paths[b.Name] = filepath.Join(dir, b.Name)
		args = append(args, b.Pkg)
	}
	if len(args) > 3 {
		if msg, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			cleanup()
			return nil, "", nil, fmt.Errorf("go %v: %v\n%s", args, err, msg)
		}
	}
	for name, path := range paths {
		if _, err := os.Stat(path); err != nil {
			cleanup()
			return nil, "", nil, fmt.Errorf("binary %s: %w", name, err)
		}
	}
	return paths, dir, cleanup, nil
}

// BuildInto builds b into dir and returns the binary's path: for a binary
// only some tests need, built on first use beside the ones Build made.
func BuildInto(dir string, b Bin) (string, error) {
	if p := prebuilt(b); p != "" {
		return p, nil
	}
	out := filepath.Join(dir, b.Name)
	if msg, err := exec.Command("go", "build", "-o", out, b.Pkg).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", b.Pkg, err, msg)
	}
	return out, nil
}
