// Package nodetest runs a pi-node in the test process, opened by
// internal/node as cmd/pi-node opens one: an embedded JetStream server, the
// stream and the cursor bucket provisioned, the Stores following the log,
// the Service, and the API over HTTP and as the NATS micro service. Tests
// of API clients (apiclient, the public client package, the examples) talk
// to it exactly as they would to the real binary.
package nodetest
