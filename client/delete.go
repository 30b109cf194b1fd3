package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/wire"
)

// DeleteResult is what Delete erased: the session's records in the log
// (entries and header), its archived copies, and its last sequence before.
type DeleteResult = wire.DeleteReply

// DeleteOption adjusts a Delete.
type DeleteOption func(*wire.DeleteRequest)

// DeleteIfLastSeq makes the delete conditional: only if the session's last
// sequence is seq (a *ConflictError with the current one otherwise, and
// nothing erased), so that a worker never erases what another appended
// after it looked.
func DeleteIfLastSeq(seq uint64) DeleteOption {
	return func(r *wire.DeleteRequest) { r.ExpectLastSeq = seq }
}

// Delete erases session sessionID wherever the cluster keeps it
// (docs/API.md, Delete; docs/SECURITY.md, Erasure): its records are
// overwritten in the log, its cursors and archived copies removed, every
// pi-node drops it from memory, snapshots and search index, and the
// ledger of erasures records who erased it and when (nothing of its
// content). A session that does not exist is ErrNotFound. The erasure is
// pi-node's: over the JetStream transport Delete is
// errors.ErrUnsupported; use HTTP or NodeNATS.
func (c *Client) Delete(ctx context.Context, sessionID string, opts ...DeleteOption) (DeleteResult, error) {
	if c.api == nil {
		return DeleteResult{}, fmt.Errorf("delete: %w: erasing is pi-node's, which the JetStream transport does not reach (use HTTP or NodeNATS)", errors.ErrUnsupported)
	}
	req := wire.DeleteRequest{SessionID: sessionID}
	for _, o := range opts {
		o(&req)
	}
	var r DeleteResult
	if err := apiclient.Call(ctx, c.api, req, &r); err != nil {
		return DeleteResult{}, fmt.Errorf("delete %s: %w", sessionID, err)
	}
	return r, nil
}
