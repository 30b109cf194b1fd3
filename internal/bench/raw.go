package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/jetstream"
)

// rawConsume reads the whole stream with one ordered consumer, doing
// nothing with the messages: the floor under a Store's rebuild, which
// reads the same messages the same way and applies them. It returns the
// messages read and how long it took.
func rawConsume(ctx context.Context, js natsjs.JetStream, stream string, last uint64, prog Progress) (int, time.Duration, error) {
	start := time.Now()
	c, err := js.OrderedConsumer(ctx, stream, natsjs.OrderedConsumerConfig{})
	if err != nil {
		return 0, 0, err
	}
	done := make(chan struct{})
	n := 0
	cc, err := c.Consume(func(m natsjs.Msg) {
		n++
		if n%100000 == 0 {
			prog.report("raw ordered consumer", n, int(last))
		}
		if md, err := m.Metadata(); err == nil && md.Sequence.Stream >= last {
			select {
			case <-done:
			default:
				close(done)
			}
		}
	})
	if err != nil {
		return 0, 0, err
	}
	defer cc.Stop()
	select {
	case <-done:
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
	return n, time.Since(start), nil
}

// rawFilteredRead reads one subject with an ordered consumer filtered on
// it: how a client without pi-node reads one session from an interleaved
// stream (the adapter's Log.Read switches to this after 32 leader gets).
// It returns the messages read.
func rawFilteredRead(ctx context.Context, js natsjs.JetStream, stream, subject string) (int, error) {
	c, err := js.OrderedConsumer(ctx, stream, natsjs.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		return 0, err
	}
	done := make(chan struct{})
	n := 0
	cc, err := c.Consume(func(m natsjs.Msg) {
		n++
		if md, err := m.Metadata(); err == nil && md.NumPending == 0 {
			select {
			case <-done:
			default:
				close(done)
			}
		}
	})
	if err != nil {
		return 0, err
	}
	defer cc.Stop()
	select {
	case <-done:
		return n, nil
	case <-ctx.Done():
		return n, fmt.Errorf("filtered read of %s: %w after %d messages", subject, ctx.Err(), n)
	}
}

// rawReads measures, on the node's server, the raw consumer over the whole
// stream and the two raw ways to read one session.
func rawReads(ctx context.Context, url string, ld *Loaded, o RebuildOptions) ([]Row, error) {
	conn, err := jetstream.Connect(ctx, jetstream.NewConnConfig(url))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	cfg := jetstream.NewConfig()
	n, d, err := rawConsume(ctx, conn.JS, cfg.Stream, ld.LastSeq, o.Progress)
	if err != nil {
		return nil, err
	}
	consumer := Row{Name: rowRawConsumer, Kind: KindRaw, Ops: n, Unit: "records", Seconds: d.Seconds(), Rate: float64(n) / d.Seconds()}
	log := jetstream.NewLog(conn.JS, cfg)
	rng := rand.New(rand.NewPCG(o.Seed, 17))
	sample := make([]string, o.Samples)
	for i := range sample {
		sample[i] = ld.Sessions[rng.IntN(len(ld.Sessions))].ID
	}
	filtered, err := sampleReads(ctx, o.Progress, rowRawFiltered, sample, func(ctx context.Context, sid string) error {
		_, err := rawFilteredRead(ctx, conn.JS, cfg.Stream, cfg.SubjectPrefix+"."+sid)
		return err
	})
	if err != nil {
		return nil, err
	}
	read, err := sampleReads(ctx, o.Progress, rowRawRead, sample, func(ctx context.Context, sid string) error {
		_, err := log.Read(ctx, sid, 0)
		return err
	})
	return []Row{consumer, filtered, read}, err
}

func sampleReads(ctx context.Context, prog Progress, name string, sids []string, read func(context.Context, string) error) (Row, error) {
	lat, wall, err := runJobs(ctx, prog, name, 1, len(sids), len(sids), func(ctx context.Context, j int, m *meter) error {
		return m.time(func() error { return read(ctx, sids[j]) })
	})
	return row(name, KindRaw, "sessions", lat, wall), err
}
