// Package cluster holds end-to-end tests of pi-node clusters: real pi-node
// and nats-server processes on loopback, built from this module by
// TestMain, started, stopped and killed like an operator (or a crash) would.
//
//   - TestEmbeddedCluster: three pi-nodes forming their own JetStream
//     cluster (--cluster-name, --routes, --replicas 3); reads with minSeq on
//     every node; a node stopped and restarted rejoins and catches up.
//   - TestExternalCluster: three separately started nats-server processes,
//     two pi-nodes connected with --nats-url.
//   - TestKillStreamLeader: fifty writers append through the HTTP API of
//     all three nodes while the process leading the stream is killed with
//     SIGKILL and restarted; no acknowledged entry is lost or duplicated,
//     and the write gap is measured against JetStream's own failover.
//
// Others pin down failure behaviour found on the way:
// TestStoresFollowThroughNodeLoss and TestStoreSeesLogEndAfterFailover
// (a node's Store and its view of the log after another node goes away),
// TestProvisionConcurrently (nodes of a new cluster provisioning at once),
// TestNodeFailsFastOnBusyPort (start-up with a port taken).
// TestShardedCluster runs three nodes with --shards 4: leaders spread,
// a node killed under load, another shard count refused.
//
// PI_NODE_SHARDS=4 (read by every pi-node they start, as every flag is
// from PI_NODE_<FLAG>) runs them all on a sharded store; .ci/run does.
// Sequences are then qualified by shard, and the checks of "the log's
// last sequence" are made per shard (sharded_test.go); the failover the
// kill tests time is shard 0's, whose leader they kill.
//
// Run with -v to see the measured figures: lines starting with MEASURED.
// PI_NODE_BIN runs them against a given pi-node binary instead of one
// built from the checkout.
//
// The tests are skipped with -short. They are Linux-only (process groups,
// parent-death signals).
package cluster
