// Package typescript holds no Go code of its own: it is the TypeScript
// client of pi-node's HTTP API (@pifleet/sessionlog, in src/), and its test
// runs the client's suite (run-tests.sh: go build of pi-node, tsc, node
// --test against real pi-nodes) so that go test ./... covers it. See
// README.md in this directory.
package typescript
