// Package client lets an agent worker write and read the session trees of
// the coding agent pi on sessionlog exactly as pi's SessionManager does —
// the same entries, ids, tree, context and bytes — on a replicated log that
// a fleet of workers shares, instead of a local JSONL file.
//
// # Quick start
//
//	c, err := client.New(ctx, client.HTTP("http://127.0.0.1:8080"), client.WithToken(token))
//	if err != nil { ... }
//	defer c.Close()
//
//	s, err := c.Create(client.WithCwd("/home/dev/project"), client.WithClientID("worker-7"))
//	s.AppendModelChange(ctx, "anthropic", "claude-sonnet-4")
//	s.AppendMessage(ctx, userMessage) // held in memory: nothing is stored yet
//	for {
//		reply := callModel(s.BuildContext().Model, s.LLMMessages())
//		w, err := s.Append(ctx, client.Message(reply)) // the first reply stores the session
//		if err != nil { ... }
//		results := runTools(reply)
//		if len(results) == 0 { break }
//		for _, r := range results { s.AppendMessage(ctx, r) }
//		_ = w.Seq // the session's version: minSeq for reads from any pi-node
//	}
//
// Any worker picks the session up later, at this client's cursor:
//
//	s, err := c.Open(ctx, sessionID, client.WithClientID("worker-7"))
//
// Messages are pi's AgentMessages: any JSON object with a "role" — given as
// json.RawMessage or []byte (JSON text) or any value encoding/json encodes
// (a map, a struct). They are stored as JavaScript's JSON.stringify writes
// them, as pi would. examples/agent in the repository is a complete,
// runnable agent loop.
//
// # Transports
//
// One Session implementation — the engine's writer, with its delayed flush,
// compare-and-swap appends and conflict reconciliation — runs over three
// transports, chosen by what the worker is allowed to reach:
//
//   - JetStream(nc) or JetStreamURL(url, opts...): the worker has NATS
//     credentials that may use the session stream (PI_SESSIONS) and the
//     cursor bucket (PI_CURSORS). Writes and reads go to JetStream directly,
//     with no pi-node on the path: the lowest latency. pi-node provisions
//     the stream and bucket; WithProvision does it for tests and development.
//   - HTTP(url): the worker has only pi-node's URL and, if the node has one,
//     its token (WithToken). Every operation is one request to pi-node's
//     HTTP API (docs/API.md).
//   - NodeNATS(nc): the same API as the NATS micro service pi.v1.<op>, for
//     workers allowed to publish requests to pi-node but not to read the
//     stream. Requests and replies are bounded by the NATS server's
//     max_payload (1 MiB unless configured; pi-node's embedded server takes
//     8 MiB).
//
// The stored bytes are the same on every transport, and workers on
// different transports share sessions freely.
//
// # Delayed flush
//
// A session from Create lives only in the worker's memory until its first
// assistant message: pi writes no file for a question nobody answered.
// That message stores the header and everything before it — model and
// thinking-level changes, user messages, labels, branches — as one atomic
// creation: all of it or nothing, and only if no session with that id
// exists (else ErrExists). A worker that dies before stores nothing, leaves
// no cursor, and no other worker sees the session (Open: ErrNotFound).
// Written.Seq is 0 and Flushed false until then. A creation needing more
// than one atomic batch (1000 records: the header and 999 entries before
// the first assistant message) fails with ErrTooLarge and stores nothing.
//
// That is pi 0.73.1's rule and this store's default. pi 1.1 writes its
// file at the first user message already, so that the prompt of a turn
// that never completes is kept: a client made WithPi11 does the same (a
// user or an assistant message stores the session) and writes the rest as
// pi 1.1 does — forks re-chained over the labels they drop, branch
// summaries naming the leaf left behind, names with line breaks folded.
// pi 1.1's entries themselves (ContextEdit, Usage, Compaction11, system
// messages, BranchWithSummaryUsage) are available either way.
//
// # Writes and conflicts
//
// After the flush every write — an Append* method, Label, Rename,
// BranchWithSummary, Append of several Specs — is one atomic,
// compare-and-swap append: it is stored only if the session's last
// sequence is the one this Session last saw. When another worker appended
// meanwhile, the Session reads what it missed, merges it into its view,
// draws new ids for any the other worker took, and tries again (bounded by
// WithRetry's RetryPolicy). The new entries still land as children of the
// parent they were given — this Session's leaf — never under the other
// worker's entries: two workers on one session build two branches, as two
// pi processes on one file would. The returned Written says where the
// session stands: Seq, the log sequence of the last new entry (the
// session's version, and a read-your-writes token: pass it as minSeq to
// any pi-node), and Merged, how many entries of others the write ran into.
// On an error other than a *CursorMovedError (see Cursors) nothing was
// written and the Session is unchanged — except after ErrUnavailable,
// which the Session returns only once its RetryPolicy is spent: within one
// call it retries with the same ids and never stores an entry twice, but
// the last attempt's outcome is unknown. Sync, and look (Path, Entries)
// before writing the same content again.
//
// Reads (Tree, Path, BuildContext, LLMMessages, Entries, Labels, Name,
// Export) answer from the Session's memory: its own entries, and others'
// as far as it has seen them. Sync fetches what others appended; SyncTo
// and Open's WithMinSeq take another worker's Written.Seq, for the API
// transports, whose pi-node trails the log by milliseconds.
//
// # Cursors
//
// WithClientID gives the Session a cursor: this client's leaf, stored in
// the cursor bucket (pi's "current position", per client). The flush
// creates it; every append, Branch, ResetLeaf and BranchWithSummary moves
// it with a compare-and-swap on its revision; Open resumes at it, on any
// transport; pi-node's reads by client (tree, context ?client=) use it. If
// another writer moved the cursor since this Session last did (two
// processes with one client id, an operator's pi-ctl cursor set), the
// write or move is still done, but the cursor stays where the other writer
// put it, and the method returns its result together with a
// *CursorMovedError (errors.Is ErrCursorMoved, and ErrConflict). From then
// on every move reports the same, until the Session decides: AdoptCursor
// goes where the other writer went, OverwriteCursor takes the cursor back.
// Without WithClientID nothing is stored besides the entries, and Open
// starts at pi's default leaf, the last entry.
//
// # Search
//
// Search runs a full-text query over every session pi-node holds (that
// the token may read) and returns a page of hits, best first, each with
// its session, the entry, whether it is on the session's path (OnPath:
// false on an abandoned branch) and a snippet whose matched words are
// marked:
//
//	r, err := c.Search(ctx, `salt -base64 role:assistant since:2026-11-01`, client.SearchLimit(10))
//	for _, h := range r.Hits { fmt.Println(h.SessionID, h.EntryID, h.OnPath) }
//	r, err = c.Search(ctx, q, client.SearchLimit(10), client.SearchCursor(r.Next)) // the next page
//
// SearchAll follows the pages; SearchPathOnly leaves abandoned branches
// out; SearchMinSeq and SearchLatest read your own and others' writes as
// Open's WithMinSeq and WithLatest do. The query language is docs/API.md's
// (Search). The index is pi-node's: Search needs the HTTP or NodeNATS
// transport.
//
// # Errors
//
// Every method reports the package's sentinels — ErrNotFound, ErrExists,
// ErrConflict, ErrInvalid (a *FieldError names the input), ErrTooLarge,
// ErrUnavailable, ErrTimeout, ErrUnauthorized, ErrCursorMoved — whatever
// the transport: test them with errors.Is. A server certificate the client
// does not trust (https or NATS over TLS without the CA that signed it:
// WithTLSConfig, nats.RootCAs) is none of them: it is returned at once,
// not retried as ErrUnavailable is, and unwraps to the
// *tls.CertificateVerificationError (errors.As).
package client
