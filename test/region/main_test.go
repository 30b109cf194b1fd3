//go:build linux

package region

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
	if testing.Short() {
		return m.Run() // every test skips itself; building would be wasted
	}
	dir, err := os.MkdirTemp("", "sessionlog-region-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	piNodeBin = filepath.Join(dir, "pi-node")
	piCtlBin = filepath.Join(dir, "pi-ctl")
	natsServerBin = filepath.Join(dir, "nats-server")
	builds := []struct{ out, pkg string }{
		{piNodeBin, "github.com/pifleet/sessionlog/cmd/pi-node"},
		{piCtlBin, "github.com/pifleet/sessionlog/cmd/pi-ctl"},
		{natsServerBin, "github.com/nats-io/nats-server/v2"},
	}
	// PI_NODE_BIN runs the tests against a given pi-node binary instead.
	if bin := os.Getenv("PI_NODE_BIN"); bin != "" {
		piNodeBin, builds = bin, builds[1:]
	}
	var wg sync.WaitGroup
	errs := make([]error, len(builds))
	for i, b := range builds {
		// go test puts its own go first on PATH, so this is the same toolchain.
		wg.Go(func() {
			if out, err := exec.Command("go", "build", "-o", b.out, b.pkg).CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("go build %s: %v\n%s", b.pkg, err, out)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
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
