package jetstream

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/jetstream/embedded"
	"github.com/pifleet/sessionlog/internal/jetstream/embedded/embeddedtest"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// limitCap is the consumers per stream of runLimitedServer's server.
const limitCap = 2

// runLimitedServer starts a single server whose streams take at most
// limitCap consumers, as nats-server 2.15's default caps them at 1,000:
// small, so that the cap is reached with a few.
func runLimitedServer(t *testing.T) *embedded.Server {
	t.Helper()
	s := embeddedtest.RunServerWith(t, func(s *embedded.Server) { s.MaxConsumersPerStream = limitCap })
	anchorStream(t, s.ClientURL(), 1)
	return s
}

// fillConsumers creates consumers on stream until the server refuses one
// for its limit, so that every consumer the code under test asks for is
// refused.
func fillConsumers(t *testing.T, ctx context.Context, js jetstream.JetStream, stream string) {
	t.Helper()
	for n := 0; ; n++ {
		_, err := js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{AckPolicy: jetstream.AckNonePolicy, InactiveThreshold: time.Hour})
		if errors.Is(err, jetstream.ErrMaximumConsumersLimit) {
			return
		}
		if err != nil || n > limitCap {
			t.Fatalf("consumer %d on %s: %v (the limit is %d)", n+1, stream, err, limitCap)
		}
	}
}

// TestConsumerLimit: nats-server (2.15 on) caps the consumers of a stream,
// over a whole cluster, at 1,000 by default, and pi-node makes an ordered
// consumer for a long read, for each follower of a stream, for a cursor
// watch, for scans. With the stream at its cap (others' consumers: other
// nodes', JetStream clients'), a read still returns every record (by
// leader gets), Follow still delivers every record, and the rest fail at
// once with ErrUnavailable naming the cap, rather than waiting forever for
// a consumer: nats.go's ordered consumer retries its creation for ever.
func TestConsumerLimit(t *testing.T) {
	s := runLimitedServer(t)
	c := connect(t, s.ClientURL())
	cfg := testConfig(1)
	provision(t, c.JS, cfg)
	l := NewLog(c.JS, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	sid := testutil.SessionID(t)
	recs := append([]session.Record{headerRec(sid)}, entryRecs("e", 3*getBudget)...)
	seqs, err := l.Append(ctx, sid, 0, recs[:1])
	if err != nil {
		t.Fatal(err)
	}
	for off := 1; off < len(recs); off += 32 {
		if seqs, err = l.Append(ctx, sid, seqs[len(seqs)-1], recs[off:min(off+32, len(recs))]); err != nil {
			t.Fatal(err)
		}
	}
	cur, err := NewCursors(ctx, c.JS, cfg)
	if err != nil {
		t.Fatal(err)
	}
	fillConsumers(t, ctx, c.JS, cfg.Stream)
	fillConsumers(t, ctx, c.JS, "KV_"+cfg.Bucket)

	t.Run("Read", func(t *testing.T) {
		// More reads at once than the cap: each returns every record.
		var wg sync.WaitGroup
		for range 2 * limitCap {
			wg.Go(func() {
				got, err := l.Read(ctx, sid, 0)
				if err != nil {
					t.Errorf("read at the consumer limit: %v", err)
					return
				}
				if len(got) != len(recs) {
					t.Errorf("read %d records at the consumer limit, want %d", len(got), len(recs))
				}
			})
		}
		wg.Wait()
	})

	t.Run("Follow", func(t *testing.T) {
		fctx, stop := context.WithCancel(ctx)
		defer stop()
		var mu sync.Mutex
		var n int
		done := make(chan error, 1)
		go func() {
			done <- l.Follow(fctx, 1, func(got []session.Stored) error {
				mu.Lock()
				defer mu.Unlock()
				n += len(got)
				if n >= len(recs) {
					stop()
				}
				return nil
			})
		}()
		select {
		case <-done:
		case <-ctx.Done():
		}
		mu.Lock()
		defer mu.Unlock()
		if n < len(recs) {
			t.Fatalf("Follow delivered %d of %d records at the consumer limit", n, len(recs))
		}
	})

	refused := func(t *testing.T, what string, err error) {
		t.Helper()
		if !errors.Is(err, wire.ErrUnavailable) || !strings.Contains(err.Error(), "consumer") || ctx.Err() != nil {
			t.Fatalf("%s at the consumer limit: %v, want ErrUnavailable naming the limit, at once", what, err)
		}
	}
	t.Run("CursorWatch", func(t *testing.T) {
		refused(t, "cursor watch", cur.Watch(ctx, sid, func(session.CursorEntry, bool) {}))
	})
	t.Run("Scan", func(t *testing.T) {
		_, err := l.Scan(ctx, 0, func([]session.Stored) error { return nil })
		refused(t, "scan", err)
	})
}
