package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Holding is which shards this node serves from memory when it holds only
// a share of them (pi-node's --hold). A request for a session on a shard it
// does not serve is forwarded over NATS to one that does — the holders of
// shard k answer on wire.ForwardSubject in one queue group (the protocol is
// declared in internal/wire; this file is its transport) — and, when
// none answers, served here from the log (store.Unheld).
type Holding interface {
	// Shard is session sid's shard.
	Shard(sid string) int
	// Serves reports whether this node holds shard k and has caught up on it.
	Serves(k int) bool
}

// fwdConcurrency bounds the forwarded requests one node runs at once.
const fwdConcurrency = 256

// fwdSlack is how much longer than a read's minSeq wait a forwarded
// request may take before the forwarding node gives up on its holder.
const fwdSlack = 10 * time.Second

type forwardedKey struct{}

// forwarded reports whether ctx is a forwarded request's: it is served
// here, whatever this node holds, never forwarded again.
func forwarded(ctx context.Context) bool { return ctx.Value(forwardedKey{}) != nil }

// forwarder is the Server's side of forwarding: its subscriptions per shard.
type forwarder struct {
	mu   sync.Mutex
	subs map[int]*nats.Subscription
	sem  chan struct{}
	wg   sync.WaitGroup
}

// forwardedError is a holder's error reply, passed on as it came.
type forwardedError struct {
	status int
	body   wire.ErrorBody
}

func (e *forwardedError) Error() string { return e.body.Error.Message }

// perSession reports whether o is about one session named in its path:
// what a holder of its shard serves.
func perSession(o wire.Op) bool { return strings.Contains(o.Path, "{id}") }

// forward sends req, about session sid, to a holder of its session's shard
// when this node does not serve it; done is false when req is to be served
// here: the node serves the shard, the request was forwarded to it, or no
// holder answers.
func (s *Server) forward(ctx context.Context, o *op, req any, sid string) (rep reply, err error, done bool) {
	h := s.cfg.Holding
	if h == nil || s.cfg.Forward == nil || forwarded(ctx) || !perSession(o.Op) || session.ValidSessionID(sid) != nil {
		return reply{}, nil, false
	}
	k := h.Shard(sid)
	if h.Serves(k) {
		return reply{}, nil, false
	}
	m, err := s.fwdMsg(ctx, wire.ForwardSubject(s.cfg.ForwardPrefix, k, o.Name), req)
	if err != nil {
		return reply{}, err, true
	}
	if s.tooLargeToForward(len(m.Data)) {
		// A body the HTTP API takes (9 MiB) can be more than a NATS
		// message (8 MiB): served here from the log, as when no holder
		// is up, it gets the answer a holder would give — stored, or
		// 413 for a record over the limit — where forwarding it failed
		// with a 503 that clients retried in vain.
		return reply{}, nil, false
	}
	// What this node's own reads would wait for, which the holder's
	// Store may lack (a holder stale after an election or a partition):
	// read your writes through this node, across a restart too.
	wait, err := s.svc.ForwardWait(ctx, sid, o.LogRead())
	if err != nil {
		return reply{}, err, true
	}
	if wait > 0 {
		m.Header.Set(wire.HeaderFwdWait, strconv.FormatUint(wait, 10))
	}
	// Bounded: a holder killed with the request in hand never answers.
	fctx, cancel := context.WithTimeout(ctx, s.cfg.MinSeqTimeout+fwdSlack)
	defer cancel()
	res, err := s.cfg.Forward.RequestMsgWithContext(fctx, m)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return reply{}, nil, false // no holder is up: the log answers
	case err != nil && o.Method == http.MethodGet && ctx.Err() == nil:
		return reply{}, nil, false // a read is safe to serve here instead
	case err != nil:
		return reply{}, fmt.Errorf("forwarding %s to a holder of shard %d: %v: %w", o.Name, k, err, wire.ErrUnavailable), true
	case res.Header.Get(wire.HeaderFwdLocal) != "":
		return reply{}, nil, false
	}
	rep, err = s.fwdReply(res)
	switch {
	case err != nil:
	case o.Method != http.MethodGet:
		s.noteForwardedWrite(sid, rep.raw)
	case rep.fresh.Applied > 0: // set by fwdReply
		// Monotonic reads through this node: its next read of the
		// session may reach another holder, which must have applied as
		// much as this one reflected.
		s.svc.NoteAck(sid, rep.fresh.Applied)
	}
	return rep, err, true
}

