package apiclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pifleet/sessionlog/internal/size"
	"github.com/pifleet/sessionlog/internal/wire"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// NATSOptions say how to reach pi-node's NATS micro service.
type NATSOptions struct {
	// URL of the NATS server(s) the pi-nodes are connected to (DialNATS).
	URL string
	// Authentication and TLS (DialNATS): a credentials file, or user and
	// password; a client certificate and the CA of the server's.
	Creds, User, Password  string
	TLSCert, TLSKey, TLSCA string
	// Name identifies the connection in the server's monitoring (DialNATS).
	Name string
	// Timeout bounds connecting and each request. Default 30 s.
	Timeout time.Duration
	// MinSeq is sent with every request: read your writes from any node.
	MinSeq uint64
	// Consistency is sent with every log read that names none itself
	// (wire.ConsistencyStrong: linearizable reads).
	Consistency string
	// Reconnect makes a lost connection reconnect for as long as the
	// client lives, for commands that run until stopped (pi-ctl sync);
	// otherwise it gives up after a few attempts (DialNATS).
	Reconnect bool
}

// NATS sends each operation as a NATS request to pi.v1.<op>; any pi-node of
// the service's queue group answers.
type NATS struct {
	nc      *nats.Conn
	owned   bool   // Close closes nc
	where   string // for messages
	timeout time.Duration
	minSeq  uint64
	consist string // Consistency
}

var _ Client = (*NATS)(nil)

// DialNATS connects to o.URL once, without retrying in the background
// before the first connection: a caller wants to hear at once that the
// server is not there (an *UnreachableError). The connection reconnects by
// itself afterwards; Close closes it.
func DialNATS(o NATSOptions) (*NATS, error) {
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	opts := []nats.Option{nats.Timeout(o.Timeout), nats.MaxReconnects(5)}
	if o.Reconnect {
		opts = append(opts, nats.MaxReconnects(-1))
	}
	if o.Name != "" {
		opts = append(opts, nats.Name(o.Name))
	}
	if o.Creds != "" {
		opts = append(opts, nats.UserCredentials(o.Creds))
	}
	if o.User != "" {
		// The users file lets a user subscribe to its own inbox only.
		opts = append(opts, nats.UserInfo(o.User, o.Password), nats.CustomInboxPrefix(wire.InboxPrefix(o.User)))
	}
	if o.TLSCert != "" {
		opts = append(opts, nats.ClientCert(o.TLSCert, o.TLSKey))
	}
	if o.TLSCA != "" {
		opts = append(opts, nats.RootCAs(o.TLSCA))
	}
	nc, err := nats.Connect(o.URL, opts...)
	if ce := certificateError(o.URL, err); ce != nil {
		return nil, ce
	}
	if err != nil {
		return nil, &UnreachableError{Where: o.URL, Err: err, Hint: "is pi-node's NATS server running at this URL?"}
	}
	c := NewNATS(nc, o)
	c.owned, c.where = true, o.URL
	return c, nil
}

// NewNATS returns a client on an existing connection, which Close leaves
// open. Only Timeout, MinSeq and Consistency of o are used.
func NewNATS(nc *nats.Conn, o NATSOptions) *NATS {
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	where := nc.ConnectedUrlRedacted()
	if where == "" {
		where = "NATS"
	}
	return &NATS{nc: nc, where: where, timeout: o.Timeout, minSeq: o.MinSeq, consist: o.Consistency}
}

// Close closes the connection if DialNATS opened it.
func (b *NATS) Close() {
	if b.owned {
		b.nc.Close()
	}
}

// Do sends req to its operation's subject in wire's table; see Client.
func (b *NATS) Do(ctx context.Context, req wire.Request) ([]byte, error) {
	op := req.Op().Name
	subject, data, err := wire.EncodeNATS(wire.WithConsistency(req, b.consist), b.minSeq)
	if err != nil {
		return nil, err
	}
	// The server would drop an oversized message without a word; say why
	// and what to do instead.
	if limit := b.nc.MaxPayload(); limit > 0 && int64(len(data)) > limit {
		return nil, &Error{Op: op, Status: http.StatusRequestEntityTooLarge, Local: true, ErrorDetail: wire.ErrorDetail{Code: wire.CodeTooLarge,
			Message: fmt.Sprintf("%s request of %s exceeds the NATS server's max_payload of %s", op, size.Human(int64(len(data))), size.Human(limit))},
			Hint: "send it over HTTP: pi-node takes bodies of up to 16 MiB there"}
	}
	wait := b.timeout // what the error says: the caller's deadline when it is sooner
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(d))
	}
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	m := nats.NewMsg(subject)
	m.Data = data
	for k, vs := range wire.NATSHeader(req) {
		m.Header[k] = vs
	}
	msg, err := b.nc.RequestMsgWithContext(ctx, m)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, &UnreachableError{Where: b.where, Err: fmt.Errorf("no pi-node serves %s", subject),
			Hint: "is pi-node running and connected to this NATS server?"}
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, ctx.Err() // interrupted, not slow
		}
		// A request the server refused to carry goes unanswered: the
		// refusal is only the connection's last error.
		if le := b.nc.LastError(); errors.Is(le, nats.ErrPermissionViolation) && strings.Contains(le.Error(), `"`+subject+`"`) {
			return nil, &Error{Op: op, Status: http.StatusForbidden, ErrorDetail: wire.ErrorDetail{Code: wire.CodeForbidden,
				Message: fmt.Sprintf("this NATS user may not publish to %s: its role does not allow %s", subject, op)},
				Hint: "use a user whose role allows it (docs/SECURITY.md, NATS roles)"}
		}
		return nil, &UnreachableError{Where: b.where, Err: fmt.Errorf("no reply to %s within %v", subject, wait.Round(time.Millisecond)), Timeout: true}
	case errors.Is(err, context.Canceled):
		return nil, err
	case err != nil:
		return nil, &UnreachableError{Where: b.where, Err: err}
	}
	if code := msg.Header.Get(micro.ErrorCodeHeader); code != "" {
		status, _ := strconv.Atoi(code)
		ae := decodeError(op, status, msg.Data, msg.Header.Get(micro.ErrorHeader))
		if status == http.StatusRequestEntityTooLarge {
			ae.Hint = "the reply or the request exceeds NATS's max_payload: use the HTTP API"
		}
		return nil, ae
	}
	if len(msg.Data) == 0 {
		return nil, nil
	}
	return msg.Data, nil
}
