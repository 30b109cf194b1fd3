// Package bench measures pi-node against raw JetStream doing the same
// work, in the same process and on the same server, and reports both with
// their ratio. It is what `pi-bench` runs; docs/BENCHMARKS.md has the
// figures of a reference machine and how each was obtained.
//
// Scenarios (each RunX returns a Result: one Row per way of doing the
// work, Figures for what is not a rate, with the targets they are held to):
//
//   - RunAppend: entries appended one request at a time, many sessions at
//     once, through the node's API over NATS and HTTP; against raw
//     publishes of the adapter's exact messages (jetstream.Log.Msg) with
//     the same expected-last-subject-sequence, and against a relay (raw
//     JetStream behind one request hop, the floor under any API).
//   - RunCreate: sessions created with a backlog of entries, as the node's
//     create operation and as one raw atomic batch.
//   - RunContext: pi's context at random leaves, served from the node's
//     Store; against what a client with only JetStream must do (read the
//     session from the stream leader, build the context itself).
//   - RunRebuild: a node started over a large interleaved log (a million
//     realistic entries by default) against a raw ordered consumer over the
//     same stream; its memory against the JSON it holds; its restart from
//     the snapshot, first reads against a raw filtered read.
//   - RunSearch: full-text search (issue 35) over a generated corpus of pi
//     session files imported through the API: the index's build rate and
//     size against the JSONL, query latency through GET /v1/search against
//     rg over the same files, the node's resident set, and whether the
//     index keeps up with appends.
//
// pi's own way of storing a session, one appendFileSync per line of a
// local file, is the optional baseline of the write scenarios.
//
// The node is a running pi-node (Open with a server URL), or one started
// in this process (Node, opened by internal/node as pi-node is), or for the
// rebuild scenario the pi-node binary run as a process. ProcOptions run
// pi-node binaries as processes (CPU read from /proc): over one
// nats-server, or as an embedded cluster of 3 or 5 at as many replicas,
// the shape production runs. The package's
// go test benchmarks pair the session engine itself (Writer, Store,
// Service) with raw JetStream in the same loop.
package bench