// fwdMsg is the request req (a *wire.*Request) as a holder decodes it:
// the NATS body, and the principal in headers.
func (s *Server) fwdMsg(ctx context.Context, subject string, req any) (*nats.Msg, error) {
	data, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	m := nats.NewMsg(subject)
	m.Data = data
	p := principalOf(ctx)
	m.Header.Set(wire.HeaderFwdWho, p.name)
	m.Header.Set(wire.HeaderFwdScopes, strings.Join(p.scopes, ","))
	if p.cwdPrefix != "" {
		m.Header.Set(wire.HeaderFwdCwd, p.cwdPrefix)
	}
	return m, nil
}

// fwdReply turns a holder's reply into this node's.
func (s *Server) fwdReply(res *nats.Msg) (reply, error) {
	status, err := strconv.Atoi(res.Header.Get(wire.HeaderFwdStatus))
	if err != nil {
		return reply{}, fmt.Errorf("a forwarded request's reply has no status: %w", wire.ErrUnavailable)
	}
	if status >= 400 {
		fe := &forwardedError{status: status}
		if json.Unmarshal(res.Data, &fe.body) != nil {
			fe.body.Error = wire.ErrorDetail{Code: wire.CodeUnavailable, Message: "a holder's error reply could not be read"}
		}
		return reply{}, fe
	}
	rep := reply{raw: res.Data, ctype: res.Header.Get(wire.HeaderFwdType), filename: res.Header.Get(wire.HeaderFwdFile),
		servedBy: res.Header.Get(hdrNode)}
	f := freshnessOf(res.Header, s.cfg.Now())
	rep.fresh = &f
	return rep, nil
}

// freshnessOf reads the freshness headers of a holder's reply back.
func freshnessOf(h nats.Header, now time.Time) store.Freshness {
	var f store.Freshness
	f.Applied, _ = strconv.ParseUint(h.Get(hdrApplied), 10, 64)
	f.Known = f.Applied
	if lag, err := strconv.ParseUint(h.Get(hdrLag), 10, 64); err == nil {
		f.Known, f.EndKnown = f.Applied+lag, true
	}
	if h.Get(hdrStale) == "" {
		f.CaughtUpAt = now
	}
	return f
}

// fwdHeadroom is what a forwarded message's headers may take besides its
// body.
const fwdHeadroom = 4096

// tooLargeToForward reports whether a body of n bytes, request or reply,
// is too large for a NATS message between the nodes.
func (s *Server) tooLargeToForward(n int) bool {
	limit := s.cfg.Forward.MaxPayload()
	return limit > 0 && int64(n)+fwdHeadroom > limit
}

// noteForwardedWrite remembers the sequence a holder acknowledged a write
// at, so that this node's next read of the session waits for it wherever
// it is served (read your writes, as when this node wrote it itself).
func (s *Server) noteForwardedWrite(sid string, body []byte) {
	var res struct {
		SessionID string `json:"sessionId"`
		LastSeq   uint64 `json:"lastSeq"`
	}
	if json.Unmarshal(body, &res) != nil || res.LastSeq == 0 {
		return
	}
	if res.SessionID != "" {
		sid = res.SessionID // fork: the new session
	}
	s.svc.NoteAck(sid, res.LastSeq)
}

