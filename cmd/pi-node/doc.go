// Command pi-node serves pi session trees from a replicated NATS JetStream
// log: it embeds a JetStream server (alone or clustered with other pi-nodes)
// or connects to an external cluster, keeps every session's tree in memory
// by following the stream, and serves the sessions over HTTP and as the NATS
// micro service pi-sessions.
package main
