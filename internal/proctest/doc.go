// Package proctest runs child processes for tests: pi-node and nats-server
// binaries on loopback, each with a log that survives restarts and is
// printed when the test fails, and signals to the process group (polling
// and free ports are in testutil); and reads what they serve, /metrics
// included. test/cluster and test/region share it.
package proctest
