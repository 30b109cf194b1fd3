package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
)

// Request is the typed request of one operation. Its fields are the JSON
// fields of a NATS request body; over HTTP the fields tagged path:"id" or
// path:"client" fill the path's wildcards, and the others go in the query
// (GET, DELETE, import) or in the JSON body (POST, PUT). Every request may
// carry MinSeq: the node answers once it has applied that sequence (read
// your writes).
//
// Reads of the session log (list, get, entries, tree, context, export,
// watch) also take Consistency.
type Request interface {
	Op() Op
}

// NullableID is an entry id that may be null (the null leaf: before the
// first entry) and whose absence is told from null. The zero value is
// absent. A server also reads the string "null" as null, so the HTTP query
// ?leaf=null and a NATS body agree.
type NullableID struct {
	Set  bool // given at all
	Null bool // given as null
	ID   string
}

// EntryID is the entry id id, as given.
func EntryID(id string) NullableID { return NullableID{Set: true, ID: id} }

// NullID is the null leaf.
func NullID() NullableID { return NullableID{Set: true, Null: true} }

// IsZero reports an absent value, which fields tagged omitzero leave out
// (whatever else is set in it: only EntryID and NullID make a present one).
func (n NullableID) IsZero() bool { return !n.Set }

// MarshalJSON writes null or the id; tag fields omitzero to leave an
// absent one out.
func (n NullableID) MarshalJSON() ([]byte, error) {
	if n.Null || !n.Set {
		return []byte("null"), nil
	}
	return json.Marshal(n.ID)
}

// UnmarshalJSON accepts a string or null (encoding/json calls it for null
// too). A value of another type is a *json.UnmarshalTypeError.
func (n *NullableID) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = NullID()
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return &json.UnmarshalTypeError{Value: jsonKind(b), Type: nullableIDType}
	}
	n.Parse(s)
	return nil
}

var nullableIDType = reflect.TypeFor[NullableID]()

// jsonKind names the kind of a JSON value by its first byte.
func jsonKind(b []byte) string {
	switch b = bytes.TrimSpace(b); {
	case len(b) == 0:
		return "nothing"
	case b[0] == '{':
		return "object"
	case b[0] == '[':
		return "array"
	case b[0] == 't' || b[0] == 'f':
		return "bool"
	}
	return "number"
}

// Parse sets n from a query parameter: "null" is null, anything else an id.
func (n *NullableID) Parse(s string) {
	*n = NullableID{Set: true, Null: s == "null", ID: s}
	if n.Null {
		n.ID = ""
	}
}

// ConsistencyStrong is the Consistency of a linearizable read: the node
// asks the log's leader for the session's last sequence (for list: the
// log's) and answers once it has applied it, so the read reflects every
// write acknowledged before it began, on any node. Without it a read
// reflects this node's own acknowledged writes (read your writes on the
// node that acknowledged them) and MinSeq.
const ConsistencyStrong = "strong"

// CreateRequest creates a session: an optional pi header (id, cwd,
// timestamp, parentSession; the rest is filled) and entries.
type CreateRequest struct {
	Header  json.RawMessage   `json:"header,omitempty"`
	Entries []json.RawMessage `json:"entries"`
	// Client, when given, gets a cursor at the last entry (the null leaf
	// without entries) in the same request: a worker that creates a session
	// needs no cursor.set after it.
	Client string `json:"client,omitempty"`
	MinSeq uint64 `json:"minSeq,omitempty"`
}

// AppendRequest appends client-built entries to a session.
type AppendRequest struct {
	SessionID string            `json:"sessionId,omitempty" path:"id"`
	Entries   []json.RawMessage `json:"entries"`
	// ExpectLastSeq makes the append conditional: it fails with ErrConflict
	// unless the session's last sequence is exactly this. Without it the
	// server retries on conflicts by itself.
	ExpectLastSeq *uint64 `json:"expectLastSeq,omitempty"`
	// Client names the cursor to default parents from and to move to the
	// last entry.
	Client string `json:"client,omitempty"`
	// Orphans accepts a parentId or a label's targetId that names no entry
	// of the session, as pi reads its own file: the entry is stored as
	// sent and is a root of the tree (until an entry of that id arrives).
	// pi 0.73.1's forks write such lines, and pi-ctl sync appends what pi
	// wrote; without it an unknown parent is a client's mistake (400).
	Orphans bool   `json:"orphans,omitempty"`
	MinSeq  uint64 `json:"minSeq,omitempty"`
}

