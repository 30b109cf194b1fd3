package api

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/pifleet/sessionlog/internal/wire"
)

// bodyKind says what an operation's request body is.
type bodyKind int

const (
	noBody    bodyKind = iota
	jsonBody           // a JSON object (HTTP: size-limited by MaxBody)
	jsonlBody          // pi JSONL bytes (import; limited by MaxImportBody)
)

// op is one operation, served at method+path over HTTP and as endpoint
// pi.v1.<name> over NATS. name is also the metrics label.
type op struct {
	name   string
	method string
	path   string
	status int // HTTP status on success
	body   bodyKind
	run    func(s *Server, ctx context.Context, r *request) (reply, error)
}

// reply is an operation's result: a value to encode as JSON, or bytes to
// send as they are (pre-built JSON of tree and context, JSONL of export).
type reply struct {
	value    any
	raw      []byte
	ctype    string
	filename string // HTTP: offered as a download under this name
}

const (
	ctypeJSON  = "application/json"
	ctypeJSONL = "application/x-ndjson"
)

func jsonReply(v any) (reply, error) { return reply{value: v}, nil }

// ops is the operation table of both transports.
var ops = []op{
	{"create", "POST", "/v1/sessions", http.StatusCreated, jsonBody, (*Server).create},
	{"append", "POST", "/v1/sessions/{id}/entries", http.StatusOK, jsonBody, (*Server).appendEntries},
	{"list", "GET", "/v1/sessions", http.StatusOK, noBody, (*Server).list},
	{"get", "GET", "/v1/sessions/{id}", http.StatusOK, noBody, (*Server).get},
	{"entries", "GET", "/v1/sessions/{id}/entries", http.StatusOK, noBody, (*Server).entries},
	{"tree", "GET", "/v1/sessions/{id}/tree", http.StatusOK, noBody, (*Server).tree},
	{"context", "GET", "/v1/sessions/{id}/context", http.StatusOK, noBody, (*Server).contextJSON},
	{"cursor.get", "GET", "/v1/sessions/{id}/cursors/{client}", http.StatusOK, noBody, (*Server).cursorGet},
	{"cursor.set", "PUT", "/v1/sessions/{id}/cursors/{client}", http.StatusOK, jsonBody, (*Server).cursorSet},
	{"cursor.delete", "DELETE", "/v1/sessions/{id}/cursors/{client}", http.StatusNoContent, noBody, (*Server).cursorDelete},
	{"cursor.list", "GET", "/v1/sessions/{id}/cursors", http.StatusOK, noBody, (*Server).cursorList},
	{"fork", "POST", "/v1/sessions/{id}/fork", http.StatusCreated, jsonBody, (*Server).fork},
	{"export", "GET", "/v1/sessions/{id}/export", http.StatusOK, noBody, (*Server).export},
	{"import", "POST", "/v1/import", http.StatusCreated, jsonlBody, (*Server).importFile},
	{"status", "GET", "/v1/status", http.StatusOK, noBody, (*Server).status},
	{"archive.list", "GET", "/v1/archive", http.StatusOK, noBody, (*Server).archiveList},
	{"archive.restore", "POST", "/v1/archive/{id}/restore", http.StatusCreated, noBody, (*Server).archiveRestore},
	{"archive.run", "POST", "/v1/archive/run", http.StatusOK, jsonBody, (*Server).archiveRun},
}

// call runs o for r on either transport: first the read-your-writes wait
// for minSeq, bounded by MinSeqTimeout, then the operation.
func (s *Server) call(ctx context.Context, o *op, r *request) (reply, error) {
	if err := s.waitMinSeq(ctx, r.MinSeq); err != nil {
		return reply{}, err
	}
	return o.run(s, ctx, r)
}

// waitMinSeq waits until this node's Store has applied seq (read your
// writes: seq is the lastSeq a write returned, possibly on another node).
func (s *Server) waitMinSeq(ctx context.Context, seq uint64) error {
	if seq == 0 {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, s.cfg.MinSeqTimeout)
	defer cancel()
	if err := s.svc.Store.WaitFor(wctx, seq); err != nil {
		return fmt.Errorf("minSeq %d not applied on node %s within %v: %w", seq, s.cfg.NodeName, s.cfg.MinSeqTimeout, err)
	}
	return nil
}

func (s *Server) create(ctx context.Context, r *request) (reply, error) {
	res, err := s.svc.Create(ctx, wire.CreateRequest{Header: r.Header, Entries: r.Entries})
	if err != nil {
		return reply{}, err
	}
	return jsonReply(res)
}

func (s *Server) appendEntries(ctx context.Context, r *request) (reply, error) {
	if err := r.checkSession(); err != nil {
		return reply{}, err
	}
	start := time.Now()
	res, err := s.svc.Append(ctx, r.SessionID, wire.AppendRequest{Entries: r.Entries, ExpectLastSeq: r.ExpectLastSeq, Client: r.Client})
	s.metrics.observeAppend(time.Since(start), err)
	if err != nil {
		return reply{}, err
	}
	return jsonReply(res)
}

// forkReply is the fork response; LastSeq is the new session's version,
// for minSeq on the next read.
type forkReply struct {
	SessionID string `json:"sessionId"`
	LastSeq   uint64 `json:"lastSeq"`
}

func (s *Server) fork(ctx context.Context, r *request) (reply, error) {
	if err := r.checkSession(); err != nil {
		return reply{}, err
	}
	if r.EntryID == "" {
		return reply{}, wire.Invalid("entryId", "required: the entry the new session ends at")
	}
	id, last, err := s.svc.Fork(ctx, r.SessionID, r.EntryID)
	if err != nil {
		return reply{}, err
	}
	return jsonReply(forkReply{SessionID: id, LastSeq: last})
}

// importReply is the import response. LastSeq is the new session's version
// (for minSeq); Skipped lists the lines pi would skip too.
type importReply struct {
	SessionID     string       `json:"sessionId"`
	EntryCount    int          `json:"entryCount"`
	LastSeq       uint64       `json:"lastSeq"`
	SourceVersion int          `json:"sourceVersion"`
	Skipped       []lineReport `json:"skipped"`
}

type lineReport struct {
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

func (s *Server) importFile(ctx context.Context, r *request) (reply, error) {
	if len(bytes.TrimSpace(r.data)) == 0 {
		return reply{}, wire.Invalid("body", "required: a pi session file (JSONL)")
	}
	res, err := s.svc.Import(ctx, r.data)
	if err != nil {
		return reply{}, err
	}
	out := importReply{SessionID: res.SessionID, EntryCount: res.Entries, LastSeq: res.LastSeq, SourceVersion: res.SourceVersion, Skipped: []lineReport{}}
	for _, le := range res.Skipped {
		out.Skipped = append(out.Skipped, lineReport{Line: le.Line, Reason: le.Reason})
	}
	return jsonReply(out)
}
