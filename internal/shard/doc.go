// Package shard is sharding (--shards N, --hold H): how a store spread
// over N streams stays one log to everything above it, and which nodes
// keep which shard in memory.
//
// # Routing by the map
//
// A Map places each session on a shard for good: epochs of shard counts,
// the session id's UUIDv7 time choosing the epoch and Of (FNV-1a) the
// shard within it. Every sequence above the adapter is qualified (Seq:
// the shard in the bits from Bits up), so that a sequence still names one
// point of one log; Log wraps one shard's session.Log and session.Feed to
// qualify what leaves it and refuse another shard's sequences. Sharded
// routes a session's calls to its shard's Log, and Archive does the same
// for session.Archive; both, and the Stores of internal/store, are a
// Table, which grows only by a map that extends the current one.
//
// # Holding a share
//
// With --hold H a node holds only some shards in memory: Holders picks
// the H live nodes of highest rendezvous weight for each shard, so every
// node computes the same holders from the same member list and a node's
// arrival or departure moves only the shards it gains or held. Holder
// runs a node's share: it takes a shard over (a Store that follows it,
// served once caught up) and hands one back once its new holders serve
// it. It reaches the members, the Stores and the serving of forwarded
// requests through interfaces declared here (Members, Stores, Serving),
// which internal/node fills with jetstream.Members, store.Set and
// api.Server.
//
// # What it does not contain
//
// No adapter, Store or transport: the shard streams and the members bucket
// are internal/jetstream's, the Store set and Unheld Stores are
// internal/store's, forwarding a request to a shard's holders is
// internal/api's. This package imports only internal/session and
// internal/wire, so that those can import it (jetstream and store do, for
// the map and Log).
package shard
