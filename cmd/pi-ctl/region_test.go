package main

import (
	"encoding/json"
	"github.com/pifleet/sessionlog/internal/wire"
	"strings"
	"testing"
)

func TestRegionCommandsUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"failover"}, 2, "--to REGION is required"},
		{[]string{"failback"}, 2, "--from REGION is required"},
		{[]string{"failover", "--to", "B", "--timeout", "0s"}, 2, "--timeout must be positive"},
		{[]string{"failback", "--from", "A", "--password", "x"}, 2, "--password needs --user"},
		{[]string{"failover", "--to", "B", "--server", "nats://127.0.0.1:1", "--timeout", "1s"}, 1, "surviving region"},
	} {
		r := runCLI(t, "", c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("pi-ctl %s: exit %d, stderr %q; want %d and %q", strings.Join(c.args, " "), r.code, r.stderr, c.code, c.want)
		}
	}
	for _, cmd := range []string{"failover", "failback"} {
		r := runCLI(t, "", cmd, "--help")
		if r.code != 0 || !strings.Contains(r.stdout, "Usage: pi-ctl "+cmd) || !strings.Contains(r.stdout, "docs/CROSS-REGION.md") {
			t.Errorf("pi-ctl %s --help: exit %d\n%s", cmd, r.code, r.stdout)
		}
	}
}

// mirrorRegionStatus is the status of b1, a node of mirror region B of
// home A, as pi-node answers it.
func mirrorRegionStatus(t *testing.T) statusReply {
	t.Helper()
	var s statusReply
	body := `{"node":"b1","service":"pi-sessions","version":"1.0.0","store":{},"jetstream":{"mode":"embedded-region",
		"stream":{"name":"PI_SESSIONS_B","replicas":1,"leader":"b1"},"bucket":"PI_CURSORS_A",
		"region":{"region":"B","role":"mirror","home":"A","epoch":1,"regions":["A","B"],"reads":"PI_SESSIONS_B","writes":"PI_SESSIONS_A",
		"mirror":{"origin":"PI_SESSIONS_A","lastSeq":42,"homeLastSeq":45,"lag":3,"lagFrom":"origin","lastContact":"12ms","caughtUp":true,"reachable":true},
		"recordUpdatedAt":"2026-11-30T10:00:00Z","recordChange":"bootstrap: home A, by a node of A"}}}`
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStatusShowsRegion(t *testing.T) {
	s := mirrorRegionStatus(t)
	var out strings.Builder
	writeStatus(&out, &s)
	for _, want := range []string{
		"region     B, mirror",
		"home       A, epoch 1",
		"regions    A: home; B: mirror",
		"reads      PI_SESSIONS_B",
		"writes     PI_SESSIONS_A",
		"mirror     PI_SESSIONS_A at 42, lag 3 (the home is at 45), last contact 12ms ago",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
	// A new mirror that never heard from a home that does not answer: its
	// lag is unknown, not 0.
	m := s.JetStream.Region.Mirror
	m.Lag, m.HomeLastSeq, m.LagFrom, m.CaughtUp, m.LastSeq, m.LastContact = nil, nil, "unknown", false, 0, ""
	out.Reset()
	writeStatus(&out, &s)
	if want := "PI_SESSIONS_A at 0, lag unknown (the mirror has not heard from the home, which does not answer), not caught up yet since the node started"; !strings.Contains(out.String(), want) {
		t.Errorf("status lacks %q:\n%s", want, out.String())
	}
	s.JetStream.Region.Role, s.JetStream.Region.Home, s.JetStream.Region.Epoch = "home", "B", 2
	s.JetStream.Region.Stale, s.JetStream.Region.ForkSeq, s.JetStream.Region.Mirror = map[string]uint64{"A": 40}, 40, nil
	out.Reset()
	writeStatus(&out, &s)
	if !strings.Contains(out.String(), "A: stale (shares up to 40; needs failback); B: home") || !strings.Contains(out.String(), "inherited sequences up to 40") {
		t.Errorf("status after a failover:\n%s", out.String())
	}
}

// TestStatusShowsShardedRegion: with shards, the mirror line sums every
// shard's and a line per shard follows; forks and staleness are by shard.
func TestStatusShowsShardedRegion(t *testing.T) {
	s := mirrorRegionStatus(t)
	r := s.JetStream.Region
	seq := func(n uint64) *uint64 { return &n }
	r.Shards = 2
	r.ShardMirrors = []wire.MirrorStatus{
		{Origin: "PI_SESSIONS_A", LastSeq: 42, HomeLastSeq: seq(45), Lag: seq(3), LagFrom: "origin", LastContact: "12ms", CaughtUp: true, Reachable: true},
		{Origin: "PI_SESSIONS_A_1", LastSeq: 8, HomeLastSeq: seq(8), Lag: seq(0), LagFrom: "origin", LastContact: "9ms", CaughtUp: true, Reachable: true},
	}
	r.Mirror = &wire.MirrorStatus{Origin: "PI_SESSIONS_A", LastSeq: 50, HomeLastSeq: seq(53), Lag: seq(3), LagFrom: "origin", LastContact: "12ms", CaughtUp: true, Reachable: true}
	var out strings.Builder
	writeStatus(&out, &s)
	for _, want := range []string{
		"home       A, epoch 1; every region's copy in 2 shards",
		"mirror     every shard's: PI_SESSIONS_A at 50, lag 3 (the home is at 53)",
		"  shard 0  PI_SESSIONS_A at 42, lag 3 (the home is at 45)",
		"  shard 1  PI_SESSIONS_A_1 at 8, lag 0 (the home is at 8)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
	r.Role, r.Home, r.Epoch, r.Mirror, r.ShardMirrors = "home", "B", 2, nil, nil
	r.Stale, r.StaleShards = map[string]uint64{"A": 40}, map[string][]uint64{"A": {40, 7}}
	r.ForkSeq, r.ForkSeqs = 40, []uint64{40, 7}
	out.Reset()
	writeStatus(&out, &s)
	if !strings.Contains(out.String(), "A: stale (shares up to 40, 7 by shard; needs failback)") || !strings.Contains(out.String(), "inherited sequences up to 40, 7 by shard") {
		t.Errorf("status after a failover:\n%s", out.String())
	}
}
