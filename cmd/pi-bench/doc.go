// Command pi-bench is sessionlog's benchmark lab: it measures pi-node
// against raw JetStream doing the same work (append, create, context,
// rebuild), and its search against rg over the same files, in one
// process, and prints both with their ratio. It is apart
// from pi-ctl because it carries what it measures, the engine, the
// embedded NATS server and a PostgreSQL baseline, which an operator's CLI
// has no need to link. Run "pi-bench --help" for the scenarios;
// docs/BENCHMARKS.md has the method and the figures.
//
// Exit codes: 0 success, 1 failure, 2 usage error.
package main
