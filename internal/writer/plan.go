package writer

import (
	"context"
	"errors"
	"fmt"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// View is what placing an append needs to know of a session.
type View interface {
	// Lookup returns a stored entry and its sequence.
	Lookup(id string) (e *tree.Entry, seq uint64, ok bool)
	// Leaf is pi's default leaf: the last entry in log order ("" before
	// the first entry).
	Leaf() string
	// LastSeq is the session's last sequence as far as the view knows.
	LastSeq() uint64
}

// A Placer builds an append's entries against a view of the session: the
// Writer chains pi-style entries from its leaf, the request service places
// the entries a client sent.
type Placer interface {
	// Place returns the entries to publish. When every entry is stored
	// already as asked (a retry whose first attempt landed; uncertain says
	// whether an earlier publish of this append may have), it returns them
	// with their sequences in stored instead. An *UnknownEntryError means
	// the view may be behind the log.
	Place(v View, uncertain bool) (entries []tree.Entry, stored []uint64, err error)
}

// A Target is the session an append goes to, as its writer knows it.
type Target interface {
	// With runs fn with the current view of the session.
	With(ctx context.Context, fn func(View) error) error
	// Absorb takes records the log holds beyond the view (read after a
	// conflict, or because the view lacked a parent).
	Absorb(missed []session.Stored)
}

// UnknownEntryError marks a placement that names an entry the view lacks;
// the log may have it (written through another node a moment ago).
type UnknownEntryError struct {
	ID  string // the entry the view lacks
	Err error
}

func (e *UnknownEntryError) Error() string { return e.Err.Error() }
func (e *UnknownEntryError) Unwrap() error { return e.Err }

// AppendPlan is one append of entries to a published session, the Plan that
// the Writer and the request service share: it places the entries against
// the target's view, and after a conflict absorbs what was missed and places
// them again — unless the caller pinned the session's last sequence
// (Expect), when a conflict is the caller's to handle.
type AppendPlan struct {
	Log    session.Log
	ID     string // the session
	Target Target
	Placer Placer
	// Expect is the caller's expectLastSeq, if it gave one. A conflict then
	// fails with a *wire.ConflictError instead of placing the entries
	// again.
	Expect *uint64
	// Await, when set, is asked first when the view lacks an entry the
	// placement needs: it may wait (briefly) for the view to catch up with
	// it, and says whether it did. Only then is the log read.
	Await func(ctx context.Context, id string) bool

	entries []tree.Entry
	stored  []uint64 // set when the entries were found stored already
	seen    uint64   // the session's last sequence as of the last placement
}

// Place places the entries. If they name a parent the view lacks (and
// Await does not see it arrive), it reads what the view has not seen from
// the log (authoritative) and places them once more, so a client's own
// earlier write is always a valid parent on any node.
func (p *AppendPlan) Place(ctx context.Context) error {
	err := p.place(ctx, false)
	var ue *UnknownEntryError
	if errors.As(err, &ue) && p.Await != nil && p.Await(ctx, ue.ID) {
		err = p.place(ctx, false)
	}
	if !errors.As(err, &ue) {
		return err
	}
	missed, rerr := readMissed(ctx, p.Log, p.ID, p.seen)
	if rerr != nil {
		return rerr
	}
	p.Target.Absorb(missed)
	return p.place(ctx, false)
}

func (p *AppendPlan) place(ctx context.Context, uncertain bool) error {
	return p.Target.With(ctx, func(v View) error {
		p.seen = v.LastSeq()
		entries, stored, err := p.Placer.Place(v, uncertain)
		if err == nil {
			p.entries, p.stored = entries, stored
		}
		return err
	})
}

// Records returns the placed entries as records.
func (p *AppendPlan) Records() []session.Record {
	recs := make([]session.Record, len(p.entries))
	for k := range p.entries {
		recs[k] = session.RecordOf(&p.entries[k])
	}
	return recs
}

// Reconcile implements Plan.
func (p *AppendPlan) Reconcile(ctx context.Context, missed []session.Stored, uncertain bool) ([]uint64, error) {
	p.Target.Absorb(missed)
	if err := p.place(ctx, uncertain); err != nil {
		return nil, err
	}
	if p.stored != nil {
		return p.stored, nil
	}
	if p.Expect != nil {
		last := missed[len(missed)-1].Seq
		return nil, &wire.ConflictError{LastSeq: last,
			Reason: fmt.Sprintf("the session's last sequence is %d, not %d", last, *p.Expect)}
	}
	return nil, nil
}

// Done reports whether the entries were found stored already (Place or
// Reconcile), with their sequences: nothing needs publishing.
func (p *AppendPlan) Done() ([]uint64, bool) { return p.stored, p.stored != nil }

// Entries returns the entries placed (or found stored).
func (p *AppendPlan) Entries() []tree.Entry { return p.entries }

// Seen returns the session's last sequence as of the last placement.
func (p *AppendPlan) Seen() uint64 { return p.seen }
