package jetstream

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

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
// once the TTL has passed and not before; a node starting late sees the
// others, but not a record older than the TTL. Liveness is judged on a
// clock the test turns (the nodes' records travel through a real bucket),
// so that no judgement rests on how fast this machine is.
func TestMembers(t *testing.T) {
	srv := runServer(t)
	c := connect(t, srv.ClientURL())
	cfg := testConfig(1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base := time.Now()
	var clock atomic.Int64 // how far the test has turned it: it moves only then
	now := func() time.Time { return base.Add(time.Duration(clock.Load())) }
	turn := func(d time.Duration) { clock.Add(int64(d)) }
	const ttl = 5 * time.Second
	open := func(name string) *Members {
		ms, err := OpenMembers(ctx, c.JS, cfg, name)
		if err != nil {
			t.Fatal(err)
		}
		ms.ttl, ms.now = ttl, now
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
	// b leaves: a sees it go without the clock turning.
	if err := b.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	sees(t, a, 5*time.Second, "a")
	// b is back, then goes silent while a beats on: b stays up to the
	// TTL, and is gone past it.
	if err := b.Announce(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	sees(t, a, 5*time.Second, "a", "node.b")
	announce := func(ms *Members) {
		t.Helper()
		if err := ms.Announce(ctx, nil, nil); err != nil {
			t.Fatal(err)
		}
		// Heard back: ms's own record, at the turned clock's now.
		testutil.WaitFor(t, 5*time.Second, func() error {
			ms.mu.Lock()
			defer ms.mu.Unlock()
			if s := ms.seen[memberKey(ms.self)]; s.at.Before(now()) {
				return fmt.Errorf("%s's own record not heard back", ms.self)
			}
			return nil
		})
	}
	for range 4 {
		turn(time.Second)
		announce(a)
	}
	turn(500 * time.Millisecond) // b's record is 4.5 s old
	if got := names(a); !slices.Equal(got, []string{"a", "node.b"}) {
		t.Fatalf("a took b for gone before its TTL: %v", got)
	}
	for range 2 { // a beat at a time: a jump of the clock would look like the bucket's silence
		turn(time.Second)
		announce(a)
	}
	if got := names(a); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("b silent for more than its TTL, a sees %v", got)
	}
	// When a's own announcements stop coming back (the bucket is electing
	// a leader), the others' silence proves nothing: b stays.
	announce(b)
	sees(t, a, 5*time.Second, "a", "node.b")
	turn(staleView + ttl) // neither heard: a's last own record is older than staleView
	if got := names(a); len(got) != 2 {
		t.Fatalf("a took b for gone while it could not hear itself either: %v", got)
	}
	// A node starting now sees a (announcing) but not b's old record. Its
	// clock is its own, stopped a TTL and a second ahead of the wall's, so
	// that the bucket's records, as old as the server says, are older
	// than the TTL to it.
	late, err := OpenMembers(ctx, c.JS, cfg, "late")
	if err != nil {
		t.Fatal(err)
	}
	lateNow := time.Now().Add(ttl + time.Second)
	late.ttl, late.now = ttl, func() time.Time { return lateNow }
	go late.Run(ctx)
	testutil.WaitFor(t, 5*time.Second, func() error {
		if !late.Synced() {
			return fmt.Errorf("not synced")
		}
		return nil
	})
	if got := names(late); !slices.Equal(got, []string{"late"}) {
		t.Fatalf("late takes the bucket's old records for live: %v", got)
	}
	announce(a)
	sees(t, late, 5*time.Second, "a", "late")
}

// beat is a member's record as the watch delivers it.
type beat struct {
	node    string
	created time.Time
}

func (b beat) Bucket() string                  { return MembersBucket }
func (b beat) Key() string                     { return memberKey(b.node) }
func (b beat) Value() []byte                   { return fmt.Appendf(nil, `{"node":%q,"held":[],"ready":[]}`, b.node) }
func (b beat) Revision() uint64                { return 1 }
func (b beat) Created() time.Time              { return b.created }
func (b beat) Delta() uint64                   { return 0 }
func (b beat) Operation() jetstream.KeyValueOp { return jetstream.KeyValuePut }

// TestMembersAfterBucketSilence: when the members bucket goes silent (its
// stream leader was on a node killed with SIGKILL, and a new one is being
// elected), nobody's beat is heard, this node's own included. When the
// bucket answers again, this node's own record may come back before the
// others' next beats: they must not be taken for gone for a silence that
// was the bucket's (in a CI run, n1 saw 2 of 4 live nodes, took over a
// shard of a node it could not hear, and handed it back a beat later).
// Each member of the last trusted view has a TTL from the bucket's return
// to be heard again; one that is not (the node killed) is gone after it,
// and a member gone before the silence does not come back. On a clock the
// test turns, record by record as the watch would deliver them.
func TestMembersAfterBucketSilence(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	ms := &Members{self: "a", ttl: MemberTTL, stale: staleView, now: func() time.Time { return now }, seen: map[string]seenMember{}, changed: make(chan struct{}), synced: true}
	put := func(nodes ...string) {
		for _, n := range nodes {
			ms.apply(beat{n, now}, false)
		}
	}
	live := func(want ...string) {
		t.Helper()
		if got := names(ms); !slices.Equal(got, want) {
			t.Fatalf("at +%v: live %v, want %v", now.Sub(time.Unix(1_800_000_000, 0)), got, want)
		}
	}
	step := func(d time.Duration) { now = now.Add(d) }

	put("a", "b", "c", "d", "e")
	live("a", "b", "c", "d", "e")
	// e is killed; the others beat on until e's TTL has passed.
	for range 6 {
		step(time.Second)
		put("a", "b", "c", "d")
	}
	live("a", "b", "c", "d")
	// The bucket goes silent for 8 s: nobody is taken for gone meanwhile.
	for range 8 {
		step(time.Second)
		live("a", "b", "c", "d")
	}
	// It answers again: a's own record first, then b's; c and d are
	// still on their way.
	put("a")
	live("a", "b", "c", "d")
	step(300 * time.Millisecond)
	put("b")
	live("a", "b", "c", "d")
	// d beats again; c does not (it died during the silence): c is gone
	// once a TTL has passed since the bucket's return, not before.
	step(700 * time.Millisecond)
	put("a", "b", "d")
	for range 4 {
		step(time.Second)
		put("a", "b", "d")
		live("a", "b", "c", "d")
	}
	step(time.Second + time.Millisecond)
	put("a", "b", "d")
	live("a", "b", "d")
}
