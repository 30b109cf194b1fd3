package node

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pifleet/sessionlog/internal/jetstream/embedded"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestLameDuck: during the lame duck the node is not ready, its HTTP
// answers close their connections (the client's next request dials
// again, through the load balancer, to another node), HTTP is still
// served, and its NATS service has left the queue group (no responders
// here: the only node); then Close puts the embedded server in lame-duck
// mode, which tells the NATS clients before it closes them, all within
// the documented budget.
func TestLameDuck(t *testing.T) {
	m, _ := startNode(t, func(*Config) {})
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = m.Close(context.Background())
		}
	})
	base := "http://" + m.HTTPAddr
	createSession(t, base)
	var told atomic.Bool
	nc, err := nats.Connect(m.NATSURL, nats.LameDuckModeHandler(func(*nats.Conn) { told.Store(true) }), nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	status := wire.SubjectPrefix + "status"
	if _, err := nc.Request(status, []byte(`{}`), 5*time.Second); err != nil {
		t.Fatalf("%s before the lame duck: %v", status, err)
	}

	const delay = 2 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	began := time.Now()
	go func() { done <- m.LameDuck(ctx, delay) }()
	testutil.WaitFor(t, 5*time.Second, func() error {
		code, body := httpGet(t, base+"/readyz")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "lame duck") {
			return errors.New("/readyz: " + http.StatusText(code) + " " + body)
		}
		return nil
	})
	resp, err := http.Get(base + "/v1/sessions")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !resp.Close {
		t.Errorf("GET /v1/sessions in the lame duck: %d, Connection: close %v; want 200 and close", resp.StatusCode, resp.Close)
	}
	testutil.WaitFor(t, 5*time.Second, func() error {
		if _, err := nc.Request(status, []byte(`{}`), time.Second); !errors.Is(err, nats.ErrNoResponders) {
			return errors.New("the NATS service still answers: " + errString(err))
		}
		return nil
	})
	if err := <-done; err != nil {
		t.Fatalf("LameDuck: %v", err)
	}
	if took := time.Since(began); took < delay {
		t.Errorf("the lame duck lasted %v, not %v", took, delay)
	}
	began = time.Now()
	closed = true
	if err := m.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}
	took := time.Since(began)
	if budget := m.Config.ShutdownGrace + embedded.LameDuckBudget; took > budget {
		t.Errorf("Close took %v, beyond the budget of %v", took, budget)
	}
	testutil.WaitFor(t, 5*time.Second, func() error {
		if !told.Load() || !nc.IsClosed() {
			return errors.New("the NATS client was not told of the lame duck, then closed")
		}
		return nil
	})
	t.Logf("measured: Close after the lame duck took %v", took.Round(time.Millisecond))
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// TestReplicaReady: since start the node is not ready until its replicas
// are current; once they have been, a replica behind keeps it ready for
// electionGrace (a burst, a slow disk), not longer.
func TestReplicaReady(t *testing.T) {
	c := DefaultConfig()
	c.LogOutput = io.Discard
	m := newNode(c)
	behind := errors.New("this node's replica of stream PI_SESSIONS is 500 entries behind")
	if err := m.replicaReady(behind); err != behind {
		t.Fatalf("behind since start: %v, want not ready", err)
	}
	if err := m.replicaReady(nil); err != nil {
		t.Fatalf("current: %v", err)
	}
	if err := m.replicaReady(behind); err != nil {
		t.Fatalf("behind for the first time after catching up: %v, want ready (grace)", err)
	}
	if err := m.replicaReady(behind); err != nil {
		t.Fatalf("behind within the grace: %v", err)
	}
	m.behindSince.Store(time.Now().Add(-electionGrace - time.Second).UnixNano())
	if err := m.replicaReady(behind); err != behind {
		t.Fatalf("behind past the grace: %v, want not ready", err)
	}
	if err := m.replicaReady(nil); err != nil || m.behindSince.Load() != 0 {
		t.Fatalf("current again: %v, behind since %d", err, m.behindSince.Load())
	}
}
