package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/jetstream/embedded/embeddedtest"
	"github.com/pifleet/sessionlog/internal/jetstream/jstest"
	"github.com/pifleet/sessionlog/internal/writer"
)

// The session engine's own benchmarks, each paired with its raw JetStream
// equivalent IN THE SAME LOOP: every iteration does one operation each way,
// alternately, so that a machine that slows down (other work, thermal,
// page cache) slows both sides alike and the ratio stays honest. Metrics:
// p50 and p99 of each side in µs, p50-ratio (ours over raw: above 1 is
// slower) and tput-ratio (raw mean latency over ours: for a fixed number of
// callers, throughput is inversely proportional to mean latency; above 1
// is faster).

// pair holds the latencies of the two sides of a paired benchmark.
type pair struct{ ours, raw latencies }

func (p *pair) time(side *latencies, op func() error) error {
	t := time.Now()
	if err := op(); err != nil {
		return err
	}
	*side = append(*side, time.Since(t))
	return nil
}

func (p *pair) report(b *testing.B, ours string) {
	o, r := row("", "", "", p.ours, 0), row("", "", "", p.raw, 0)
	b.ReportMetric(o.P50Ms*1000, ours+"-p50-µs")
	b.ReportMetric(o.P99Ms*1000, ours+"-p99-µs")
	b.ReportMetric(r.P50Ms*1000, "raw-p50-µs")
	b.ReportMetric(r.P99Ms*1000, "raw-p99-µs")
	b.ReportMetric(o.P50Ms/r.P50Ms, "p50-ratio")
	b.ReportMetric(r.MeanMs/o.MeanMs, "tput-ratio")
}

var benchFill = NewFiller(1024)

// newWriter returns a Writer whose session exists on the log (created by
// a user message and the assistant's reply: pi's delayed flush).
func newWriter(b *testing.B, l *jetstream.Log) *writer.Writer {
	ctx := context.Background()
	w, err := writer.Create(l, writer.CreateOptions{Cwd: "/bench"}, writer.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := w.AppendMessage(ctx, benchFill.Message(time.Now())); err != nil {
		b.Fatal(err)
	}
	if _, err := w.AppendMessage(ctx, []byte(`{"role":"assistant","content":[{"type":"text","text":"ok"}],"provider":"p","model":"m"}`)); err != nil {
		b.Fatal(err)
	}
	return w
}

// rawSession appends to one session with plain CAS publishes.
type rawSession struct {
	sid, parent string
	last        uint64
	k           int
}

func newRawSession(b *testing.B, l *jetstream.Log, gen *Gen) *rawSession {
	r := &rawSession{sid: gen.SessionID()}
	ack, err := l.JetStream().PublishMsg(context.Background(), l.Msg(r.sid, Header(r.sid, time.Now())), natsjs.WithExpectLastSequencePerSubject(0))
	if err != nil {
		b.Fatal(err)
	}
	r.last = ack.Sequence
	return r
}

func (r *rawSession) append(l *jetstream.Log) error {
	rec := benchFill.Entry(r.k, r.parent, time.Now())
	ack, err := l.JetStream().PublishMsg(context.Background(), l.Msg(r.sid, rec), natsjs.WithExpectLastSequencePerSubject(r.last))
	if err != nil {
		return err
	}
	r.last, r.parent, r.k = ack.Sequence, rec.ID, r.k+1
	return nil
}

// BenchmarkAppend: writer.Writer appends (one CAS publish each, through
// the adapter) against raw publishes of the same size with the same
// headers and expectation; one session appending sequentially, and 100
// sessions appending concurrently; with fsync on every write (pi-node's
// default) and without.
func BenchmarkAppend(b *testing.B) {
	for _, sync := range []bool{true, false} {
		name := "fsync"
		if !sync {
			name = "nofsync"
		}
		b.Run(name, func(b *testing.B) {
			l, _ := jstest.Backend(b, 1, embeddedtest.RunServer(b, sync).ClientURL())
			gen := NewGen(uint64(time.Now().UnixNano()))
			b.Run("one-session", func(b *testing.B) { appendPairs(b, l, gen, 1) })
			b.Run("100-sessions", func(b *testing.B) { appendPairs(b, l, gen, 100) })
		})
	}
}

// appendPairs runs b.N paired appends over n sessions written at once.
func appendPairs(b *testing.B, l *jetstream.Log, gen *Gen, n int) {
	ctx := context.Background()
	writers, raws := make([]*writer.Writer, n), make([]*rawSession, n)
	for i := range n {
		writers[i], raws[i] = newWriter(b, l), newRawSession(b, l, gen)
	}
	pairs := make([]pair, n)
	var next atomic.Int64
	var failed atomic.Value
	b.ResetTimer()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p := &pairs[i]
			for next.Add(1) <= int64(b.N) {
				msg := benchFill.Message(time.Now())
				err := p.time(&p.ours, func() error { _, err := writers[i].AppendMessage(ctx, msg); return err })
				if err == nil {
					err = p.time(&p.raw, func() error { return raws[i].append(l) })
				}
				if err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if err, ok := failed.Load().(error); ok {
		b.Fatal(err)
	}
	var all pair
	for _, p := range pairs {
		all.ours, all.raw = append(all.ours, p.ours...), append(all.raw, p.raw...)
	}
	all.report(b, "writer")
}

// BenchmarkCreate: a Writer's creation with 100 entries (99 held until
// the assistant's reply, then all of them with the header as one atomic
// batch on an empty subject) against the raw atomic batch of the same
// 101 records.
func BenchmarkCreate(b *testing.B) {
	l, _ := jstest.Backend(b, 1, embeddedtest.RunServer(b, true).ClientURL())
	ctx := context.Background()
	gen := NewGen(uint64(time.Now().UnixNano()))
	var p pair
	for b.Loop() {
		err := p.time(&p.ours, func() error {
			w, err := writer.Create(l, writer.CreateOptions{Cwd: "/bench"}, writer.Options{})
			if err != nil {
				return err
			}
			for range 99 {
				if _, err := w.AppendMessage(ctx, benchFill.Message(time.Now())); err != nil {
					return err
				}
			}
			_, err = w.AppendMessage(ctx, []byte(`{"role":"assistant","content":[{"type":"text","text":"ok"}],"provider":"p","model":"m"}`))
			return err
		})
		if err == nil {
			err = p.time(&p.raw, func() error { return rawBatch(ctx, l, gen.SessionID(), 100) })
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	p.report(b, "writer")
}

// rawBatch publishes a header and n entries as one atomic batch.
func rawBatch(ctx context.Context, l *jetstream.Log, sid string, n int) error {
	now := time.Now()
	msgs := []*nats.Msg{l.Msg(sid, Header(sid, now))}
	msgs[0].Header.Set(natsjs.ExpectedLastSubjSeqHeader, "0")
	parent := ""
	for k := range n {
		rec := benchFill.Entry(k, parent, now)
		msgs = append(msgs, l.Msg(sid, rec))
		parent = rec.ID
	}
	ack, err := jetstreamext.PublishMsgBatch(ctx, l.JetStream(), msgs)
	if err == nil && ack.BatchSize != uint64(len(msgs)) {
		err = fmt.Errorf("batch of %d acked as %d", len(msgs), ack.BatchSize)
	}
	return err
}
