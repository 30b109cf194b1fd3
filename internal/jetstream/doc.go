// Package jetstream is the NATS JetStream adapter of sessionlog: client
// connections (Connect), provisioning of the stream and the cursor bucket
// (Provision), and the implementations of the session package's interfaces:
// Log (session.Log and session.Feed), Cursors (session.Cursors) and Archive
// (session.Archive). NATS and JetStream errors are translated to the
// sentinels of internal/wire here, once (errors.go). The embedded server is in the subpackage embedded, so that
// clients of a node link no server.
//
// The wire contract, in short (docs/PROTOCOL.md has it in full):
//
//   - Stream PI_SESSIONS on subjects pi.sess.*, one subject per session,
//     pi.sess.<sessionId>; file storage, no limits, AllowAtomicPublish,
//     AllowDirect false (reads go to the stream leader), a two-minute
//     dedupe window.
//   - One message per JSONL line, with headers Nats-Msg-Id
//     (<sessionId>/<entryId>, or <sessionId>/header), Pi-Type, Pi-Id and
//     Pi-Parent; the header of a session written in several atomic batches
//     also carries Pi-Records, its record count, and readers hide the
//     session until they hold that many. The header of a fork by
//     reference carries Pi-Fork-Of (session.ForkOf), and such a fork may
//     hold _inherit records, its path written before its parent went.
//   - KV bucket PI_ARCHIVE_FORKS (forks.go), key <parent>.<fork>: which
//     forks by reference each session has.
//   - An append is conditional on Nats-Expected-Last-Subject-Sequence (0 for
//     a creation); several records go as one atomic batch carrying the
//     expectation on its first message. Followers hold a batch's messages
//     until the one with Nats-Batch-Commit.
//   - KV bucket PI_CURSORS, key <sessionId>.<clientId>, value
//     {"leafId","seq","updatedAt"}, history 1, updates CAS on the revision.
package jetstream
