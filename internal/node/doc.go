// Package node is one pi-node, assembled once: cmd/pi-node turns its flags
// into a Config and drives a Node, and the tests and the benchmark that
// need a node in their own process open the same one.
//
// Open wires, in this order:
//
//   - the logger and the Go memory limit, before anything allocates much;
//   - JetStream: an embedded server (alone, clustered or in a region, with
//     its users, TLS and audit of refusals) or a connection to an external
//     cluster, or a server its caller started (Config.Server, left running
//     at Close); the node's own connection to an embedded one is in-process;
//   - the backend: the shards' streams and the cursor bucket provisioned,
//     or in region mode the region's Log, Feed and Cursors (region.go);
//   - the Stores, one per shard (with --hold only the shards this node
//     holds follow their stream, shard.Holder deciding), each opened, so
//     that the rebuild from snapshot and log is done before requests come;
//   - the Service over the log and the Stores, the archiver, and the watch
//     that grows the Stores and the archive when shards are added;
//   - the API (tokens, readiness, status, metrics), then its listeners:
//     HTTP (TLS if asked), the metrics listener, the NATS micro service.
//     They come last so that nothing is served before the node can answer.
//
// Background work (releasing the rebuild's garbage, spreading the stream
// leaders, membership, the holder, the shard watch) lives until Open's
// context ends or Close.
//
// A graceful stop is LameDuck (not ready, NATS service withdrawn, HTTP
// still served for the delay) then Close; Close alone is an immediate
// stop. Close undoes Open backwards: it ends the background work, stops
// the NATS service and HTTP (draining requests in flight), the archiver,
// writes every Store's last snapshot, shuts the metrics listener last (so
// the shutdown is scraped), closes the region and the connection, and shuts
// the embedded server down (in lame-duck mode after LameDuck, so that its
// leaderships move first). Reload reads tokens, users and certificates
// again (SIGHUP); Fatal reports an embedded server's fatal error, on which
// the node must stop.
package node
