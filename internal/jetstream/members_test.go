package jetstream

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/testutil"
)

// names is the nodes of Live.
func names(ms *Members) []string {
	var out []string
	for _, m := range ms.Live() {
		out = append(out, m.Node)
	}
	return out
}

// sees waits until ms sees exactly the nodes want.
func sees(t *testing.T, ms *Members, within time.Duration, want ...string) {
	t.Helper()
	testutil.WaitFor(t, within, func() error {
		if got := names(ms); !slices.Equal(got, want) {
			return fmt.Errorf("%s sees %v, want %v", ms.self, got, want)
		}
		return nil
	})
}

// TestMembers: nodes see each other's announcements (and what they hold);
// one that leaves is gone at once, one that stops announcing (a kill -9)
// once the TTL has passed; a node starting late sees the others, but not
// a record older than the TTL.
func TestMembers(t *testing.T) {
	srv := runServer(t)
	c := connect(t, srv.ClientURL())
	cfg := testConfig(1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := func(name string) *Members {
		ms, err := OpenMembers(ctx, c.JS, cfg, name)
		if err != nil {
			t.Fatal(err)
		}
		ms.ttl, ms.stale = 600*time.Millisecond, 2*time.Second
		go ms.Run(ctx)
		return ms
	}
	a, b := open("a"), open("node.b") // a name with a character a key may not hold
	if err := a.Announce(ctx, []int{0, 1}, []int{0}); err != nil {
		t.Fatal(err)
	}
	if err := b.Announce(ctx, []int{1}, []int{1}); err != nil {
		t.Fatal(err)
	}
	sees(t, a, 5*time.Second, "a", "node.b")
	sees(t, b, 5*time.Second, "a", "node.b")
	for _, m := range b.Live() {
		if m.Node == "a" && (!slices.Equal(m.Held, []int{0, 1}) || !slices.Equal(m.Ready, []int{0})) {
			t.Fatalf("b sees a as %+v", m)
		}
	}
	// b leaves: a sees it go without waiting for the TTL.
	if err := b.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	sees(t, a, 300*time.Millisecond, "a")
	// b is back, then goes silent: it expires after the TTL.
	if err := b.Announce(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	sees(t, a, 5*time.Second, "a", "node.b")
	silent := time.Now()
	sees(t, a, 5*time.Second, "a")
	if d := time.Since(silent); d < 500*time.Millisecond {
		t.Fatalf("b expired %v after its last announcement, before the TTL", d)
	}
	// When a's own announcements stop coming back (the bucket is electing
	// a leader), the others' silence proves nothing: b stays.
	if err := b.Announce(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	sees(t, a, 5*time.Second, "a", "node.b")
	a.mu.Lock()
	a.selfAt = time.Now().Add(-3 * time.Second) // as if a's last own record came back 3 s ago
	a.mu.Unlock()
	time.Sleep(time.Second) // past b's TTL: what is measured is that nothing happens
	if got := names(a); len(got) != 2 {
		t.Fatalf("a took b for gone while it could not hear itself either: %v", got)
	}
	// A node starting now sees a (announcing) but not b's old record.
	if err := a.Announce(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	late := open("late")
	testutil.WaitFor(t, 5*time.Second, func() error {
		if !late.Synced() {
			return fmt.Errorf("not synced")
		}
		if got := names(late); !slices.Equal(got, []string{"a", "late"}) {
			return fmt.Errorf("late sees %v", got)
		}
		return nil
	})
}
