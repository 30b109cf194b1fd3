package shard

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Member is one node as it announces itself to the others: its name and
// the shards it holds.
type Member struct {
	Node string `json:"node"`
	// Ready lists the shards the node serves from memory, caught up: the
	// ones whose forwarded requests it answers.
	Ready []int `json:"ready"`
	// Held lists the shards the node follows, ready or still catching up.
	Held []int `json:"held"`
}

// Members is the cluster's live nodes as they announce themselves
// (jetstream.Members): declared here, so that the adapter can import this
// package for the map.
type Members interface {
	// Announce tells the others what this node holds and serves.
	Announce(ctx context.Context, held, ready []int) error
	// Live is the nodes announced lately, this one among them.
	Live() []Member
	// Synced reports whether Live has seen everything announced so far.
	Synced() bool
	// Changed is closed at the next change of Live.
	Changed() <-chan struct{}
	// Leave withdraws this node at once.
	Leave(ctx context.Context) error
}

// Store is what stands in a shard's place in a node: a store.Store that
// follows the shard (Held), or one that follows nothing and reads the log.
type Store interface {
	Held() bool
	Open(ctx context.Context) error
	Close() error
	SetMemoryBudget(bytes int64) error
	WaitCaughtUp(ctx context.Context) error
}

// Stores is the node's Store per shard stream (store.Set).
type Stores[S Store] interface {
	All() []S
	Replace(k int, st S) (S, error)
	Shard(sid string) int
}

// Serving starts and stops answering the requests forwarded to a shard's
// holders (api.Server).
type Serving interface {
	ServeShard(k int) error
	StopShard(k int) error
}

// Holder runs this node's share of the shards (--hold H below the node
// count): the live nodes announce themselves (Members), each shard is held
// by the H of highest rendezvous weight (Holders), and this node follows
// only the shards it is one of those for. A shard it takes over is served
// — forwarded requests answered, its reads trusted by /readyz — once its
// Store has caught up (snapshot and tail); a shard it no longer holds is
// handed back once every one of its new holders serves it, so that it is
// never held by fewer than it was meant to be meanwhile.
//
// Set the fields, then call Initial for the Stores to start with; Stores
// before the node answers requests (Shard, Serves), Serving before Run.
type Holder[S Store] struct {
	Node    string // this node's name among the Members
	Hold    int    // how many nodes hold each shard
	Members Members
	Logs    *Sharded // the router: shard k's Log is what its Store follows
	Stores  Stores[S]
	Serving Serving
	// NewStore makes the Store that holds shard k, following feed, with
	// 1/n of the node's memory budget; Unheld, the one that stands in
	// for a shard this node does not hold.
	NewStore func(k int, feed *Log, n int) S
	Unheld   func(feed *Log) S
	Budget   int64         // the node's memory budget (--memory-budget), shared among the Stores it holds
	Beat     time.Duration // how often it announces itself (jetstream.MemberBeat)
	Logger   *slog.Logger

	// switching orders starting and stopping to serve a shard (the
	// subscription and the serving mark together); mu alone guards the
	// marks, which every request reads.
	switching sync.Mutex
	mu        sync.Mutex
	serving   map[int]bool               // shards whose Store caught up and that answer forwarded requests
	taking    map[int]context.CancelFunc // shards whose Store is catching up
	wg        sync.WaitGroup
}

// Shard is session sid's shard (api.Holding).
func (h *Holder[S]) Shard(sid string) int { return h.Stores.Shard(sid) }

// Serves reports whether this node serves shard k (api.Holding).
func (h *Holder[S]) Serves(k int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.serving[k]
}

// held and ready are the shards this node follows and serves, sorted.
func (h *Holder[S]) heldReady() (held, ready []int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k := range h.serving {
		held, ready = append(held, k), append(ready, k)
	}
	for k := range h.taking {
		held = append(held, k)
	}
	slices.Sort(held)
	slices.Sort(ready)
	return held, ready
}

// Served is the shards this node serves, sorted (what its archive passes
// cover).
func (h *Holder[S]) Served() []int {
	_, ready := h.heldReady()
	return ready
}

