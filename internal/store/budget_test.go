package store_test

import (
	"context"
	"testing"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
)

// TestSetMemoryBudget: a node that holds more shards gives each Store a
// smaller part of its budget; the Store evicts down to it at once, and a
// larger part evicts nothing more. A budget cannot be given to a Store
// made without one, nor taken from one made with it.
func TestSetMemoryBudget(t *testing.T) {
	ctx := context.Background()
	l := session.NewMemLog(1000, 8<<20)
	writeSessions(t, l, 40)
	st := store.New(l, store.Options{Log: l, MemoryBudget: 1 << 30})
	if err := st.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if err := st.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	full := st.Stats()
	if full.BytesHeld == 0 || full.Evictions != 0 || full.MemoryBudget != 1<<30 {
		t.Fatalf("before: %+v", full)
	}
	half := full.BytesHeld / 2
	if err := st.SetMemoryBudget(half); err != nil {
		t.Fatal(err)
	}
	s := st.Stats()
	if s.BytesHeld > half || s.Evictions == 0 || s.MemoryBudget != half {
		t.Fatalf("after a budget of %d (of %d held): %d held, %d evictions, budget %d", half, full.BytesHeld, s.BytesHeld, s.Evictions, s.MemoryBudget)
	}
	if err := st.SetMemoryBudget(1 << 30); err != nil {
		t.Fatal(err)
	}
	if again := st.Stats(); again.Evictions != s.Evictions || again.MemoryBudget != 1<<30 {
		t.Fatalf("a larger budget: %+v", again)
	}
	if err := st.SetMemoryBudget(0); err == nil {
		t.Fatal("a Store made with a budget took none")
	}
	plain := store.New(l, store.Options{Log: l})
	if err := plain.SetMemoryBudget(1 << 20); err == nil {
		t.Fatal("a Store made without a budget took one")
	}
}
