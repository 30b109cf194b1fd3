package shard

import (
	"fmt"
	"slices"
	"sync"
)

// Table holds one T per shard stream of a store and places sessions
// on them by the store's shard map; it grows when the map does (Grow).
// The router over the shards' logs (Sharded), the archive (Archive)
// and the read model (store.Set) are each one, so that they check and grow
// alike. Its slice is replaced, never written in place: All hands it out.
type Table[T any] struct {
	mu    sync.RWMutex
	m     Map
	items []T
}

// NewTable places sessions by m over items, one per shard stream.
func NewTable[T any](m Map, items []T) (*Table[T], error) {
	if len(items) != m.Streams() {
		return nil, fmt.Errorf("shard map %s has %d streams, not %d", m, m.Streams(), len(items))
	}
	return &Table[T]{m: m, items: slices.Clone(items)}, nil
}

// Grow changes the map to next, which must extend the current one
// (Extends), with one more item per stream it adds.
func (t *Table[T]) Grow(next Map, more []T) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := Extends(t.m, next); err != nil {
		return err
	}
	if len(t.items)+len(more) != next.Streams() {
		return fmt.Errorf("shard map %s has %d streams: %d more than %d, not %d", next, next.Streams(), next.Streams()-len(t.items), len(t.items), len(more))
	}
	t.m, t.items = next, append(slices.Clip(t.items), more...)
	return nil
}

// Map is the map the table places sessions by now.
func (t *Table[T]) Map() Map {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.m
}

// All is every shard's item, by shard; not to be written.
func (t *Table[T]) All() []T {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.items
}

// Route is session sid's shard and its item.
func (t *Table[T]) Route(sid string) (T, int) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	k := t.m.Of(sid)
	return t.items[k], k
}

// Replace puts item in shard k's place and returns the one it replaces.
func (t *Table[T]) Replace(k int, item T) (T, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var old T
	if k < 0 || k >= len(t.items) {
		return old, fmt.Errorf("shard %d: the map %s has %d streams", k, t.m, len(t.items))
	}
	items := slices.Clone(t.items) // All's callers keep the old slice
	old, items[k] = items[k], item
	t.items = items
	return old, nil
}
