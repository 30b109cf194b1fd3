package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Compile-time check.
var _ session.Cursors = (*Cursors)(nil)

// kvOperationHeader marks KV tombstones ("DEL", "PURGE"); nats.go keeps the
// name private.
const kvOperationHeader = "KV-Operation"

// Cursors stores cursors in the KV bucket: key <sessionId>.<clientId>, value
// {"leafId","seq","updatedAt"}, revision = the bucket stream's sequence.
//
// Reads do not use the KV's Get: KV buckets are always created with
// AllowDirect, and a direct get may be answered by a replica that has not
// applied the latest write yet. Get and List instead send STREAM.MSG.GET to
// the bucket's stream, which only its leader answers: a cursor read after an
// acknowledged Put or Update always sees it (read-your-writes on R3).
type Cursors struct {
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	api    string
	stream string // the bucket's stream, KV_<bucket>
	prefix string // subject prefix of the keys, $KV.<bucket>.
}

// cursorJSON is the stored value; leafId is null for a client standing
// before the first entry.
type cursorJSON struct {
	LeafID    *string   `json:"leafId"`
	Seq       uint64    `json:"seq"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// NewCursors binds to cfg's bucket, which Provision created. The lookup is
// retried as provisioning is while the cluster answers nothing (a node
// starting while the bucket's leader is elected, or on a loaded machine),
// until ctx ends: a node must not exit for a request unanswered once.
func NewCursors(ctx context.Context, js jetstream.JetStream, cfg Config) (*Cursors, error) {
	var kv jetstream.KeyValue
	err := retryProvision(ctx, logger(cfg), "bind bucket "+cfg.Bucket, func(ctx context.Context) error {
		var err error
		kv, err = js.KeyValue(ctx, cfg.Bucket)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cursors: bucket %s: %w", cfg.Bucket, translate(err, wire.ErrConflict))
	}
	return &Cursors{js: js, kv: kv, api: apiPrefix(js), stream: "KV_" + cfg.Bucket, prefix: "$KV." + cfg.Bucket + "."}, nil
}

func cursorKey(sid, client string) (string, error) {
	if err := session.ValidSessionID(sid); err != nil {
		return "", err
	}
	if err := session.ValidClientID(client); err != nil {
		return "", err
	}
	return sid + "." + client, nil
}

func encodeCursor(c session.Cursor) ([]byte, error) {
	v := cursorJSON{Seq: c.Seq, UpdatedAt: c.UpdatedAt}
	if c.LeafID != "" {
		v.LeafID = &c.LeafID
	}
	return json.Marshal(v)
}

// decodeCursor turns a stored value into an entry; ok is false for a tombstone.
func decodeCursor(sid, client string, rev uint64, hdr nats.Header, data []byte) (e session.CursorEntry, ok bool, err error) {
	if hdr.Get(kvOperationHeader) != "" || hdr.Get(jetstream.MarkerReasonHeader) != "" {
		return session.CursorEntry{Session: sid, Client: client, Revision: rev}, false, nil
	}
	var v cursorJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return e, false, fmt.Errorf("cursor %s/%s at %d: %w", sid, client, rev, err)
	}
	e = session.CursorEntry{Session: sid, Client: client, Revision: rev,
		Cursor: session.Cursor{Seq: v.Seq, UpdatedAt: v.UpdatedAt}}
	if v.LeafID != nil {
		e.LeafID = *v.LeafID
	}
	return e, true, nil
}

// Get returns the cursor, read from the bucket's stream leader.
func (c *Cursors) Get(ctx context.Context, sid, client string) (session.CursorEntry, error) {
	key, err := cursorKey(sid, client)
	if err != nil {
		return session.CursorEntry{}, fmt.Errorf("get cursor: %w", err)
	}
	m, err := leaderGet(ctx, c.js, c.api, c.stream, msgGetRequest{LastFor: c.prefix + key})
	if err != nil {
		err = translate(err, wire.ErrConflict)
		if errors.Is(err, wire.ErrNotFound) {
			// The message users see: no JetStream internals in it.
			return session.CursorEntry{}, fmt.Errorf("client %s has no cursor in session %s: %w", client, sid, wire.ErrNotFound)
		}
		return session.CursorEntry{}, fmt.Errorf("get cursor %s: %w", key, err)
	}
	e, ok, err := decodeCursor(sid, client, m.Seq, m.Header, m.Data)
	if err == nil && !ok {
		err = fmt.Errorf("client %s has no cursor in session %s (deleted): %w", client, sid, wire.ErrNotFound)
	}
	if err != nil {
		return session.CursorEntry{}, fmt.Errorf("get cursor %s: %w", key, err)
	}
	return e, nil
}

// Put stores the cursor unconditionally and returns its revision.
func (c *Cursors) Put(ctx context.Context, sid, client string, cur session.Cursor) (uint64, error) {
	key, err := cursorKey(sid, client)
	if err != nil {
		return 0, fmt.Errorf("put cursor: %w", err)
	}
	val, err := encodeCursor(cur)
	if err != nil {
		return 0, err
	}
	rev, err := c.kv.Put(ctx, key, val)
	if err != nil {
		return 0, fmt.Errorf("put cursor %s: %w", key, translate(err, wire.ErrConflict))
	}
	return rev, nil
}

// Update stores the cursor if its revision is expectRev (0: if absent or
// deleted), else ErrConflict; it returns the new revision.
func (c *Cursors) Update(ctx context.Context, sid, client string, cur session.Cursor, expectRev uint64) (uint64, error) {
	key, err := cursorKey(sid, client)
	if err != nil {
		return 0, fmt.Errorf("update cursor: %w", err)
	}
	val, err := encodeCursor(cur)
	if err != nil {
		return 0, err
	}
	rev, err := c.kv.Update(ctx, key, val, expectRev)
	if err != nil && expectRev == 0 && isCASError(err) {
		// "Absent" includes deleted: a tombstone is the key's last message,
		// so retry against its revision, read from the leader.
		m, gerr := leaderGet(ctx, c.js, c.api, c.stream, msgGetRequest{LastFor: c.prefix + key})
		if gerr == nil {
			if _, live, _ := decodeCursor(sid, client, m.Seq, m.Header, m.Data); !live {
				rev, err = c.kv.Update(ctx, key, val, m.Seq)
			}
		}
	}
	if err != nil {
		return 0, fmt.Errorf("update cursor %s at revision %d: %w", key, expectRev, translate(err, wire.ErrConflict))
	}
	return rev, nil
}

func isCASError(err error) bool {
	code := apiCode(err)
	return code == codeWrongLastSeq || code == codeWrongLastSeqConstant
}

// Delete removes the cursor (a tombstone); a missing cursor is not an error.
func (c *Cursors) Delete(ctx context.Context, sid, client string) error {
	key, err := cursorKey(sid, client)
	if err != nil {
		return fmt.Errorf("delete cursor: %w", err)
	}
	if err := c.kv.Delete(ctx, key); err != nil {
		return fmt.Errorf("delete cursor %s: %w", key, translate(err, wire.ErrConflict))
	}
	return nil
}

// List returns the session's cursors ordered by client id. It walks the
// session's keys with leader gets (next message on <prefix><session>.*); the
// bucket keeps one message per key, so each get yields one key's current
// value or tombstone.
func (c *Cursors) List(ctx context.Context, sid string) ([]session.CursorEntry, error) {
	if err := session.ValidSessionID(sid); err != nil {
		return nil, fmt.Errorf("list cursors: %w", err)
	}
	filter := c.prefix + sid + ".*"
	latest := map[string]session.CursorEntry{}
	for seq := uint64(1); ; {
		m, err := leaderGet(ctx, c.js, c.api, c.stream, msgGetRequest{Seq: seq, NextFor: filter})
		if isNotFound(err) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("list cursors of %s: %w", sid, translate(err, wire.ErrConflict))
		}
		seq = m.Seq + 1
		client := strings.TrimPrefix(m.Subject, c.prefix+sid+".")
		e, live, err := decodeCursor(sid, client, m.Seq, m.Header, m.Data)
		if err != nil {
			return nil, fmt.Errorf("list cursors of %s: %w", sid, err)
		}
		if live {
			latest[client] = e
		} else {
			delete(latest, client)
		}
	}
	out := make([]session.CursorEntry, 0, len(latest))
	for _, e := range latest {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b session.CursorEntry) int { return strings.Compare(a.Client, b.Client) })
	return out, nil
}

// Watch calls fn for the changes of the session's cursors made after the
// call, in revision order, until ctx is done; it then returns ctx.Err().
//
// The bucket keeps one revision per key (history 1), so a change that is
// overwritten before the watcher receives it is gone from the stream: a
// watcher that lags sees the latest state of each cursor, not every
// intermediate one. (The KV's own Watch has the same limit.)
//
// It reads with an ordered consumer starting right after the bucket stream's
// last sequence as its leader reports it, rather than with a "deliver new"
// policy: the starting point is fixed before the consumer exists, so changes
// made while it is created, or recreated before its first delivery, are not lost.
func (c *Cursors) Watch(ctx context.Context, sid string, fn func(e session.CursorEntry, deleted bool)) error {
	if err := session.ValidSessionID(sid); err != nil {
		return fmt.Errorf("watch cursors: %w", err)
	}
	s, err := c.js.Stream(ctx, c.stream)
	if err != nil {
		return fmt.Errorf("watch cursors of %s: %w", sid, translate(err, wire.ErrConflict))
	}
	cons, err := startConsumer(ctx, c.js, c.stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{c.prefix + sid + ".*"},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    s.CachedInfo().State.LastSeq + 1,
	})
	if err != nil {
		return fmt.Errorf("watch cursors of %s: %w", sid, translate(err, wire.ErrConflict))
	}
	defer cons.stop()
	for {
		msg, err := cons.next(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return fmt.Errorf("watch cursors of %s: %w", sid, translate(err, wire.ErrConflict))
		}
		meta, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("watch cursors of %s: %w", sid, err)
		}
		client := strings.TrimPrefix(msg.Subject(), c.prefix+sid+".")
		e, live, err := decodeCursor(sid, client, meta.Sequence.Stream, msg.Headers(), msg.Data())
		if err != nil {
			return fmt.Errorf("watch cursors of %s: %w", sid, err)
		}
		fn(e, !live)
	}
}
