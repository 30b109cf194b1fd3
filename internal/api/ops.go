package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// op is one operation of wire's table with the method that serves it on
// both transports.
type op struct {
	wire.Op
	run func(s *Server, ctx context.Context, r *request) (reply, error)
}

// reply is an operation's result: a value to encode as JSON, or bytes to
// send as they are (pre-built JSON of tree and context, JSONL of export).
type reply struct {
	value    any
	raw      []byte
	ctype    string
	filename string // HTTP: offered as a download under this name
}

func jsonReply(v any) (reply, error) { return reply{value: v}, nil }

// ops serves wire.Ops on both transports, every one but watch (HTTP
// only: see watch.go). TestServesWire checks that none is missing.
var ops = []op{
	{wire.OpCreate, (*Server).create},
	{wire.OpAppend, (*Server).appendEntries},
	{wire.OpList, (*Server).list},
	{wire.OpGet, (*Server).get},
	{wire.OpEntries, (*Server).entries},
	{wire.OpTree, (*Server).tree},
	{wire.OpContext, (*Server).contextJSON},
	{wire.OpCursorGet, (*Server).cursorGet},
	{wire.OpCursorSet, (*Server).cursorSet},
	{wire.OpCursorDelete, (*Server).cursorDelete},
	{wire.OpCursorList, (*Server).cursorList},
	{wire.OpFork, (*Server).fork},
	{wire.OpExport, (*Server).export},
	{wire.OpImport, (*Server).importFile},
	{wire.OpStatus, (*Server).status},
	{wire.OpArchiveList, (*Server).archiveList},
	{wire.OpArchiveRestore, (*Server).archiveRestore},
	{wire.OpArchiveRun, (*Server).archiveRun},
}

// call runs o for r on either transport: first the read-your-writes wait
// for minSeq, bounded by MinSeqTimeout, then the operation.
func (s *Server) call(ctx context.Context, o *op, r *request) (reply, error) {
	if err := s.waitMinSeq(ctx, r.MinSeq); err != nil {
		return reply{}, wire.Field("minSeq", err)
	}
	rep, err := o.run(s, ctx, r)
	return rep, notFoundField(o.Op, err)
}

// notFoundField names the input of a 404 that names none: the client of a
// missing cursor, else the session of a per-session operation. (An entry
// or leaf that is missing is named where it is looked up.)
func notFoundField(o wire.Op, err error) error {
	var fe *wire.FieldError
	if !errors.Is(err, wire.ErrNotFound) || errors.As(err, &fe) || errors.Is(err, errNoArchive) || !strings.Contains(o.Path, "{id}") {
		return err
	}
	if o.Name == wire.OpCursorGet.Name {
		return wire.Field("client", err)
	}
	return wire.Field("sessionId", err)
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
	return jsonReply(wire.ForkReply{SessionID: id, LastSeq: last})
}

func (s *Server) importFile(ctx context.Context, r *request) (reply, error) {
	if len(bytes.TrimSpace(r.data)) == 0 {
		return reply{}, wire.Invalid("body", "required: a pi session file (JSONL)")
	}
	res, err := s.svc.Import(ctx, wire.ImportRequest{File: r.data, Strict: r.Strict})
	if err != nil {
		return reply{}, err
	}
	if res.Skipped == nil {
		res.Skipped = []tree.LineError{} // the reply always lists them
	}
	return jsonReply(res)
}
