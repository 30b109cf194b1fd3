package jetstream

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
)

// TestFollowReportsRetries: while Follow can read nothing (here the stream
// is not there: no consumer can be made, no leader answers a get) it
// retries by itself and returns only at the end, so it tells the report
// in its ctx why, each attempt: the consumer's error and the gets'. A
// sharded TestKillStreamLeader saw a Store taken over apply nothing for a
// minute, and nothing said why.
func TestFollowReportsRetries(t *testing.T) {
	s := runServer(t)
	c := connect(t, s.ClientURL())
	cfg := testConfig(1) // never provisioned
	l := NewLog(c.JS, cfg)
	reports := make(chan error, 16)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fctx := session.WithFollowRetries(ctx, func(err error) {
		select {
		case reports <- err:
		default:
		}
	})
	done := make(chan error, 1)
	go func() {
		done <- l.Follow(fctx, 1, func([]session.Stored) error { return nil })
	}()
	for n := 0; n < 2; n++ {
		select {
		case err := <-reports:
			for _, want := range []string{cfg.Stream, "from sequence 1", "consumer:", "leader gets:", "stream not found"} {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("report %q lacks %q", err, want)
				}
			}
		case err := <-done:
			t.Fatalf("Follow returned %v; it retries until ctx ends", err)
		case <-ctx.Done():
			t.Fatalf("no report %d: %v", n+1, ctx.Err())
		}
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Follow ended with %v, want context.Canceled", err)
	}
}
