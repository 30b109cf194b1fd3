package jstest

import (
	"context"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/session"
)

// Connect opens a client connection to urls, closed at cleanup.
func Connect(t testing.TB, urls ...string) *jetstream.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := jetstream.Connect(ctx, jetstream.NewConnConfig(urls...))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// Backend provisions the session stream and cursor bucket (replicas as
// given) on the servers at urls and returns the adapter's Log and Cursors.
func Backend(t testing.TB, replicas int, urls ...string) (*jetstream.Log, *jetstream.Cursors) {
	t.Helper()
	return backend(t, replicas, jetstream.NewConfig(), urls)
}

// BackendNamed is Backend on a stream, subjects and bucket of their own
// (derived from name), for tests that share one cluster; they are deleted at
// cleanup so the cluster does not accumulate raft groups.
func BackendNamed(t testing.TB, replicas int, name string, urls ...string) (*jetstream.Log, *jetstream.Cursors) {
	t.Helper()
	cfg := jetstream.NewConfig()
	cfg.Stream = "S_" + name
	cfg.SubjectPrefix = "s_" + name + ".sess"
	cfg.Bucket = "C_" + name
	l, c := backend(t, replicas, cfg, urls)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		js := Connect(t, urls...).JS
		_ = js.DeleteStream(ctx, cfg.Stream)
		_ = js.DeleteKeyValue(ctx, cfg.Bucket)
	})
	return l, c
}

// BackendConfig is Backend with cfg (its replicas included), for tests
// that need other limits, such as a small MaxBatch.
func BackendConfig(t testing.TB, cfg jetstream.Config, urls ...string) (*jetstream.Log, *jetstream.Cursors) {
	t.Helper()
	return backend(t, cfg.Replicas, cfg, urls)
}

func backend(t testing.TB, replicas int, cfg jetstream.Config, urls []string) (*jetstream.Log, *jetstream.Cursors) {
	c := Connect(t, urls...)
	cfg.Replicas = replicas
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := jetstream.Provision(ctx, c.JS, cfg); err != nil {
		t.Fatalf("provision: %v", err)
	}
	cur, err := jetstream.NewCursors(ctx, c.JS, cfg)
	if err != nil {
		t.Fatalf("cursors: %v", err)
	}
	return jetstream.NewLog(c.JS, cfg), cur
}

// BulkLoad publishes whole sessions (header first) without waiting for each
// ack — far faster than creating them one atomic batch at a time, for tests
// whose subject is what comes after (Store rebuilds, benchmarks). It returns
// the last sequence.
func BulkLoad(t testing.TB, js natsjs.JetStream, l *jetstream.Log, sessions map[string][]session.Record) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var last uint64
	var futures []natsjs.PubAckFuture
	wait := func() {
		for _, f := range futures {
			select {
			case ack := <-f.Ok():
				last = max(last, ack.Sequence)
			case err := <-f.Err():
				t.Fatalf("bulk load: %v", err)
			case <-ctx.Done():
				t.Fatal("bulk load: timed out")
			}
		}
		futures = futures[:0]
	}
	for sid, recs := range sessions {
		for _, r := range recs {
			f, err := js.PublishMsgAsync(l.Msg(sid, r))
			if err != nil {
				t.Fatalf("bulk load: %v", err)
			}
			futures = append(futures, f)
		}
		if len(futures) > 2000 { // below nats.go's default of 4000 pending acks
			wait()
		}
	}
	wait()
	return last
}
