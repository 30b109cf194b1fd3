//go:build unix

package embedded

import (
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pifleet/sessionlog/internal/natsauth"
)

// BenchmarkFailedLogin is what a refused login costs: wall time and the
// process's CPU (server and client, both in this process) per attempt, for
// a wrong password of a known user (the server runs bcrypt) and for an
// unknown user (it does not), at natsauth's cost and at 11. A measurement,
// not a verdict: docs/SECURITY.md quotes its figures.
func BenchmarkFailedLogin(b *testing.B) {
	for _, c := range []struct {
		name string
		cost int
		user string
	}{
		{"wrong-password-cost-4", natsauth.HashCost, "w"},
		{"unknown-user-cost-4", natsauth.HashCost, "nobody"},
		{"wrong-password-cost-11", 11, "w"},
		{"unknown-user-cost-11", 11, "nobody"},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := startBenchServer(b, c.cost)
			opts := []nats.Option{nats.Timeout(10 * time.Second), nats.UserInfo(c.user, "wrong-"+benchPassword)}
			before := cpuTime(b)
			b.ResetTimer()
			for b.Loop() {
				if nc, err := nats.Connect(s.ClientURL(), opts...); err == nil {
					nc.Close()
					b.Fatal("a wrong password was let in")
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime(b)-before).Microseconds())/float64(b.N)/1000, "cpu-ms/op")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
