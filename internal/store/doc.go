// Package store is the read model of a pi-node: every session's tree in
// memory, fed by following the log (session.Feed) from the start or from a
// snapshot.
//
// Records are applied in sequence order; the records of one atomic append
// arrive together, so a reader never sees part of a batch. Readers take a
// session with View (under a read lock) and wait for a sequence with WaitFor
// (read-your-writes: a client's minSeq); Freshness and Stats say how far
// behind the log the Store is. A node that holds only a share of a
// sharded log puts an Unheld Store in the place of each shard it does not
// hold: it keeps nothing and reads the log (unheld.go).
//
// Memory is bounded by Options.MemoryBudget: cold sessions are evicted to
// local spill blocks (spill.go) or back to their block in the last snapshot,
// and come back from there, or from the log when neither exists (evict.go).
// Snapshots (snapshot.go: the file format; store_snapshot.go: when and what)
// let a restart resume from a stream sequence instead of the beginning.
// Purge notices (purge.go) drop sessions the log removed.
//
// Open starts the follower and its helpers; Close stops them and waits.
// The engine tests in internal/service run the Store against every backend.
package store