// ListRequest asks for a page of the catalog; see docs/API.md, list.
type ListRequest struct {
	Limit  int    `json:"limit,omitempty"`
	Cursor string `json:"cursor,omitempty"` // the previous page's next
	Name   string `json:"name,omitempty"`
	Cwd    string `json:"cwd,omitempty"`
	Label  string `json:"label,omitempty"`
	// ParentSession keeps the sessions whose header names this one as
	// their parent: its forks.
	ParentSession string `json:"parentSession,omitempty"`
	Since         string `json:"since,omitempty"`       // RFC 3339
	Preview       bool   `json:"preview,omitempty"`     // fill Info.FirstMessage
	Consistency   string `json:"consistency,omitempty"` // "strong": see ConsistencyStrong
	MinSeq        uint64 `json:"minSeq,omitempty"`
}

// SearchRequest is a full-text query across every session the caller may
// read (docs/API.md, Search). Query is the search language: words,
// "phrases", -excluded, prefix*, and filters (role:, type:, tool:,
// model:, label:, cwd:, name:, session:, since:, until:).
type SearchRequest struct {
	Query string `json:"q"`
	// Branch "all" (the default) searches every entry; "path" only the
	// entries on each session's default path (root to its last entry).
	Branch      string `json:"branch,omitempty"`
	Limit       int    `json:"limit,omitempty"`  // hits per page: default 20, at most 100
	Cursor      string `json:"cursor,omitempty"` // the previous page's next
	Consistency string `json:"consistency,omitempty"`
	MinSeq      uint64 `json:"minSeq,omitempty"`
}

// The values of SearchRequest.Branch.
const (
	SearchBranchAll  = "all"
	SearchBranchPath = "path"
)

// GetRequest asks for a session's detail.
type GetRequest struct {
	SessionID string `json:"sessionId,omitempty" path:"id"`
	// Include "usage" (GetIncludeUsage) adds pi 1.1's usage breakdown,
	// which reads every entry's usage: not in every get.
	Include     string `json:"include,omitempty"`
	Consistency string `json:"consistency,omitempty"` // "strong": see ConsistencyStrong
	MinSeq      uint64 `json:"minSeq,omitempty"`
}

// GetIncludeUsage is GetRequest.Include for Detail.UsageBreakdown.
const GetIncludeUsage = "usage"

// EntriesRequest asks for the entries with seq > AfterSeq, at most Limit.
type EntriesRequest struct {
	SessionID   string `json:"sessionId,omitempty" path:"id"`
	AfterSeq    uint64 `json:"afterSeq,omitempty"`
	Limit       int    `json:"limit,omitempty"`
	Consistency string `json:"consistency,omitempty"` // "strong": see ConsistencyStrong
	MinSeq      uint64 `json:"minSeq,omitempty"`
}

// TreeRequest asks for pi's tree of a session; Leaf, else Client's cursor,
// else the default leaf, is the reply's leafId. Include "entries" gives
// pi's getTree() nodes ({entry, children, label?, labelTimestamp?})
// instead of {id, type, label?, children}. Form "flat" (TreeFormFlat)
// gives the nodes as one pre-order list with children as ids
// ({nodes, roots, leafId}) instead of nested: the nested form takes two
// JSON levels per entry of a branch, past the depth limit of many decoders.
type TreeRequest struct {
	SessionID   string     `json:"sessionId,omitempty" path:"id"`
	Client      string     `json:"client,omitempty"`
	Leaf        NullableID `json:"leaf,omitzero"`
	Include     string     `json:"include,omitempty"`
	Form        string     `json:"form,omitempty"`
	Consistency string     `json:"consistency,omitempty"` // "strong": see ConsistencyStrong
	MinSeq      uint64     `json:"minSeq,omitempty"`
}

