//go:build linux

package proctest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/testutil"
)

// Proc is one child process (a pi-node or a nats-server). Its output goes to
// a log file that survives restarts (each start appends a marker line), and
// is printed, tail first, when the test fails.
type Proc struct {
	Name    string
	bin     string
	args    []string
	logPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when the current run has been reaped
	err    error         // the current run's exit status, once exited
	starts int
}

// New prepares a process; Start runs it. Cleanup kills it (if still
// running) and, when the test failed, logs the tail of its output.
func New(t testing.TB, name, bin string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Name: name, bin: bin, args: args, logPath: filepath.Join(t.TempDir(), name+".log")}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("--- %s: last lines of %s\n%s", p.Name, p.logPath, p.Tail(60))
			keepLog(t, p)
		}
	})
	return p
}

// Start runs the process once more with the same arguments.
func (p *Proc) Start(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !p.hasExited() {
		t.Fatalf("%s: start while running", p.Name)
	}
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	p.starts++
	fmt.Fprintf(f, "=== start #%d at %s: %s %s\n", p.starts, time.Now().Format(time.RFC3339Nano), p.bin, strings.Join(p.args, " "))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = f, f
	// Own process group, so a signal aimed at the group reaches only this
	// process; Pdeathsig, so a test binary that dies (panic, timeout kill)
	// does not leave servers behind holding ports and data directories.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("%s: %v", p.Name, err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited, p.err = cmd, exited, nil
	go func() {
		err := cmd.Wait()
		f.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(exited)
	}()
}

func (p *Proc) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Running reports whether the current run is alive.
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !p.hasExited()
}

// Signal sends sig to the process group and waits up to timeout (times
// testutil.Scale) for the process to exit; it returns the exit status (nil
// for a clean exit) or an error if it did not exit in time.
func (p *Proc) Signal(sig syscall.Signal, timeout time.Duration) error {
	timeout = testutil.Scale(timeout)
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-exited:
		return p.ExitErr()
	default:
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
	select {
	case <-exited:
		return p.ExitErr()
	case <-time.After(timeout):
		if sig == syscall.SIGKILL {
			return fmt.Errorf("%s: still running %v after %v", p.Name, timeout, sig)
		}
		return fmt.Errorf("%s: still running %v after %v; its stuck goroutines:\n%s", p.Name, timeout, sig, p.dump(cmd, exited))
	}
}

// dump makes a process that did not exit print its goroutines (a Go
// binary does so on SIGQUIT, then exits) and returns those that run this
// module's code: what a hung shutdown is waiting for, without the hundreds
// of parked library goroutines around it.
func (p *Proc) dump(cmd *exec.Cmd, exited chan struct{}) string {
	before := int64(0)
	if fi, err := os.Stat(p.logPath); err == nil {
		before = fi.Size()
	}
	_ = cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		return "(no goroutine dump: SIGQUIT did not end it either)"
	}
	data, err := os.ReadFile(p.logPath)
	if err != nil || int64(len(data)) < before {
		return fmt.Sprintf("(no goroutine dump: %v)", err)
	}
	dump := data[before:]
	var out []string
	for _, g := range strings.Split(string(dump), "\n\n") {
		if strings.HasPrefix(g, "goroutine ") && stuckKind(g) {
			out = append(out, g)
		}
	}
	// The whole dump outlives the test's directories, for what the
	// selection leaves out.
	kept := "(the whole dump could not be kept)"
	dir := filepath.Join(os.TempDir(), "sessionlog-dumps")
	if os.MkdirAll(dir, 0o755) == nil {
		path := filepath.Join(dir, fmt.Sprintf("%s-%s.txt", p.Name, time.Now().UTC().Format("20060102T150405.000000")))
		if os.WriteFile(path, dump, 0o644) == nil {
			kept = "the whole dump: " + path
		}
	}
	if len(out) == 0 {
		return "(the dump holds no goroutine of this module or of JetStream's shutdown)\n" + kept
	}
	return strings.Join(out, "\n\n") + "\n" + kept
}

// stuckKind reports whether a goroutine is one a hung shutdown may wait
// for: this module's, or the NATS server's that its JetStream shutdown
// waits for (a stream's or consumer's monitor, which may be catching up
// from a peer, and the cluster's). The hundreds of parked connection and
// timer goroutines around them are left out.
func stuckKind(g string) bool {
	for _, s := range []string{
		"github.com/pifleet/sessionlog/",
		").monitorStream(", ").monitorConsumer(", ").monitorCluster(",
		").processSnapshot(", ").runCatchup(", ").shutdownRaftNodes(",
	} {
		if strings.Contains(g, s) {
			return true
		}
	}
	return false
}

func (p *Proc) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Send sends sig to the process group without waiting for anything: for
// signals that do not end it (SIGSTOP, SIGCONT).
func (p *Proc) Send(sig syscall.Signal) error {
	p.mu.Lock()
	cmd := p.cmd
	running := cmd != nil && !p.hasExited()
	p.mu.Unlock()
	if !running {
		return fmt.Errorf("%s: not running", p.Name)
	}
	return syscall.Kill(-cmd.Process.Pid, sig)
}

// Kill sends SIGKILL and reaps the process.
func (p *Proc) Kill() { _ = p.Signal(syscall.SIGKILL, time.Minute) }

// Stop sends SIGTERM (a graceful shutdown) and returns the exit status.
func (p *Proc) Stop(timeout time.Duration) error { return p.Signal(syscall.SIGTERM, timeout) }

// Tail returns the last n lines of the process's log.
func (p *Proc) Tail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// Output is the process's log, all runs.
func (p *Proc) Output() (string, error) {
	data, err := os.ReadFile(p.logPath)
	return string(data), err
}

// LogContains reports whether the process's log (all runs) contains s.
func (p *Proc) LogContains(s string) bool {
	data, err := os.ReadFile(p.logPath)
	return err == nil && bytes.Contains(data, []byte(s))
}

// Pid is the running process's id, 0 when it is not running (for reading
// its /proc figures).
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.hasExited() {
		return 0
	}
	return p.cmd.Process.Pid
}

// keepLog copies a failed test's process log whole into $PI_TEST_LOG_DIR,
// when set: the tail above is often not where a rare failure began, and
// t.TempDir is gone once the test ends.
func keepLog(t testing.TB, p *Proc) {
	dir := os.Getenv("PI_TEST_LOG_DIR")
	if dir == "" {
		return
	}
	data, err := os.ReadFile(p.logPath)
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err == nil {
		name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + "-" + p.Name + ".log"
		err = os.WriteFile(filepath.Join(dir, name), data, 0o644)
	}
	if err != nil {
		t.Logf("keeping %s's log: %v", p.Name, err)
	}
}
