package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// backend is how the server commands reach pi-node. pi-node serves the same
// operations over NATS (request to pi.v1.<op>) and HTTP (/v1/...), with the
// same JSON bodies (docs/API.md), so each command is written once against
// this interface and runs over either transport.
//
// do runs op (the operation's name in docs/API.md: "get", "cursor.set",
// "import", ...) with the request fields p: what HTTP puts in the path and
// the query is a plain field here, as over NATS. body, when not nil, is sent
// as it is instead of p (import's JSONL). do returns the reply body as the
// node sent it: JSON for every operation but export (pi JSONL), nil for an
// empty reply. It sends minSeq with every request when --min-seq is given.
//
// Errors: an error reply of the node is an *apiError (HTTP status, code,
// message, field); no reply at all (connection refused, timeout, nobody
// serving the subject) is an *unreachableError. Both carry a hint for the
// operator in their message.
//
// close releases the connection; the backend is unusable afterwards.
type backend interface {
	do(ctx context.Context, op string, p params, body []byte) ([]byte, error)
	close()
}

// follower is what a backend implements when it can push a session's new
// entries (HTTP's Server-Sent Events watch). "log -f" polls "entries" over
// backends without it.
//
// follow calls fn for every entry with seq > afterSeq, in log order, then
// for each new one as it is stored, until ctx is done (nil), fn fails (its
// error) or the stream cannot go on (the session is gone, the token is
// refused: an error). After a dropped connection it tells retry why and
// reconnects by itself, without gaps or duplicates.
type follower interface {
	follow(ctx context.Context, sid string, afterSeq uint64, fn func(seqEntry) error, retry func(error)) error
}

// params are the fields of one request; a nil value is JSON null (the
// null leaf).
type params map[string]any

// seqEntry is one stored entry with its log sequence (the entries operation
// and the watch stream).
type seqEntry struct {
	Seq   uint64          `json:"seq"`
	Entry json.RawMessage `json:"entry"`
}

// call runs op and decodes its JSON reply into resp (nil: ignore it).
func call(ctx context.Context, b backend, op string, p params, resp any) error {
	body, err := b.do(ctx, op, p, nil)
	if err != nil || resp == nil {
		return err
	}
	if err := json.Unmarshal(body, resp); err != nil {
		return fmt.Errorf("%s: unexpected reply from pi-node: %v", op, err)
	}
	return nil
}

// apiError is an error reply of pi-node: the HTTP status (over NATS the
// micro error code, which pi-node sets to the same number) and the JSON
// error object {"error":{"code","message","field"}}.
type apiError struct {
	Status  int
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field"`
	hint    string // what the operator can do, added by the transport
}

func (e *apiError) Error() string {
	if e.hint != "" {
		return e.Message + " (" + e.hint + ")"
	}
	return e.Message
}

// isStatus reports whether err is an error reply with this HTTP status.
func isStatus(err error, status int) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == status
}

// decodeError reads an error reply body. A body that is not pi-node's error
// object (a proxy's page, a truncated reply) still yields a readable
// message, from fallback (NATS: the error header) or the body's start; ok
// is false then.
func decodeError(status int, body []byte, fallback string) (ae *apiError, ok bool) {
	var eb struct {
		Error *apiError `json:"error"`
	}
	if json.Unmarshal(body, &eb) == nil && eb.Error != nil && eb.Error.Message != "" {
		eb.Error.Status = status
		return eb.Error, true
	}
	msg := fallback
	if msg == "" {
		msg = strings.TrimSpace(string(body))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return &apiError{Status: status, Message: fmt.Sprintf("%s (status %d)", msg, status)}, false
}

// unreachableError means no reply came: the node or the NATS server is not
// there, did not answer in time, or nobody serves the operation.
type unreachableError struct {
	where string // the URL pi-ctl tried
	err   error
	hint  string
}

func (e *unreachableError) Error() string {
	msg := fmt.Sprintf("cannot reach pi-node at %s: %v", e.where, e.err)
	if e.hint != "" {
		msg += " (" + e.hint + ")"
	}
	return msg
}

func (e *unreachableError) Unwrap() error { return e.err }

// temporary reports whether a retry may succeed: no reply, or a node that
// is unavailable or behind (503, 504). "log -f" keeps following through
// these.
func temporary(err error) bool {
	var ue *unreachableError
	return errors.As(err, &ue) || isStatus(err, http.StatusServiceUnavailable) || isStatus(err, http.StatusGatewayTimeout)
}

// encodeJSON encodes v without HTML escaping, so labels and names reach the
// log with the bytes the operator typed ("<" stays "<", as pi writes it).
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// withMinSeq returns p with minSeq raised to at least minSeq (--min-seq):
// a command may ask for a later sequence itself (a cursor's), never for an
// earlier one than the operator.
func withMinSeq(p params, minSeq uint64) params {
	if v, ok := p["minSeq"].(uint64); minSeq == 0 || ok && v >= minSeq {
		return p
	}
	out := make(params, len(p)+1)
	for k, v := range p {
		out[k] = v
	}
	out["minSeq"] = minSeq
	return out
}
