package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Membership defaults: a node announces itself every MemberBeat and is
// gone for the others once MemberTTL passed without one (a kill -9; a node
// that stops cleanly withdraws at once).
const (
	MembersBucket = "PI_NODES"
	MemberBeat    = time.Second
	MemberTTL     = 5 * time.Second
)

// Members is the cluster's pi-nodes as they announce themselves in a KV
// bucket (PI_NODES, in memory, history 1): each node puts its
// shard.Member under its name every beat, and every node watches the
// bucket. Whether a member is live is judged by when this node last heard
// from it, so clocks need not agree.
type Members struct {
	kv    jetstream.KeyValue
	log   *slog.Logger
	self  string
	ttl   time.Duration
	stale time.Duration // staleView
	now   func() time.Time

	mu      sync.Mutex
	seen    map[string]seenMember // by key
	changed chan struct{}         // closed and replaced when a member comes, goes or changes
	synced  bool                  // the watch delivered the bucket's contents
	// selfAt is when the watch last delivered this node's own record: the
	// proof that the bucket and the watch work. Without it for longer
	// than staleView, silence from the others proves nothing (the
	// bucket's stream is electing a leader, the watch has stalled), and
	// Live answers with the last view it trusted.
	selfAt   time.Time
	lastGood []shard.Member
	// resumed is when this node's own record came back after a silence
	// longer than staleView (the bucket elected a leader, the watch was
	// restarted). The others' beats could not be heard meanwhile either,
	// and theirs come back after ours, each on its own beat: the members
	// of the last trusted view get a TTL from then to be heard again,
	// instead of being taken for gone (and their shards taken over) by
	// whoever's record came back first.
	resumed time.Time
}

// staleView is how long Live trusts a view without this node's own record
// coming back through the watch: three beats.
const staleView = 3 * MemberBeat

type seenMember struct {
	m  shard.Member
	at time.Time
}

