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
	elected := time.Now().Add(-time.Minute)
	info := func(leader string, peers ...*jetstream.PeerInfo) *jetstream.StreamInfo {
		return &jetstream.StreamInfo{Config: jetstream.StreamConfig{Name: "PI_SESSIONS", Replicas: 3},
			Cluster: &jetstream.ClusterInfo{Leader: leader, LeaderSince: &elected, Replicas: peers}}
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
		{"within the bound, writes in flight", info("n1", peer("n3", false, false, 100, 100*time.Millisecond)), ""},
		{"behind", info("n1", peer("n3", false, false, 101, 100*time.Millisecond)), "101 entries behind its leader n1"},
		{"offline", info("n1", peer("n3", false, true, 0, 100*time.Millisecond)), "offline to its leader n1"},
		{"not the leader's answer (no election time)", &jetstream.StreamInfo{Config: jetstream.StreamConfig{Name: "PI_SESSIONS", Replicas: 3},
			Cluster: &jetstream.ClusterInfo{Leader: "n1", Replicas: []*jetstream.PeerInfo{peer("n3", false, false, 0, 0)}}}, ""},
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
// the bound, or silent, lagging; silent for longer than an election takes,
// offline; offline first.
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
		{jetstream.PeerInfo{Current: true, Active: 11 * time.Second}, ReplicaOffline},
		{jetstream.PeerInfo{Offline: true, Current: true}, ReplicaOffline},
	} {
		if got := ReplicaState(nil, &c.p, 100, time.Now()); got != c.want {
			t.Errorf("%+v: %s, want %s", c.p, got, c.want)
		}
	}
}

// TestReplicaNeverHeard: a peer the leader has not heard from since its
// election (active 0, as nats-server reports a killed predecessor) is
// silent since the election, not "just seen": current for the first
// heartbeats, lagging past 3 s, offline past 10 s, "never" in the status.
func TestReplicaNeverHeard(t *testing.T) {
	elected := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	ci := &jetstream.ClusterInfo{Leader: "n2", LeaderSince: &elected}
	dead := &jetstream.PeerInfo{Name: "n1", Lag: 21} // as the issue saw it: active 0, not offline
	for _, c := range []struct {
		after time.Duration
		want  string
	}{
		{500 * time.Millisecond, ReplicaCurrent},
		{4 * time.Second, ReplicaLagging},
		{11 * time.Second, ReplicaOffline},
		{50 * time.Second, ReplicaOffline},
	} {
		now := elected.Add(c.after)
		if got := ReplicaState(ci, dead, 100, now); got != c.want {
			t.Errorf("never heard from, %v after the election: %s, want %s", c.after, got, c.want)
		}
		if got := LastSeen(ci, dead, now); got != "never" {
			t.Errorf("never heard from, %v after the election: last seen %q, want never", c.after, got)
		}
	}
	heard := &jetstream.PeerInfo{Name: "n3", Active: 200 * time.Millisecond}
	if got, seen := ReplicaState(ci, heard, 100, elected.Add(time.Minute)), LastSeen(ci, heard, elected.Add(time.Minute)); got != ReplicaCurrent || seen != "200ms" {
		t.Errorf("heard from 200ms ago, a minute after the election: %s, %s; want current, 200ms", got, seen)
	}
	// An answer that is not the leader's (no election time): active 0 is
	// no news, never "current, last seen 0s".
	notLeader := &jetstream.ClusterInfo{Leader: "n2"}
	if got, seen := ReplicaState(notLeader, dead, 100, elected), LastSeen(notLeader, dead, elected); got != ReplicaLagging || seen != "never" {
		t.Errorf("active 0 in an answer without the election time: %s, last seen %s; want lagging, never", got, seen)
	}
	if got := ReplicaState(notLeader, heard, 100, elected); got != ReplicaCurrent {
		t.Errorf("heard from 200ms ago, in an answer without the election time: %s, want current", got)
	}
	info := &jetstream.StreamInfo{Config: jetstream.StreamConfig{Name: "PI_SESSIONS", Replicas: 3}, Cluster: ci}
	since := time.Now().Add(-time.Minute)
	ci.LeaderSince, ci.Replicas = &since, []*jetstream.PeerInfo{dead, heard}
	if err := ReplicaBehind(info, "n1", 100); err == nil || !strings.Contains(err.Error(), "has not heard from it since it was elected") {
		t.Errorf("readiness of a replica never heard from for a minute: %v", err)
	}
}
