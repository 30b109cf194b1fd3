package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/tree/jsjson"
	"github.com/pifleet/sessionlog/internal/wire"
	"github.com/pifleet/sessionlog/internal/writer"
)

// Service is what pi-node serves: writes of client-built entries through the
// Log (with the same CAS loop as the Writer) and reads from the Store. The
// API layer (HTTP and NATS) is a thin transport over it.
type Service struct {
	Log session.Log
	// Store is the read model: one *store.Store, or a store.Set of one
	// per shard of a sharded Log (shard.Sharded).
	Store store.Shards
	// ReadLog, when set, is where a read finds a session this node's Store
	// has not applied yet (store.Store.ViewOrRead); default Log. In a
	// mirror region it is the region's own copy: a read there never
	// crosses to the home's stream, which is slow, fails differently when
	// the home is lost, and would serve what the region does not hold.
	ReadLog session.Log
	Cursors session.Cursors
	Now     func() time.Time // default time.Now
	Rand    io.Reader        // id source; default crypto/rand
	Retry   writer.RetryPolicy
	// CursorWait bounds how long a read by client cursor waits for this
	// node to apply the entry the cursor names (default 5 s).
	CursorWait time.Duration
	// OwnWait bounds how long an append waits for this node's Store to
	// apply the session's last write this node acknowledged (or the
	// request's expectLastSeq) before it reads the session from the log;
	// ParentWait, how long it waits for a parent this node did not write.
	// Defaults 20 ms and 5 ms: a Store applies a write within a
	// millisecond or so, and a parent that is not in the session at all
	// (a client's mistake) waits ParentWait out before the log read that
	// reports it.
	OwnWait, ParentWait time.Duration
	// Forks, when set, is the registry of forks by reference: Fork then
	// copies nothing (see Fork). Nil: forks copy their path.
	Forks session.ForkRegistry

	acks acks // this node's acknowledged writes, for read your writes
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Create stores a new session atomically (header and entries in one batch).
// Entries without parentId chain: each is the child of the previous one,
// the first a root. ErrExists if the id is taken.
func (s *Service) Create(ctx context.Context, req wire.CreateRequest) (wire.WriteResult, error) {
	h, err := s.header(req.Header)
	if err != nil {
		return wire.WriteResult{}, err
	}
	if n := 1 + len(req.Entries); n > s.Log.MaxBatch() {
		return wire.WriteResult{}, wire.Field("entries", fmt.Errorf("%w: %d records (header and %d entries) exceed the atomic batch limit of %d; import larger sessions with /v1/import", wire.ErrTooLarge, n, n-1, s.Log.MaxBatch()))
	}
	if req.Client != "" {
		if err := session.ValidClientID(req.Client); err != nil {
			return wire.WriteResult{}, err
		}
	}
	sess, err := s.draftSession(h, req.Entries, false)
	if err != nil {
		return wire.WriteResult{}, err
	}
	recs := make([]session.Record, 0, 1+sess.Len())
	recs = append(recs, session.HeaderRecord(&sess.Header))
	for i := range sess.Len() {
		recs = append(recs, session.RecordOf(sess.Entry(i)))
	}
	seqs, err := writer.CreateRecords(ctx, s.Log, h.ID, recs, s.Retry)
	switch {
	case errors.Is(err, wire.ErrExists):
		return wire.WriteResult{}, wire.Field("header.id", fmt.Errorf("session %s: %w", h.ID, wire.ErrExists))
	case err != nil:
		return wire.WriteResult{}, entryOf(err, 1)
	}
	res := make([]wire.EntryResult, sess.Len())
	for i := range sess.Len() {
		res[i] = wire.EntryResult{ID: sess.Entry(i).ID, Seq: seqs[1+i]}
	}
	out, err := s.finish(ctx, h.ID, req.Client, res, seqs[len(seqs)-1])
	out.SessionID = h.ID
	return out, err
}

// draftSession builds a session of h and entries as create stores them:
// ids and timestamps filled, an entry without parentId the child of the
// previous one (the first a root), parents and label targets earlier
// entries of the request. Errors name the entry (entries[k]). With
// orphans, a parent or label target that is not there is kept as it is
// written, as pi loads a file (the entry is a root of its tree).
func (s *Service) draftSession(h tree.Header, entries []json.RawMessage, orphans bool) (*tree.Session, error) {
	sess := tree.NewSession(h)
	ids := tree.IDGen{R: s.Rand}
	ts := tree.FormatTimestamp(s.now())
	parent := ""
	for k, raw := range entries {
		field := fmt.Sprintf("entries[%d]", k)
		d, err := parseDraft(field, raw)
		if err != nil {
			return nil, err
		}
		id := d.id
		if id == "" {
			id = ids.New(sess.Has)
		} else if sess.Has(id) {
			return nil, wire.Invalid(field+".id", fmt.Sprintf("duplicate id %q", id))
		}
		if d.parentSet {
			parent = d.parent
			if parent != "" && !orphans && !sess.Has(parent) {
				return nil, wire.Invalid(field+".parentId", fmt.Sprintf("unknown parent %q (it must be an earlier entry of this request)", parent))
			}
		}
		if d.labelTarget != "" && !orphans && !sess.Has(d.labelTarget) {
			return nil, wire.Invalid(field+".targetId", fmt.Sprintf("unknown entry %q (it must be an earlier entry of this request)", d.labelTarget))
		}
		if !orphans {
			lookup := func(id string) *tree.Entry { e, _ := sess.Get(id); return e }
			if err := d.checkEdit(field, parent, lookup); err != nil {
				return nil, err
			}
		}
		e, err := d.build(id, parent, ts)
		if err != nil {
			return nil, wire.Invalid(field, err.Error())
		}
		sess.Append(e)
		parent = id
	}
	return sess, nil
}

// Header is the header Create would build from raw (a new id and the
// time now where they are left out), for checks before the write (a
// tenant token's cwd).
func (s *Service) Header(raw json.RawMessage) (tree.Header, error) { return s.header(raw) }

// headerKeys are the string fields of pi's header a client may set, in the
// order they are checked.
var headerKeys = [...]string{"id", "timestamp", "cwd", "parentSession"}

// header builds the header line from the client's optional object: pi's
// fields (the id a new UUIDv7 and the timestamp now when left out), then
// any others the client sent.
func (s *Service) header(raw json.RawMessage) (tree.Header, error) {
	v, err := headerObject(raw)
	if err != nil {
		return tree.Header{}, err
	}
	var f [len(headerKeys)]string
	for k, key := range headerKeys {
		if f[k], err = headerString(v, key); err != nil {
			return tree.Header{}, err
		}
		if key == "id" {
			if f[k], err = newSessionID(f[k]); err != nil {
				return tree.Header{}, err
			}
		}
	}
	if f[1] == "" {
		f[1] = tree.FormatTimestamp(s.now())
	} else if err := session.ValidTimestamp(f[1]); err != nil {
		return tree.Header{}, err
	}
	h := tree.NewHeader(f[0], f[1], f[2], f[3])
	// Keep any other fields the client sent, after pi's own.
	if extra := extraMembers(v, append([]string{"type", "version"}, headerKeys[:]...)...); len(extra) > 0 {
		out, _ := jsjson.ParseValue(h.Raw)
		for _, m := range extra {
			out.Set(m.Key, m.Val)
		}
		return tree.ParseHeader(out.AppendJSON(nil))
	}
	return h, nil
}

// headerObject parses the client's header object (none: an empty one) and
// checks its type and version.
func headerObject(raw json.RawMessage) (tree.Value, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return tree.Value{Kind: tree.KindObject}, nil
	}
	v, err := jsjson.ParseValue(raw)
	if err != nil || v.Kind != tree.KindObject {
		return v, wire.Invalid("header", "must be a JSON object")
	}
	if t, _ := headerString(v, "type"); t != "" && t != "session" {
		return v, wire.Invalid("header.type", `must be "session"`)
	}
	if ver, ok := v.Get("version"); ok && !(ver.Kind == tree.KindNumber && ver.Num == tree.CurrentVersion) {
		return v, wire.Invalid("header.version", "must be 3 (import older files with /v1/import)")
	}
	return v, nil
}

// headerString reads a string field of the header ("" when absent or null).
func headerString(v tree.Value, key string) (string, error) {
	f, ok := v.Get(key)
	if !ok || f.Kind == tree.KindNull {
		return "", nil
	}
	if f.Kind != tree.KindString {
		return "", wire.Invalid("header."+key, "must be a string")
	}
	return f.Str, nil
}

// newSessionID checks a client's session id, or makes a UUIDv7 for none.
func newSessionID(id string) (string, error) {
	if id == "" {
		u, err := uuid.NewV7()
		if err != nil {
			return "", err
		}
		return u.String(), nil
	}
	if err := session.ValidSessionID(id); err != nil {
		return "", wire.Invalid("header.id", err.(*wire.FieldError).Reason)
	}
	return id, nil
}

func extraMembers(v tree.Value, known ...string) []tree.Member {
	var out []tree.Member
outer:
	for _, m := range v.Obj {
		for _, k := range known {
			if m.Key == k {
				continue outer
			}
		}
		out = append(out, m)
	}
	return out
}