// ContextRequest asks for what pi would send the model at a leaf (Leaf,
// else Client's cursor, else the default leaf); Format is "agent"
// (default) or "llm".
type ContextRequest struct {
	SessionID   string     `json:"sessionId,omitempty" path:"id"`
	Client      string     `json:"client,omitempty"`
	Leaf        NullableID `json:"leaf,omitzero"`
	Format      string     `json:"format,omitempty"`
	Consistency string     `json:"consistency,omitempty"` // "strong": see ConsistencyStrong
	MinSeq      uint64     `json:"minSeq,omitempty"`
}

// ContextBuildRequest asks for pi's context over entries given in the
// request instead of stored ones: what a client holds before its first
// assistant reply, when nothing is stored yet (pi's delayed flush). The
// entries follow create's rules (ids and timestamps filled, parents
// default to the previous entry); Leaf defaults to the last entry.
// Over NATS it is also pi.v1.context with entries and no sessionId.
type ContextBuildRequest struct {
	Entries []json.RawMessage `json:"entries"`
	Leaf    NullableID        `json:"leaf,omitzero"`
	Format  string            `json:"format,omitempty"`
	MinSeq  uint64            `json:"minSeq,omitempty"`
}

// TreeIncludeEntries is TreeRequest.Include for pi's getTree() shape.
const TreeIncludeEntries = "entries"

// TreeFormFlat is TreeRequest.Form for the flat reply, TreeFlatReply.
const TreeFormFlat = "flat"

// CursorGetRequest asks for one client's cursor.
type CursorGetRequest struct {
	SessionID string `json:"sessionId,omitempty" path:"id"`
	Client    string `json:"client,omitempty" path:"client"`
	MinSeq    uint64 `json:"minSeq,omitempty"`
}

// CursorSetRequest moves a cursor to LeafID (required; null: before the
// first entry), only if its revision is ExpectRevision when that is given.
type CursorSetRequest struct {
	SessionID      string     `json:"sessionId,omitempty" path:"id"`
	Client         string     `json:"client,omitempty" path:"client"`
	LeafID         NullableID `json:"leafId,omitzero"`
	ExpectRevision *uint64    `json:"expectRevision,omitempty"`
	MinSeq         uint64     `json:"minSeq,omitempty"`
}

// CursorDeleteRequest removes a cursor.
type CursorDeleteRequest struct {
	SessionID string `json:"sessionId,omitempty" path:"id"`
	Client    string `json:"client,omitempty" path:"client"`
	MinSeq    uint64 `json:"minSeq,omitempty"`
}

// DeleteRequest erases a session (docs/API.md, Delete): only if its last
// sequence is ExpectLastSeq when that is given.
type DeleteRequest struct {
	SessionID     string `json:"sessionId,omitempty" path:"id"`
	ExpectLastSeq uint64 `json:"expectLastSeq,omitempty"`
	MinSeq        uint64 `json:"minSeq,omitempty"`
}

// CursorListRequest asks for a session's cursors.
type CursorListRequest struct {
	SessionID string `json:"sessionId,omitempty" path:"id"`
	MinSeq    uint64 `json:"minSeq,omitempty"`
}

// ForkRequest makes a new session of the path from the root to EntryID.
type ForkRequest struct {
	SessionID string `json:"sessionId,omitempty" path:"id"`
	EntryID   string `json:"entryId,omitempty"`
	// Pi11 forks as pi 1.1.0's createBranchedSession: the path re-chained
	// over the label entries it drops (no orphans), a compaction kept at a
	// dropped label pointing at the next kept entry. Without it, as pi
	// 0.73.1 forks (a dropped label's child becomes an orphan root).
	Pi11   bool   `json:"pi11,omitempty"`
	MinSeq uint64 `json:"minSeq,omitempty"`
}

// ExportRequest asks for a session as a pi JSONL file.
type ExportRequest struct {
	SessionID   string `json:"sessionId,omitempty" path:"id"`
	Consistency string `json:"consistency,omitempty"` // "strong": see ConsistencyStrong
	MinSeq      uint64 `json:"minSeq,omitempty"`
}

