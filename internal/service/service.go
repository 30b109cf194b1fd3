package service

import (
	"context"
	"encoding/json"
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
	Log     session.Log
	Store   *store.Store
	Cursors session.Cursors
	Now     func() time.Time // default time.Now
	Rand    io.Reader        // id source; default crypto/rand
	Retry   writer.RetryPolicy
	// CursorWait bounds how long a read by client cursor waits for this
	// node to apply the entry the cursor names (default 5 s).
	CursorWait time.Duration
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
		return wire.WriteResult{}, fmt.Errorf("%w: %d records (header and %d entries) exceed the atomic batch limit of %d; import larger sessions with /v1/import", wire.ErrTooLarge, n, n-1, s.Log.MaxBatch())
	}
	sess := tree.NewSession(h)
	ids := tree.IDGen{R: s.Rand}
	ts := tree.FormatTimestamp(s.now())
	parent := ""
	for k, raw := range req.Entries {
		field := fmt.Sprintf("entries[%d]", k)
		d, err := parseDraft(field, raw)
		if err != nil {
			return wire.WriteResult{}, err
		}
		id := d.id
		if id == "" {
			id = ids.New(sess.Has)
		} else if sess.Has(id) {
			return wire.WriteResult{}, wire.Invalid(field+".id", fmt.Sprintf("duplicate id %q", id))
		}
		if d.parentSet {
			parent = d.parent
			if parent != "" && !sess.Has(parent) {
				return wire.WriteResult{}, wire.Invalid(field+".parentId", fmt.Sprintf("unknown parent %q (it must be an earlier entry of this request)", parent))
			}
		}
		if d.labelTarget != "" && !sess.Has(d.labelTarget) {
			return wire.WriteResult{}, wire.Invalid(field+".targetId", fmt.Sprintf("unknown entry %q (it must be an earlier entry of this request)", d.labelTarget))
		}
		e, err := d.build(id, parent, ts)
		if err != nil {
			return wire.WriteResult{}, wire.Invalid(field, err.Error())
		}
		sess.Append(e)
		parent = id
	}
	recs := make([]session.Record, 0, 1+sess.Len())
	recs = append(recs, session.HeaderRecord(&sess.Header))
	for i := range sess.Len() {
		recs = append(recs, session.RecordOf(sess.Entry(i)))
	}
	seqs, err := writer.CreateRecords(ctx, s.Log, h.ID, recs, s.Retry)
	if err != nil {
		return wire.WriteResult{}, err
	}
	res := wire.WriteResult{SessionID: h.ID, LastSeq: seqs[len(seqs)-1], Entries: make([]wire.EntryResult, sess.Len())}
	for i := range sess.Len() {
		res.Entries[i] = wire.EntryResult{ID: sess.Entry(i).ID, Seq: seqs[1+i]}
	}
	return res, nil
}

// header builds the header line from the client's optional object.
func (s *Service) header(raw json.RawMessage) (tree.Header, error) {
	var v tree.Value
	if len(raw) > 0 && string(raw) != "null" {
		var err error
		if v, err = jsjson.ParseValue(raw); err != nil || v.Kind != tree.KindObject {
			return tree.Header{}, wire.Invalid("header", "must be a JSON object")
		}
	} else {
		v = tree.Value{Kind: tree.KindObject}
	}
	str := func(key string) (string, error) {
		f, ok := v.Get(key)
		if !ok || f.Kind == tree.KindNull {
			return "", nil
		}
		if f.Kind != tree.KindString {
			return "", wire.Invalid("header."+key, "must be a string")
		}
		return f.Str, nil
	}
	if t, _ := str("type"); t != "" && t != "session" {
		return tree.Header{}, wire.Invalid("header.type", `must be "session"`)
	}
	if ver, ok := v.Get("version"); ok && !(ver.Kind == tree.KindNumber && ver.Num == tree.CurrentVersion) {
		return tree.Header{}, wire.Invalid("header.version", "must be 3 (import older files with /v1/import)")
	}
	id, err := str("id")
	if err != nil {
		return tree.Header{}, err
	}
	if id == "" {
		u, err := uuid.NewV7()
		if err != nil {
			return tree.Header{}, err
		}
		id = u.String()
	} else if err := session.ValidSessionID(id); err != nil {
		return tree.Header{}, wire.Invalid("header.id", err.(*wire.FieldError).Reason)
	}
	ts, err := str("timestamp")
	if err != nil {
		return tree.Header{}, err
	}
	if ts == "" {
		ts = tree.FormatTimestamp(s.now())
	}
	cwd, err := str("cwd")
	if err != nil {
		return tree.Header{}, err
	}
	parent, err := str("parentSession")
	if err != nil {
		return tree.Header{}, err
	}
	h := tree.NewHeader(id, ts, cwd, parent)
	// Keep any other fields the client sent, after pi's own.
	if extra := extraMembers(v, "type", "version", "id", "timestamp", "cwd", "parentSession"); len(extra) > 0 {
		out, _ := jsjson.ParseValue(h.Raw)
		for _, m := range extra {
			out.Set(m.Key, m.Val)
		}
		return tree.ParseHeader(out.AppendJSON(nil))
	}
	return h, nil
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
