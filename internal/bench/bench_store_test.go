package bench

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/jetstream/embedded/embeddedtest"
	"github.com/pifleet/sessionlog/internal/jetstream/jstest"
	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/store"
)

// storeLog is a JetStream log loaded once with realistic interleaved
// sessions of 20 entries, shared by the Store benchmarks (loading is the
// slow part): 200,000 entries, or PI_BENCH_ENTRIES.
type storeLog struct {
	log    *jetstream.Log
	loaded *Loaded
}

var (
	storeOnce sync.Once
	storeData storeLog
)

func loadStoreLog(b *testing.B) *storeLog {
	storeOnce.Do(func() {
		n := 200000
		if v, err := strconv.Atoi(os.Getenv("PI_BENCH_ENTRIES")); err == nil && v > 0 {
			n = v
		}
		l, _ := jstest.Backend(b, 1, embeddedtest.RunServer(b, false).ClientURL())
		ld, err := Load(context.Background(), l.JetStream(), l, LoadOptions{Sessions: n / 20, Entries: n, Seed: 3}, nil)
		if err != nil {
			b.Fatal(err)
		}
		storeData = storeLog{log: l, loaded: ld}
	})
	if storeData.log == nil {
		b.Skip("the log failed to load")
	}
	return &storeData
}

// BenchmarkRebuild: a Store rebuilding every session from the log against
// a raw ordered consumer reading the same stream, alternately; and the
// Store's heap (what it leaves behind when it is dropped) over the JSON it
// holds.
func BenchmarkRebuild(b *testing.B) {
	d := loadStoreLog(b)
	ctx := context.Background()
	var storeDur, raw time.Duration
	var heapRatio float64
	for b.Loop() {
		t := time.Now()
		st := store.New(d.log, store.Options{Log: d.log})
		if err := st.Open(ctx); err != nil {
			b.Fatal(err)
		}
		if err := st.WaitFor(ctx, d.loaded.LastSeq); err != nil {
			b.Fatal(err)
		}
		storeDur += time.Since(t)
		<-st.Rebuilt() // what it holds once it has compacted what it read
		with := heapAfterGC()
		held := st.Stats().BytesHeld
		st.Close()
		st = nil
		heapRatio = float64(int64(with)-int64(heapAfterGC())) / float64(held)

		n, dur, err := rawConsume(ctx, d.log.JetStream(), jetstream.NewConfig().Stream, d.loaded.LastSeq, nil)
		if err != nil || n != d.loaded.Records {
			b.Fatalf("raw consumer: %d records, %v", n, err)
		}
		raw += dur
	}
	recs := float64(d.loaded.Records) * float64(b.N)
	b.ReportMetric(recs/storeDur.Seconds(), "store-recs/s")
	b.ReportMetric(recs/raw.Seconds(), "raw-recs/s")
	b.ReportMetric(raw.Seconds()/storeDur.Seconds(), "rate-ratio")
	b.ReportMetric(heapRatio, "heap/json")
	b.ReportMetric(float64(d.loaded.JSONBytes)/float64(d.loaded.Records), "json-B/record")
}

// BenchmarkContext: pi's context at a random leaf of a 1000-entry session
// (ten of them, realistic sizes), served from the Store by the engine
// (Service.ContextJSON), through the NATS API of a node, and the raw
// equivalent: reading the session from the stream leader and building the
// context client-side.
func BenchmarkContext(b *testing.B) {
	ctx := context.Background()
	n, err := StartNode(ctx, NodeOptions{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { n.Close() })
	ld, err := Load(ctx, n.Conn.JS, n.Log, LoadOptions{Sessions: 10, Entries: 10000, Active: 10, Seed: 5, KeepIDs: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := n.Store.WaitFor(ctx, ld.LastSeq); err != nil {
		b.Fatal(err)
	}
	api, err := apiclient.DialNATS(apiclient.NATSOptions{URL: n.NATSURL})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(api.Close)
	ways := []struct {
		name string
		read reader
	}{
		{"store", func(ctx context.Context, _ int, sid, leaf string) ([]byte, error) {
			b, _, err := n.Service.ContextJSON(ctx, sid, service.Leaf{ID: leaf}, false)
			return b, err
		}},
		{"nats-api", apiContext([]apiclient.Client{api})},
		{"raw", rawContext(n.Log)},
	}
	for _, w := range ways {
		b.Run(w.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			var lat latencies
			for b.Loop() {
				s := &ld.Sessions[r.IntN(len(ld.Sessions))]
				leaf := s.EntryIDs[r.IntN(len(s.EntryIDs))]
				t := time.Now()
				if out, err := w.read(ctx, 0, s.ID, leaf); err != nil || len(out) == 0 {
					b.Fatalf("context: %v", err)
				}
				lat = append(lat, time.Since(t))
			}
			rw := row("", "", "", lat, 0)
			b.ReportMetric(rw.P50Ms*1000, "p50-µs")
			b.ReportMetric(rw.P99Ms*1000, "p99-µs")
		})
	}
}
