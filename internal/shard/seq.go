package shard

import (
	"fmt"

	"github.com/pifleet/sessionlog/internal/wire"
)

// Shards. A sharded log spreads its sessions over several logs (streams),
// each with its own sequence. So that a sequence still names one point of
// one log — minSeq, lastSeq, a cursor's seq and a Store's applied position
// mean what they meant — every sequence above the adapter is qualified:
// the shard number in the bits from Bits up, the stream's own
// sequence below. Shard 0's sequences are the stream's own, so an
// unsharded log and shard 0 of a sharded one are the same bytes and the
// same numbers. Qualified sequences stay below 2^53 (Max shards of
// 2^44 records each): JavaScript clients read them exactly.
const (
	Bits    = 44
	Max     = 256
	rawMask = 1<<Bits - 1
)

// Function names Of in the shard map a deployment records, so
// that a node or client with another function refuses the store instead of
// looking for sessions where they are not.
const Function = "fnv1a32"

// Of is the shard of session sid in a log of n shards: FNV-1a (32
// bits) of the id's bytes, modulo n. It is the whole of the shard map a
// third-party client needs (docs/PROTOCOL.md).
func Of(sid string, n int) int {
	if n <= 1 {
		return 0
	}
	h := uint32(2166136261)
	for i := 0; i < len(sid); i++ {
		h ^= uint32(sid[i])
		h *= 16777619
	}
	return int(h % uint32(n))
}

// Seq qualifies raw, a sequence of shard's stream.
func Seq(shard int, raw uint64) uint64 {
	if raw == 0 {
		return 0 // "none": the same on every shard
	}
	return uint64(shard)<<Bits | raw&rawMask
}

// OfSeq is the shard a qualified sequence belongs to.
func OfSeq(seq uint64) int { return int(seq >> Bits) }

// Raw is a qualified sequence's position in its shard's stream.
func Raw(seq uint64) uint64 { return seq & rawMask }

// ValidCount checks a shard count.
func ValidCount(n int) error {
	if n < 1 || n > Max {
		return fmt.Errorf("%w: %d shards, want 1 to %d", wire.ErrInvalid, n, Max)
	}
	return nil
}
