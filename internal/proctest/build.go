package proctest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// Bin is a command to build: its binary's name and its package.
type Bin struct{ Name, Pkg string }

// The binaries the process tests run.
var (
	PiNode     = Bin{"pi-node", "github.com/pifleet/sessionlog/cmd/pi-node"}
	PiCtl      = Bin{"pi-ctl", "github.com/pifleet/sessionlog/cmd/pi-ctl"}
	NATSServer = Bin{"nats-server", "github.com/nats-io/nats-server/v2"} // at the version go.mod pins
)

// Build builds bins, in parallel, into a new temporary directory (named
// after prefix), so a test runs the exact code under review; go test puts
// its own go first on PATH, so this is the same toolchain. PI_NODE_BIN
// names a pi-node binary to use instead of building one (a release build,
// or a snapshot while the tree is mid-edit). It returns the paths by name,
// the directory, and a cleanup that removes it.
func Build(prefix string, bins ...Bin) (map[string]string, string, func(), error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	paths := make(map[string]string, len(bins))
	errs := make([]error, len(bins))
	var wg sync.WaitGroup
	for i, b := range bins {
		if b == PiNode && os.Getenv("PI_NODE_BIN") != "" {
			paths[b.Name] = os.Getenv("PI_NODE_BIN")
			continue
		}
		paths[b.Name] = filepath.Join(dir, b.Name)
		wg.Go(func() { _, errs[i] = BuildInto(dir, b) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			cleanup()
			return nil, "", nil, err
		}
	}
	return paths, dir, cleanup, nil
}

// BuildInto builds b into dir and returns the binary's path: for a binary
// only some tests need, built on first use beside the ones Build made.
func BuildInto(dir string, b Bin) (string, error) {
	out := filepath.Join(dir, b.Name)
	if msg, err := exec.Command("go", "build", "-o", out, b.Pkg).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", b.Pkg, err, msg)
	}
	return out, nil
}
