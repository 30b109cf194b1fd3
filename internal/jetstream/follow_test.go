package jetstream

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/jetstream/embedded"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// TestFollowAcrossRestart restarts the server under a running Follow and
// checks that Follow reconnects by itself and delivers every record once, in
// order, including those appended after the restart.
func TestFollowAcrossRestart(t *testing.T) {
	s := embedded.NewServer(t.TempDir())
	s.ServerName = "restarted"
	s.Port = testutil.FreePort(t) // the client reconnects to the same address
	start := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Start(ctx); err != nil {
			t.Fatalf("start: %v", err)
		}
	}
	start()
	t.Cleanup(s.Shutdown)
	cfg := NewConnConfig(s.ClientURL())
	cfg.ReconnectWait = 50 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := Connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	lcfg := testConfig(1)
	if err := Provision(ctx, conn.JS, lcfg); err != nil {
		t.Fatal(err)
	}
	l := NewLog(conn.JS, lcfg)

	got := make(chan []session.Stored, 64)
	done := make(chan error, 1)
	go func() {
		done <- l.Follow(ctx, 1, func(recs []session.Stored) error { got <- recs; return nil })
	}()
	sid := testutil.SessionID(t)
	var want []uint64
	appendSome := func(round int) {
		t.Helper()
		expect := uint64(0)
		if len(want) > 0 {
			expect = want[len(want)-1]
		}
		recs := entryRecs(fmt.Sprintf("%04x", round), 3)
		if round == 0 {
			recs = append([]session.Record{headerRec(sid)}, recs...)
		}
		// Right after a restart the client may still be reconnecting.
		var seqs []uint64
		testutil.WaitFor(t, 20*time.Second, func() error {
			seqs, err = l.Append(ctx, sid, expect, recs)
			return err
		})
		want = append(want, seqs...)
	}
	var seen []uint64
	waitFor := func(n int) {
		t.Helper()
		for len(seen) < n {
			select {
			case recs := <-got:
				for _, r := range recs {
					seen = append(seen, r.Seq)
				}
			case err := <-done:
				t.Fatalf("follow ended: %v", err)
			case <-time.After(30 * time.Second):
				t.Fatalf("follow: %d of %d records after 30s", len(seen), n)
			}
		}
	}

	appendSome(0)
	waitFor(len(want))
	s.Shutdown()
	start()
	appendSome(1)
	appendSome(2)
	waitFor(len(want))
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("follow delivered %v, want %v", seen, want)
	}
}
