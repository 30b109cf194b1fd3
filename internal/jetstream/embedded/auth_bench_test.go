package embedded

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pifleet/sessionlog/internal/natsauth"
)

// BenchmarkConnect is what a users file costs a client per connection:
// the server's bcrypt check at natsauth's cost, against no auth in the
// same run. Messages on an open connection pay nothing of it.
func BenchmarkConnect(b *testing.B) {
	for _, c := range []struct {
		name string
		auth bool
	}{{"no-auth", false}, {"bcrypt-cost-11", true}} {
		b.Run(c.name, func(b *testing.B) {
			s := NewServer(b.TempDir())
			s.Port = -1
			var opts []nats.Option
			if c.auth {
				h, err := natsauth.HashPassword("pw")
				if err != nil {
					b.Fatal(err)
				}
				s.Auth = &natsauth.File{Users: []natsauth.User{{User: "w", Password: h, Role: natsauth.RoleClient}}}
				opts = append(opts, nats.UserInfo("w", "pw"))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := s.Start(ctx); err != nil {
				b.Fatal(err)
			}
			defer s.Shutdown()
			b.ResetTimer()
			for b.Loop() {
				nc, err := nats.Connect(s.ClientURL(), append(opts, nats.Timeout(10*time.Second))...)
				if err != nil {
					b.Fatal(err)
				}
				nc.Close()
			}
		})
	}
}
