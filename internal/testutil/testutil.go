package testutil

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/pifleet/sessionlog/internal/loopback"
)

// Poll intervals: the first retry comes quickly, so fast conditions cost a
// few milliseconds; the interval then grows, so long waits (a cluster
// electing a leader, a process starting) stay light on a busy machine.
const (
	firstInterval = 10 * time.Millisecond
	maxInterval   = 100 * time.Millisecond
)

// WaitFor calls cond until it returns nil and returns how long that took.
// After timeout (times Scale) it fails the test with cond's last error,
// which should say what was awaited and what was seen instead. Call it
// from the test's goroutine; from others, use Poll.
func WaitFor(tb testing.TB, timeout time.Duration, cond func() error) time.Duration {
	tb.Helper()
	d, err := Poll(timeout, cond)
	if err != nil {
		tb.Fatalf("not within %v (%v scaled by %s=%g): %v", Scale(timeout), timeout, ScaleEnv, scale, err)
	}
	return d
}

// Awaiting labels cond: its errors say what is awaited, so that a
// WaitFor that runs out names the wait (cond's error says what was seen).
func Awaiting(what string, cond func() error) func() error {
	return func() error {
		if err := cond(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
}

// Poll is WaitFor without the test: it returns how long cond took to
// return nil, or cond's last error once timeout (times Scale) has passed.
func Poll(timeout time.Duration, cond func() error) (time.Duration, error) {
	start := time.Now()
	deadline := start.Add(Scale(timeout))
	wait := firstInterval
	var first error
	for polls := 1; ; polls++ {
		err := cond()
		if err == nil {
			return time.Since(start), nil
		}
		if first == nil {
			first = err
		}
		if time.Now().After(deadline) {
			if err.Error() == first.Error() {
				return time.Since(start), fmt.Errorf("%w (the same in all %d polls)", err, polls)
			}
			// A rare failure's cause is often in how the wait began, not
			// in the last poll's view.
			return time.Since(start), fmt.Errorf("%w (the last of %d polls; the first said: %v)", err, polls, first)
		}
		time.Sleep(wait)
		wait = min(wait*3/2, maxInterval)
	}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago, for
// listeners whose address must be known before they start (cluster routes,
// a child process's flags); a server of the test's own listens on port 0.
func FreePort(tb testing.TB) int {
	tb.Helper()
	return FreePorts(tb, 1)[0]
}

// FreePorts returns n distinct free TCP ports on 127.0.0.1.
func FreePorts(tb testing.TB, n int) []int {
	tb.Helper()
	ports, err := loopback.FreePorts(n)
	if err != nil {
		tb.Fatalf("free port: %v", err)
	}
	return ports
}

// SyncBuffer is a bytes.Buffer a test may read while a command or a server
// writes it from another goroutine.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// SessionID is a new session id (a UUIDv7, as pi makes them).
func SessionID(t testing.TB) string {
	t.Helper()
	id, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	return id.String()
}

// ReadFile is the file's content; the test fails if it cannot be read.
func ReadFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