// ServeShard answers forwarded requests for shard k (this node holds it
// and has caught up), in the queue group of its holders.
func (s *Server) ServeShard(k int) error {
	if s.cfg.Forward == nil {
		return errors.New("api: ServeShard needs Config.Forward")
	}
	f := &s.fwd
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs[k] != nil {
		return nil
	}
	subject := wire.ForwardShardPrefix(s.cfg.ForwardPrefix, k) + ">"
	sub, err := s.cfg.Forward.QueueSubscribe(subject, wire.ForwardQueue, func(m *nats.Msg) {
		// The principal travels in headers, which a stored record can
		// carry too: only another node's request is believed.
		if why := notARequest(m.Reply); why != "" {
			// A consumer's delivery keeps the stored message's subject.
			name, ok := strings.CutPrefix(m.Subject, wire.ForwardShardPrefix(s.cfg.ForwardPrefix, k))
			if !ok {
				name = "-"
			}
			s.refuseDelivery(transportForward, name, m.Subject, m.Reply, why)
			return
		}
		s.dispatchForwarded(k, m)
	})
	if err != nil {
		return fmt.Errorf("serve shard %d: subscribe %s: %w", k, subject, err)
	}
	if f.subs == nil {
		f.subs = map[int]*nats.Subscription{}
	}
	f.subs[k] = sub
	// As StartNATS: a request right after must find this node.
	return s.cfg.Forward.Flush()
}

// StopShard stops answering forwarded requests for shard k. Drained, not
// dropped: a request the server routed here before it learned of the
// unsubscription is still answered (a dropped one would leave its sender
// waiting out fwdSlack); once StopShard returns, the server sends no more.
func (s *Server) StopShard(k int) error {
	f := &s.fwd
	f.mu.Lock()
	sub := f.subs[k]
	delete(f.subs, k)
	f.mu.Unlock()
	if sub == nil {
		return nil
	}
	if err := sub.Drain(); err != nil {
		return err
	}
	return s.cfg.Forward.Flush()
}

// stopForwarding ends every shard's subscription and waits for the
// forwarded requests in flight (Close).
func (s *Server) stopForwarding() {
	f := &s.fwd
	f.mu.Lock()
	subs := f.subs
	f.subs = nil
	f.mu.Unlock()
	for _, sub := range subs {
		_ = sub.Unsubscribe()
	}
	f.wg.Wait()
}

// dispatchForwarded serves m on a goroutine of its own (bounded).
func (s *Server) dispatchForwarded(k int, m *nats.Msg) {
	f := &s.fwd
	f.wg.Add(1)
	f.sem <- struct{}{}
	go func() {
		defer f.wg.Done()
		defer func() { <-f.sem }()
		start := time.Now()
		name, status := s.serveForwarded(k, m)
		s.metrics.observeRequest(transportForward, name, status, time.Since(start))
	}()
}

const transportForward = "forward"

