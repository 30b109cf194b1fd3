//go:build linux

package jepsen

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
)

var (
	durationFlag = flag.Duration("jepsen.duration", envDuration("JEPSEN_DURATION", 50*time.Second),
		"how long the clients run under the nemesis (env JEPSEN_DURATION)")
	lenientFlag = flag.String("jepsen.lenient", os.Getenv("JEPSEN_LENIENT"),
		"comma-separated checks whose violations are reported without failing (env JEPSEN_LENIENT)")
)

// envDuration reads a duration from the environment, or returns def.
func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d > 0 {
		return d
	}
	return def
}

// seed is JEPSEN_SEED, or the clock's.
func seed() int64 {
	if s, err := strconv.ParseInt(os.Getenv("JEPSEN_SEED"), 10, 64); err == nil {
		return s
	}
	return time.Now().UnixNano()
}

// lenient reports whether check's violations should not fail the test.
func lenient(check string) bool {
	for _, c := range strings.Split(*lenientFlag, ",") {
		if strings.TrimSpace(c) == check {
			return true
		}
	}
	return false
}

var piNodeBin, piCtlBin string

// TestMain builds pi-node from this checkout once (skipped with -short,
// where only the checker's own tests run).
func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		return m.Run()
	}
	bins, _, cleanup, err := proctest.Build("sessionlog-jepsen-bin-", proctest.PiNode, proctest.PiCtl)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cleanup()
	piNodeBin, piCtlBin = bins["pi-node"], bins["pi-ctl"]
	return m.Run()
}
