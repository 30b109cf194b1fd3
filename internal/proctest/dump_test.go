//go:build linux

package proctest

import (
	"errors"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/testutil"
)

// hangOnTerm, run as this test binary in a child process, ignores SIGTERM
// and blocks in a function of this module: a node whose shutdown hangs.
func hangOnTerm() {
	signal.Ignore(syscall.SIGTERM)
	os.Stdout.WriteString("hanging\n")
	select {}
}

func TestMain(m *testing.M) {
	if os.Getenv("PROCTEST_HANG") == "1" {
		hangOnTerm()
	}
	os.Exit(m.Run())
}

// TestStuckShutdownDump: a process that does not stop on SIGTERM is
// reported with the goroutine it is stuck in, and its whole dump is kept
// in a file that outlives the test.
func TestStuckShutdownDump(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PROCTEST_HANG", "1")
	p := New(t, "hang", exe, "-test.run=^$")
	p.Start(t)
	testutil.WaitFor(t, 30*time.Second, func() error {
		if !strings.Contains(p.Tail(5), "hanging") {
			return errors.New("the child has not started hanging")
		}
		return nil
	})
	err = p.Stop(0)
	if err == nil {
		t.Fatal("a process that ignores SIGTERM reported a clean stop")
	}
	msg := err.Error()
	if !strings.Contains(msg, "proctest.hangOnTerm") {
		t.Errorf("the report does not show the stuck goroutine:\n%s", msg)
	}
	m := regexp.MustCompile(`the whole dump: (\S+)`).FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("the report names no kept dump:\n%s", msg)
	}
	t.Cleanup(func() { os.Remove(m[1]) })
	data, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "goroutine 1 ") {
		t.Errorf("the kept dump holds no goroutine 1:\n%s", data)
	}
}
