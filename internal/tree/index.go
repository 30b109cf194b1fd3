package tree

import "hash/maphash"

// idIndex finds an entry by id: open addressing over the entries' own id
// strings, 5 bytes a slot, instead of a map[string]int32 holding a string
// header and an index per entry in groups with control bytes (about 40
// bytes an entry at its usual load; a Store holds millions). Ids are never
// removed; a repeated id points at its newest entry, as pi resolves it.
//
// Each slot has a tag, 8 bits of the id's hash, checked before the id
// itself: comparing ids means reading entries scattered over the heap, a
// cache miss each, and the tags (one array, read in order) spare nearly
// all of them, as a map's control bytes do.
type idIndex struct {
	slots []int32 // 1 + the entry's index; 0: empty
	tags  []uint8 // hash >> 56 of the id in the slot
	n     int     // ids held
}

var idSeed = maphash.MakeSeed()

// get returns the index of the entry with id.
func (x *idIndex) get(entries []Entry, id string) (int32, bool) {
	if x.n == 0 {
		return 0, false
	}
	hash := maphash.String(idSeed, id)
	tag, mask := uint8(hash>>56), uint64(len(x.slots)-1)
	for h := hash & mask; ; h = (h + 1) & mask {
		v := x.slots[h]
		if v == 0 {
			return 0, false
		}
		if x.tags[h] == tag && entries[v-1].ID == id {
			return v - 1, true
		}
	}
}

// put points id at entries[i] and returns the entry it pointed at before.
func (x *idIndex) put(entries []Entry, id string, i int32) (old int32, had bool) {
	if (x.n+1)*4 > len(x.slots)*3 {
		x.grow(entries, x.n+1)
	}
	hash := maphash.String(idSeed, id)
	tag, mask := uint8(hash>>56), uint64(len(x.slots)-1)
	for h := hash & mask; ; h = (h + 1) & mask {
		v := x.slots[h]
		if v == 0 {
			x.slots[h], x.tags[h] = i+1, tag
			x.n++
			return 0, false
		}
		if x.tags[h] == tag && entries[v-1].ID == id {
			x.slots[h] = i + 1
			return v - 1, true
		}
	}
}

// grow makes room for n ids at a load of at most 3/4.
func (x *idIndex) grow(entries []Entry, n int) {
	size := 8
	for size*3 < n*4 {
		size *= 2
	}
	if size <= len(x.slots) {
		return
	}
	old := x.slots
	x.slots, x.tags = make([]int32, size), make([]uint8, size)
	mask := uint64(size - 1)
	for _, v := range old {
		if v == 0 {
			continue
		}
		hash := maphash.String(idSeed, entries[v-1].ID)
		h := hash & mask
		for x.slots[h] != 0 {
			h = (h + 1) & mask
		}
		x.slots[h], x.tags[h] = v, uint8(hash>>56)
	}
}

// clone returns a copy with arrays of its own.
func (x idIndex) clone() idIndex {
	return idIndex{slots: append([]int32(nil), x.slots...), tags: append([]uint8(nil), x.tags...), n: x.n}
}
