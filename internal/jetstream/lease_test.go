package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

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
	var refusal error
	d, err := testutil.Poll(10*time.Second, func() error {
		_, err := l.LastSeq(ctx)
		if err == nil {
			return errors.New("the cut-off leader's answer is still taken")
		}
		if !errors.Is(err, wire.ErrUnavailable) {
			t.Fatalf("want ErrUnavailable, got %v", err)
		}
		refusal = err
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
	// Judged by the mechanism, not the time: the refusal is the lease's
	// (the leader had not heard from a majority for longer than it), or
	// the leader's own giving up. When it comes depends on when the
	// replicas last answered before the cut, which a loaded machine
	// delays (430 ms after the cut was seen under CI's load).
	if msg := refusal.Error(); !strings.Contains(msg, "has not heard from a majority") && !strings.Contains(msg, "has no leader") {
		t.Errorf("the cut-off leader's answer was refused for another reason: %v", refusal)
	}
	t.Logf("MEASURED lease: a cut-off leader's stream info refused %v after its replicas went away (lease %v): %v", d, leaderLease, refusal)
}

// TestLeaseLapsed: the lease arithmetic on stream infos as a leader
// answers them: the majority's least recent answer decides, a replica
// never heard from counts as not heard, and R1 needs no lease.
func TestLeaseLapsed(t *testing.T) {
	info := func(replicas int, active ...time.Duration) *jetstream.StreamInfo {
		si := &jetstream.StreamInfo{Config: jetstream.StreamConfig{Name: "S", Replicas: replicas}, Cluster: &jetstream.ClusterInfo{Leader: "n1"}}
		for i, a := range active {
			si.Cluster.Replicas = append(si.Cluster.Replicas, &jetstream.PeerInfo{Name: fmt.Sprintf("n%d", i+2), Active: a})
		}
		return si
	}
	for _, tc := range []struct {
		name string
		info *jetstream.StreamInfo
		want time.Duration
		lap  bool
	}{
		{"both heard lately", info(3, 300*time.Millisecond, 900*time.Millisecond), 300 * time.Millisecond, false},
		{"one heard lately is a majority", info(3, 500*time.Millisecond, time.Minute), 500 * time.Millisecond, false},
		{"at the lease", info(3, leaderLease, time.Minute), leaderLease, false},
		{"past the lease", info(3, leaderLease+time.Millisecond, time.Minute), leaderLease + time.Millisecond, true},
		{"one never heard", info(3, 0, 3*time.Second), 3 * time.Second, true},
		{"none heard", info(3, 0, 0), 0, true},
		{"R5 needs two", info(5, 100*time.Millisecond, 200*time.Millisecond, 5*time.Second, 6*time.Second), 200 * time.Millisecond, false},
		{"R5 with one", info(5, 100*time.Millisecond, 0, 5*time.Second, 6*time.Second), 5 * time.Second, true},
	} {
		d, lap := leaseLapsed(tc.info)
		if d != tc.want || lap != tc.lap {
			t.Errorf("%s: leaseLapsed = %v, %v; want %v, %v", tc.name, d, lap, tc.want, tc.lap)
		}
		if err := Leaderless(tc.info); (err != nil) != tc.lap || (err != nil && !errors.Is(err, wire.ErrUnavailable)) {
			t.Errorf("%s: Leaderless = %v; want refused %v, as ErrUnavailable", tc.name, err, tc.lap)
		}
	}
	if err := Leaderless(info(1)); err != nil {
		t.Errorf("R1: Leaderless = %v, want nil", err)
	}
	noLeader := info(3, time.Millisecond, time.Millisecond)
	noLeader.Cluster.Leader = ""
	if err := Leaderless(noLeader); !errors.Is(err, wire.ErrUnavailable) {
		t.Errorf("no leader: Leaderless = %v, want ErrUnavailable", err)
	}
}
