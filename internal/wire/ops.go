package wire

import (
	"net/http"
)

// BodyKind says what an operation's request body is.
type BodyKind int

const (
	// NoBody: the operation reads its fields from the path and the query
	// over HTTP (a POST without a JSON object of its own still sends its
	// fields, minSeq only, as one, which the server does not read).
	NoBody BodyKind = iota
	// JSONBody: a JSON object; HTTP bounds it by the server's MaxBody.
	JSONBody
	// JSONLBody: a pi session file as it is (import); HTTP bounds it by the
	// server's MaxImportBody, NATS by max_payload.
	JSONLBody
)

// SubjectPrefix is the NATS micro service's group: operation op is served
// on pi.v1.<op> (cursor.get on pi.v1.cursor.get).
const SubjectPrefix = "pi.v1."

// Op is one operation of pi-node's API. Over HTTP it is served at Method
// and Path (a net/http pattern whose wildcards {id} and {client} are filled
// from the request fields tagged path:"id" and path:"client"); over NATS as
// a request to Subject, whose body holds every field. Name is also the
// metrics label and the micro endpoint's name.
type Op struct {
	Name   string
	Method string
	Path   string
	// Status is the HTTP status of a success.
	Status int
	Body   BodyKind
	// Subject is the NATS subject; empty for an HTTP-only operation
	// (watch streams Server-Sent Events, which a NATS request cannot).
	Subject string
}

// Route is the net/http pattern of the operation: "METHOD PATH".
func (o Op) Route() string { return o.Method + " " + o.Path }

// HTTPOnly reports whether the operation has no NATS endpoint.
func (o Op) HTTPOnly() bool { return o.Subject == "" }

// The scopes of the API's credentials (docs/API.md, Auth): an HTTP token
// has some of them, a NATS role (internal/natsauth) is built from them.
// read and write are independent; admin covers every operation.
const (
	ScopeRead  = "read"
	ScopeWrite = "write"
	ScopeAdmin = "admin"
)

// Scope is the scope the operation needs; "" for an operation of no
// table's (a programming error, which api's init and TestScopesPerOp
// catch).
func (o Op) Scope() string {
	switch o.Name {
	// status: the node and its Store; the backend's details (the
	// "jetstream" part) only with admin.
	case OpList.Name, OpGet.Name, OpEntries.Name, OpTree.Name, OpContext.Name, OpContextBuild.Name, OpExport.Name, OpWatch.Name,
		OpCursorGet.Name, OpCursorList.Name, OpStatus.Name, OpSearch.Name:
		return ScopeRead
	case OpCreate.Name, OpAppend.Name, OpCursorSet.Name, OpCursorDelete.Name, OpFork.Name, OpImport.Name, OpDelete.Name:
		return ScopeWrite
	case OpArchiveList.Name, OpArchiveRestore.Name, OpArchiveRun.Name:
		return ScopeAdmin
	}
	return ""
}

// LogRead reports whether the operation reads the session log from the
// node's Store: it takes Consistency, and waits for the node's own writes
// (docs/API.md, Consistency).
func (o Op) LogRead() bool {
	switch o.Name {
	case OpList.Name, OpGet.Name, OpEntries.Name, OpTree.Name, OpContext.Name, OpExport.Name, OpWatch.Name, OpSearch.Name:
		return true
	}
	return false
}

// bodyInQuery reports whether the fields go in the query string: a GET or
// DELETE has no body, and a JSONL body leaves no room for them.
func (o Op) bodyInQuery() bool {
	return o.Method == http.MethodGet || o.Method == http.MethodDelete || o.Body == JSONLBody
}

// op builds a NATS-and-HTTP operation, served on pi.v1.<name>.
func op(name, method, path string, status int, body BodyKind) Op {
	return Op{Name: name, Method: method, Path: path, Status: status, Body: body, Subject: SubjectPrefix + name}
}

// The operations, in docs/API.md's order.
var (
	OpCreate = op("create", http.MethodPost, "/v1/sessions", http.StatusCreated, JSONBody)
	OpAppend = op("append", http.MethodPost, "/v1/sessions/{id}/entries", http.StatusOK, JSONBody)
	OpList   = op("list", http.MethodGet, "/v1/sessions", http.StatusOK, NoBody)
	// OpSearch is full-text search across every session (SearchRequest).
	OpSearch  = op("search", http.MethodGet, "/v1/search", http.StatusOK, NoBody)
	OpGet     = op("get", http.MethodGet, "/v1/sessions/{id}", http.StatusOK, NoBody)
	OpEntries = op("entries", http.MethodGet, "/v1/sessions/{id}/entries", http.StatusOK, NoBody)
	OpTree    = op("tree", http.MethodGet, "/v1/sessions/{id}/tree", http.StatusOK, NoBody)
	OpContext = op("context", http.MethodGet, "/v1/sessions/{id}/context", http.StatusOK, NoBody)
	// OpContextBuild is context over entries in the request (ContextBuildRequest).
	OpContextBuild = op("context.build", http.MethodPost, "/v1/context", http.StatusOK, JSONBody)

	OpCursorGet    = op("cursor.get", http.MethodGet, "/v1/sessions/{id}/cursors/{client}", http.StatusOK, NoBody)
	OpCursorSet    = op("cursor.set", http.MethodPut, "/v1/sessions/{id}/cursors/{client}", http.StatusOK, JSONBody)
	OpCursorDelete = op("cursor.delete", http.MethodDelete, "/v1/sessions/{id}/cursors/{client}", http.StatusNoContent, NoBody)
	OpCursorList   = op("cursor.list", http.MethodGet, "/v1/sessions/{id}/cursors", http.StatusOK, NoBody)

	OpFork   = op("fork", http.MethodPost, "/v1/sessions/{id}/fork", http.StatusCreated, JSONBody)
	OpExport = op("export", http.MethodGet, "/v1/sessions/{id}/export", http.StatusOK, NoBody)
	OpImport = op("import", http.MethodPost, "/v1/import", http.StatusCreated, JSONLBody)
	OpDelete = op("delete", http.MethodDelete, "/v1/sessions/{id}", http.StatusOK, NoBody)
	OpStatus = op("status", http.MethodGet, "/v1/status", http.StatusOK, NoBody)

	OpArchiveList    = op("archive.list", http.MethodGet, "/v1/archive", http.StatusOK, NoBody)
	OpArchiveRestore = op("archive.restore", http.MethodPost, "/v1/archive/{id}/restore", http.StatusCreated, NoBody)
	OpArchiveRun     = op("archive.run", http.MethodPost, "/v1/archive/run", http.StatusOK, JSONBody)

	// OpWatch streams a session's entries as Server-Sent Events; HTTP only
	// (over NATS, consume the stream subject pi.sess.<id>).
	OpWatch = Op{Name: "watch", Method: http.MethodGet, Path: "/v1/sessions/{id}/watch", Status: http.StatusOK}
)

// Ops is every operation: the table both transports serve.
var Ops = []Op{
	OpCreate, OpAppend, OpList, OpSearch, OpGet, OpEntries, OpTree, OpContext, OpContextBuild,
	OpCursorGet, OpCursorSet, OpCursorDelete, OpCursorList,
	OpFork, OpExport, OpImport, OpDelete, OpStatus,
	OpArchiveList, OpArchiveRestore, OpArchiveRun,
	OpWatch,
}

// Probes are the HTTP routes outside the operations: liveness, readiness
// and Prometheus metrics, open without a token for probes and scrapers.
var Probes = []string{"GET /healthz", "GET /readyz", "GET /metrics"}
