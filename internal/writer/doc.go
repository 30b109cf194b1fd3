// Package writer is the agent side of the engine: Writer appends to one
// session the way pi's SessionManager does, with the log as the file —
// nothing is published until the first assistant message, which publishes
// header and backlog as one atomic batch; after that each append is one
// compare-and-swap publish after the last sequence the Writer knows.
//
// The CAS loop (cas.go, with the shared AppendPlan in plan.go) is shared with internal/service: on a conflict it
// reads what the caller missed and lets the caller's plan decide what to
// publish next; on unavailability it retries the same records, so a retry
// whose first attempt landed is recognized, never duplicated. create.go
// publishes whole sessions (creation, import, fork), in one atomic batch when
// they fit, else in chunks that are purged if any fails.
//
// Spec values (spec.go) build pi's entry types, one constructor each.
package writer
