// Package service answers pi-node's requests: Service writes client-built
// entries through the log (the same CAS loop as the Writer) and reads from
// the node's Store, falling back to the log's authoritative copy for a
// session this node has not applied yet. internal/api is its transport over
// HTTP and NATS; it holds no business logic of its own.
//
// Appends (service_append.go) take entries as clients send them — ids,
// parents and timestamps optional — validate them against the session and
// place them atomically; a re-sent append with the same ids returns the
// original result. Reads (service_read.go) build tree, path and context
// JSON; cursors (service_cursor.go) keep each client's leaf.
//
// The engine tests here run Store, Writer and Service together against every
// backend: the in-memory log, JetStream, and JetStream R3.
package service
