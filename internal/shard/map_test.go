package shard_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/wire"
)

// v7 is a UUIDv7 made at t, its other bits scrambled from n as a random
// id's are.
func v7(t time.Time, n int) string {
	ms := uint64(t.UnixMilli())
	r := uint64(n+1) * 0x9E3779B97F4A7C15
	return fmt.Sprintf("%08x-%04x-7%03x-8%03x-%012x", ms>>16, ms&0xffff, r>>52, r>>40&0xfff, r&0xffffffffffff)
}

func TestIDTime(t *testing.T) {
	at := time.Date(2026, 12, 2, 4, 0, 0, 123e6, time.UTC)
	if got, ok := shard.IDTime(v7(at, 1)); !ok || !got.Equal(at) {
		t.Fatalf("IDTime(%s) = %v, %v; want %v", v7(at, 1), got, ok, at)
	}
	// pi's own ids (conformance vectors) are UUIDv7 too.
	if got, ok := shard.IDTime("019a0c7b-1b2c-7a3e-9f00-2d6c1d5e8a01"); !ok || got.Year() != 2025 {
		t.Fatalf("a pi session id: %v, %v", got, ok)
	}
	for _, id := range []string{"9b2f1e2c-6c1f-4b7e-8a3d-2f1c0b9e7d6a", "not-a-uuid", ""} {
		if _, ok := shard.IDTime(id); ok {
			t.Fatalf("IDTime(%q) found a time in an id that is no UUIDv7", id)
		}
	}
}

// A map that grew keeps every session made before the new epoch where it
// was, and places those made from its start on by the new count; ids
// without a time stay in the first epoch.
func TestMapEpochs(t *testing.T) {
	start := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	m, err := shard.OneMap(1).Grow(4, start)
	if err != nil {
		t.Fatal(err)
	}
	if m.Streams() != 4 || m.Current() != 4 || m.Function() != shard.EpochFunction {
		t.Fatalf("grown map %s: streams %d, current %d, function %s", m, m.Streams(), m.Current(), m.Function())
	}
	spread := map[int]bool{}
	for i := range 200 {
		if k := m.Of(v7(start.Add(-time.Millisecond), i)); k != 0 {
			t.Fatalf("a session made a millisecond before the epoch is on shard %d", k)
		}
		after := v7(start, i) // the epoch's first millisecond belongs to it
		if k := m.Of(after); k != shard.Of(after, 4) {
			t.Fatalf("%s: shard %d, want %d", after, k, shard.Of(after, 4))
		} else {
			spread[k] = true
		}
	}
	if len(spread) != 4 {
		t.Fatalf("200 new sessions on shards %v, want all 4", spread)
	}
	if k := m.Of("9b2f1e2c-6c1f-4b7e-8a3d-2f1c0b9e7d6a"); k != 0 {
		t.Fatalf("a UUIDv4 on shard %d, want the first epoch's", k)
	}

	// Encoding round trip, and a later epoch that shrinks back: the
	// streams of the largest stay in use.
	m2, err := m.Grow(2, start.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m2.String(), "1,4@2026-12-02T04:00:00.000Z,2@2026-12-02T05:00:00.000Z"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	back, err := shard.ParseMap(m2.String())
	if err != nil || !back.Equal(m2) || back.Streams() != 4 || back.Current() != 2 {
		t.Fatalf("ParseMap(%q) = %v, %v", m2, back, err)
	}
	if err := shard.Extends(m, m2); err != nil {
		t.Fatalf("a map with one more epoch does not extend it: %v", err)
	}
	if err := shard.Extends(m2, m); !errors.Is(err, wire.ErrConflict) {
		t.Fatalf("a map that drops an epoch extends it: %v", err)
	}
	if err := shard.Extends(shard.OneMap(2), m); !errors.Is(err, wire.ErrConflict) {
		t.Fatalf("a map with another first count extends it: %v", err)
	}
	if _, err := m.Grow(8, start); err == nil {
		t.Fatal("an epoch starting with the last one was accepted")
	}
	for _, bad := range []string{"", "0", "1,4", "1@2026-12-02T04:00:00Z", "1,4@yesterday", "1,4@2026-12-02T05:00:00Z,2@2026-12-02T04:00:00Z", "1,300@2026-12-02T05:00:00Z"} {
		if _, err := shard.ParseMap(bad); !errors.Is(err, wire.ErrInvalid) {
			t.Fatalf("ParseMap(%q): %v, want ErrInvalid", bad, err)
		}
	}
	if one := shard.OneMap(3); one.Function() != shard.Function || one.String() != "3" {
		t.Fatalf("a map of one epoch: %s, %s", one, one.Function())
	}
}

// A router grows only by a map that extends its own, with one log per
// stream the new map adds; it routes by the new map at once.
func TestShardedGrow(t *testing.T) {
	all, _ := newSharded(1)
	start := time.Now().Add(-time.Minute)
	m, err := shard.OneMap(1).Grow(4, start)
	if err != nil {
		t.Fatal(err)
	}
	more := func(n int) []session.Log {
		var out []session.Log
		for k := range n {
			l := session.NewMemLog(1000, 8<<20)
			out = append(out, &shard.Log{Log: l, Feed: l, Shard: 1 + k})
		}
		return out
	}
	if err := all.Grow(m, more(2)); err == nil {
		t.Fatal("grew to 4 streams with 2 logs for 3 new ones")
	}
	if err := all.Grow(shard.OneMap(4), more(3)); !errors.Is(err, wire.ErrConflict) {
		t.Fatalf("grew to a map that moves sessions: %v", err)
	}
	if err := all.Grow(m, more(3)); err != nil {
		t.Fatal(err)
	}
	fresh := v7(time.Now(), 7)
	if got, want := all.Shard(fresh), shard.Of(fresh, 4); got != want || len(all.Logs()) != 4 || !all.Map().Equal(m) {
		t.Fatalf("after growing: %s on shard %d (want %d), %d logs, map %s", fresh, got, want, len(all.Logs()), all.Map())
	}
	if got := all.Shard(v7(start.Add(-time.Second), 7)); got != 0 {
		t.Fatalf("a session made before the new epoch moved to shard %d", got)
	}
}
