package jetstream

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pifleet/sessionlog/internal/jetstream/embedded"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// TestServerAuth checks client authentication on the embedded server (Start
// itself must pass it to see JetStream ready) and that Connect gives up at
// once on bad credentials instead of retrying until its context ends.
func TestServerAuth(t *testing.T) {
	for _, tc := range []struct {
		name      string
		configure func(*embedded.Server)
		good, bad func(*ConnConfig)
	}{
		{"token", func(s *embedded.Server) { s.Token = "t0ken" },
			func(c *ConnConfig) { c.Token = "t0ken" }, func(c *ConnConfig) { c.Token = "wrong" }},
		{"user", func(s *embedded.Server) { s.User, s.Password = "pi", "s3cret" },
			func(c *ConnConfig) { c.User, c.Password = "pi", "s3cret" }, func(c *ConnConfig) { c.User, c.Password = "pi", "wrong" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := embedded.NewServer(t.TempDir())
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
			if d := time.Since(begin); d > testutil.Scale(5*time.Second) {
				t.Fatalf("connect with bad credentials took %v", d)
			}
		})
	}
}
