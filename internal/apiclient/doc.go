// Package apiclient speaks pi-node's API (docs/API.md) from the client side,
// over either of its transports: HTTP/JSON (NewHTTP) and the NATS micro
// service pi.v1.<op> (DialNATS, NewNATS). Both implement Client, so a caller
// is written once against wire's typed requests and runs over either; where
// each operation lives on each transport is internal/wire's table.
//
// On top of Client it provides what the callers of the API share: paging
// through a session's entries (EntryReader, PollEntries), following one with
// Server-Sent Events (HTTP.Follow), and the session engine's storage
// interfaces over the API (Log implements session.Log, Cursors implements
// session.Cursors), so that writer.Writer — delayed flush, CAS appends,
// conflict reconciliation — runs unchanged against a pi-node that is only
// reachable by URL.
//
// Errors are translated once, here: an error reply is an *Error, no reply
// at all an *UnreachableError, and both unwrap to wire's sentinels
// (ErrNotFound, ErrConflict, ErrExists, ErrInvalid with a *wire.FieldError,
// ErrTooLarge, ErrUnavailable, ErrTimeout, ErrUnauthorized, ErrForbidden:
// wire.ErrorOf),
// so callers test them with errors.Is and never match messages.
//
// pi-ctl and the public client package (client/) are the users.
package apiclient
