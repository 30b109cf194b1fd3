package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
)

// TestUnheld: the Store of a shard held elsewhere keeps nothing and waits
// for nothing; a read of it is the log's copy, current and never stale.
func TestUnheld(t *testing.T) {
	ctx := context.Background()
	l := session.NewMemLog(1000, 1<<20)
	last := writeSessions(t, l, 2)
	st := store.Unheld(l)
	if err := st.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if st.Held() {
		t.Fatal("an Unheld Store says it holds its shard")
	}
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := st.WaitFor(wctx, last+1000); err != nil {
		t.Fatalf("WaitFor: %v; an Unheld Store has nothing to wait for (its reads are the log's)", err)
	}
	if infos, _ := st.List(ctx, store.ListFilter{}); len(infos) != 0 {
		t.Fatalf("an Unheld Store lists %d sessions", len(infos))
	}
	held := store.New(l, store.Options{Log: l})
	if err := held.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = held.Close() })
	if err := held.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	infos, _ := held.List(ctx, store.ListFilter{})
	sid := infos[0].SessionID
	var entries int
	f, err := st.ViewOrRead(ctx, l, sid, func(d *store.Doc) error { entries = d.Entries; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if entries != 2 {
		t.Fatalf("read %d entries of %s from the log, want 2", entries, sid)
	}
	if f.Lag() != 0 || !f.EndKnown || time.Since(f.CaughtUpAt) > time.Second {
		t.Fatalf("an Unheld read's freshness %+v: want the log's, now", f)
	}
	if s := st.Stats(); !s.Unheld || s.Sessions != 0 || s.Lag != 0 || s.CaughtUpAt.IsZero() {
		t.Fatalf("stats %+v", s)
	}
	select {
	case <-st.Changed(): // a watch polls the log
	case <-time.After(5 * time.Second):
		t.Fatal("an Unheld Store's Changed never fires: a watch of its sessions would never read again")
	}
	// Shards taken together count only the Stores that hold their shard.
	if s := store.StatsOf(store.Subset{held, st}); s.Sessions != 2 || s.CaughtUpAt.IsZero() {
		t.Fatalf("stats of a held and an unheld Store: %+v", s)
	}
}
