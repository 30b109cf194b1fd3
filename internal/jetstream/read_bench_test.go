package jetstream

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/pifleet/sessionlog/internal/jetstream/embedded/embeddedtest"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// BenchmarkRead compares the ways to read a 1000-record session
// authoritatively — leader gets only, a consumer only, and Read's mix — for
// the whole session and for its last 10 and 100 records, on one node and on
// an R3 cluster, with another session's records interleaved so the subject
// filter has work to do. The numbers behind getBudget come from here.
func BenchmarkRead(b *testing.B) {
	for _, replicas := range []int{1, 3} {
		b.Run(fmt.Sprintf("R%d", replicas), func(b *testing.B) {
			var conn *Conn
			if replicas == 1 {
				conn = connect(b, runServer(b).ClientURL())
			} else {
				conn = connect(b, embeddedtest.URLs(runCluster(b, 3))...)
			}
			cfg := testConfig(replicas)
			provision(b, conn.JS, cfg)
			l := NewLog(conn.JS, cfg)
			ctx := context.Background()
			sid, other := testutil.SessionID(b), testutil.SessionID(b)
			last := map[string]uint64{}
			for _, s := range []string{sid, other} {
				seqs, err := l.Append(ctx, s, 0, []session.Record{headerRec(s)})
				if err != nil {
					b.Fatal(err)
				}
				last[s] = seqs[0]
			}
			for i := range 999 {
				for _, s := range []string{sid, other} {
					seqs, err := l.Append(ctx, s, last[s], entryRecs(fmt.Sprintf("%04x", i), 1))
					if err != nil {
						b.Fatal(err)
					}
					last[s] = seqs[0]
				}
			}
			for _, tail := range []int{10, 100, 1000} {
				after := last[sid] - uint64(2*tail) // two sessions interleave
				if tail == 1000 {
					after = 0
				}
				for name, read := range map[string]func() ([]session.Stored, error){
					"gets": func() ([]session.Stored, error) {
						out, _, err := l.readByGet(ctx, sid, after, math.MaxInt)
						return out, err
					},
					"consumer": func() ([]session.Stored, error) { return l.readByConsumer(ctx, sid, after) },
					"read":     func() ([]session.Stored, error) { return l.Read(ctx, sid, after) },
				} {
					b.Run(fmt.Sprintf("last%d/%s", tail, name), func(b *testing.B) {
						for b.Loop() {
							got, err := read()
							if err != nil || len(got) != tail {
								b.Fatalf("read: %d records, %v; want %d", len(got), err, tail)
							}
						}
					})
				}
			}
		})
	}
}
