// Package tree is pi's session model, in memory: the entry types of a
// session file, its JSONL codec, the migrations of version 1 and 2 files to
// version 3, and the Tree index with the algorithms pi's SessionManager runs
// on it — paths, children order, labels, the session name and the context
// sent to the model. The rest of sessionlog stores and ships sessions; what
// a session means is computed here, as pi computes it.
//
// The package is pure: the standard library and its own JSON (package
// jsjson) only. It does no file
// or network I/O, reads no clock (timestamps come from callers), starts no
// goroutines and logs nothing; the one outside input is the random source
// for new ids, an io.Reader that defaults to crypto/rand. Values it returns
// share memory with the bytes they were read from, and a Session is not
// safe for concurrent use: callers own synchronization.
//
// # Files
//
//   - entry.go: Kind, Role, Entry and Header; an entry keeps its raw line and
//     decodes only the fields the algorithms read (ParseEntry, ParseHeader).
//   - scan.go: the single pass every line goes through, validating it as
//     JSON.parse would and locating its top-level members (Valid).
//   - depth.go: MaxDepth, the nesting bound of every JSON a client sends,
//     and CheckDepth, which holds a request body to it before any decoder
//     runs (lines are held to it by the pass of scan.go).
//   - reader.go: Read splits a file into lines, skips or rejects what pi
//     skips, and migrates; File, ReadOptions, LineError, AppendJSONL.
//   - migrate.go: version 1 and 2 lines rewritten to version 3 exactly as
//     pi's migrateToCurrentVersion and _rewriteFile do.
//   - check.go: Check, a strict validation reporting every problem.
//   - validate.go: CheckEntry, an entry against pi's type for its "type"
//     (what writes accept, and what Read with Validate keeps).
//   - session.go: Session, the indexes by id, parents, labels and name;
//     Append, Path, Label, Name.
//   - tree.go: Tree (pi's getTree: children ordered by timestamp, ties in
//     file order), Children and the tree JSON.
//   - context.go, llm.go: ContextAt (pi's buildSessionContext) and
//     LLMMessages (convertToLlm), with their JSON.
//   - new.go, ids.go: constructors of new lines, byte-compatible with pi's
//     SessionManager, and IDGen (pi's generateId).
//   - fork.go: Fork, pi's createBranchedSession.
//   - preview.go: Preview, one-line entry descriptions for listings, and
//     Printable.
//   - value.go: Value, Member and KindNull … KindObject, the parsed-JSON view
//     of a line (aliases of package jsjson's types).
//
// # JavaScript's JSON
//
// pi is TypeScript: its files are written by node's JSON.stringify and read
// by JSON.parse, and sessionlog must reproduce them byte for byte. Go's
// encoding/json would not: it replaces lone surrogates with U+FFFD (the
// conformance vectors hold unpaired \ud83d escapes, which JavaScript strings
// keep), orders and deduplicates object keys differently, escapes what node
// leaves raw and formats numbers its own way. Package jsjson (a subpackage,
// importing nothing of this one) emulates JavaScript instead: WTF-8
// strings, JSON.parse and JSON.stringify, Number's toString, String() and
// truthiness, String.prototype.trim, and Date parsing for the timestamps
// that order children. This package decodes lines through it and writes
// every JSON string with jsjson.AppendString.
package tree
