package node

import (
	"context"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMainCloseJoinsGoroutines restarts a node over a log that has records,
// so that the restart rebuilds and releaseAfterRebuild waits for its timer,
// and checks that Close ends and waits for everything Open started, while
// Open's context is still alive.
func TestMainCloseJoinsGoroutines(t *testing.T) {
	before := goleak.IgnoreCurrent() // other tests' leftovers are not this test's
	dir := t.TempDir()
	keepDir := func(c *Config) { c.DataDir = dir }

	m, _ := startNode(t, keepDir)
	created := createSession(t, "http://"+m.HTTPAddr)
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	m, _ = startNode(t, keepDir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.stores.All()[0].WaitFor(ctx, created.LastSeq); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	http.DefaultClient.CloseIdleConnections() // createSession's keep-alive connection
	goleak.VerifyNone(t, before)
}
