// Package embeddedtest starts real nats-servers with JetStream for tests: a
// single node or an in-process cluster, each in t.TempDir(), shut down at
// cleanup. It imports the embedded server alone, so that the adapter's own
// tests (package jetstream) and jstest, which builds on the adapter, share
// it instead of keeping copies.
package embeddedtest