// serveForwarded runs a forwarded request as its own node would have, with
// the principal the forwarding node authenticated.
func (s *Server) serveForwarded(k int, m *nats.Msg) (string, int) {
	ctx, cancel := context.WithTimeout(s.base, natsTimeout)
	defer cancel()
	name := strings.TrimPrefix(m.Subject, wire.ForwardShardPrefix(s.cfg.ForwardPrefix, k))
	o := opNamed(name)
	out := nats.NewMsg(m.Reply)
	if s.cfg.NodeName != "" {
		out.Header.Set(hdrNode, s.cfg.NodeName)
	}
	fail := func(err error) (string, int) {
		ae := s.mapError(transportForward, name, err)
		out.Data, _ = wire.EncodeJSON(ae.body)
		out.Header.Set(wire.HeaderFwdStatus, strconv.Itoa(ae.status))
		_ = m.RespondMsg(out)
		return name, ae.status
	}
	if o == nil {
		return fail(wire.Invalid("subject", fmt.Sprintf("%q is not an operation", name)))
	}
	p := &principal{name: "fwd:" + m.Header.Get(wire.HeaderFwdWho), cwdPrefix: m.Header.Get(wire.HeaderFwdCwd)}
	if sc := m.Header.Get(wire.HeaderFwdScopes); sc != "" {
		p.scopes = strings.Split(sc, ",")
	}
	ctx = context.WithValue(withPrincipal(ctx, p), forwardedKey{}, k)
	r, err := o.decode(m.Data, nil, nil)
	if err != nil {
		return fail(err)
	}
	if v := m.Header.Get(wire.HeaderFwdWait); v != "" {
		seq, _ := strconv.ParseUint(v, 10, 64)
		ctx = context.WithValue(ctx, fwdWaitKey{}, seq)
	}
	if v := m.Header.Get(wire.HeaderFwdShard); v != "" {
		only, err := strconv.Atoi(v)
		if err != nil || !s.cfg.Holding.Serves(only) {
			// Handed back a moment ago: the caller asks another holder.
			out.Header.Set(wire.HeaderFwdLocal, "not serving shard "+v)
			_ = m.RespondMsg(out)
			return name, http.StatusServiceUnavailable
		}
		ctx = context.WithValue(ctx, fwdShardKey{}, only)
	}
	rep, err := s.call(ctx, o, r)
	if err != nil {
		return fail(err)
	}
	body := rep.raw
	ctype := rep.ctype
	if rep.value != nil {
		if body, err = wire.EncodeJSON(rep.value); err != nil {
			return fail(err)
		}
		ctype = wire.ContentTypeJSON
	}
	if s.tooLargeToForward(len(body)) {
		// Bigger than a NATS message: the forwarding node reads it from
		// the log itself.
		out.Header.Set(wire.HeaderFwdLocal, "reply too large for NATS")
		_ = m.RespondMsg(out)
		return name, o.Status
	}
	out.Data = body
	out.Header.Set(wire.HeaderFwdStatus, strconv.Itoa(o.Status))
	out.Header.Set(wire.HeaderFwdType, ctype)
	if rep.filename != "" {
		out.Header.Set(wire.HeaderFwdFile, rep.filename)
	}
	if o.Method == http.MethodGet {
		for k, v := range s.readHeaders(*rep.fresh) {
			out.Header[k] = v
		}
	}
	if err := m.RespondMsg(out); err != nil {
		s.log.Warn("forwarded reply failed", keyOp, name, keyErr, err)
	}
	return name, o.Status
}

type fwdWaitKey struct{}
type fwdShardKey struct{}

// opNamed is the operation of that name, or nil.
func opNamed(name string) *op {
	for i := range ops {
		if ops[i].Name == name {
			return &ops[i]
		}
	}
	return nil
}

// listShared is the catalog of a node that serves only some shards: its
// own shards' pages and, for each other shard, a page from one of its
// holders, merged in id order and cut at the limit as store.List merges
// shards. A shard no node serves fails the list (503): a catalog without
// it would look complete and not be. Its freshness is that of every part.
func (s *Server) listShared(ctx context.Context, r *wire.ListRequest, f store.ListFilter) ([]wire.Info, string, store.Freshness, error) {
	all := s.svc.Store.All()
	var local store.Subset
	var remote []int
	for k, st := range all {
		if s.cfg.Holding.Serves(k) {
			local = append(local, st)
		} else {
			remote = append(remote, k)
		}
	}
	if f.Limit <= 0 {
		f.Limit = 100
	}
	var infos []wire.Info
	var fresh []store.Freshness
	more := false
	if len(local) > 0 {
		page, next, fr := store.List(local, f)
		infos, more = append(infos, page...), next != ""
		fresh = append(fresh, fr)
	}
	type part struct {
		page  wire.ListReply
		fresh store.Freshness
		err   error
	}
	parts := make([]part, len(remote))
	var wg sync.WaitGroup
	for i, k := range remote {
		wg.Go(func() {
			p := &parts[i]
			p.page, p.fresh, p.err = s.listShard(ctx, r, f, k, all[k])
		})
	}
	wg.Wait()
	for _, p := range parts {
		if p.err != nil {
			return nil, "", store.Freshness{}, p.err
		}
		infos, more = append(infos, p.page.Sessions...), more || p.page.Next != ""
		fresh = append(fresh, p.fresh)
	}
	infos, next := store.MergePages(infos, more, f.Limit)
	return infos, next, store.Combine(fresh...), nil
}

