// Package api serves the session engine (internal/service) over HTTP/JSON
// and as a NATS micro service. The contract is internal/wire's: both
// transports serve its operation table (ops.go pairs each operation with
// its handler), decode into its typed request (request.go) and map errors
// with wire.StatusOf, so a body, a result and an error look the same on
// either; the package holds no business logic of its own. docs/API.md is
// the user-facing reference.
//
// The HTTP side also serves Server-Sent Events for watching a session,
// /healthz, /readyz and Prometheus /metrics. pi-node owns listeners,
// shutdown and draining: it takes Handler (or HTTPServer) and StartNATS.
//
// On a node that holds only a share of the shards (Config.Holding), the
// one point both transports reach (call) forwards a request about a
// session on another shard to the nodes serving it, over NATS
// (forward.go), and the catalog is gathered from them.
package api
