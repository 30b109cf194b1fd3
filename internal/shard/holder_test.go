package shard_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// fakeStore is a Store that is caught up at once.
type fakeStore struct {
	held   bool
	mu     sync.Mutex
	closed bool
}

func (s *fakeStore) Held() bool                         { return s.held }
func (s *fakeStore) Open(context.Context) error         { return nil }
func (s *fakeStore) SetMemoryBudget(int64) error        { return nil }
func (s *fakeStore) WaitCaughtUp(context.Context) error { return nil }
func (s *fakeStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

type fakeStores struct {
	mu     sync.Mutex
	stores []*fakeStore
}

func (s *fakeStores) All() []*fakeStore {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.stores)
}

func (s *fakeStores) Replace(k int, st *fakeStore) (*fakeStore, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.stores[k]
	s.stores[k] = st
	return old, nil
}

func (s *fakeStores) Shard(string) int { return 0 }

// fakeMembers is this node, self, and the others the test sets.
type fakeMembers struct {
	self    string
	mu      sync.Mutex
	others  []shard.Member
	ready   []int
	changed chan struct{}
	left    bool
}

func (m *fakeMembers) Announce(_ context.Context, _, ready []int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ready = ready
	return nil
}

func (m *fakeMembers) Live() []shard.Member {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append(slices.Clone(m.others), shard.Member{Node: m.self, Ready: m.ready})
}

func (m *fakeMembers) Synced() bool { return true }

func (m *fakeMembers) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

func (m *fakeMembers) Leave(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.left = true
	return nil
}

func (m *fakeMembers) set(others ...shard.Member) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.others = others
	close(m.changed)
	m.changed = make(chan struct{})
}

func (m *fakeMembers) announcedReady() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ready
}

type fakeServing struct {
	mu      sync.Mutex
	serving map[int]bool
}

func (s *fakeServing) ServeShard(k int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serving[k] = true
	return nil
}

func (s *fakeServing) StopShard(k int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.serving, k)
	return nil
}

func (s *fakeServing) served() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for k := range s.serving {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// A holder serves the shards the members assign it, takes over a departed
// node's, and hands them back once their holder serves them again.
func TestHolder(t *testing.T) {
	const n = 6
	logs, _ := newSharded(n)
	nodes := []string{"a", "b"}
	var mine, theirs []int
	for k := range n {
		if shard.Holders(k, nodes, 1)[0] == "a" {
			mine = append(mine, k)
		} else {
			theirs = append(theirs, k)
		}
	}
	if len(mine) == 0 || len(theirs) == 0 {
		t.Fatalf("the test wants both nodes to hold a shard: a holds %v, b %v", mine, theirs)
	}
	members := &fakeMembers{self: "a", others: []shard.Member{{Node: "b", Ready: theirs}}, changed: make(chan struct{})}
	serving := &fakeServing{serving: map[int]bool{}}
	h := &shard.Holder[*fakeStore]{Node: "a", Hold: 1, Members: members, Logs: logs, Serving: serving,
		NewStore: func(int, *shard.Log, int) *fakeStore { return &fakeStore{held: true} },
		Unheld:   func(*shard.Log) *fakeStore { return &fakeStore{} },
		Beat:     10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
	stores := &fakeStores{stores: h.Initial(context.Background())}
	h.Stores = stores
	for k, st := range stores.All() {
		if st.Held() != slices.Contains(mine, k) {
			t.Fatalf("shard %d held %v at the start; a holds %v", k, st.Held(), mine)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.Run(ctx)
	}()
	servesExactly := func(want []int) func() error {
		return func() error {
			got := serving.served()
			if !slices.Equal(got, want) || !slices.Equal(h.Served(), want) || !slices.Equal(members.announcedReady(), want) {
				return fmt.Errorf("serving %v (marked %v, announced %v), want %v", got, h.Served(), members.announcedReady(), want)
			}
			return nil
		}
	}
	testutil.WaitFor(t, 5*time.Second, servesExactly(mine))

	members.set() // b is gone: a holds everything
	all := slices.Sorted(slices.Values(append(slices.Clone(mine), theirs...)))
	testutil.WaitFor(t, 5*time.Second, servesExactly(all))
	taken := stores.All()

	members.set(shard.Member{Node: "b", Ready: theirs}) // b is back, serving its shards
	testutil.WaitFor(t, 5*time.Second, servesExactly(mine))
	for _, k := range theirs {
		if stores.All()[k].Held() {
			t.Fatalf("shard %d still held after b serves it", k)
		}
		testutil.WaitFor(t, 5*time.Second, func() error {
			taken[k].mu.Lock()
			defer taken[k].mu.Unlock()
			if !taken[k].closed {
				return fmt.Errorf("shard %d's handed-back Store not closed", k)
			}
			return nil
		})
	}

	cancel()
	<-done
	if got := serving.served(); len(got) != 0 {
		t.Fatalf("still serving %v after Run ended", got)
	}
	members.mu.Lock()
	defer members.mu.Unlock()
	if !members.left {
		t.Fatal("the node did not leave the members")
	}
}