// listShard is shard k's page from one of its holders (holderPage); when
// none is up, this node's own Store of the shard answers if it follows the
// shard (taking it over: its freshness headers say how far it is).
func (s *Server) listShard(ctx context.Context, r *wire.ListRequest, f store.ListFilter, k int, own *store.Store) (wire.ListReply, store.Freshness, error) {
	out, fresh, none, err := holderPage[wire.ListReply](ctx, s, shardAsk{k: k, req: r, verb: "listing", what: "page"})
	if none && own.Held() {
		var fr store.Freshness
		out.Sessions, out.Next, fr = store.List(store.Subset{own}, f) // the request's own filter (since, tenant) included
		return out, fr, nil
	}
	return out, fresh, err
}

// shardAsk is what holderPage asks shard k's holders: req, its operation's
// part of the shard (Pi-Fwd-Shard).
type shardAsk struct {
	k    int
	req  interface{ Op() wire.Op }
	wait func() uint64 // nil, or asked at each attempt: sent as Pi-Fwd-Wait when > 0, what the holder's read must reflect
	// In errors: "listing" shard k, shard k's "page".
	verb, what string
}

// holderPage is a shard's page from one of its holders: a.req forwarded
// to the shard's queue group, the reply decoded as a T, with the holder's
// freshness. One that handed the shard back a moment ago says so
// (Pi-Fwd-Local) and another is asked, three times at most. none reports
// that no holder is up (err says no node serves the shard): the caller's
// own Store of the shard may answer instead.
func holderPage[T any](ctx context.Context, s *Server, a shardAsk) (out T, fresh store.Freshness, none bool, err error) {
	name := a.req.Op().Name
	for range 3 {
		m, err := s.fwdMsg(ctx, wire.ForwardSubject(s.cfg.ForwardPrefix, a.k, name), a.req)
		if err != nil {
			return out, store.Freshness{}, false, err
		}
		m.Header.Set(wire.HeaderFwdShard, strconv.Itoa(a.k))
		if a.wait != nil {
			if w := a.wait(); w > 0 {
				m.Header.Set(wire.HeaderFwdWait, strconv.FormatUint(w, 10))
			}
		}
		fctx, cancel := context.WithTimeout(ctx, s.cfg.MinSeqTimeout+fwdSlack)
		res, err := s.cfg.Forward.RequestMsgWithContext(fctx, m)
		cancel()
		switch {
		case errors.Is(err, nats.ErrNoResponders):
			return out, store.Freshness{}, true, fmt.Errorf("no node serves shard %d right now (its holders are down or catching up): %w", a.k, wire.ErrUnavailable)
		case err != nil:
			return out, store.Freshness{}, false, fmt.Errorf("%s shard %d at a holder: %v: %w", a.verb, a.k, err, wire.ErrUnavailable)
		case res.Header.Get(wire.HeaderFwdLocal) != "":
			continue
		}
		rep, err := s.fwdReply(res)
		if err != nil {
			return out, store.Freshness{}, false, err
		}
		if err := json.Unmarshal(rep.raw, &out); err != nil {
			return out, store.Freshness{}, false, fmt.Errorf("shard %d's %s: %v: %w", a.k, a.what, err, wire.ErrUnavailable)
		}
		return out, *rep.fresh, false, nil
	}
	return out, store.Freshness{}, false, fmt.Errorf("shard %d changed hands three times while %s it: %w", a.k, a.verb, wire.ErrUnavailable)
}
