package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// natsSubjectPrefix is the micro service's group: operation op is served
// on pi.v1.<op> (cursor.get on pi.v1.cursor.get).
const natsSubjectPrefix = "pi.v1."

// natsBackend sends each operation as a NATS request to pi.v1.<op>; any
// pi-node of the queue group answers.
type natsBackend struct {
	nc      *nats.Conn
	url     string // as given, for messages
	timeout time.Duration
	minSeq  uint64
}

var _ backend = (*natsBackend)(nil)

// natsOptions is how to connect: URL(s), credentials, TLS.
type natsOptions struct {
	url, creds, user, password string
	tlsCert, tlsKey, tlsCA     string
	timeout                    time.Duration
	minSeq                     uint64
}

// dialNATS connects once, without retrying in the background: an operator
// wants to hear at once that the server is not there.
func dialNATS(o natsOptions) (*natsBackend, error) {
	opts := []nats.Option{nats.Name("pi-ctl"), nats.Timeout(o.timeout), nats.MaxReconnects(5)}
	if o.creds != "" {
		opts = append(opts, nats.UserCredentials(o.creds))
	}
	if o.user != "" {
		opts = append(opts, nats.UserInfo(o.user, o.password))
	}
	if o.tlsCert != "" {
		opts = append(opts, nats.ClientCert(o.tlsCert, o.tlsKey))
	}
	if o.tlsCA != "" {
		opts = append(opts, nats.RootCAs(o.tlsCA))
	}
	nc, err := nats.Connect(o.url, opts...)
	if err != nil {
		return nil, &unreachableError{where: o.url, err: err,
			hint: "is pi-node running? point --server or $PI_CTL_SERVER at its NATS server, or use --http URL"}
	}
	return &natsBackend{nc: nc, url: o.url, timeout: o.timeout, minSeq: o.minSeq}, nil
}

func (b *natsBackend) close() { b.nc.Close() }

func (b *natsBackend) do(ctx context.Context, op string, p params, body []byte) ([]byte, error) {
	data := body
	if data == nil {
		var err error
		if data, err = encodeJSON(withMinSeq(p, b.minSeq)); err != nil {
			return nil, err
		}
	}
	// The server would drop an oversized message without a word; say why
	// and what to do instead.
	if limit := b.nc.MaxPayload(); limit > 0 && int64(len(data)) > limit {
		return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Code: "too_large",
			Message: fmt.Sprintf("%s request of %s exceeds the NATS server's max_payload of %s", op, humanBytes(int64(len(data))), humanBytes(limit)),
			hint:    "use --http URL: pi-node takes imports of up to 16 MiB over HTTP"}
	}
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	subject := natsSubjectPrefix + op
	msg, err := b.nc.RequestWithContext(ctx, subject, data)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, &unreachableError{where: b.url, err: fmt.Errorf("no pi-node serves %s", subject),
			hint: "is pi-node running and connected to this NATS server?"}
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, ctx.Err() // interrupted, not slow
		}
		return nil, &unreachableError{where: b.url, err: fmt.Errorf("no reply to %s within %v", subject, b.timeout),
			hint: "raise --timeout if the node is busy"}
	case errors.Is(err, context.Canceled):
		return nil, err
	case err != nil:
		return nil, &unreachableError{where: b.url, err: err}
	}
	if code := msg.Header.Get(micro.ErrorCodeHeader); code != "" {
		status, _ := strconv.Atoi(code)
		ae, _ := decodeError(status, msg.Data, msg.Header.Get(micro.ErrorHeader))
		if status == http.StatusRequestEntityTooLarge {
			ae.hint = "pi-ctl: retry with --http URL"
		}
		return nil, ae
	}
	if len(msg.Data) == 0 {
		return nil, nil
	}
	return msg.Data, nil
}
