package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// The server commands are tested against the real programs: pi-node (and
// nats-server for the cluster test) are built once per test run and
// started as processes on free ports, each with its own data directory.

var (
	buildOnce sync.Once
	binDir    string // removed by TestMain
	builtBins map[string]string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	stopSharedNode()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// builtBinary returns the path of "pi-node", "pi-ctl" or "nats-server", built
// on first use, all three in one go build (its cache makes later runs cheap).
func builtBinary(t testing.TB, name string) string {
	t.Helper()
	buildOnce.Do(func() {
		builtBins, binDir, _, buildErr = proctest.Build("pi-ctl-test-bin-", proctest.PiNode, proctest.PiCtl, proctest.NATSServer)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBins[name]
}

// node is one pi-node process. Restarting it keeps its flags: the same
// ports and the same data directory.
type node struct {
	args    []string
	httpURL string // http://127.0.0.1:port
	natsURL string // the NATS server it serves on (its own or the external one)
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// newNode prepares a pi-node in dir: with natsURL empty it embeds its own
// NATS server, else it connects there. extra flags are appended.
func newNode(t testing.TB, dir, name, natsURL string, extra ...string) *node {
	t.Helper()
	hp := testutil.FreePort(t)
	n := &node{httpURL: "http://127.0.0.1:" + strconv.Itoa(hp), natsURL: natsURL, logPath: filepath.Join(dir, name+".log")}
	n.args = []string{"--node-name", name, "--data-dir", filepath.Join(dir, name+"-data"),
		"--http-listen", "127.0.0.1:" + strconv.Itoa(hp), "--log-level", "warn"}
	if natsURL == "" {
		cp := testutil.FreePort(t)
		n.natsURL = "nats://127.0.0.1:" + strconv.Itoa(cp)
		n.args = append(n.args, "--client-listen", "127.0.0.1:"+strconv.Itoa(cp))
	} else {
		n.args = append(n.args, "--nats-url", natsURL)
	}
	n.args = append(n.args, extra...)
	return n
}

// startNode starts a pi-node in a test directory and stops it when the
// test ends.
func startNode(t testing.TB, name, natsURL string, extra ...string) *node {
	t.Helper()
	n := newNode(t, t.TempDir(), name, natsURL, extra...)
	t.Cleanup(n.stop)
	if err := n.start(builtBinary(t, "pi-node")); err != nil {
		t.Fatal(err)
	}
	return n
}

// start runs the process and waits until /readyz answers 200.
func (n *node) start(bin string) error {
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	n.cmd = exec.Command(bin, n.args...)
	n.cmd.Stdout, n.cmd.Stderr = logf, logf
	if err := startProcess(n.cmd); err != nil {
		logf.Close()
		return err
	}
	n.exited = make(chan struct{})
	go func() {
		n.cmd.Wait()
		logf.Close()
		close(n.exited)
	}()
	return n.waitReady(60 * time.Second)
}

// waitReady polls /readyz; it gives up early when the process exits.
func (n *node) waitReady(limit time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	exited := false
	_, err := testutil.Poll(limit, func() error {
		resp, err := client.Get(n.httpURL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-n.exited:
			exited = true
			return nil // stops the polling; reported below
		default:
			return errors.New("not ready")
		}
	})
	switch {
	case exited:
		return fmt.Errorf("pi-node %v exited before it was ready:\n%s", n.args, n.logTail())
	case err != nil:
		return fmt.Errorf("pi-node %v not ready within %v:\n%s", n.args, limit, n.logTail())
	}
	return nil
}

// kill9 kills the process without a chance to clean up, as a crash would.
func (n *node) kill9(t testing.TB) {
	t.Helper()
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	<-n.exited
}

// stop asks the node to shut down (SIGTERM) and kills it if it lingers.
func (n *node) stop() {
	if n.cmd == nil || n.exited == nil {
		return
	}
	select {
	case <-n.exited:
		return
	default:
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(15 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.exited
	}
}

func (n *node) logTail() string {
	b, _ := os.ReadFile(n.logPath)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// The shared node serves the tests that only read and write sessions of
// their own; it is started on first use and stopped by TestMain.
var (
	sharedOnce sync.Once
	shared     *node
	sharedDir  string
	sharedErr  error
)

func sharedNode(t testing.TB) *node {
	t.Helper()
	bin := builtBinary(t, "pi-node")
	sharedOnce.Do(func() {
		if sharedDir, sharedErr = os.MkdirTemp("", "pi-ctl-test-node-"); sharedErr != nil {
			return
		}
		shared = newNode(t, sharedDir, "shared", "")
		sharedErr = shared.start(bin)
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

func stopSharedNode() {
	if shared != nil {
		shared.stop()
	}
	if sharedDir != "" {
		os.RemoveAll(sharedDir)
	}
}

// transports are the two ways to reach n, as pi-ctl flags.
func transports(n *node) map[string][]string {
	return map[string][]string{
		"nats": {"--server", n.natsURL},
		"http": {"--http", n.httpURL},
	}
}

// withFlags appends the transport flags to a command line.
func withFlags(conn []string, args ...string) []string {
	return append(append([]string{}, args...), conn...)
}

// lineCount is the number of lines of s.
func lineCount(s string) int { return strings.Count(s, "\n") }
