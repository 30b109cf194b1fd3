// Package wire is pi-node's wire contract, declared once: every operation
// (name, HTTP method and path, success status, NATS subject, body kind;
// ops.go), its typed request (requests.go) and reply (replies.go,
// status.go, archive.go), how a request is laid out on either transport
// (encode.go), and the error vocabulary both ways (errors.go):
// sentinel → HTTP status and code for the server, and status and error
// body → sentinel for the clients.
//
// internal/api serves this table, internal/apiclient and pi-ctl call it,
// and the engine packages (service, store, writer, archive, region) return
// its reply types directly, so a field is declared in one place only.
// docs/API.md is the user-facing description of the same contract.
//
// wire imports only the standard library and internal/tree with its
// subpackage jsjson (the entry types some replies carry): a client of the API never links the engine,
// JetStream or nats-server through it. TestImports holds that line.
package wire