// ImportRequest stores a pi session file (any version). File is the body
// as it is, on both transports; MinSeq goes in the HTTP query only.
// Strict refuses the file at its first bad line (malformed, or an entry
// not of pi's shape) instead of skipping it; it is the query parameter
// strict=true over HTTP and the header Pi-Strict: true over NATS (the body
// being the file).
type ImportRequest struct {
	File   []byte `json:"-"`
	Strict bool   `json:"strict,omitempty"`
	MinSeq uint64 `json:"minSeq,omitempty"`
}

// StatusRequest asks for the node's status.
type StatusRequest struct {
	MinSeq uint64 `json:"minSeq,omitempty"`
}

// ArchiveListRequest asks for a page of the archive, of Month (YYYYMM) or
// of all months.
type ArchiveListRequest struct {
	Month  string `json:"month,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	Cursor string `json:"cursor,omitempty"` // the previous page's next
	MinSeq uint64 `json:"minSeq,omitempty"`
}

// ArchiveRestoreRequest brings an archived session back into the log.
type ArchiveRestoreRequest struct {
	SessionID string `json:"sessionId,omitempty" path:"id"`
	MinSeq    uint64 `json:"minSeq,omitempty"`
}

// ArchiveRunRequest runs one retention pass now; OlderThan (a Go duration
// like 720h) defaults to the node's retention.
type ArchiveRunRequest struct {
	OlderThan string `json:"olderThan,omitempty"`
	// DryRun lists what the pass would archive and erase; nothing is done.
	DryRun bool   `json:"dryRun,omitempty"`
	MinSeq uint64 `json:"minSeq,omitempty"`
}

// WatchRequest follows a session's entries after AfterSeq (HTTP only; a
// reconnect's Last-Event-ID header wins over AfterSeq).
type WatchRequest struct {
	SessionID   string `json:"sessionId,omitempty" path:"id"`
	AfterSeq    uint64 `json:"afterSeq,omitempty"`
	Consistency string `json:"consistency,omitempty"` // "strong": see ConsistencyStrong
	MinSeq      uint64 `json:"minSeq,omitempty"`
}

func (CreateRequest) Op() Op         { return OpCreate }
func (AppendRequest) Op() Op         { return OpAppend }
func (ListRequest) Op() Op           { return OpList }
func (SearchRequest) Op() Op         { return OpSearch }
func (GetRequest) Op() Op            { return OpGet }
func (EntriesRequest) Op() Op        { return OpEntries }
func (TreeRequest) Op() Op           { return OpTree }
func (ContextRequest) Op() Op        { return OpContext }
func (ContextBuildRequest) Op() Op   { return OpContextBuild }
func (CursorGetRequest) Op() Op      { return OpCursorGet }
func (CursorSetRequest) Op() Op      { return OpCursorSet }
func (CursorDeleteRequest) Op() Op   { return OpCursorDelete }
func (CursorListRequest) Op() Op     { return OpCursorList }
func (ForkRequest) Op() Op           { return OpFork }
func (ExportRequest) Op() Op         { return OpExport }
func (ImportRequest) Op() Op         { return OpImport }
func (DeleteRequest) Op() Op         { return OpDelete }
func (StatusRequest) Op() Op         { return OpStatus }
func (ArchiveListRequest) Op() Op    { return OpArchiveList }
func (ArchiveRestoreRequest) Op() Op { return OpArchiveRestore }
func (ArchiveRunRequest) Op() Op     { return OpArchiveRun }
func (WatchRequest) Op() Op          { return OpWatch }

// Requests returns the zero request of every operation, in the order of
// Ops: for tables over the whole contract (tests on both sides of it).
func Requests() []Request {
	return []Request{
		CreateRequest{}, AppendRequest{}, ListRequest{}, SearchRequest{}, GetRequest{}, EntriesRequest{}, TreeRequest{}, ContextRequest{}, ContextBuildRequest{},
		CursorGetRequest{}, CursorSetRequest{}, CursorDeleteRequest{}, CursorListRequest{},
		ForkRequest{}, ExportRequest{}, ImportRequest{}, DeleteRequest{}, StatusRequest{},
		ArchiveListRequest{}, ArchiveRestoreRequest{}, ArchiveRunRequest{},
		WatchRequest{},
	}
}
