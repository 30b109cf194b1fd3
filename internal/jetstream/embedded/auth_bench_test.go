package embedded

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/crypto/bcrypt"

	"github.com/pifleet/sessionlog/internal/natsauth"
)

// benchPassword is long enough for natsauth.HashPassword.
const benchPassword = "BENCHPASSWORD0123456789ABC"

// startBenchServer starts a server whose one user w has benchPassword at
// bcrypt cost, or no users at cost 0.
func startBenchServer(b *testing.B, cost int) *Server {
	b.Helper()
	s := NewServer(b.TempDir())
	s.Port = -1
	if cost > 0 {
		h, err := bcrypt.GenerateFromPassword([]byte(benchPassword), cost)
		if err != nil {
			b.Fatal(err)
		}
		s.Auth = &natsauth.File{Users: []natsauth.User{{User: "w", Password: string(h), Role: natsauth.RoleClient}}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Shutdown)
	return s
}

// BenchmarkConnect is what a users file costs a client per connection:
// the server's bcrypt check at natsauth's cost (and at 11, the cost before
// it), against no auth in the same run. Messages on an open connection pay
// nothing of it.
func BenchmarkConnect(b *testing.B) {
	for _, c := range []struct {
		name string
		cost int
	}{{"no-auth", 0}, {"bcrypt-cost-4", natsauth.HashCost}, {"bcrypt-cost-11", 11}} {
		b.Run(c.name, func(b *testing.B) {
			s := startBenchServer(b, c.cost)
			opts := []nats.Option{nats.Timeout(10 * time.Second)}
			if c.cost > 0 {
				opts = append(opts, nats.UserInfo("w", benchPassword))
			}
			b.ResetTimer()
			for b.Loop() {
				nc, err := nats.Connect(s.ClientURL(), opts...)
				if err != nil {
					b.Fatal(err)
				}
				nc.Close()
			}
		})
	}
}
