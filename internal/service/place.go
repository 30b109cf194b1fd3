package service

import (
	"context"
	"fmt"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
	"github.com/pifleet/sessionlog/internal/writer"
)

// placement places the entries of an append request: each a child of its
// parentId, or of the previous entry, or of the client's cursor, or of the
// default leaf; ids and timestamps assigned where the client left them out.
type placement struct {
	drafts     []draft
	cursorLeaf string
	hasCursor  bool
	ids        tree.IDGen
	ts         string
	// orphans keeps a parent or label target the session lacks as written
	// (wire.AppendRequest.Orphans), as pi loads a file.
	orphans bool
}

// Place implements writer.Placer. Entries already stored with the same
// content are a retry of an append that landed, whatever uncertain says: a
// client may re-send after a timeout in another request.
func (p *placement) Place(v writer.View, _ bool) ([]tree.Entry, []uint64, error) {
	parent := v.Leaf()
	if p.hasCursor {
		parent = p.cursorLeaf
	}
	var out, stored []tree.Entry
	var seqs []uint64
	firstStored := -1
	inBatch := map[string]*tree.Entry{}
	for k := range p.drafts {
		d, field := &p.drafts[k], fmt.Sprintf("entries[%d]", k)
		if d.parentSet {
			parent = d.parent
		}
		e, seq, ok, err := storedAs(v, d, field)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			if firstStored < 0 {
				firstStored = k
			}
			stored, seqs, parent = append(stored, *e), append(seqs, seq), d.id
			continue
		}
		e, err = p.build(v, d, field, parent, inBatch)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, *e)
		inBatch[e.ID] = e
		parent = e.ID
	}
	switch {
	case len(stored) == len(p.drafts):
		return stored, seqs, nil
	case len(stored) > 0:
		return nil, nil, wire.Field(fmt.Sprintf("entries[%d].id", firstStored), &wire.ConflictError{LastSeq: v.LastSeq(),
			Reason: fmt.Sprintf("%d of the %d entries are already stored (%s first); an append is atomic, so send the rest alone", len(stored), len(p.drafts), stored[0].ID)})
	}
	return out, nil, nil
}

// storedAs reports whether the entry d names by id is stored already with
// d's content (a retry); stored with other content is a conflict.
func storedAs(v writer.View, d *draft, field string) (*tree.Entry, uint64, bool, error) {
	if d.id == "" {
		return nil, 0, false, nil
	}
	e, seq, ok := v.Lookup(d.id)
	if !ok {
		return nil, 0, false, nil
	}
	if !d.sameAs(e) {
		return nil, 0, false, wire.Field(field+".id", &wire.ConflictError{LastSeq: v.LastSeq(),
			Reason: fmt.Sprintf("%q is already stored with other content", d.id)})
	}
	return e, seq, true, nil
}

// build makes the entry of d as a child of parent. Parent and label target
// must be in v or earlier in the batch; inBatch holds the batch's ids.
func (p *placement) build(v writer.View, d *draft, field, parent string, inBatch map[string]*tree.Entry) (*tree.Entry, error) {
	lookup := func(id string) *tree.Entry {
		if e, _, ok := v.Lookup(id); ok {
			return e
		}
		return inBatch[id]
	}
	known := func(id string) bool { return lookup(id) != nil }
	// An orphan (p.orphans) is kept as pi wrote it, but not a context
	// edit's: its target must be on its branch, which pi checks from the
	// edit's parent.
	if parent != "" && (!p.orphans || d.edit) && !known(parent) {
		return nil, &writer.UnknownEntryError{ID: parent, Err: wire.Invalid(field+".parentId", fmt.Sprintf("unknown parent %q", parent))}
	}
	if t := d.labelTarget; t != "" && !p.orphans && !known(t) {
		return nil, &writer.UnknownEntryError{ID: t, Err: wire.Invalid(field+".targetId", fmt.Sprintf("unknown entry %q", t))}
	}
	if d.edit && !known(d.editTarget) {
		return nil, &writer.UnknownEntryError{ID: d.editTarget, Err: d.checkEdit(field, parent, lookup)}
	}
	if err := d.checkEdit(field, parent, lookup); err != nil {
		return nil, err
	}
	id := d.id
	if id == "" {
		id = p.ids.New(known)
	} else if inBatch[id] != nil {
		return nil, wire.Invalid(field+".id", fmt.Sprintf("duplicate id %q in the request", id))
	}
	e, err := d.build(id, parent, p.ts)
	if err != nil {
		return nil, wire.Invalid(field, err.Error())
	}
	return &e, nil
}

// results pairs entries with their sequences.
func results(entries []tree.Entry, seqs []uint64) []wire.EntryResult {
	res := make([]wire.EntryResult, len(entries))
	for k := range entries {
		res[k] = wire.EntryResult{ID: entries[k].ID, Seq: seqs[k]}
	}
	return res
}

// storeTarget is the session as this node knows it, as an append's Target:
// the Store's copy (or the log's, for a session the Store has not applied
// yet) overlaid with the records read after a conflict.
type storeTarget struct {
	s      *Service
	sid    string
	missed map[string]missedEntry
	leaf   string // the last entry of missed
	last   uint64 // the last sequence of missed
}

type missedEntry struct {
	e   tree.Entry
	seq uint64
}

func (t *storeTarget) Absorb(ms []session.Stored) {
	if t.missed == nil {
		t.missed = map[string]missedEntry{}
	}
	for _, r := range ms {
		t.last = max(t.last, r.Seq)
		if r.IsHeader() || r.IsMarker() {
			continue
		}
		if e, err := tree.ParseEntry(r.Data); err == nil {
			t.missed[e.ID] = missedEntry{e, r.Seq}
			t.leaf = e.ID
		}
	}
}

func (t *storeTarget) With(ctx context.Context, fn func(writer.View) error) error {
	_, err := t.s.doc(ctx, t.sid, func(d *store.Doc) error { return fn(overlay{t, d}) })
	return err
}

// overlay is a storeTarget's view while its Doc is held.
type overlay struct {
	t *storeTarget
	d *store.Doc
}

func (o overlay) Lookup(id string) (*tree.Entry, uint64, bool) {
	if m, ok := o.t.missed[id]; ok {
		return &m.e, m.seq, true
	}
	i, ok := o.d.Tree.Index(id)
	if !ok {
		return nil, 0, false
	}
	return o.d.Tree.Entry(i), o.d.Seqs[i], true
}

func (o overlay) Leaf() string {
	if o.t.leaf != "" {
		return o.t.leaf
	}
	return o.d.Tree.LeafID()
}

func (o overlay) LastSeq() uint64 { return max(o.d.LastSeq, o.t.last) }
