//go:build linux

package cluster

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Paths of the binaries TestMain builds, once for every test of the package.
var (
	binDir        string
	piNodeBin     string
	natsServerBin string
)

// TestMain builds pi-node from this checkout and nats-server at the version
// go.mod pins, so the tests run the exact code under review against the
// exact server the embedded mode links.
func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		return m.Run() // every test skips itself; building would be wasted
	}
	dir, err := os.MkdirTemp("", "sessionlog-cluster-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	piNodeBin = filepath.Join(dir, "pi-node")
	natsServerBin = filepath.Join(dir, "nats-server")
	builds := []struct{ out, pkg string }{
		{piNodeBin, "github.com/pifleet/sessionlog/cmd/pi-node"},
		{natsServerBin, "github.com/nats-io/nats-server/v2"},
	}
	// PI_NODE_BIN runs the tests against a given pi-node binary instead
	// (a release build, or a snapshot while the tree is mid-edit).
	if bin := os.Getenv("PI_NODE_BIN"); bin != "" {
		piNodeBin, builds = bin, builds[1:]
	}
	for _, b := range builds {
		// go test puts its own go first on PATH, so this is the same toolchain.
		cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", b.pkg, err, out)
			return 1
		}
	}
	return m.Run()
}

// skipShort skips process-level tests under -short.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real pi-node and nats-server processes; skipped with -short")
	}
}

var (
	piCtlOnce sync.Once
	piCtlBin  string
	piCtlErr  error
)

// piCtl builds pi-ctl on first use: only the checks that run it depend on
// it building.
func piCtl(t *testing.T) string {
	t.Helper()
	piCtlOnce.Do(func() {
		piCtlBin = filepath.Join(binDir, "pi-ctl")
		out, err := exec.Command("go", "build", "-o", piCtlBin, "github.com/pifleet/sessionlog/cmd/pi-ctl").CombinedOutput()
		if err != nil {
			piCtlErr = fmt.Errorf("go build pi-ctl: %v\n%s", err, out)
		}
	})
	if piCtlErr != nil {
		t.Fatal(piCtlErr)
	}
	return piCtlBin
}
