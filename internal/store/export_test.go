package store

import "time"

// SlabsInUse counts the distinct slabs loaded sessions' lines are in.
func SlabsInUse(st *Store) int {
	st.mu.RLock()
	defer st.mu.RUnlock()
	seen := map[*slab]bool{}
	for _, d := range st.docs {
		if d.slab != nil {
			seen[d.slab] = true
		}
	}
	return len(seen)
}

// SmallSlabs makes slabs hold a few sessions each, until the test ends.
func SmallSlabs(t interface{ Cleanup(func()) }) {
	size, entries := slabSize, slabEntries
	slabSize, slabEntries = 4<<10, 16
	t.Cleanup(func() { slabSize, slabEntries = size, entries })
}

// ShortIdentityTimeout makes the Store's question of its log's identity
// give up after d, until the test ends.
func ShortIdentityTimeout(t interface{ Cleanup(func()) }, d time.Duration) {
	was := identityTimeout
	identityTimeout = d
	t.Cleanup(func() { identityTimeout = was })
}