// names is the members' names.
func names(live []Member) []string {
	out := make([]string, len(live))
	for i, mb := range live {
		out[i] = mb.Node
	}
	return out
}

// wanted is which of n shards the members called names assign to this node.
func (h *Holder[S]) wanted(names []string, n int) map[int]bool {
	out := map[int]bool{}
	for k := range n {
		if slices.Contains(Holders(k, names, h.Hold), h.Node) {
			out[k] = true
		}
	}
	return out
}

// feed is shard k's Log in the router, which its Store follows.
func (h *Holder[S]) feed(k int) *Log { return h.Logs.Logs()[k].(*Log) }

// Initial is the Stores a starting node opens, one per shard stream of
// Logs: its share as the members it can see now assign it (waiting up to a
// few seconds for their announcements; a node that sees nobody else holds
// everything until it does).
func (h *Holder[S]) Initial(ctx context.Context) []S {
	h.serving, h.taking = map[int]bool{}, map[int]context.CancelFunc{}
	if err := h.Members.Announce(ctx, nil, nil); err != nil {
		h.Logger.Warn("announcing this node", "err", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	for !h.Members.Synced() && wctx.Err() == nil {
		select {
		case <-wctx.Done():
		case <-h.Members.Changed():
		}
	}
	cancel()
	n := len(h.Logs.Logs())
	want := h.wanted(names(h.Members.Live()), n)
	stores := make([]S, n)
	for k := range n {
		if want[k] {
			stores[k] = h.NewStore(k, h.feed(k), len(want)) // the budget shared among those held
		} else {
			stores[k] = h.Unheld(h.feed(k))
		}
	}
	return stores
}

// Run keeps the share current until ctx ends: it announces this node every
// beat and takes and hands back shards as the members come and go.
func (h *Holder[S]) Run(ctx context.Context) {
	for k, st := range h.Stores.All() {
		if st.Held() {
			h.take(ctx, k, st)
		}
	}
	beat := time.NewTicker(h.Beat)
	defer beat.Stop()
	due := true
	var lastHeld, lastReady []int
	for {
		// On the beat, or at once when what this node holds changed; not
		// on every change of the others' (each announcement would set
		// off everyone else's).
		held, ready := h.heldReady()
		if due || !slices.Equal(held, lastHeld) || !slices.Equal(ready, lastReady) {
			actx, cancel := context.WithTimeout(ctx, 2*time.Second)
			if err := h.Members.Announce(actx, held, ready); err != nil && ctx.Err() == nil {
				h.Logger.Debug("announcing this node", "err", err)
			}
			cancel()
			lastHeld, lastReady, due = held, ready, false
		}
		h.rebalance(ctx)
		select {
		case <-ctx.Done():
			h.switching.Lock() // a take that checked before ctx ended has marked its shard
			h.mu.Lock()
			for _, stop := range h.taking {
				stop()
			}
			serving := h.serving
			h.serving = map[int]bool{}
			h.mu.Unlock()
			h.switching.Unlock()
			h.wg.Wait()
			// Stopping: the others stop sending here (drained, so that no
			// request routed here already waits out its timeout).
			for k := range serving {
				_ = h.Serving.StopShard(k)
			}
			lctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if err := h.Members.Leave(lctx); err != nil {
				h.Logger.Debug("leaving the members", "err", err)
			}
			cancel()
			return
		case <-beat.C:
			due = true
		case <-h.Members.Changed():
		}
	}
}

// rebalance takes the shards the members assign to this node and hands
// back those they no longer do, once their holders serve them.
func (h *Holder[S]) rebalance(ctx context.Context) {
	live := h.Members.Live()
	all := h.Stores.All()
	nodes := names(live)
	want := h.wanted(nodes, len(all))
	readyAt := map[string][]int{}
	for _, mb := range live {
		readyAt[mb.Node] = mb.Ready
	}
	logs := h.Logs.Logs()
	for k, st := range all {
		if k >= len(logs) {
			break // a migration adds the shard: the router gets it a moment after the Stores
		}
		switch {
		case want[k] && !st.Held():
			next := h.NewStore(k, logs[k].(*Log), h.heldCount()+1)
			if err := next.Open(ctx); err != nil {
				h.Logger.Warn("taking a shard over", "shard", k, "err", err)
				continue
			}
			if _, err := h.Stores.Replace(k, next); err != nil {
				_ = next.Close()
				continue
			}
			h.share()
			h.Logger.Info("taking a shard over", "shard", k, "members", len(live))
			h.take(ctx, k, next)
		case !want[k] && st.Held():
			others := Holders(k, nodes, h.Hold)
			handed := true
			for _, n := range others {
				handed = handed && slices.Contains(readyAt[n], k)
			}
			if handed {
				h.handBack(k, st)
			}
		}
	}
}

// heldCount is how many shards this node holds (serving or catching up).
func (h *Holder[S]) heldCount() int {
	n := 0
	for _, st := range h.Stores.All() {
		if st.Held() {
			n++
		}
	}
	return n
}

// share divides the memory budget evenly among the Stores this node
// holds, as it takes shards over and hands them back: a node's budget is
// for its share, not for every shard of the store.
func (h *Holder[S]) share() {
	n := h.heldCount()
	if h.Budget <= 0 || n == 0 {
		return
	}
	for k, st := range h.Stores.All() {
		if !st.Held() {
			continue
		}
		if err := st.SetMemoryBudget(max(h.Budget/int64(n), 1)); err != nil {
			h.Logger.Warn("sharing the memory budget", "shard", k, "err", err)
		}
	}
}

// take serves shard k once st has caught up.
func (h *Holder[S]) take(ctx context.Context, k int, st S) {
	tctx, stop := context.WithCancel(ctx)
	h.mu.Lock()
	h.taking[k] = stop
	h.mu.Unlock()
	h.wg.Go(func() {
		defer stop()
		start := time.Now()
		err := st.WaitCaughtUp(tctx)
		// Serving starts under switching, and only while the take is
		// still wanted: a hand-back between the catch-up and here (which
		// cancels tctx) must not be followed by a subscription nobody
		// stops.
		h.switching.Lock()
		h.mu.Lock()
		delete(h.taking, k)
		current := tctx.Err() == nil && Store(h.Stores.All()[k]) == Store(st)
		h.mu.Unlock()
		if err == nil && current {
			if err = h.Serving.ServeShard(k); err == nil {
				// Before the mark (what this node announces as ready, and
				// its old holders hand back on): see handBack.
				h.Logger.Info("serving a shard", "shard", k, "caughtUpIn", time.Since(start).Round(time.Millisecond))
				h.mu.Lock()
				h.serving[k] = true
				h.mu.Unlock()
			}
		}
		h.switching.Unlock()
		if err != nil && tctx.Err() == nil {
			h.Logger.Warn("serving a shard", "shard", k, "err", err)
		}
	})
}

// handBack stops holding shard k: forwarded requests go to its other
// holders, its Store gives way to an Unheld one and closes (writing its
// snapshot, for the next time this node takes it).
func (h *Holder[S]) handBack(k int, st S) {
	// Logged before it stops serving: TestHoldShare reads the logs as the
	// history of who served what, and a shard must never be seen served
	// by fewer than its holders.
	h.switching.Lock()
	h.mu.Lock()
	was := h.serving[k]
	if stop := h.taking[k]; stop != nil {
		stop()
	}
	delete(h.serving, k)
	h.mu.Unlock()
	if was { // before StopShard, which ends its answering forwarded requests
		h.Logger.Info("handing a shard back", "shard", k)
	}
	_ = h.Serving.StopShard(k)
	h.switching.Unlock()
	// k was routed to already: it is in the router.
	if _, err := h.Stores.Replace(k, h.Unheld(h.feed(k))); err != nil {
		return
	}
	h.share()
	h.wg.Go(func() {
		if err := st.Close(); err != nil {
			h.Logger.Warn("closing a handed-back shard's Store", "shard", k, "err", err)
		}
	})
}
