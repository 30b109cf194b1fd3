package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"time"

	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// op is one operation of wire's table with what serves it on both
// transports: decode builds its typed request (a *wire.*Request), run
// serves that.
type op struct {
	wire.Op
	decode func(body []byte, path func(string) string, q url.Values) (any, error)
	run    func(s *Server, ctx context.Context, req any) (reply, error)
}

// handle is the op of o served by run, on requests of run's type, which
// must be o's.
func handle[T wire.Request](o wire.Op, run func(*Server, context.Context, *T) (reply, error)) op {
	var zero T
	if zero.Op().Name != o.Name {
		panic("api: " + o.Name + " served on " + zero.Op().Name + "'s request") // a programming error, caught by every test
	}
	return op{Op: o,
		decode: func(body []byte, path func(string) string, q url.Values) (any, error) {
			return decode[T](body, path, q)
		},
		run: func(s *Server, ctx context.Context, req any) (reply, error) { return run(s, ctx, req.(*T)) },
	}
}

// reply is an operation's result: a value to encode as JSON, or bytes to
// send as they are (pre-built JSON of tree and context, JSONL of export).
type reply struct {
	value    any
	raw      []byte
	ctype    string
	filename string // HTTP: offered as a download under this name
	// fresh is what the body of a read reflects (see store.Freshness),
	// for its freshness headers; nil when it read no session (call fills
	// in the Store's).
	fresh *store.Freshness
	// servedBy is the node that answered a forwarded request (forward.go).
	servedBy string
}

func jsonReply(v any) (reply, error) { return reply{value: v}, nil }

// ops serves wire.Ops on both transports, every one but watch (HTTP
// only: see watch.go). TestServesWire checks that none is missing.
var ops = []op{
	handle(wire.OpCreate, (*Server).create),
	handle(wire.OpAppend, (*Server).appendEntries),
	handle(wire.OpList, (*Server).list),
	handle(wire.OpSearch, (*Server).search),
	handle(wire.OpGet, (*Server).get),
	handle(wire.OpEntries, (*Server).entries),
	handle(wire.OpTree, (*Server).tree),
	handle(wire.OpContext, (*Server).contextJSON),
	handle(wire.OpContextBuild, (*Server).contextBuild),
	handle(wire.OpCursorGet, (*Server).cursorGet),
	handle(wire.OpCursorSet, (*Server).cursorSet),
	handle(wire.OpCursorDelete, (*Server).cursorDelete),
	handle(wire.OpCursorList, (*Server).cursorList),
	handle(wire.OpFork, (*Server).fork),
	handle(wire.OpExport, (*Server).export),
	handle(wire.OpImport, (*Server).importFile),
	handle(wire.OpStatus, (*Server).status),
	handle(wire.OpDelete, (*Server).deleteSession),
	handle(wire.OpArchiveList, (*Server).archiveList),
	handle(wire.OpArchiveRestore, (*Server).archiveRestore),
	handle(wire.OpArchiveRun, (*Server).archiveRun),
}

// params are what call reads of every request before its operation runs:
// the fields of these names, where its type has them.
type params struct {
	SessionID   string
	MinSeq      uint64
	Consistency string
}

// paramsOf reads params from req, a *wire.*Request.
func paramsOf(req any) params {
	var p params
	v := reflect.ValueOf(req).Elem()
	if f := v.FieldByName("SessionID"); f.IsValid() {
		p.SessionID = f.String()
	}
	if f := v.FieldByName("MinSeq"); f.IsValid() {
		p.MinSeq = f.Uint()
	}
	if f := v.FieldByName("Consistency"); f.IsValid() {
		p.Consistency = f.String()
	}
	return p
}

// call runs o for req on either transport: first the wait for what the read
// must reflect (minSeq; for log reads also this node's own writes and, with
// consistency=strong, the leader's last sequence), bounded by
// MinSeqTimeout, then the operation, whose reads return what they saw.
func (s *Server) call(ctx context.Context, o *op, req any) (reply, error) {
	r := paramsOf(req)
	if rep, err, done := s.forward(ctx, o, req, r.SessionID); done {
		return rep, err
	}
	b, err := s.await(ctx, o.Op, r)
	if err != nil {
		return reply{}, err
	}
	ctx = context.WithValue(ctx, barrierKey{}, b)
	if err := s.confine(ctx, o.Op, req); err != nil {
		return reply{}, notFoundField(o.Op, err)
	}
	rep, err := o.run(s, ctx, req)
	if o.Method == http.MethodGet && rep.fresh == nil {
		// Only reads carry freshness headers.
		f := store.FreshnessOf(s.svc.Store)
		if r.SessionID != "" {
			f = s.svc.Store.For(r.SessionID).Freshness()
		}
		rep.fresh = &f
	}
	return rep, notFoundField(o.Op, err)
}

