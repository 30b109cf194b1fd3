//go:build linux

package region

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/pifleet/sessionlog/internal/proctest"
)

// Paths of the binaries TestMain builds, once for every test of the package.
var (
	piNodeBin     string
	piCtlBin      string
	natsServerBin string
)

// TestMain builds pi-node and pi-ctl from this checkout and nats-server at
// the version go.mod pins (the tie-breaker runs it), so the test runs the
// exact code under review against the exact server the embedded mode links.
func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	proctest.DefaultParallel(4) // the tests wait more than they compute
	if testing.Short() {
		return m.Run() // every test skips itself; building would be wasted
	}
	if _, err := regionShards(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	bins, _, cleanup, err := proctest.Build("sessionlog-region-bin-", proctest.PiNode, proctest.PiCtl, proctest.NATSServer)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cleanup()
	piNodeBin, piCtlBin, natsServerBin = bins["pi-node"], bins["pi-ctl"], bins["nats-server"]
	return m.Run()
}

// skipShort skips process-level tests under -short.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real pi-node and nats-server processes; skipped with -short")
	}
}
