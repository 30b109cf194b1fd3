package shard_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/pifleet/sessionlog/internal/enginetest"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/wire"
)

// The shard function is part of the wire contract (docs/PROTOCOL.md): a
// store's sessions are where it put them, so it must never change. These
// values are FNV-1a 32 of the ids, worked out independently (Python:
// functools.reduce over the bytes), modulo the shard counts.
func TestShardOfIsFixed(t *testing.T) {
	for _, c := range []struct {
		sid  string
		n    int
		want int
	}{
		{"019a0000-0000-7000-8000-000000000000", 1, 0},
		{"019a0000-0000-7000-8000-000000000000", 4, 3},
		{"019a0000-0000-7000-8000-000000000001", 4, 0},
		{"019a0000-0000-7000-8000-000000000002", 4, 1},
		{"019a0000-0000-7000-8000-000000000003", 4, 2},
		{"019a0000-0000-7000-8000-000000000001", 6, 2},
		{"019a0000-0000-7000-8000-000000000001", 256, 224},
	} {
		if got := shard.Of(c.sid, c.n); got != c.want {
			t.Errorf("shard.Of(%s, %d) = %d, want %d", c.sid, c.n, got, c.want)
		}
	}
}

// Sessions spread over the shards: 4,000 ids over 4 shards, none with
// less than a fifth or more than a third of them.
func TestShardOfSpreads(t *testing.T) {
	var count [4]int
	for i := range 4000 {
		count[shard.Of(fmt.Sprintf("019a%04x-0000-7000-8000-%012x", i/7, i*7919), 4)]++
	}
	for k, c := range count {
		if c < 800 || c > 1333 {
			t.Errorf("shard %d holds %d of 4000 sessions: %v", k, c, count)
		}
	}
}

func TestShardSeq(t *testing.T) {
	q := shard.Seq(5, 42)
	if shard.OfSeq(q) != 5 || shard.Raw(q) != 42 {
		t.Fatalf("shard.Seq(5, 42) = %d: shard %d, raw %d", q, shard.OfSeq(q), shard.Raw(q))
	}
	if shard.Seq(0, 42) != 42 || shard.Seq(7, 0) != 0 {
		t.Fatal("shard 0 must be the stream's own numbering and 0 must stay 0")
	}
	if top := shard.Seq(shard.Max-1, 1<<shard.Bits-1); top >= 1<<53 {
		t.Fatalf("the highest qualified sequence %d is not exact in JavaScript", top)
	}
	if shard.ValidCount(0) == nil || shard.ValidCount(shard.Max+1) == nil || shard.ValidCount(1) != nil {
		t.Fatal("shard.ValidCount bounds")
	}
}

// One shard of a sharded log keeps the whole Log and Feed contract with its
// sequences qualified (purge notices included).
func TestShardLogContract(t *testing.T) {
	enginetest.TestLog(t, func(t *testing.T) (session.Log, session.Feed) {
		l := session.NewMemLog(1000, 8<<20)
		s := &shard.Log{Log: l, Feed: l, Shard: 3}
		return s, s
	})
}

func newSharded(n int) (*shard.Sharded, []*session.MemLog) {
	logs := make([]session.Log, n)
	mems := make([]*session.MemLog, n)
	for k := range n {
		mems[k] = session.NewMemLog(1000, 8<<20)
		logs[k] = &shard.Log{Log: mems[k], Feed: mems[k], Shard: k}
	}
	all, err := shard.NewSharded(shard.OneMap(n), logs)
	if err != nil {
		panic(err)
	}
	return all, mems
}

// The log over all shards keeps the Log contract: every clause a Feed is
// not needed for.
func TestShardedContract(t *testing.T) {
	enginetest.TestLogWrites(t, func(t *testing.T) session.Log {
		all, _ := newSharded(4)
		return all
	})
}

// Each session's records go to its shard's stream, and only there; a
// sequence of one shard is no position in another.
func TestShardedRoutes(t *testing.T) {
	ctx := context.Background()
	all, mems := newSharded(4)
	var sids [4]string
	for i := 0; sids[0] == "" || sids[1] == "" || sids[2] == "" || sids[3] == ""; i++ {
		sid := fmt.Sprintf("019a0000-0000-7000-8000-%012x", i)
		if k := shard.Of(sid, 4); sids[k] == "" {
			sids[k] = sid
		}
	}
	for k, sid := range sids {
		h := session.Record{Type: "session", Data: fmt.Appendf(nil, `{"type":"session","version":3,"id":%q,"timestamp":"2026-01-02T03:04:05.006Z","cwd":"/w"}`, sid)}
		seqs, err := all.Append(ctx, sid, 0, []session.Record{h})
		if err != nil {
			t.Fatal(err)
		}
		if shard.OfSeq(seqs[0]) != k || shard.Raw(seqs[0]) != 1 {
			t.Fatalf("session of shard %d stored at %d (shard %d, raw %d)", k, seqs[0], shard.OfSeq(seqs[0]), shard.Raw(seqs[0]))
		}
		for j, m := range mems {
			_, err := m.SessionLastSeq(ctx, sid)
			if (j == k) != (err == nil) {
				t.Fatalf("session of shard %d: on shard %d's log: %v", k, j, err)
			}
		}
		last, err := all.SessionLastSeq(ctx, sid)
		if err != nil || last != seqs[0] {
			t.Fatalf("SessionLastSeq = %d, %v; want %d", last, err, seqs[0])
		}
	}
	// Shard 1's sequence as the expectation of a shard 2 session: a
	// conflict, never a write at shard 2's raw position 1.
	_, err := all.Append(ctx, sids[2], shard.Seq(1, 1), []session.Record{{Type: "message", ID: "aaaaaaaa", Data: []byte(`{"type":"message","id":"aaaaaaaa","parentId":null}`)}})
	if !errors.Is(err, wire.ErrConflict) {
		t.Fatalf("append with another shard's sequence: %v, want ErrConflict", err)
	}
	if cerr := shard.CheckExpect(all, sids[2], shard.Seq(1, 1)); cerr == nil || cerr.Error() != err.Error() {
		t.Fatalf("CheckExpect = %v, want Append's %v", cerr, err)
	}
	if err := shard.CheckExpect(all, sids[2], shard.Seq(2, 1)); err != nil {
		t.Fatalf("CheckExpect of the session's own shard: %v", err)
	}
	if err := shard.CheckExpect(mems[0], sids[2], shard.Seq(1, 1)); err != nil {
		t.Fatalf("CheckExpect of a log that is not sharded: %v", err)
	}
	if _, err := all.Read(ctx, sids[2], shard.Seq(1, 1)); !errors.Is(err, wire.ErrInvalid) {
		t.Fatalf("read after another shard's sequence: %v, want ErrInvalid", err)
	}
	// Purging from shard 3 notices it on shard 3's feed, qualified.
	if err := all.Purge(ctx, sids[3]); err != nil {
		t.Fatal(err)
	}
	got := make(chan []session.Stored, 1)
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_ = all.Logs()[3].(*shard.Log).Follow(fctx, 1, func(recs []session.Stored) error {
			if recs[0].Session == session.PurgeToken {
				got <- recs
				cancel()
			}
			return nil
		})
	}()
	notice := (<-got)[0]
	want := session.PurgeRecord(sids[3], shard.Seq(3, 1))
	if notice.Seq != shard.Seq(3, 2) || string(notice.Data) != string(want.Data) {
		t.Fatalf("purge notice %d %s, want %d %s", notice.Seq, notice.Data, shard.Seq(3, 2), want.Data)
	}
}
