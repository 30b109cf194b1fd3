package service_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"

	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/jetstream/embedded/embeddedtest"
	"github.com/pifleet/sessionlog/internal/jetstream/jstest"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/tree"
)

// benchLog is a JetStream log loaded once with benchEntries entries in
// sessions of 20, shared by the rebuild benchmarks (loading is the slow part).
type benchLog struct {
	log      *jetstream.Log
	last     uint64
	entries  int
	jsonSize int64
}

var (
	benchOnce sync.Once
	benchData benchLog
)

// benchEntries is 200,000 by default (PI_BENCH_ENTRIES sets it): the
// million-entry figures of docs/BENCHMARKS.md are pi-bench rebuild's, with
// the node as a process.
func benchEntries() int {
	if n, err := strconv.Atoi(os.Getenv("PI_BENCH_ENTRIES")); err == nil && n > 0 {
		return n
	}
	return 200000
}

func loadBench(b *testing.B) *benchLog {
	benchOnce.Do(func() {
		s := embeddedtest.RunServer(b, false)
		l, _ := jstest.Backend(b, 1, s.ClientURL())
		r := rand.New(rand.NewPCG(9, 9))
		n := benchEntries()
		sessions := map[string][]session.Record{}
		var size int64
		for k := 0; k*20 < n; k++ {
			f := genRealistic(b, r, 20)
			file, err := tree.Read(f, tree.ReadOptions{Strict: true})
			if err != nil {
				b.Fatal(err)
			}
			recs := []session.Record{{Type: "session", Data: file.Header.Raw}}
			for i := range file.Len() {
				e := file.Entry(i)
				recs = append(recs, session.Record{Type: e.Type(), ID: e.ID, Parent: e.ParentID, Data: e.Raw})
			}
			size += int64(len(f))
			sessions[file.Header.ID] = recs
		}
		last := jstest.BulkLoad(b, l.JetStream(), l, sessions)
		benchData = benchLog{log: l, last: last, entries: n, jsonSize: size}
	})
	if benchData.log == nil {
		b.Skip("bench log failed to load")
	}
	return &benchData
}

// BenchmarkRebuild measures a Store rebuilding every session from the log,
// against the raw floor: an ordered consumer reading the same messages.
func BenchmarkRebuild(b *testing.B) {
	d := loadBench(b)
	b.Run("store", func(b *testing.B) {
		var heap uint64
		for b.Loop() {
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			st := store.New(d.log, store.Options{})
			if err := st.Open(context.Background()); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			if err := st.WaitFor(ctx, d.last); err != nil {
				b.Fatal(err)
			}
			cancel()
			// The rate is the rebuild's; the memory is what the Store
			// holds once it has compacted what it read.
			b.StopTimer()
			<-st.Rebuilt()
			b.StartTimer()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			heap = ms.HeapAlloc - before.HeapAlloc // what the Store holds
			runtime.KeepAlive(st)
			_ = st.Close()
		}
		b.ReportMetric(float64(d.last)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		b.ReportMetric(float64(heap)/float64(d.jsonSize), "heap/json")
		b.ReportMetric(float64(d.jsonSize)/float64(d.entries), "json-B/entry")
	})
	b.Run("raw-consumer", func(b *testing.B) {
		js := d.log.JetStream()
		for b.Loop() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			c, err := js.OrderedConsumer(ctx, jetstream.NewConfig().Stream, natsjs.OrderedConsumerConfig{})
			if err != nil {
				b.Fatal(err)
			}
			done := make(chan struct{})
			var n uint64
			cc, err := c.Consume(func(m natsjs.Msg) {
				md, _ := m.Metadata()
				n++
				if md.Sequence.Stream >= d.last {
					close(done)
				}
			})
			if err != nil {
				b.Fatal(err)
			}
			select {
			case <-done:
			case <-ctx.Done():
				b.Fatal("raw consumer timed out")
			}
			cc.Stop()
			cancel()
		}
		b.ReportMetric(float64(d.last)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
}

// genRealistic builds a session with the entry sizes of real pi sessions
// (pi-mono's fixtures average 1-2 KB per line): short questions, assistant
// turns with text and tool calls, tool results of a few KB.
func genRealistic(t testing.TB, r *rand.Rand, n int) []byte {
	id := fmt.Sprintf("%08x-0000-7000-8000-%012x", r.Uint32(), r.Uint64()&0xffffffffffff)
	s := tree.NewSession(tree.NewHeader(id, "2026-01-01T00:00:00.000Z", "/home/dev/project", ""))
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], r.Uint64())
	ids := tree.IDGen{R: rand.NewChaCha8(seed)}
	words := strings.Fields("the function returns an error when the input is empty so we check the length first and then parse the header of each line before building the tree index")
	text := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	parent := ""
	for i := range n {
		m := tree.Meta{ID: ids.New(s.Has), ParentID: parent, Timestamp: fmt.Sprintf("2026-01-01T00:%02d:%02d.000Z", i/60%60, i%60)}
		var msg any
		switch i % 3 {
		case 0:
			msg = map[string]any{"role": "user", "content": text(50 + r.IntN(400)), "timestamp": 1796028684626 + i}
		case 1:
			msg = map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "text", "text": text(100 + r.IntN(800))},
				map[string]any{"type": "toolCall", "id": fmt.Sprintf("call_%d", i), "name": "read", "arguments": map[string]any{"path": "src/auth.ts"}},
			}, "api": "anthropic-messages", "provider": "anthropic", "model": "claude-3-7-sonnet",
				"usage": map[string]any{"input": 1500, "output": 100, "totalTokens": 1600}, "stopReason": "toolUse", "timestamp": 1796028684626 + i}
		default:
			msg = map[string]any{"role": "toolResult", "toolCallId": fmt.Sprintf("call_%d", i-1), "toolName": "read",
				"content": []any{map[string]any{"type": "text", "text": text(200 + r.IntN(3000))}}, "isError": false, "timestamp": 1796028684626 + i}
		}
		raw, _ := json.Marshal(msg)
		e, err := tree.NewMessage(m, raw)
		if err != nil {
			t.Fatal(err)
		}
		s.Append(e)
		parent = m.ID
	}
	return s.AppendJSONL(nil)
}
