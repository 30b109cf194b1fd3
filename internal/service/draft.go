package service

import (
	"bytes"
	"fmt"
	"regexp"

	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/tree/jsjson"
	"github.com/pifleet/sessionlog/internal/wire"
)

// draft is one client-built entry of an API append or create, before the
// service fills what the client left out.
type draft struct {
	v         tree.Value
	raw       []byte // the client's bytes, used as is when nothing is filled
	id        string // "" = assign
	parent    string // when parentSet
	parentSet bool   // parentId given (possibly null = "")
	hasTime   bool
	// labelTarget is a label entry's targetId: it must exist, as pi's
	// appendLabelChange demands.
	labelTarget string
	// edit is set for a context_edit: its target must exist, be on the
	// branch the edit is appended to and carry model content, as pi's
	// appendContextEdit demands (editTarget).
	edit       bool
	editTarget string
}

// clientIDPattern restricts ids that clients choose: they travel in message
// headers and subjects' Nats-Msg-Id, so no spaces or control characters.
var clientIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// parseDraft validates one entry object from a request body.
func parseDraft(field string, raw []byte) (draft, error) {
	d := draft{raw: bytes.TrimSpace(raw)}
	v, err := jsjson.ParseValue(d.raw)
	if err != nil {
		return d, wire.Invalid(field, fmt.Sprintf("not valid JSON: %v", err))
	}
	if v.Kind != tree.KindObject {
		return d, wire.Invalid(field, "must be a JSON object")
	}
	d.v = v
	t, ok := v.Get("type")
	if !ok || t.Kind != tree.KindString || t.Str == "" {
		return d, wire.Invalid(field+".type", "required: the entry type (message, model_change, label, ...)")
	}
	if t.Str == "session" {
		return d, wire.Invalid(field+".type", `"session" is the header, not an entry`)
	}
	if id, ok := v.Get("id"); ok {
		if id.Kind != tree.KindString || !clientIDPattern.MatchString(id.Str) {
			return d, wire.Invalid(field+".id", "must match [A-Za-z0-9_-]{1,64} (or be left out to have one assigned)")
		}
		d.id = id.Str
	}
	if p, ok := v.Get("parentId"); ok {
		switch p.Kind {
		case tree.KindNull:
		case tree.KindString:
			if p.Str == "" {
				return d, wire.Invalid(field+".parentId", "must be an entry id or null")
			}
			d.parent = p.Str
		default:
			return d, wire.Invalid(field+".parentId", "must be an entry id or null")
		}
		d.parentSet = true
	}
	if t.Str == "label" {
		tg, ok := v.Get("targetId")
		if !ok || tg.Kind != tree.KindString || tg.Str == "" {
			return d, wire.Invalid(field+".targetId", "a label needs the id of the entry it labels")
		}
		d.labelTarget = tg.Str
	}
	if ts, ok := v.Get("timestamp"); ok {
		if ts.Kind != tree.KindString {
			return d, wire.Invalid(field+".timestamp", "must be an ISO 8601 string")
		}
		d.hasTime = true
	}
	if err := tree.CheckEntry(&v); err != nil {
		return d, wire.InvalidShape(field, err)
	}
	if t.Str == "context_edit" {
		tg, _ := v.Get("targetId") // a string: CheckEntry requires it
		d.edit, d.editTarget = true, tg.Str
	}
	return d, nil
}

// checkEdit checks a context_edit's target for an edit that is a child of
// parent (see tree.CheckEditTarget).
func (d *draft) checkEdit(field, parent string, lookup func(string) *tree.Entry) error {
	if !d.edit {
		return nil
	}
	if err := tree.CheckEditTarget(d.editTarget, parent, lookup); err != nil {
		return wire.InvalidShape(field, err)
	}
	return nil
}

// build returns the entry's line: the client's bytes when it gave id,
// parentId and timestamp, else a copy with those filled in, placed where pi
// puts them (after "type").
func (d *draft) build(id, parent, ts string) (tree.Entry, error) {
	if d.id != "" && d.parentSet && d.hasTime && id == d.id && parent == d.parent {
		return tree.ParseEntry(d.raw)
	}
	out := tree.Value{Kind: tree.KindObject}
	typ, _ := d.v.Get("type")
	out.Set("type", *typ)
	out.Set("id", tree.Value{Kind: tree.KindString, Str: id})
	if parent == "" {
		out.Set("parentId", tree.Value{Kind: tree.KindNull})
	} else {
		out.Set("parentId", tree.Value{Kind: tree.KindString, Str: parent})
	}
	if t, ok := d.v.Get("timestamp"); ok {
		out.Set("timestamp", *t)
	} else {
		out.Set("timestamp", tree.Value{Kind: tree.KindString, Str: ts})
	}
	for _, m := range d.v.Obj {
		switch m.Key {
		case "type", "id", "parentId", "timestamp":
		default:
			out.Set(m.Key, m.Val)
		}
	}
	return tree.ParseEntry(out.AppendJSON(nil))
}

// sameAs reports whether a stored entry is what this draft asks for: the
// fields the client gave are equal, the ones it left out may be anything
// (so a retry without timestamps after a lost ack is recognized).
func (d *draft) sameAs(stored *tree.Entry) bool {
	ts := stored.TimestampString()
	want, err := d.build(stored.ID, stored.ParentID, ts)
	if err != nil {
		return false
	}
	if d.parentSet && d.parent != stored.ParentID {
		return false
	}
	return bytes.Equal(want.Raw, stored.Raw) || equalJSON(want.Raw, stored.Raw)
}

// equalJSON compares two lines as JSON values (key order and spacing aside).
func equalJSON(a, b []byte) bool {
	va, err1 := jsjson.ParseValue(a)
	vb, err2 := jsjson.ParseValue(b)
	return err1 == nil && err2 == nil && valueEqual(&va, &vb)
}

func valueEqual(a, b *tree.Value) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case tree.KindBool:
		return a.Bool == b.Bool
	case tree.KindNumber:
		return a.Num == b.Num
	case tree.KindString:
		return a.Str == b.Str
	case tree.KindArray:
		if len(a.Arr) != len(b.Arr) {
			return false
		}
		for i := range a.Arr {
			if !valueEqual(&a.Arr[i], &b.Arr[i]) {
				return false
			}
		}
	case tree.KindObject:
		if len(a.Obj) != len(b.Obj) {
			return false
		}
		for i := range a.Obj {
			bv, ok := b.Get(a.Obj[i].Key)
			if !ok || !valueEqual(&a.Obj[i].Val, bv) {
				return false
			}
		}
	}
	return true
}
