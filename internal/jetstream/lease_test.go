package jetstream

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestLeaderLease: a stream leader cut off from its replicas keeps calling
// itself the leader (measured: still so 15 s later), answering stream info
// with its own last sequence while the majority may elect another and
// commit on. A Store that polls the log's end through such a leader would
// report itself caught up with a log that has moved on, so LastSeq refuses
// the answer of a leader that has not heard from a majority within
// leaderLease — and must not refuse a healthy leader's, idle or not.
func TestLeaderLease(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-node cluster takes seconds to elect its leaders")
	}
	servers := runCluster(t, 3)
	admin := connect(t, servers[0].ClientURL())
	cfg := testConfig(3)
	provision(t, admin.JS, cfg)
	ctx := context.Background()
	s, err := admin.JS.Stream(ctx, cfg.Stream)
	if err != nil {
		t.Fatal(err)
	}
	leader := s.CachedInfo().Cluster.Leader
	var lc *Conn
	for _, sv := range servers {
		if sv.NATS().Name() == leader {
			lc = connect(t, sv.ClientURL())
		}
	}
	l := NewLog(lc.JS, cfg)

	// Healthy and idle for longer than the lease (heartbeats alone keep
	// it), then under writes: every poll answered.
	for i, deadline := 0, time.Now().Add(leaderLease+time.Second); time.Now().Before(deadline); i++ {
		if i%2 == 0 {
			sid := testutil.SessionID(t)
			if _, err := l.Append(ctx, sid, 0, []session.Record{headerRec(sid)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := l.LastSeq(ctx); err != nil {
			t.Fatalf("a healthy leader's answer refused: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // the cadence of a poll, not a wait for a condition
	}

	cut := time.Now()
	for _, sv := range servers {
		if sv.NATS().Name() != leader {
			sv.Shutdown()
		}
	}
	d, err := testutil.Poll(10*time.Second, func() error {
		_, err := l.LastSeq(ctx)
		if err == nil {
			return errors.New("the cut-off leader's answer is still taken")
		}
		if !errors.Is(err, wire.ErrUnavailable) {
			t.Fatalf("want ErrUnavailable, got %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v %v after its replicas went away", err, time.Since(cut))
	}
	s, err = lc.JS.Stream(ctx, cfg.Stream)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().Cluster.Leader; got != leader {
		t.Logf("the leader stepped down (%q) before the lease was seen to lapse", got)
	}
	if d < leaderLease-time.Second || d > leaderLease+2*time.Second {
		t.Errorf("the lease lapsed %v after the replicas went away; want about %v", d, leaderLease)
	}
	t.Logf("MEASURED lease: a cut-off leader's stream info refused %v after its replicas went away (lease %v)", d, leaderLease)
}
