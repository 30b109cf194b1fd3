package wire

import (
	"encoding/json"
	"time"

	"github.com/pifleet/sessionlog/internal/tree"
)

// The replies of the operations. tree and context reply with JSON that
// internal/tree builds (pi's own shapes), export with pi JSONL, and
// cursor.delete with nothing (HTTP 204; NATS {}).

// Info is a session's catalog record: one element of list, and the start
// of get's Detail.
type Info struct {
	SessionID     string    `json:"sessionId"`
	Name          *string   `json:"name"`
	Cwd           string    `json:"cwd"`
	Created       time.Time `json:"created"`
	Modified      time.Time `json:"modified"`
	EntryCount    int       `json:"entryCount"`
	LastSeq       uint64    `json:"lastSeq"`
	ParentSession *string   `json:"parentSession"`
	// FirstMessage is the preview of the first user message with text,
	// when list was asked for it (preview) and the node knows it: always
	// for a session in memory, and for one evicted or restored from the
	// snapshot (its index carries it; unknown only from an older snapshot).
	FirstMessage *string `json:"firstMessage,omitempty"`
}

// TreeFlatReply is the reply of tree with form=flat: the nodes of the
// nested reply's tree in pre-order (the order the nested reply lists
// them), Roots the ids of the roots in order, LeafID the requested leaf.
type TreeFlatReply struct {
	Nodes  []TreeFlatNode `json:"nodes"`
	Roots  []string       `json:"roots"`
	LeafID *string        `json:"leafId"`
}

// TreeFlatNode is one node of TreeFlatReply: the nested node's fields
// ({id, type, label?} or, with include=entries, {entry, label?,
// labelTimestamp?}) with its parent in the tree (nil for a root: its
// parentId is null, its own id, or not in the session) and Children the
// ids of its children in tree order.
type TreeFlatNode struct {
	ID             string          `json:"id"`
	ParentID       *string         `json:"parentId"`
	Type           string          `json:"type,omitempty"`
	Label          *string         `json:"label,omitempty"`
	Entry          json.RawMessage `json:"entry,omitempty"`
	LabelTimestamp json.RawMessage `json:"labelTimestamp,omitempty"`
	Children       []string        `json:"children"`
}

// EntryResult is where one written entry landed.
type EntryResult struct {
	ID  string `json:"id"`
	Seq uint64 `json:"seq"`
}

// WriteResult is the reply of create and append. LastSeq is the session's
// version after the write (minSeq of a later read, expectLastSeq of a later
// append).
type WriteResult struct {
	SessionID string        `json:"sessionId,omitempty"`
	LastSeq   uint64        `json:"lastSeq"`
	Entries   []EntryResult `json:"entries"`
	// Cursor is the request's client's cursor after the write, when it
	// named one.
	Cursor *CursorView `json:"cursor,omitempty"`
}

// ListReply is a page of the catalog; Next is absent on the last page.
type ListReply struct {
	Sessions []Info `json:"sessions"`
	Next     string `json:"next,omitempty"`
}

// SearchReply is a page of search hits, best first. Total estimates the
// hits of the whole query (every page; with branch "path", before entries
// off the path are left out). Next is absent on the last page.
type SearchReply struct {
	Hits  []SearchHit `json:"hits"`
	Total int         `json:"total"`
	Next  string      `json:"next,omitempty"`
}

// SearchHit is one entry that matches a query, with its session's name
// and cwd as they are now.
type SearchHit struct {
	SessionID string  `json:"sessionId"`
	Name      *string `json:"name,omitempty"` // the session's name; absent when it has none
	Cwd       string  `json:"cwd"`
	EntryID   string  `json:"entryId"`
	Type      string  `json:"type"`
	Role      string  `json:"role,omitempty"` // a message's role (custom for custom_message)
	Timestamp string  `json:"timestamp"`
	// OnPath reports whether the entry is on the session's default path
	// (root to its last entry); false on an abandoned branch.
	OnPath  bool          `json:"onPath"`
	Score   float64       `json:"score"`
	Snippet []SnippetPart `json:"snippet"`
}

