// Package embedded runs the nats-server with JetStream inside pi-node: a
// single node, a cluster member (routes), or a region of a supercluster
// (gateways), with the options sessionlog needs (Server, NewServer) and the
// parsing of pi-node's --gateways flag (ParseGateways, FormatGateways).
//
// It is apart from package jetstream, the client side of the adapter, so
// that only what runs a server links one: the nats-server module is large,
// and the client library, the API and the examples need just a connection.
// `go list -deps ./client` must not list nats-server (.ci/run checks it).
package embedded
