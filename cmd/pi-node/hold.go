package main

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/store"
)

// holder runs this node's share of the shards (--hold H below the node
// count): the live pi-nodes announce themselves in the members bucket,
// each shard is held by the H of highest rendezvous weight
// (shard.Holders), and this node follows only the shards it is one of
// those for. A shard it takes over is served — forwarded requests answered,
// its reads trusted by /readyz — once its Store has caught up (snapshot
// and tail); a shard it no longer holds is handed back once every one of
// its new holders serves it, so that it is never held by fewer than it
// was meant to be meanwhile.
type holder struct {
	m       *Main
	members *jetstream.Members
	hold    int
	log     session.Log
	logger  *slog.Logger

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
func (h *holder) Shard(sid string) int { return h.m.stores.Shard(sid) }

// Serves reports whether this node serves shard k (api.Holding).
func (h *holder) Serves(k int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.serving[k]
}

// held and ready are the shards this node follows and serves, sorted.
func (h *holder) heldReady() (held, ready []int) {
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

// servedShards is the shards this node serves, sorted (what its archive
// passes cover).
func (h *holder) servedShards() []int {
	_, ready := h.heldReady()
	return ready
}

// names is the members' names.
func names(live []jetstream.Member) []string {
	out := make([]string, len(live))
	for i, mb := range live {
		out[i] = mb.Node
	}
	return out
}

// wanted is which of n shards the members called names assign to this node.
func (h *holder) wanted(names []string, n int) map[int]bool {
	out := map[int]bool{}
	for k := range n {
		if slices.Contains(shard.Holders(k, names, h.hold), h.m.name) {
			out[k] = true
		}
	}
	return out
}

// initial is the Stores a starting node opens: its share as the members it
// can see now assign it (waiting up to a few seconds for the bucket's
// contents; a node that sees nobody else holds everything until it does).
func (h *holder) initial(ctx context.Context, feeds []feedLog) []*store.Store {
	if err := h.members.Announce(ctx, nil, nil); err != nil {
		h.logger.Warn("announcing this node", "err", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	for !h.members.Synced() && wctx.Err() == nil {
		select {
		case <-wctx.Done():
		case <-h.members.Changed():
		}
	}
	cancel()
	want := h.wanted(names(h.members.Live()), len(feeds))
	stores := make([]*store.Store, len(feeds))
	for k, feed := range feeds {
		if want[k] {
			stores[k] = h.m.newStore(k, feed, h.log, h.logger, len(want)) // the budget shared among those held
		} else {
			stores[k] = store.Unheld(feed)
		}
	}
	return stores
}

// run keeps the share current until ctx ends: it announces this node every
// beat and takes and hands back shards as the members come and go.
func (h *holder) run(ctx context.Context) {
	for k, st := range h.m.stores.All() {
		if st.Held() {
			h.take(ctx, k, st)
		}
	}
	beat := time.NewTicker(jetstream.MemberBeat)
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
			if err := h.members.Announce(actx, held, ready); err != nil && ctx.Err() == nil {
				h.logger.Debug("announcing this node", "err", err)
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
				_ = h.m.api.StopShard(k)
			}
			lctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if err := h.members.Leave(lctx); err != nil {
				h.logger.Debug("leaving the members", "err", err)
			}
			cancel()
			return
		case <-beat.C:
			due = true
		case <-h.members.Changed():
		}
	}
}

// rebalance takes the shards the members assign to this node and hands
// back those they no longer do, once their holders serve them.
func (h *holder) rebalance(ctx context.Context) {
	live := h.members.Live()
	all := h.m.stores.All()
	nodes := names(live)
	want := h.wanted(nodes, len(all))
	readyAt := map[string][]int{}
	for _, mb := range live {
		readyAt[mb.Node] = mb.Ready
	}
	logs := h.m.sharded.Logs()
	for k, st := range all {
		if k >= len(logs) {
			break // a migration adds the shard: the router gets it a moment after the Stores
		}
		switch {
		case want[k] && !st.Held():
			feed := logs[k].(*shard.Log)
			next := h.m.newStore(k, feed, h.log, h.logger, h.heldCount()+1)
			if err := next.Open(ctx); err != nil {
				h.logger.Warn("taking a shard over", "shard", k, "err", err)
				continue
			}
			if _, err := h.m.stores.Replace(k, next); err != nil {
				_ = next.Close()
				continue
			}
			h.share()
			h.logger.Info("taking a shard over", "shard", k, "members", len(live))
			h.take(ctx, k, next)
		case !want[k] && st.Held():
			others := shard.Holders(k, nodes, h.hold)
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
func (h *holder) heldCount() int {
	n := 0
	for _, st := range h.m.stores.All() {
		if st.Held() {
			n++
		}
	}
	return n
}

// share divides --memory-budget evenly among the Stores this node holds,
// as it takes shards over and hands them back: a node's budget is for its
// share, not for every shard of the store.
func (h *holder) share() {
	budget := h.m.Config.MemoryBudget
	n := h.heldCount()
	if budget <= 0 || n == 0 {
		return
	}
	for k, st := range h.m.stores.All() {
		if !st.Held() {
			continue
		}
		if err := st.SetMemoryBudget(max(budget/int64(n), 1)); err != nil {
			h.logger.Warn("sharing the memory budget", "shard", k, "err", err)
		}
	}
}

// take serves shard k once st has caught up.
func (h *holder) take(ctx context.Context, k int, st *store.Store) {
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
		current := tctx.Err() == nil && h.m.stores.All()[k] == st
		h.mu.Unlock()
		if err == nil && current {
			if err = h.m.api.ServeShard(k); err == nil {
				// Before the mark (what this node announces as ready, and
				// its old holders hand back on): see handBack.
				h.logger.Info("serving a shard", "shard", k, "caughtUpIn", time.Since(start).Round(time.Millisecond))
				h.mu.Lock()
				h.serving[k] = true
				h.mu.Unlock()
			}
		}
		h.switching.Unlock()
		if err != nil && tctx.Err() == nil {
			h.logger.Warn("serving a shard", "shard", k, "err", err)
		}
	})
}

// handBack stops holding shard k: forwarded requests go to its other
// holders, its Store gives way to an Unheld one and closes (writing its
// snapshot, for the next time this node takes it).
func (h *holder) handBack(k int, st *store.Store) {
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
		h.logger.Info("handing a shard back", "shard", k)
	}
	_ = h.m.api.StopShard(k)
	h.switching.Unlock()
	feed := h.m.sharded.Logs()[k].(*shard.Log) // k was routed to already: it is in the router
	if _, err := h.m.stores.Replace(k, store.Unheld(feed)); err != nil {
		return
	}
	h.share()
	h.wg.Go(func() {
		if err := st.Close(); err != nil {
			h.logger.Warn("closing a handed-back shard's Store", "shard", k, "err", err)
		}
	})
}
