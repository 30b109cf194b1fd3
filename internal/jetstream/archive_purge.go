package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// LastSeq returns the session's last sequence in the log, from the stream
// leader; ErrNotFound when its subject is empty.
func (a *Archive) LastSeq(ctx context.Context, sid string) (uint64, error) {
	m, err := leaderGet(ctx, a.js, a.log.api, a.log.cfg.Stream, msgGetRequest{LastFor: a.log.subject(sid)})
	if err != nil {
		return 0, fmt.Errorf("last sequence of %s: %w", sid, translate(err, wire.ErrConflict))
	}
	return m.Seq, nil
}

// PurgeUpTo removes the session's records up to upTo, its cursors, and
// announces it with a purge notice; see session.Archive for the outcomes.
//
// JetStream has no conditional purge (Nats-Rollup would be one, but the
// stream does not allow rollups, and the marker it leaves would keep the
// subject in the index). So the purge is "up to upTo" (seq = upTo+1 keeps
// anything later) after a check that nothing is later, and a check after
// it finds a write that slipped in between. Only then is the session
// headerless in the log; the caller repairs that before any notice is
// sent, so no Store ever drops an acknowledged entry.
func (a *Archive) PurgeUpTo(ctx context.Context, sid string, upTo uint64) (uint64, error) {
	if err := session.ValidSessionID(sid); err != nil {
		return 0, fmt.Errorf("purge %s: %w", sid, err)
	}
	last, err := a.LastSeq(ctx, sid)
	switch {
	case errors.Is(err, wire.ErrNotFound):
		// Purged already, by an earlier attempt that died before its
		// notice, or by another archiver: finish the job.
	case err != nil:
		return 0, err
	case last > upTo:
		return 0, &wire.ConflictError{LastSeq: last, Reason: fmt.Sprintf("session %s has records up to %d, after %d", sid, last, upTo)}
	default:
		if err := a.purge(ctx, a.log.cfg.Stream, a.log.subject(sid), upTo+1); err != nil {
			return 0, fmt.Errorf("purge %s up to %d: %w", sid, upTo, err)
		}
		last, err = a.LastSeq(ctx, sid)
		if err == nil {
			return last, nil
		}
		if !errors.Is(err, wire.ErrNotFound) {
			return 0, err
		}
	}
	if err := a.log.purgeCursors(ctx, sid); err != nil {
		return 0, err
	}
	return 0, a.Notify(ctx, sid, upTo)
}

// purgeCursors removes the session's cursor keys from the cursor bucket's
// stream, so the bucket's per-subject index does not keep a key per
// archived session either. A purge of the subjects (not KV deletes, which
// leave a marker per key) removes them entirely; a restored session starts
// at pi's default leaf, as after a backup restore.
func (l *Log) purgeCursors(ctx context.Context, sid string) error {
	stream := bucketStream(l.cfg.Bucket)
	filter := "$KV." + l.cfg.Bucket + "." + sid + ".*"
	// Most archived sessions have no cursor left: a read is cheaper than a
	// purge, which is a raft proposal on a replicated bucket.
	_, err := leaderGet(ctx, l.js, l.api, stream, msgGetRequest{LastFor: filter})
	if isNotFound(err) {
		return nil
	}
	if err == nil {
		err = purgeSubject(ctx, l.js, l.api, stream, filter, 0)
	}
	if err != nil {
		return fmt.Errorf("purge the cursors of %s: %w", sid, err)
	}
	return nil
}

// Notify publishes the purge notice of the session, as Log.Purge does.
func (a *Archive) Notify(ctx context.Context, sid string, upTo uint64) error {
	if err := a.log.notifyPurge(ctx, sid, upTo); err != nil {
		return fmt.Errorf("purge notice for %s: %w", sid, err)
	}
	return nil
}

// purgeRequest is the body of $JS.API.STREAM.PURGE.<stream>: the messages
// on filter below Seq (all of them when 0).
type purgeRequest struct {
	Filter string `json:"filter"`
	Seq    uint64 `json:"seq,omitempty"`
}

// purge sends the purge request itself: nats.go's Stream.Purge needs a
// stream handle, and getting one is a stream info request per session.
func (a *Archive) purge(ctx context.Context, stream, filter string, below uint64) error {
	return purgeSubject(ctx, a.js, a.log.api, stream, filter, below)
}

func purgeSubject(ctx context.Context, js jetstream.JetStream, api, stream, filter string, below uint64) error {
	ctx, cancel := withDefaultDeadline(ctx, js)
	defer cancel()
	body, err := json.Marshal(purgeRequest{Filter: filter, Seq: below})
	if err != nil {
		return err
	}
	msg, err := js.Conn().RequestWithContext(ctx, api+"STREAM.PURGE."+stream, body)
	if err != nil {
		return translate(err, wire.ErrConflict)
	}
	var resp struct {
		Error   *jetstream.APIError `json:"error,omitempty"`
		Success bool                `json:"success"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return fmt.Errorf("stream purge: bad response: %w", err)
	}
	if resp.Error != nil {
		return translate(resp.Error, wire.ErrConflict)
	}
	if !resp.Success {
		return fmt.Errorf("stream purge of %s on %s: not successful", filter, stream)
	}
	return nil
}