// notFoundField names the input of a 404 that names none: the client of a
// missing cursor, else the session of a per-session operation. (An entry
// or leaf that is missing is named where it is looked up.)
func notFoundField(o wire.Op, err error) error {
	var fe *wire.FieldError
	if !errors.Is(err, wire.ErrNotFound) || errors.As(err, &fe) || errors.Is(err, errNoArchive) || !perSession(o) {
		return err
	}
	if o.Name == wire.OpCursorGet.Name {
		return wire.Field("client", err)
	}
	return wire.Field("sessionId", err)
}

// await waits until this node's Store has applied what a read of op must
// reflect: read your writes (minSeq: the lastSeq a write returned, possibly
// on another node; and the writes this node acknowledged itself), and
// linearizability on request.
func (s *Server) await(ctx context.Context, o wire.Op, r params) (service.Barrier, error) {
	var b service.Barrier
	b.Raise(r.MinSeq, "minSeq", "minSeq %d", r.MinSeq)
	if o.LogRead() {
		sid := r.SessionID
		if o == wire.OpList || o == wire.OpSearch {
			sid = ""
		}
		var err error
		if b, err = s.svc.ReadBarrier(ctx, sid, r.MinSeq, r.Consistency); err != nil {
			return b, err
		}
	}
	if seq, ok := ctx.Value(fwdWaitKey{}).(uint64); ok {
		b.Raise(seq, "", "sequence %d, which the node that forwarded this request must reflect (its own write, its last read, or the log's end when it started)", seq)
	}
	var wctx context.Context
	for _, w := range b.Waits {
		if store.AppliedAt(s.svc.Store, w.Seq) {
			continue // the usual case: no timer to set up
		}
		if wctx == nil {
			var cancel context.CancelFunc
			wctx, cancel = context.WithTimeout(ctx, s.cfg.MinSeqTimeout)
			defer cancel()
		}
		if err := store.WaitAt(wctx, s.svc.Store, w.Seq); err != nil {
			if !errors.Is(err, wire.ErrInvalid) {
				err = fmt.Errorf("%s not applied on node %s within %v: %w", w.Reason, s.cfg.NodeName, s.cfg.MinSeqTimeout, err)
			}
			if w.Field != "" {
				err = wire.Field(w.Field, err)
			}
			return b, err
		}
	}
	return b, nil
}

// barrierKey holds, in a request's context, the Barrier it awaited: what
// a search's index must reach as well.
type barrierKey struct{}

func (s *Server) create(ctx context.Context, r *wire.CreateRequest) (reply, error) {
	res, err := s.svc.Create(ctx, *r)
	if err != nil {
		return reply{}, err
	}
	return jsonReply(res)
}

func (s *Server) appendEntries(ctx context.Context, r *wire.AppendRequest) (reply, error) {
	if err := session.ValidSessionID(r.SessionID); err != nil {
		return reply{}, err
	}
	start := time.Now()
	res, err := s.svc.Append(ctx, r.SessionID, *r)
	s.metrics.observeAppend(time.Since(start), err)
	if err != nil {
		return reply{}, err
	}
	return jsonReply(res)
}

func (s *Server) fork(ctx context.Context, r *wire.ForkRequest) (reply, error) {
	if err := session.ValidSessionID(r.SessionID); err != nil {
		return reply{}, err
	}
	if r.EntryID == "" {
		return reply{}, wire.Invalid("entryId", "required: the entry the new session ends at")
	}
	id, last, err := s.svc.Fork(ctx, r.SessionID, r.EntryID, r.Pi11)
	if err != nil {
		return reply{}, err
	}
	return jsonReply(wire.ForkReply{SessionID: id, LastSeq: last})
}

func (s *Server) importFile(ctx context.Context, r *wire.ImportRequest) (reply, error) {
	if len(bytes.TrimSpace(r.File)) == 0 {
		return reply{}, wire.Invalid("body", "required: a pi session file (JSONL)")
	}
	res, err := s.svc.Import(ctx, *r)
	if err != nil {
		return reply{}, err
	}
	if res.Skipped == nil {
		res.Skipped = []tree.LineError{} // the reply always lists them
	}
	return jsonReply(res)
}

// opContextBuild is ops' context.build, which pi.v1.context with entries
// (and no sessionId) is served as.
var opContextBuild = func() *op {
	if o := opNamed(wire.OpContextBuild.Name); o != nil {
		return o
	}
	panic("api: context.build is not in ops") // a programming error, caught by every test
}()
