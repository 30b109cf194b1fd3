package jetstream

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/jetstream/embedded"
	"github.com/pifleet/sessionlog/internal/jetstream/embedded/embeddedtest"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// runServer starts a single JetStream server on a random port.
func runServer(t testing.TB) *embedded.Server {
	t.Helper()
	s := embeddedtest.RunServer(t, true)
	anchorStream(t, s.ClientURL(), 1)
	return s
}

// anchorStream creates a stream that lives as long as the server. nats-server
// removes an account's streams directory when its last stream is deleted, and
// a stream created at that moment fails with "error creating store" (10049);
// tests delete their streams at cleanup and create the next ones right away,
// so they keep one stream that is never deleted.
func anchorStream(t testing.TB, url string, replicas int) {
	t.Helper()
	c := connect(t, url)
	// A cluster just started may not answer for a while (elections; CI's
	// load once made one attempt of 30 s time out): attempts of 10 s until
	// one succeeds, for as long as testutil.Scale allows.
	deadline := time.Now().Add(testutil.Scale(2 * time.Minute))
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "ANCHOR", Subjects: []string{"anchor"}, Replicas: replicas})
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("anchor stream: %v", err)
		}
		t.Logf("anchor stream, again: %v", err)
	}
}

// runCluster starts an n-node JetStream cluster in this process, its routes
// authenticated.
func runCluster(t testing.TB, n int) []*embedded.Server {
	t.Helper()
	servers := embeddedtest.RunCluster(t, n, func(s *embedded.Server) {
		s.ClusterUser, s.ClusterPassword = "route", "s3cret"
	})
	anchorStream(t, servers[0].ClientURL(), n)
	return servers
}

// connect opens a client connection to urls, closed at cleanup.
func connect(t testing.TB, urls ...string) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Connect(ctx, NewConnConfig(urls...))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

var assetSeq atomic.Int32

// testConfig returns a configuration whose stream, subjects and bucket no
// other test uses, so each suite run starts from an empty log.
func testConfig(replicas int) Config {
	n := assetSeq.Add(1)
	cfg := NewConfig()
	cfg.Stream = fmt.Sprintf("T%d_SESSIONS", n)
	cfg.SubjectPrefix = fmt.Sprintf("t%d.sess", n)
	cfg.Bucket = fmt.Sprintf("T%d_CURSORS", n)
	cfg.Replicas = replicas
	return cfg
}

// provision provisions cfg and removes its assets at cleanup, so that a
// cluster does not accumulate raft groups over a test run.
func provision(t testing.TB, js jetstream.JetStream, cfg Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := Provision(ctx, js, cfg); err != nil {
		t.Fatalf("provision: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = js.DeleteStream(ctx, cfg.Stream)
		_ = js.DeleteKeyValue(ctx, cfg.Bucket)
	})
}
