package embedded

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// warnings records the server's warnings.
type warnings struct {
	mu  sync.Mutex
	got []string
}

func (w *warnings) Warnf(format string, v ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, fmt.Sprintf(format, v...))
}
func (w *warnings) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.got, "\n")
}
func (*warnings) Noticef(string, ...any) {}
func (*warnings) Fatalf(string, ...any)  {}
func (*warnings) Errorf(string, ...any)  {}
func (*warnings) Debugf(string, ...any)  {}
func (*warnings) Tracef(string, ...any)  {}

// TestLameDuckShutdownBounded: a lame-duck mode that does not stop the
// server (as when its JetStream shutdown waits for a stream catching up
// from a peer, which only the end of its raft group stops) is followed by
// a plain Shutdown, and LameDuckShutdown returns; one that stops nothing at
// all ends LameDuckShutdown with an error instead of a wait without end.
func TestLameDuckShutdownBounded(t *testing.T) {
	testEnd := make(chan struct{})
	t.Cleanup(func() { close(testEnd) })
	for _, tc := range []struct {
		name    string
		hang    func(*server.Server)
		wantErr bool
	}{
		// Stops when the server is shut down by someone else: the
		// stream monitor that only the raft group's end releases.
		{"ended by shutdown", func(ns *server.Server) { ns.WaitForShutdown() }, false},
		// Returns only when the test is over.
		{"never ends", func(*server.Server) { <-testEnd }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saved := lameDuck
			t.Cleanup(func() { lameDuck = saved })
			lameDuck = tc.hang

			s := NewServer(t.TempDir())
			s.Port = -1
			w := &warnings{}
			s.Logger = w
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			ns := s.ns
			t.Cleanup(ns.Shutdown)
			err := s.LameDuckShutdown()
			if tc.wantErr != (err != nil) {
				t.Fatalf("LameDuckShutdown: %v (want an error: %v)", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "left unfinished") {
				t.Errorf("the error does not say what was left: %v", err)
			}
			if !strings.Contains(w.String(), "Lame duck mode has not stopped the server") {
				t.Errorf("no warning of the plain shutdown; the server warned:\n%s", w)
			}
			// The plain shutdown went through either way.
			ns.WaitForShutdown()
			if ns.Running() {
				t.Error("the server still runs")
			}
		})
	}
}
