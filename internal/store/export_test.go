package store

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"time"
)

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

// DropListing rewrites the newest snapshot in dir as a version without
// previews and entry times in its index wrote it.
func DropListing(t interface{ Fatal(...any) }, dir string) {
	sf, err := openSnapshot(dir, nil)
	if err != nil || sf == nil {
		t.Fatal("no snapshot to rewrite: ", err)
	}
	defer sf.f.Close()
	b, err := os.ReadFile(sf.path)
	if err != nil {
		t.Fatal(err)
	}
	idxOff := int64(binary.LittleEndian.Uint64(b[len(b)-len(snapMagic)-12:]))
	idx := encodeCatalog(sf.identity, sf.index)
	b = append(b[:idxOff:idxOff], idx...)
	b = binary.LittleEndian.AppendUint64(b, sf.applied)
	b = binary.LittleEndian.AppendUint64(b, uint64(idxOff))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(idx, crcTable))
	b = append(b, snapMagic...)
	if err := os.WriteFile(sf.path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