// OpenMembers creates the members bucket if needed (replicas as cfg's) and
// returns the membership as node self sees it; Run keeps it current.
func OpenMembers(ctx context.Context, js jetstream.JetStream, cfg Config, self string) (*Members, error) {
	if self == "" {
		return nil, errors.New("members: a node name is required")
	}
	bc := jetstream.KeyValueConfig{Bucket: MembersBucket, History: 1, Storage: jetstream.MemoryStorage,
		Replicas: max(cfg.Replicas, 1), TTL: time.Minute}
	var kv jetstream.KeyValue
	err := retryProvision(ctx, logger(cfg), "bucket "+bc.Bucket, func(ctx context.Context) error {
		var err error
		kv, err = js.CreateOrUpdateKeyValue(ctx, bc)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &Members{kv: kv, log: logger(cfg), self: self, ttl: MemberTTL, stale: staleView, now: time.Now, seen: map[string]seenMember{}, changed: make(chan struct{})}, nil
}

var _ shard.Members = (*Members)(nil) // what a shard.Holder reads

// memberKey is a node's key: its name with what a KV key may not hold
// replaced (the shard.Member inside keeps the name as it is).
func memberKey(node string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, node)
}

// Announce puts this node's record: it is live, holds held and serves ready.
func (ms *Members) Announce(ctx context.Context, held, ready []int) error {
	b, err := json.Marshal(shard.Member{Node: ms.self, Held: nonNil(held), Ready: nonNil(ready)})
	if err != nil {
		return err
	}
	if _, err := ms.kv.Put(ctx, memberKey(ms.self), b); err != nil {
		return fmt.Errorf("announce %s in %s: %w", ms.self, MembersBucket, translate(err, wire.ErrConflict))
	}
	return nil
}

func nonNil(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}

// Leave withdraws this node's record, so that the others reassign its
// shards now rather than after MemberTTL.
func (ms *Members) Leave(ctx context.Context) error {
	err := ms.kv.Delete(ctx, memberKey(ms.self))
	if err != nil {
		return fmt.Errorf("leave %s: %w", MembersBucket, translate(err, wire.ErrConflict))
	}
	return nil
}

// Run watches the bucket until ctx ends, restarting the watch when it
// breaks; a member unheard of for the TTL drops out of Live on its own.
func (ms *Members) Run(ctx context.Context) {
	for ctx.Err() == nil {
		err := ms.watch(ctx)
		if ctx.Err() != nil {
			return
		}
		ms.log.Debug("members watch ended; restarting", logKeyErr, err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (ms *Members) watch(ctx context.Context) error {
	w, err := ms.kv.WatchAll(ctx)
	if err != nil {
		return err
	}
	defer w.Stop()
	initial := true // until the end of the bucket's contents
	expire := time.NewTicker(ms.ttl / 4)
	defer expire.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-expire.C:
			ms.notify() // whoever depends on Live looks again: someone may have expired
			ms.mu.Lock()
			stalled := ms.synced && !ms.selfAt.IsZero() && ms.now().Sub(ms.selfAt) > 2*ms.stale
			ms.mu.Unlock()
			if stalled {
				return errors.New("the watch has not delivered this node's own record for " + (2 * ms.stale).String())
			}
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("watch closed")
			}
			if e == nil {
				initial = false
				ms.mu.Lock()
				ms.synced = true
				ms.mu.Unlock()
				ms.notify()
				continue
			}
			ms.apply(e, initial)
		}
	}
}

// apply records one update of the bucket.
func (ms *Members) apply(e jetstream.KeyValueEntry, initial bool) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if e.Operation() != jetstream.KeyValuePut {
		delete(ms.seen, e.Key())
	} else {
		var m shard.Member
		if json.Unmarshal(e.Value(), &m) != nil || m.Node == "" {
			return
		}
		at := ms.now()
		if initial {
			// A record the watch found in the bucket (at the start, or
			// when it restarted) is as old as the server says, not as
			// new as now: a node killed a while ago must not look live.
			if age := at.Sub(e.Created()); age > 0 {
				at = at.Add(-age)
			}
			if prev, ok := ms.seen[e.Key()]; ok && prev.at.After(at) {
				at = prev.at
			}
		}
		ms.seen[e.Key()] = seenMember{m, at}
		if m.Node == ms.self {
			now := ms.now()
			if !ms.selfAt.IsZero() && now.Sub(ms.selfAt) > ms.stale {
				ms.resumed = now
			}
			ms.selfAt = now
		}
	}
	ms.notifyLocked()
}

func (ms *Members) notify() {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.notifyLocked()
}

func (ms *Members) notifyLocked() {
	close(ms.changed)
	ms.changed = make(chan struct{})
}

// Changed is closed when the membership may have changed (and every
// quarter TTL, when someone may have expired).
func (ms *Members) Changed() <-chan struct{} {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.changed
}

// Synced reports whether the watch has delivered the bucket's contents:
// before, Live knows only this node.
func (ms *Members) Synced() bool {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.synced
}

// Live is every member heard from within the TTL, this node always among
// them, by name. After a silence of the bucket, the TTL of the members it
// last trusted counts from when the bucket was heard again (resumed).
func (ms *Members) Live() []shard.Member {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	now := ms.now()
	if ms.lastGood != nil && now.Sub(ms.selfAt) > ms.stale {
		// Not hearing from ourselves either: the others' silence is the
		// bucket's, not theirs. Nobody is taken for gone meanwhile.
		return slices.Clone(ms.lastGood)
	}
	out := []shard.Member{}
	self := false
	graced := func(node string) bool {
		return !ms.resumed.IsZero() && now.Sub(ms.resumed) <= ms.ttl &&
			slices.ContainsFunc(ms.lastGood, func(m shard.Member) bool { return m.Node == node })
	}
	for _, s := range ms.seen {
		if now.Sub(s.at) <= ms.ttl || graced(s.m.Node) {
			out = append(out, s.m)
			self = self || s.m.Node == ms.self
		}
	}
	if !self {
		out = append(out, shard.Member{Node: ms.self, Held: []int{}, Ready: []int{}})
	}
	slices.SortFunc(out, func(a, b shard.Member) int { return strings.Compare(a.Node, b.Node) })
	if self && now.Sub(ms.selfAt) <= ms.stale {
		ms.lastGood = slices.Clone(out)
	}
	return out
}
