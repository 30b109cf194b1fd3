package shard

import (
	"slices"
	"strconv"
)

// Holders is who holds shard k in memory among nodes: the h nodes of
// highest rendezvous weight for k (highest-random-weight hashing), in
// order of weight; every node when h <= 0 or h >= len(nodes). Each node's
// weight for a shard depends on the two alone, so when a node joins or
// leaves, only the shards it gains or held move — about h/len(nodes) of
// them — and every node computes the same answer from the same list.
func Holders(k int, nodes []string, h int) []string {
	type weighted struct {
		node string
		w    uint64
	}
	ws := make([]weighted, 0, len(nodes))
	for _, n := range nodes {
		ws = append(ws, weighted{n, HoldWeight(n, k)})
	}
	slices.SortFunc(ws, func(a, b weighted) int {
		switch {
		case a.w > b.w:
			return -1
		case a.w < b.w:
			return 1
		case a.node < b.node: // a tie between two weights of 64 bits: by name
			return -1
		case a.node > b.node:
			return 1
		}
		return 0
	})
	if h <= 0 || h > len(ws) {
		h = len(ws)
	}
	out := make([]string, 0, h)
	for _, x := range ws[:h] {
		if len(out) == 0 || out[len(out)-1] != x.node { // a name listed twice counts once
			out = append(out, x.node)
		}
	}
	return out
}

// HoldWeight is node's rendezvous weight for shard k: FNV-1a (64 bits) of
// "node/k", finished with splitmix64's mixer, so that names differing in
// their last character do not get neighbouring weights.
func HoldWeight(node string, k int) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for _, b := range []byte(node + "/" + strconv.Itoa(k)) {
		h ^= uint64(b)
		h *= prime
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}
