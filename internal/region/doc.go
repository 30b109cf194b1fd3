// Package region runs sessionlog across regions, so that a session survives
// the loss of a whole region and loses nothing when the region comes back.
// docs/CROSS-REGION.md is the operator's guide; this is the map of the code.
//
// # Topology
//
// Each region is a NATS cluster (pi-nodes with embedded servers, or an
// external cluster) named after the region; gateways join the clusters into
// one supercluster, with ONE JetStream meta group over all of them. A third,
// small region — the tie-breaker, often a single nats-server — keeps that
// group's quorum when one of two main regions is lost, and holds the region
// record.
//
// Every region R has its own copy of the log, named after it (Assets): the
// stream <Stream>_R on subjects <SubjectPrefix>.R.* and the cursor bucket
// <Bucket>_R. The home region's copy is the primary; every other region's
// is a mirror of it, placed in that region, with the home's subject prefix
// rewritten to its own. Mirrors keep their origin's sequences, so a write's
// sequence means the same record in every region: read-your-writes (minSeq)
// works in a mirror region, and a node can move between copies of one
// history without rebuilding its Store.
//
// # Shards
//
// With --shards S every region's copy is S streams (Record.ShardAssets:
// shard k of R is <Stream>_R_k on <SubjectPrefix>.R.k.*), shard k of a
// mirror mirroring the home's shard k; the count is the record's, fixed
// when it is made. Each shard's stream has its own sequences, so the
// record keeps a fork and a shared sequence per shard, the Node a Log and
// a Feed per shard (each Feed switching with its own shard's fork), and
// what it hands the Service and the Stores qualifies the sequences as a
// sharded log does (shards.go). Failover and failback work shard by shard
// but decide for the region as a whole: every shard caught up before any
// is promoted, every shard merged before any mirror is recreated.
//
// # The record
//
// Record, a key in the KV bucket PI_REGION on the tie-breaker, names the
// home, counts failovers (Epoch), remembers where the current history forked
// from the previous one (ForkSeq), and lists stale regions: those whose own
// copy holds another history until failback. Registry reads it, changes it
// with compare-and-swap and watches it.
//
// # Nodes
//
// Node wires a pi-node: it registers its region in the record, provisions
// the region's copy (primary or mirror), and points three switchable seams
// where the record says — Log (writes: the home's stream, over the gateway
// from a mirror region), Cursors (the home's bucket) and Feed (what the
// Store follows: the region's own copy, or the home's while the region is
// stale). When the record changes the Node switches them without a
// restart; Feed decides whether the Store keeps its state (the new stream
// shares its history up to what it applied) or starts over (Store.Reset).
//
// # Operations
//
// Admin runs pi-ctl's commands. Failover promotes a mirror to the home (a
// stream update removing its mirror configuration, nats-server 2.12+),
// after checking the home is lost or fenced (--force fences a healthy one
// first), and records it. Failback fences a stale region's copy, republishes
// into the home every entry it holds that the home lacks — unchanged, so
// each comes back as the branch it was; ids are immutable, so the merge is a
// set union — merges cursors, and recreates the copy as a mirror of the home.
//
// # Erasure
//
// A delete erases the home's stream and appends the notice; mirrors copy
// the notice, not the erasure, so every Node erases its region's own copy
// when its Stores apply a notice (erase.go). The ledger of erasures, beside
// the record in the tie-breaker's cluster, outlives either main region:
// Nodes reconcile their copy against it at start and at every new wiring
// (a new home erases what the lost one erased but never sent), and a
// failback merges nothing it names.
package region
