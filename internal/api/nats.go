package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/pifleet/sessionlog/internal/wire"
)

const (
	transportNATS = "nats"
	// natsConcurrency bounds the requests one service runs at once; past it
	// the subscription stops delivering until a handler finishes, and
	// requests queue in the client library (backpressure, not goroutines
	// without bound).
	natsConcurrency = 256
	// natsTimeout bounds one request; a requester has usually given up
	// long before (nats req waits 5 s by default).
	natsTimeout = time.Minute
)

// Compile-time check: StartNATS hands out a micro.Service.
var _ micro.Service = (*natsService)(nil)

// natsService is the micro.Service StartNATS returns. Handlers run on
// goroutines of their own (micro delivers one endpoint's requests one at a
// time, and a minSeq wait must not hold up the next request); Stop drains
// the subscriptions, then waits for those goroutines.
type natsService struct {
	micro.Service
	sem chan struct{}

	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup
}

// StartNATS adds the pi-sessions micro service on nc: one endpoint per
// operation, subject pi.v1.<op> in the default queue group, so every
// pi-node shares the load. Request bodies are the HTTP bodies plus the path
// and query parameters as fields; replies are the HTTP response bodies;
// errors carry the HTTP status as the micro error code and the JSON error
// object as the body. Stop the returned service (or Close the Server) to
// drain it.
func (s *Server) StartNATS(nc *nats.Conn) (micro.Service, error) {
	ms, err := micro.AddService(nc, micro.Config{
		Name:        ServiceName,
		Version:     ServiceVersion,
		Description: "pi session trees on NATS JetStream; the same operations as HTTP /v1 (see docs/API.md)",
		Metadata:    map[string]string{"node": s.cfg.NodeName},
	})
	if err != nil {
		return nil, fmt.Errorf("start micro service %s: %w", ServiceName, err)
	}
	n := &natsService{Service: ms, sem: make(chan struct{}, natsConcurrency)}
	g := ms.AddGroup(strings.TrimSuffix(wire.SubjectPrefix, ".")) // pi.v1: every endpoint is pi.v1.<op>
	for i := range ops {
		o := &ops[i]
		h := micro.HandlerFunc(func(req micro.Request) {
			if why := notARequest(req.Reply()); why != "" {
				s.refuseDelivery(transportNATS, o.Name, req.Subject(), req.Reply(), why)
				return
			}
			dr := detachedRequest{req, nc}
			if err := s.reqLim.acquire(); err != nil {
				s.metrics.observeRequest(transportNATS, o.Name, s.natsError(o.Name, dr, err), 0)
				return
			}
			n.dispatch(func() { defer s.reqLim.release(); s.serveNATS(nc, o, dr) }, dr, s.reqLim.release)
		})
		// micro endpoint names allow no dots: cursor.get is named
		// cursor_get and served on subject pi.v1.cursor.get.
		name := strings.ReplaceAll(o.Name, ".", "_")
		err := g.AddEndpoint(name, h, micro.WithEndpointSubject(strings.TrimPrefix(o.Subject, wire.SubjectPrefix)),
			micro.WithEndpointMetadata(map[string]string{"http": o.Route()}))
		if err != nil {
			_ = ms.Stop()
			return nil, fmt.Errorf("add endpoint %s: %w", o.Subject, err)
		}
	}
	s.mu.Lock()
	s.nats = append(s.nats, n)
	s.mu.Unlock()
	// The endpoints' subscriptions are sent asynchronously: a request from
	// another connection right after StartNATS could find no responders.
	if err := nc.Flush(); err != nil {
		return n, fmt.Errorf("start micro service %s: %w", ServiceName, err)
	}
	return n, nil
}

