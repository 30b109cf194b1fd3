package archive_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/archive"
	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/jetstream/embedded/embeddedtest"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// On a three-node cluster (R3): sessions written through one node and
// archived by another disappear from every node's Store, with their
// cursors, and leave no subject behind in the stream; restored through the
// third, they are back everywhere, byte for byte.
func TestClusterArchiveAndRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	urls := embeddedtest.URLs(embeddedtest.RunCluster(t, 3, nil))
	var nodes []*fixture
	for i, u := range urls {
		nodes = append(nodes, newNode(t, fmt.Sprintf("n%d", i+1), 3, []string{u}, func(*jetstream.ArchiveConfig) {}))
	}
	n1, n2, n3 := nodes[0], nodes[1], nodes[2]
	ctx := context.Background()
	want := map[string]string{}
	for range 3 {
		s := n1.create(2)
		want[s.SessionID] = n1.export(n1.store, s.SessionID)
	}
	var withCursor string
	for sid := range want {
		withCursor = sid
		if _, err := n1.svc.Cursors.Put(ctx, sid, "agent", session.Cursor{LeafID: "", UpdatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		break
	}

	n2.clock.advance(time.Hour)
	n2.wait(n2.store, n1.logEnd())
	res, err := n2.a.Pass(ctx, time.Minute)
	if err != nil || res.Archived != 3 {
		t.Fatalf("pass on n2: %+v, %v", res, err)
	}
	end := n1.logEnd()
	for _, n := range nodes {
		n.wait(n.store, end)
		for sid := range want {
			if n.store.Has(sid) {
				t.Errorf("a node still has %s", sid)
			}
		}
	}
	if cs, err := n1.svc.Cursors.List(ctx, withCursor); err != nil || len(cs) != 0 {
		t.Errorf("cursors of an archived session: %v, %d left", err, len(cs))
	}
	stream, err := n1.conn.JS.Stream(ctx, n1.cfg.Stream)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := stream.Info(ctx); err != nil || info.State.NumSubjects != 1 {
		t.Errorf("stream subjects after archiving every session: %v %d, want 1 (the purge notices')", err, info.State.NumSubjects)
	}

	n3.clock.advance(time.Hour)
	for sid := range want {
		n3.restore(sid)
	}
	end = n1.logEnd()
	for i, n := range nodes {
		n.wait(n.store, end)
		for sid, w := range want {
			if got := n.export(n.store, sid); got != w {
				t.Errorf("n%d: %s restored as %q, want %q", i+1, sid, got, w)
			}
		}
	}
}

// One node at a time holds the archiver's lease: a pass elsewhere is
// refused until it is given up or expires; of nodes racing for a free
// lease exactly one gets it.
func TestLease(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if err := f.arch.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if l, err := f.arch.Lease(ctx, "n2", time.Minute); err != nil || l.Holder != "n2" {
		t.Fatalf("lease for n2: %+v %v", l, err)
	}
	_, err := f.a.Pass(ctx, 0)
	var held *archive.LeaseHeldError
	if !errors.As(err, &held) || held.Lease.Holder != "n2" || !errors.Is(err, wire.ErrConflict) {
		t.Fatalf("pass while n2 holds the lease: %v", err)
	}
	if err := f.arch.Unlease(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if l, _ := f.arch.Lease(ctx, "n3", time.Minute); l.Holder != "n2" {
		t.Errorf("n1 gave up n2's lease: %+v", l)
	}
	if err := f.arch.Unlease(ctx, "n2"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.Pass(ctx, 0); err != nil {
		t.Fatalf("pass after n2 gave the lease up: %v", err)
	}

	l, err := f.arch.Lease(ctx, "n2", 50*time.Millisecond)
	if err != nil || l.Holder != "n2" {
		t.Fatalf("short lease: %+v %v", l, err)
	}
	testutil.WaitFor(t, 5*time.Second, func() error {
		if !time.Now().After(l.Until) {
			return fmt.Errorf("the lease to expire at %v", l.Until)
		}
		return nil
	})
	if _, err := f.a.Pass(ctx, 0); err != nil {
		t.Fatalf("pass after n2's lease expired: %v", err)
	}

	var mu sync.Mutex
	winners := map[string]bool{}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			name := fmt.Sprintf("racer%d", i)
			l, err := f.arch.Lease(ctx, name, time.Minute)
			if err != nil && !errors.Is(err, wire.ErrConflict) {
				t.Errorf("%s: %v", name, err)
				return
			}
			mu.Lock()
			if l.Holder == name {
				winners[name] = true
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(winners) != 1 {
		t.Errorf("%d nodes got the lease at once: %v", len(winners), winners)
	}
}

// leaseCounter counts the lease calls that took or renewed the lease, and
// holds the pass's Put until the test releases it (after the lease was
// renewed twice and another node was refused), so that a pass outlives its
// lease's first term.
type leaseCounter struct {
	session.Archive
	mu      sync.Mutex
	leases  int
	renewed chan struct{} // closed once the lease was renewed twice
	release chan struct{} // closed by the test: Put goes on
}

func (b *leaseCounter) Lease(ctx context.Context, holder string, ttl time.Duration) (session.Lease, error) {
	l, err := b.Archive.Lease(ctx, holder, ttl)
	if err != nil || l.Holder != holder {
		// A call that failed renewed nothing (a timeout on a loaded
		// machine: CI, n2 then found the term it counted on run out).
		return l, err
	}
	b.mu.Lock()
	// After the renewal is stored, not before: the test then asks for the
	// lease as another node within a fresh term (under a heavy load, one
	// asked before found the previous term run out: CI, n2 got the lease).
	if b.leases++; b.leases == 3 {
		close(b.renewed)
	}
	b.mu.Unlock()
	return l, err
}

func (b *leaseCounter) Put(ctx context.Context, c wire.ArchiveCopy, data []byte) error {
	// Held until the test has asked for the lease as another node: a
	// pass let go at the renewal could finish and give the lease up
	// before that request (CI: n2 then got it).
	select {
	case <-b.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return b.Archive.Put(ctx, c, data)
}

// A pass longer than the lease renews it: it keeps the lease (another node
// is refused all along) and completes.
func TestLeaseRenewedDuringPass(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := f.create(1)
	lc := &leaseCounter{Archive: f.arch, renewed: make(chan struct{}), release: make(chan struct{})}
	// The backend stamps leases with the real clock: a term long enough
	// that no stall of a loaded machine outlasts it between a renewal and
	// the other node's request (renewed every third of it).
	a := archive.New(f.store, f.log, lc, archive.Options{Node: "n1", Now: f.clock.Now, LeaseTTL: testutil.Scale(6 * time.Second)})
	f.clock.advance(time.Hour)
	done := make(chan error, 1)
	go func() {
		res, err := a.Pass(ctx, time.Minute)
		if err == nil && res.Archived != 1 {
			err = fmt.Errorf("pass archived %d of 1", res.Archived)
		}
		done <- err
	}()
	<-lc.renewed
	if l, err := f.arch.Lease(ctx, "n2", time.Minute); err != nil || l.Holder != "n1" {
		t.Errorf("n2 during n1's pass: %+v, %v", l, err)
	}
	close(lc.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	f.wait(f.store, f.logEnd())
	if f.store.Has(s.SessionID) {
		t.Error("the session was not archived")
	}
}
