package service_test

import (
	"context"
	"testing"

	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestOwnAckAcrossHandBack: a write this node acknowledged while it held
// the session's shard is still waited for by the reads it forwards once it
// has handed the shard back (OwnAck): the shard's holder may lag behind.
func TestOwnAckAcrossHandBack(t *testing.T) {
	ctx := ctxT(t)
	const n = 2
	var logs []session.Log
	var stores []*store.Store
	var feeds []*session.ShardLog
	for k := range n {
		m := session.NewMemLog(1000, 8<<20)
		sl := &session.ShardLog{Log: m, Feed: m, Shard: k}
		st := store.New(sl, store.Options{Log: sl})
		if err := st.Open(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		logs, stores, feeds = append(logs, sl), append(stores, st), append(feeds, sl)
	}
	all, err := session.NewSharded(session.OneMap(n), logs)
	if err != nil {
		t.Fatal(err)
	}
	set, err := store.NewSet(session.OneMap(n), stores)
	if err != nil {
		t.Fatal(err)
	}
	svc := &service.Service{Log: all, Store: set, Cursors: session.NewMemCursors()}
	res, err := svc.Create(ctx, wire.CreateRequest{Entries: raws(`{"type":"message","id":"a1","message":{"role":"user","content":"q"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	sid, k := res.SessionID, set.Shard(res.SessionID)
	waitApplied(t, stores[k], res.LastSeq)
	if got := svc.OwnAck(sid); got != 0 {
		t.Fatalf("held and applied: OwnAck %d, want 0 (nothing to wait for)", got)
	}
	// Handed back: the shard's place holds an Unheld Store.
	if _, err := set.Replace(k, store.Unheld(feeds[k])); err != nil {
		t.Fatal(err)
	}
	if got := svc.OwnAck(sid); got != res.LastSeq {
		t.Fatalf("after the hand-back: OwnAck %d, want %d (the write this node acknowledged)", got, res.LastSeq)
	}
}