// notARequest says why a message on a subject pi-node serves (pi.v1.<op>,
// pi.fwd.<k>.<op>) was not sent by a client as a request, or "" when it
// was. Only a client's publish is checked against its role, so only then
// does the subject say who may ask. The server delivers on its own account:
// a JetStream consumer delivers stored messages, headers included, to any
// deliver subject or pull request's reply subject, always with a $JS.ACK
// reply (AckNone too; clients may not publish one); heartbeats, direct
// gets, API responses and pi-node's own replies carry no reply at all. A
// gateway may wrap a reply in _GR_.<cluster>.<server>.
func notARequest(reply string) string {
	if strings.HasPrefix(reply, gwReplyPrefix) {
		if t := strings.SplitN(reply, ".", 4); len(t) == 4 {
			reply = t[3]
		}
	}
	switch {
	case reply == "":
		return "no reply subject: a JetStream response or heartbeat, or a reply to someone"
	case strings.HasPrefix(reply, "$"):
		return "a server's reply subject: a JetStream consumer's delivery"
	}
	return ""
}

// gwReplyPrefix starts a reply subject a gateway rewrote.
const gwReplyPrefix = "_GR_."

// refuseDelivery drops a message notARequest refused, unanswered (an
// answer to $JS.ACK would acknowledge it), and audits it.
func (s *Server) refuseDelivery(transport, op, subject, reply, why string) {
	s.metrics.auth.WithLabelValues(authNotRequest).Inc()
	// No client to name: the server delivered it; one source for all.
	if !s.audit.Refused("nats deliveries") {
		return
	}
	s.log.Warn("audit: not a request", keyTransport, transport, keyOp, op, keyOutcome, authNotRequest,
		"subject", subject, "reply", reply, "why", why)
}

// dispatch runs fn on its own goroutine, unless the service is stopping:
// drained subscriptions may still deliver, and those requests are told to
// go elsewhere (and refused is called instead of fn).
func (n *natsService) dispatch(fn func(), req micro.Request, refused func()) {
	n.mu.Lock()
	if n.stopped {
		n.mu.Unlock()
		refused()
		const msg = "this node is stopping its service; retry (another node will answer)"
		body, _ := wire.EncodeJSON(wire.ErrorBody{Error: wire.ErrorDetail{Code: wire.CodeUnavailable, Message: msg}})
		_ = req.Error(statusText(http.StatusServiceUnavailable), msg, body)
		return
	}
	n.wg.Add(1)
	n.mu.Unlock()
	n.sem <- struct{}{}
	go func() {
		defer n.wg.Done()
		defer func() { <-n.sem }()
		fn()
	}()
}

// detachedRequest answers a micro request from a goroutine of our own.
// micro's handler wrapper reads the request's error state as soon as
// Handle returns, which is before dispatch's goroutine answers: answering
// through the request would race with that read. So the answer goes
// straight to the reply subject, in micro's format (micro's per-endpoint
// error count misses these; pi_api_requests_total does not).
type detachedRequest struct {
	micro.Request
	nc *nats.Conn
}

func (r detachedRequest) Respond(data []byte, opts ...micro.RespondOpt) error {
	return r.publish(&nats.Msg{Data: data}, opts)
}

func (r detachedRequest) Error(code, description string, data []byte, opts ...micro.RespondOpt) error {
	return r.publish(&nats.Msg{Data: data, Header: nats.Header{micro.ErrorHeader: {description}, micro.ErrorCodeHeader: {code}}}, opts)
}

func (r detachedRequest) publish(m *nats.Msg, opts []micro.RespondOpt) error {
	if r.Reply() == "" {
		return nats.ErrMsgNoReply
	}
	for _, o := range opts {
		o(m)
	}
	m.Subject = r.Reply()
	return r.nc.PublishMsg(m)
}

// Stop drains the endpoints and waits for the requests in flight.
func (n *natsService) Stop() error {
	err := n.Service.Stop()
	n.mu.Lock()
	n.stopped = true
	n.mu.Unlock()
	n.wg.Wait()
	return err
}

// serveNATS decodes the request, runs the operation and replies.
func (s *Server) serveNATS(nc *nats.Conn, o *op, req micro.Request) {
	start := time.Now()
	ran, status := s.natsReply(nc, o, req)
	s.metrics.observeRequest(transportNATS, ran.Name, status, time.Since(start))
}

