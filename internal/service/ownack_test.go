package service_test

import (
	"context"
	"testing"

	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestOwnAckAcrossHandBack: a write this node acknowledged while it held
// the session's shard is still waited for by the requests it forwards
// (ForwardWait), whatever its own Store has applied, also once it has
// handed the shard back: the shard's holder may lag behind.
func TestOwnAckAcrossHandBack(t *testing.T) {
	ctx := ctxT(t)
	const n = 2
	var logs []session.Log
	var stores []*store.Store
	var feeds []*shard.Log
	for k := range n {
		m := session.NewMemLog(1000, 8<<20)
		sl := &shard.Log{Log: m, Feed: m, Shard: k}
		st := store.New(sl, store.Options{Log: sl})
		if err := st.Open(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		logs, stores, feeds = append(logs, sl), append(stores, st), append(feeds, sl)
	}
	all, err := shard.NewSharded(shard.OneMap(n), logs)
	if err != nil {
		t.Fatal(err)
	}
	set, err := store.NewSet(shard.OneMap(n), stores)
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
	// Held and applied here: a request forwarded from here (the shard
	// taken over and not served yet, or being handed back) still waits
	// for it, at a holder that may lag.
	if got, err := svc.ForwardWait(ctx, sid, false); err != nil || got != res.LastSeq {
		t.Fatalf("held and applied: ForwardWait %d, %v, want %d (the write this node acknowledged)", got, err, res.LastSeq)
	}
	// Handed back: the shard's place holds an Unheld Store.
	if _, err := set.Replace(k, store.Unheld(feeds[k])); err != nil {
		t.Fatal(err)
	}
	if got, err := svc.ForwardWait(ctx, sid, false); err != nil || got != res.LastSeq {
		t.Fatalf("after the hand-back: ForwardWait %d, %v, want %d (the write this node acknowledged)", got, err, res.LastSeq)
	}
	// A read waits for the log's end too, as first learned (a restart
	// forgets the acknowledgements).
	if got, err := svc.ForwardWait(ctx, sid, true); err != nil || got != res.LastSeq {
		t.Fatalf("a read after the hand-back: ForwardWait %d, %v, want %d", got, err, res.LastSeq)
	}
	restarted := &service.Service{Log: all, Store: set, Cursors: session.NewMemCursors()}
	if got, err := restarted.ForwardWait(ctx, sid, true); err != nil || got != res.LastSeq {
		t.Fatalf("a read after a restart: ForwardWait %d, %v, want %d (the log's end)", got, err, res.LastSeq)
	}
}
