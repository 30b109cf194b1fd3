package jetstream

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestServerAuth checks client authentication on the embedded server (Start
// itself must pass it to see JetStream ready) and that Connect gives up at
// once on bad credentials instead of retrying until its context ends.
func TestServerAuth(t *testing.T) {
	for _, tc := range []struct {
		name      string
		configure func(*Server)
		good, bad func(*ConnConfig)
	}{
		{"token", func(s *Server) { s.Token = "t0ken" },
			func(c *ConnConfig) { c.Token = "t0ken" }, func(c *ConnConfig) { c.Token = "wrong" }},
		{"user", func(s *Server) { s.User, s.Password = "pi", "s3cret" },
			func(c *ConnConfig) { c.User, c.Password = "pi", "s3cret" }, func(c *ConnConfig) { c.User, c.Password = "pi", "wrong" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewServer(t.TempDir())
			s.Port = -1
			tc.configure(s)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := s.Start(ctx); err != nil {
				t.Fatalf("start: %v", err)
			}
			defer s.Shutdown()

			cfg := NewConnConfig(s.ClientURL())
			tc.good(&cfg)
			conn, err := Connect(ctx, cfg)
			if err != nil {
				t.Fatalf("connect with credentials: %v", err)
			}
			defer conn.Close()
			if err := Provision(ctx, conn.JS, testConfig(1)); err != nil {
				t.Fatalf("provision: %v", err)
			}

			cfg = NewConnConfig(s.ClientURL())
			tc.bad(&cfg)
			begin := time.Now()
			if _, err := Connect(ctx, cfg); !errors.Is(err, nats.ErrAuthorization) {
				t.Fatalf("connect with bad credentials: %v, want an authorization error", err)
			}
			if d := time.Since(begin); d > 5*time.Second {
				t.Fatalf("connect with bad credentials took %v", d)
			}
		})
	}
}

func TestServerOptions(t *testing.T) {
	s := NewServer(t.TempDir())
	if !s.SyncAlways || s.MaxPayload != 8<<20 {
		t.Fatalf("defaults: sync always %v, max payload %d", s.SyncAlways, s.MaxPayload)
	}
	s.ClusterName, s.ClusterListen = "c", "127.0.0.1:6222"
	s.ClusterUser, s.ClusterPassword = "route", "pw"
	s.Routes = []*url.URL{{Scheme: "nats", Host: "127.0.0.1:6222"}, {Scheme: "nats", Host: "127.0.0.1:6223"}}
	opts, err := s.options()
	if err != nil {
		t.Fatal(err)
	}
	if !opts.SyncAlways || opts.Cluster.Port != 6222 || len(opts.Routes) != 2 || opts.Routes[1].User.String() != "route:pw" {
		t.Fatalf("options: sync %v, cluster port %d, routes %v", opts.SyncAlways, opts.Cluster.Port, opts.Routes)
	}
	if s.Routes[1].User != nil {
		t.Fatal("options changed the caller's route URLs")
	}
	s.SyncAlways, s.SyncInterval = false, time.Second
	if opts, _ = s.options(); opts.SyncAlways || opts.SyncInterval != time.Second {
		t.Fatalf("relaxed sync: always %v, interval %v", opts.SyncAlways, opts.SyncInterval)
	}
	s.ClusterListen = "no-port"
	if _, err := s.options(); err == nil {
		t.Fatal("a cluster listen address without a port was accepted")
	}
}