// natsReply serves req as o, or as the operation its body names instead
// (pi.v1.context with entries is context.build), and returns that
// operation and the status, for the metrics.
func (s *Server) natsReply(nc *nats.Conn, o *op, req micro.Request) (*op, int) {
	ctx, cancel := context.WithTimeout(s.base, natsTimeout)
	defer cancel()
	var r any
	var err error
	if o.Body == wire.JSONLBody && int64(len(req.Data())) > s.cfg.MaxImportBody ||
		o.Body != wire.JSONLBody && int64(len(req.Data())) > s.cfg.MaxBody {
		err = wire.Field("body", fmt.Errorf("larger than the limit: %w", wire.ErrTooLarge))
	} else {
		o, r, err = natsRequest(o, req)
	}
	var rep reply
	if err == nil {
		rep, err = s.call(withPrincipal(ctx, natsPeer), o, r)
	}
	if err != nil {
		status := s.natsError(o.Name, req, err)
		s.auditAdmin(natsPeer, transportNATS, o.Name, status, err)
		return o, status
	}
	s.auditAdmin(natsPeer, transportNATS, o.Name, o.Status, nil)
	body := rep.raw
	if rep.value != nil {
		if body, err = wire.EncodeJSON(rep.value); err != nil {
			return o, s.natsError(o.Name, req, err)
		}
	}
	// micro's Respond loses nats.ErrMaxPayload in its wrapping; check first.
	if limit := nc.MaxPayload(); limit > 0 && int64(len(body)) > limit {
		return o, s.natsError(o.Name, req, fmt.Errorf("reply of %d bytes exceeds the NATS max_payload of %d; use HTTP: %w", len(body), limit, wire.ErrTooLarge))
	}
	h := s.natsHeaders()
	if rep.servedBy != "" {
		h[wire.HeaderServedBy] = []string{rep.servedBy}
	}
	if o.Method == http.MethodGet {
		for k, v := range s.readHeaders(*rep.fresh) {
			h[k] = v
		}
	}
	if err := req.Respond(body, micro.WithHeaders(h)); err != nil {
		s.log.Warn("reply failed", keyTransport, transportNATS, keyOp, o.Name, keyErr, err)
	}
	return o, o.Status // as HTTP would answer, so metrics compare across transports
}

// natsRequest decodes req's body into o's request, or into context.build's
// when it is pi.v1.context with entries instead of a session (the NATS
// form of POST /v1/context), which it returns as the operation to run.
func natsRequest(o *op, req micro.Request) (*op, any, error) {
	r, err := o.decode(req.Data(), nil, nil)
	if err != nil {
		return o, nil, err
	}
	switch r := r.(type) {
	case *wire.ImportRequest:
		// The body is the file: its flags come as headers.
		if v := req.Headers().Get(wire.HeaderStrict); v != "" {
			r.Strict, err = parseBool(wire.HeaderStrict, v)
		}
	case *wire.ContextRequest:
		if r.SessionID != "" {
			break
		}
		b, err := opContextBuild.decode(req.Data(), nil, nil)
		if err != nil {
			return o, nil, err
		}
		if b.(*wire.ContextBuildRequest).Entries != nil {
			return opContextBuild, b, nil
		}
	}
	return o, r, err
}

// natsHeaders are the headers of every NATS reply: the node's name.
func (s *Server) natsHeaders() micro.Headers {
	h := micro.Headers{}
	if s.cfg.NodeName != "" {
		h[hdrNode] = []string{s.cfg.NodeName}
	}
	return h
}

// natsError replies with the mapped error: code = HTTP status, description
// = message, body = the JSON error object.
func (s *Server) natsError(op string, req micro.Request, err error) int {
	ae := s.mapError(transportNATS, op, err)
	body, _ := wire.EncodeJSON(ae.body)
	// The description travels in a header: no line breaks.
	desc := strings.NewReplacer("\r", " ", "\n", " ").Replace(ae.body.Error.Message)
	if rerr := req.Error(statusText(ae.status), desc, body, micro.WithHeaders(s.natsHeaders())); rerr != nil {
		s.log.Warn("error reply failed", keyTransport, transportNATS, keyOp, op, keyErr, rerr)
	}
	return ae.status
}
