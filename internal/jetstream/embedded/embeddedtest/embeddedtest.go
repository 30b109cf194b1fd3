package embeddedtest

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/jetstream/embedded"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// RunServer starts a single JetStream server on a random port; syncAlways
// is the production default of fsyncing every write.
func RunServer(t testing.TB, syncAlways bool) *embedded.Server {
	t.Helper()
	return RunServerWith(t, func(s *embedded.Server) { s.SyncAlways = syncAlways })
}

// RunServerWith is RunServer with the server's settings changed by
// configure before it starts.
func RunServerWith(t testing.TB, configure func(*embedded.Server)) *embedded.Server {
	t.Helper()
	s := embedded.NewServer(t.TempDir())
	s.ServerName = "single"
	s.Port = -1
	configure(s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// RunCluster starts an n-node JetStream cluster in this process; configure,
// when given, adjusts each server before it starts. Every server lists the
// routes of all servers; they start concurrently because a meta leader
// needs a quorum, and Start waits for it.
func RunCluster(t testing.TB, n int, configure func(*embedded.Server)) []*embedded.Server {
	t.Helper()
	routes := make([]*url.URL, n)
	listen := make([]string, n)
	ports := testutil.FreePorts(t, n) // distinct: each route needs its own
	for i := range n {
		listen[i] = fmt.Sprintf("127.0.0.1:%d", ports[i])
		routes[i] = &url.URL{Scheme: "nats", Host: listen[i]}
	}
	servers := make([]*embedded.Server, n)
	for i := range n {
		s := embedded.NewServer(t.TempDir())
		s.ServerName = fmt.Sprintf("node%d", i+1)
		s.Port = -1
		s.ClusterName = "pi-test"
		s.ClusterListen = listen[i]
		s.Routes = routes
		if configure != nil {
			configure(s)
		}
		servers[i] = s
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() { errs[i] = s.Start(ctx) })
	}
	wg.Wait()
	for _, s := range servers {
		t.Cleanup(s.Shutdown)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("start node%d: %v", i+1, err)
		}
	}
	return servers
}

// URLs returns the client URLs of servers.
func URLs(servers []*embedded.Server) []string {
	urls := make([]string, len(servers))
	for i, s := range servers {
		urls[i] = s.ClientURL()
	}
	return urls
}
