package jetstream

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/wire"
)

// TestReplicaBehind: a node's own replica, as the stream leader reports
// it, keeps /readyz at 503 while it is offline, silent or too far behind.
func TestReplicaBehind(t *testing.T) {
	info := func(leader string, peers ...*jetstream.PeerInfo) *jetstream.StreamInfo {
		return &jetstream.StreamInfo{Config: jetstream.StreamConfig{Name: "PI_SESSIONS", Replicas: 3},
			Cluster: &jetstream.ClusterInfo{Leader: leader, Replicas: peers}}
	}
	peer := func(name string, current, offline bool, lag uint64, active time.Duration) *jetstream.PeerInfo {
		return &jetstream.PeerInfo{Name: name, Current: current, Offline: offline, Lag: lag, Active: active}
	}
	ok := peer("n3", true, false, 0, 200*time.Millisecond)
	for _, c := range []struct {
		name string
		info *jetstream.StreamInfo
		want string // "" when ready
	}{
		{"current", info("n1", peer("n2", true, false, 0, 0), ok), ""},
		{"the leader", info("n3", peer("n1", true, false, 0, 0)), ""},
		{"not a replica", info("n1", peer("n2", true, false, 0, 0)), ""},
		{"no leader (Leaderless's)", info("", peer("n3", false, true, 0, 0)), ""},
		{"no cluster", &jetstream.StreamInfo{Config: jetstream.StreamConfig{Name: "PI_SESSIONS"}}, ""},
		{"within the bound, writes in flight", info("n1", peer("n3", false, false, 100, 0)), ""},
		{"behind", info("n1", peer("n3", false, false, 101, 0)), "101 entries behind its leader n1"},
		{"offline", info("n1", peer("n3", false, true, 0, 0)), "offline to its leader n1"},
		{"silent", info("n1", peer("n3", true, false, 0, 4*time.Second)), "not been heard from by its leader n1 for 4s"},
	} {
		err := ReplicaBehind(c.info, "n3", 100)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want ready", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, wire.ErrUnavailable)):
			t.Errorf("%s: %v, want an unavailable error with %q", c.name, err, c.want)
		}
	}
	if err := ReplicaBehind(info("n1", peer("n3", false, true, 0, 0)), "", 100); err != nil {
		t.Errorf("no server of its own (external NATS): %v", err)
	}
}

// TestReplicaState: the one classification of a follower that /readyz and
// pi_stream_replicas share: a few entries in flight are current; beyond
// the bound, or silent, lagging; offline first.
func TestReplicaState(t *testing.T) {
	for _, c := range []struct {
		p    jetstream.PeerInfo
		want string
	}{
		{jetstream.PeerInfo{Current: true}, ReplicaCurrent},
		{jetstream.PeerInfo{Current: false, Lag: 4, Active: time.Second}, ReplicaCurrent},
		{jetstream.PeerInfo{Current: false, Lag: 100}, ReplicaCurrent},
		{jetstream.PeerInfo{Current: false, Lag: 101}, ReplicaLagging},
		{jetstream.PeerInfo{Current: true, Active: 4 * time.Second}, ReplicaLagging},
		{jetstream.PeerInfo{Offline: true, Current: true}, ReplicaOffline},
	} {
		if got := ReplicaState(&c.p, 100); got != c.want {
			t.Errorf("%+v: %s, want %s", c.p, got, c.want)
		}
	}
}
