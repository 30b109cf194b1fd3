//go:build linux

package cluster

import (
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/pifleet/sessionlog/internal/proctest"
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
	proctest.DefaultParallel(4) // the tests wait more than they compute
	if testing.Short() {
		return m.Run() // every test skips itself; building would be wasted
	}
	bins, dir, cleanup, err := proctest.Build("sessionlog-cluster-bin-", proctest.PiNode, proctest.NATSServer)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cleanup()
	binDir, piNodeBin, natsServerBin = dir, bins["pi-node"], bins["nats-server"]
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
	piCtlOnce.Do(func() { piCtlBin, piCtlErr = proctest.BuildInto(binDir, proctest.PiCtl) })
	if piCtlErr != nil {
		t.Fatal(piCtlErr)
	}
	return piCtlBin
}
