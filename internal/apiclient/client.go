package apiclient

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/pifleet/sessionlog/internal/wire"
)

// Client runs one pi-node operation.
//
// Do runs the operation of req (one of wire's typed requests: a
// wire.GetRequest runs get) and returns the reply body as the node sent
// it: JSON for every operation but export (pi JSONL), nil for an empty
// reply. Every request carries minSeq when the client was configured with
// one.
//
// Errors: an error reply of the node is an *Error; no reply at all
// (connection refused, timeout, nobody serving the subject) is an
// *UnreachableError; an interrupted ctx is ctx.Err(). See the package doc
// for the sentinels they unwrap to.
//
// Close releases the connection (one the Client opened itself); the Client
// is unusable afterwards. A Client is safe for concurrent use.
type Client interface {
	Do(ctx context.Context, req wire.Request) ([]byte, error)
	Close()
}

// Follower is implemented by a Client that can push a session's new entries
// (HTTP's Server-Sent Events watch); PollEntries does the same by polling
// over any Client.
//
// Follow calls fn for every entry with seq > afterSeq, in log order, then
// for each new one as it is stored, until ctx is done (nil), fn fails (its
// error) or the stream cannot go on (the session is gone, the token is
// refused: an error). After a dropped connection it tells retry why and
// reconnects by itself, without gaps or duplicates.
type Follower interface {
	Follow(ctx context.Context, sid string, afterSeq uint64, fn func(SeqEntry) error, retry func(error)) error
}

// SeqEntry is one stored entry with its log sequence (the entries operation
// and the watch stream).
type SeqEntry = wire.SeqEntry

// Call runs req's operation and decodes its JSON reply into resp (nil:
// ignore it).
func Call(ctx context.Context, c Client, req wire.Request, resp any) error {
	body, err := c.Do(ctx, req)
	if err != nil || resp == nil {
		return err
	}
	if err := json.Unmarshal(body, resp); err != nil {
		return fmt.Errorf("%s: unexpected reply from pi-node: %v", req.Op().Name, err)
	}
	return nil
}
