//go:build linux

package console

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/pifleet/sessionlog/internal/proctest"
)

var (
	piNodeBin string // built by TestMain
	chromium  string // the browser's path; "" when none is installed
)

// TestMain builds pi-node from this checkout: the console's files are
// embedded in it, so a test of the pages must run the binary that carries
// the pages under review.
func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	chromium = findChromium()
	if testing.Short() || chromium == "" {
		return m.Run() // every test skips itself; building would be wasted
	}
	bins, _, cleanup, err := proctest.Build("sessionlog-console-bin-", proctest.PiNode)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cleanup()
	piNodeBin = bins["pi-node"]
	return m.Run()
}

// findChromium looks for the browser by the names Debian, other
// distributions and Google give it (CHROMIUM_BIN first, as the TypeScript
// client's browser test reads it).
func findChromium() string {
	names := []string{"chromium", "chromium-browser", "google-chrome"}
	if b := os.Getenv("CHROMIUM_BIN"); b != "" {
		names = append([]string{b}, names...)
	}
	for _, name := range names {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	return ""
}

// skipUnlessBrowser skips under -short and without a browser.
func skipUnlessBrowser(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts pi-node and headless Chromium; skipped with -short")
	}
	if chromium == "" {
		t.Skip("no Chromium on PATH (chromium, chromium-browser or google-chrome; Debian: apt-get install chromium; or set CHROMIUM_BIN): the console's browser tests need one")
	}
}