// SnippetPart is a piece of a hit's snippet: the snippet is the parts'
// texts joined, and Match marks the words the query matched.
type SnippetPart struct {
	Text  string `json:"text"`
	Match bool   `json:"match,omitempty"`
}

// Detail is the get reply: a session's catalog record plus its header,
// labels and leaf.
type Detail struct {
	Info
	HeaderSeq uint64            `json:"headerSeq"`
	Header    json.RawMessage   `json:"header"`
	Labels    map[string]string `json:"labels"`
	LeafID    *string           `json:"leafId"` // pi's default leaf (the last entry); null without entries
	// UsageBreakdown is pi 1.1's getUsageCostBreakdown over every entry,
	// on any branch; only with include=usage ([] when nothing was spent).
	UsageBreakdown *[]UsageRow `json:"usageBreakdown,omitempty"`
}

// UsageRow is one row of a usage breakdown, as pi 1.1 computes it: the
// cost and tokens spent under a key, "provider/model" or
// "Tools/summaries" (tool results, branch summaries and compactions),
// highest cost first.
type UsageRow struct {
	Key    string  `json:"key"`
	Cost   float64 `json:"cost"`
	Tokens float64 `json:"tokens"`
}

// SeqEntry is one stored entry with its log sequence: an element of the
// entries reply, and the data of a watch event (whose id is Seq).
type SeqEntry struct {
	Seq   uint64          `json:"seq"`
	Entry json.RawMessage `json:"entry"`
}

// EntriesReply is the entries reply. More entries exist when the last
// one's seq is below LastSeq.
type EntriesReply struct {
	Entries []SeqEntry `json:"entries"`
	LastSeq uint64     `json:"lastSeq"`
}

// CursorView is a cursor as the API shows it: the reply of cursor.get and
// cursor.set. Seq is the session's lastSeq when it was set.
type CursorView struct {
	Client    string  `json:"client"`
	LeafID    *string `json:"leafId"`
	Seq       uint64  `json:"seq"`
	Revision  uint64  `json:"revision"`
	UpdatedAt string  `json:"updatedAt"`
}

// CursorsReply is the cursor.list reply, by client id.
type CursorsReply struct {
	Cursors []CursorView `json:"cursors"`
}

// ForkReply is the fork reply; LastSeq is the new session's version, for
// minSeq on the next read.
type ForkReply struct {
	SessionID string `json:"sessionId"`
	LastSeq   uint64 `json:"lastSeq"`
}

// ImportResult describes an imported session: the import reply. LastSeq
// is the new session's version (for minSeq); Skipped lists the lines pi
// would skip too ([] when none, in a reply).
type ImportResult struct {
	SessionID     string           `json:"sessionId"`
	Entries       int              `json:"entryCount"`
	LastSeq       uint64           `json:"lastSeq"`
	SourceVersion int              `json:"sourceVersion"`
	Skipped       []tree.LineError `json:"skipped"`
}

// DeleteReply is the delete reply: what the erasure removed.
type DeleteReply struct {
	SessionID string `json:"sessionId"`
	// Records is how many records of the session's log were erased
	// (entries and header; 0 for a session only in the archive).
	Records int `json:"records"`
	// ArchivedCopies is how many of its archived copies were erased.
	ArchivedCopies int `json:"archivedCopies"`
	// LastSeq is the session's last sequence before the erasure (0 for a
	// session only in the archive).
	LastSeq uint64 `json:"lastSeq"`
}

// Erasure is a line of the ledger of erasures: which session was erased,
// when and by whom, and nothing of its content. A restore from a backup
// taken before the erasure erases the session again from it.
type Erasure struct {
	Session string    `json:"session"`
	At      time.Time `json:"at"`
	By      string    `json:"by"`
	// Records is how many records the erasure removed (0 until it ran).
	Records int `json:"records"`
}

// RestoreReply is the archive.restore reply: the session back in the log,
// its new lastSeq for minSeq.
type RestoreReply struct {
	SessionID  string `json:"sessionId"`
	EntryCount int    `json:"entryCount"`
	LastSeq    uint64 `json:"lastSeq"`
}
