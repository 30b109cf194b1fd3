// Package session declares the contracts of the session engine and ships
// in-memory implementations of the log and the cursors, so that every part
// above runs — and is tested — without a server.
//
// # Contracts
//
// A session is one ordered sequence of Records on a log: its header, then its
// entries, each the exact JSON line pi writes. Log is the write side (atomic
// appends with compare-and-swap on the session's last sequence, authoritative
// reads, purge); Feed is the read side (the whole log in sequence order, for
// Stores); Cursors holds each client's leaf per session; Archive holds copies
// of idle sessions for internal/archive (checked there, against JetStream).
// Their doc comments state the contract; internal/enginetest checks the first three
// for internal/jetstream (the real one) and MemLog / MemCursors here, and
// runs the Writer over internal/apiclient's (through pi-node's API).
//
// # Forks by reference
//
// A fork's header record may name its parent (Record.Fork, ForkOf): the
// fork then stores only its own records, and BuildFrom reads the path it
// inherits from the parent (or from its _inherit records, written by
// InheritForks before a parent is erased or archived). ForkRegistry keeps
// which forks each session has.
//
// # Vocabulary
//
// Adapters translate their backend's failures once, at their edge, into the
// sentinels of internal/wire (ErrNotFound, ErrConflict, ErrExists,
// ErrInvalid, ErrTooLarge, ErrUnavailable, ErrTimeout), with *FieldError and
// *ConflictError where callers need the field or the sequence. Records and
// tree entries convert with RecordOf, HeaderRecord and Build; ids are checked
// by ValidSessionID and ValidClientID before they reach a subject.
//
// # Who builds on it
//
// internal/writer appends (the agent side), internal/store holds the trees a
// node serves (the read model), internal/service answers requests with both.
// internal/shard spreads a log over several streams, wrapping these contracts.
// This package imports only internal/tree and internal/wire.
package session
