package jetstream

import (
	"context"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/enginetest"
	"github.com/pifleet/sessionlog/internal/session"
)

// runSuites runs the session conformance suites against the adapter on a
// fresh stream and bucket per subtest.
func runSuites(t *testing.T, conn *Conn, replicas int) {
	t.Run("Log", func(t *testing.T) {
		enginetest.TestLog(t, func(t *testing.T) (session.Log, session.Feed) {
			cfg := testConfig(replicas)
			provision(t, conn.JS, cfg)
			l := NewLog(conn.JS, cfg)
			return l, l
		})
	})
	t.Run("Cursors", func(t *testing.T) {
		enginetest.TestCursors(t, func(t *testing.T) session.Cursors {
			cfg := testConfig(replicas)
			provision(t, conn.JS, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := NewCursors(ctx, conn.JS, cfg)
			if err != nil {
				t.Fatalf("cursors: %v", err)
			}
			return c
		})
	})
}

// runAdapterTests runs the tests that need a server but no failure
// injection, against a single node or a cluster alike.
func runAdapterTests(t *testing.T, a, b *Conn, replicas int) {
	runSuites(t, a, replicas)
	t.Run("FollowWholeBatches", func(t *testing.T) { testFollowWholeBatches(t, a, replicas) })
	t.Run("CreateRace", func(t *testing.T) { testCreateRace(t, a, b, replicas) })
	t.Run("AppendAfterAck", func(t *testing.T) { testAppendAfterAck(t, a, replicas) })
	t.Run("ServerTooLarge", func(t *testing.T) { testServerTooLarge(t, a, replicas) })
	t.Run("ProvisionIdempotent", func(t *testing.T) { testProvisionIdempotent(t, a, replicas) })
}

func TestSingleNode(t *testing.T) {
	s := runServer(t)
	runAdapterTests(t, connect(t, s.ClientURL()), connect(t, s.ClientURL()), 1)
}

func TestClusterR3(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-node cluster takes seconds to elect its leaders")
	}
	servers := runCluster(t, 3)
	// Two clients on different servers, so their writes race through routes.
	a := connect(t, servers[0].ClientURL(), servers[1].ClientURL(), servers[2].ClientURL())
	b := connect(t, servers[2].ClientURL(), servers[1].ClientURL(), servers[0].ClientURL())
	runAdapterTests(t, a, b, 3)
	// Last: it stops and restarts servers.
	t.Run("ProvisionWaitsForQuorum", func(t *testing.T) { testProvisionWaits(t, servers) })
}
