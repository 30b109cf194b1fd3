package service_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/jetstream/embedded/embeddedtest"
	"github.com/pifleet/sessionlog/internal/jetstream/jstest"
	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/tree"
)

// BenchmarkFork forks a session of 1,000 and of 10,000 realistic entries
// at its last entry, through the Service on a JetStream stream (R1, a
// Store following it), copying and by reference: the time a fork takes
// (until the log acknowledged it), the bytes it adds to the stream
// (stored-B/op, from the stream's state), and how long the Store then
// takes to hold it (store-ns/op: applying the copy's records, or
// materialising the reference from the parent it holds). The copy's
// figures are the baseline of the same run.
func BenchmarkFork(b *testing.B) {
	s := embeddedtest.RunServer(b, false)
	l, c := jstest.Backend(b, 1, s.ClientURL())
	st := store.New(l, store.Options{Log: l})
	if err := st.Open(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	r := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{1000, 10000} {
		file, err := tree.Read(genRealistic(b, r, n), tree.ReadOptions{Strict: true})
		if err != nil {
			b.Fatal(err)
		}
		recs := []session.Record{{Type: "session", Data: file.Header.Raw}}
		for i := range file.Len() {
			recs = append(recs, session.RecordOf(file.Entry(i)))
		}
		last := jstest.BulkLoad(b, l.JetStream(), l, map[string][]session.Record{file.Header.ID: recs})
		if err := st.WaitFor(context.Background(), last); err != nil {
			b.Fatal(err)
		}
		leaf := file.Entry(file.Len() - 1).ID
		for _, mode := range []string{"copy", "by-reference"} {
			b.Run(fmt.Sprintf("entries=%d/%s", n, mode), func(b *testing.B) {
				svc := &service.Service{Log: l, Store: st, Cursors: c}
				if mode == "by-reference" {
					svc.Forks = session.NewMemForks()
				}
				ctx := context.Background()
				before := streamBytes(b, l)
				var applying time.Duration
				for b.Loop() {
					_, last, err := svc.Fork(ctx, file.Header.ID, leaf, false)
					if err != nil {
						b.Fatal(err)
					}
					// The Store's part (applying the copy, or materialising
					// the reference), outside the fork's time.
					b.StopTimer()
					start := time.Now()
					if err := st.WaitFor(ctx, last); err != nil {
						b.Fatal(err)
					}
					applying += time.Since(start)
					b.StartTimer()
				}
				b.ReportMetric(float64(streamBytes(b, l)-before)/float64(b.N), "stored-B/op")
				b.ReportMetric(float64(applying.Nanoseconds())/float64(b.N), "store-ns/op")
			})
		}
	}
}

func streamBytes(b *testing.B, l *jetstream.Log) uint64 {
	b.Helper()
	str, err := l.JetStream().Stream(context.Background(), jetstream.NewConfig().Stream)
	if err != nil {
		b.Fatal(err)
	}
	info, err := str.Info(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return info.State.Bytes
}
