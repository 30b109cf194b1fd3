package archive

import (
	"context"
	"errors"
	"fmt"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Erase erases session sid wherever the cluster keeps it (docs/SECURITY.md,
// "Erasure"): a line in the ledger of erasures first (who, when; no
// content), then its records in the log (session.Eraser: each message
// overwritten, its cursors, the notice upon which every Store and search
// index drops it and rewrites its files), then its copies in the archive.
// A session only in the archive is erased there. expectLast != 0 makes it
// conditional on the session's last sequence (a *wire.ConflictError,
// nothing erased, no line). A failure half-way leaves the line, and Erase
// again finishes the job.
//
// An archive pass racing with it cannot leave a copy behind: the pass
// looks at the ledger after it puts a copy (dropErased), and Erase looks
// for copies after the line is written.
func (a *Archiver) Erase(ctx context.Context, sid string, expectLast uint64, by string) (wire.DeleteReply, error) {
	if err := session.ValidSessionID(sid); err != nil {
		return wire.DeleteReply{}, err
	}
	eraser, ok := a.log.(session.Eraser)
	ledger, lok := a.b.(session.ErasureLedger)
	if !ok || !lok {
		return wire.DeleteReply{}, fmt.Errorf("delete %s: %w: this node's log cannot erase", sid, errors.ErrUnsupported)
	}
	last, err := a.log.SessionLastSeq(ctx, sid)
	inLog := err == nil
	switch {
	case errors.Is(err, wire.ErrNotFound):
		if expectLast != 0 {
			return wire.DeleteReply{}, fmt.Errorf("delete %s: %w", sid, err)
		}
	case err != nil:
		return wire.DeleteReply{}, fmt.Errorf("delete %s: %w", sid, err)
	case expectLast != 0 && last != expectLast:
		return wire.DeleteReply{}, &wire.ConflictError{LastSeq: last, Reason: fmt.Sprintf("session %s is at %d, not %d", sid, last, expectLast)}
	}
	var copies []wire.ArchiveCopy
	if !inLog {
		// Archived, or no such session: the 404 must not leave a line.
		if copies, err = a.findCopies(ctx, sid); err != nil {
			return wire.DeleteReply{}, fmt.Errorf("delete %s: %w", sid, err)
		}
		if len(copies) == 0 {
			return wire.DeleteReply{}, fmt.Errorf("session %s: %w", sid, wire.ErrNotFound)
		}
	}
	line := wire.Erasure{Session: sid, At: a.opts.Now().UTC(), By: by}
	if err := ledger.RecordErasure(ctx, line); err != nil {
		return wire.DeleteReply{}, fmt.Errorf("delete %s: %w", sid, err)
	}
	out := wire.DeleteReply{SessionID: sid}
	// Its forks by reference get their path first (and again after, for
	// a fork recorded meanwhile): they keep their history.
	reg, forks := a.b.(session.ForkRegistry)
	var pt *tree.Session
	var pseqs []uint64
	given := func(context.Context) (*tree.Session, []uint64, error) { return pt, pseqs, nil }
	if inLog && forks {
		if pt, pseqs, err = session.LogTree(a.log, sid)(ctx); err != nil && !errors.Is(err, wire.ErrNotFound) {
			return wire.DeleteReply{}, fmt.Errorf("delete %s: %w", sid, err)
		}
		if pt != nil {
			if _, err := session.InheritForks(ctx, a.log, reg, sid, given); err != nil {
				return wire.DeleteReply{}, fmt.Errorf("delete %s: its forks: %w", sid, err)
			}
		}
	}
	if inLog {
		res, err := eraser.Erase(ctx, sid, expectLast)
		var conflict *wire.ConflictError
		switch {
		case errors.As(err, &conflict):
			// Written to since the check: nothing erased.
			if ferr := ledger.ForgetErasure(ctx, sid); ferr != nil {
				a.lg.Warn("an erasure refused on a conflict left its ledger line", "session", sid, "err", ferr)
			}
			return wire.DeleteReply{}, err
		case errors.Is(err, wire.ErrNotFound):
			// Archived or erased meanwhile: the copies below.
		case err != nil:
			return wire.DeleteReply{}, fmt.Errorf("delete %s: %w", sid, err)
		}
		out.Records, out.LastSeq = res.Records, res.LastSeq
		if copies, err = a.findCopies(ctx, sid); err != nil {
			return wire.DeleteReply{}, fmt.Errorf("delete %s: %w", sid, err)
		}
	}
	if len(copies) > 0 {
		if err := a.b.Delete(ctx, copies); err != nil {
			return wire.DeleteReply{}, fmt.Errorf("delete %s: the archive's copies: %w", sid, err)
		}
	}
	out.ArchivedCopies = len(copies)
	if pt != nil {
		if _, err := session.InheritForks(ctx, a.log, reg, sid, given); err != nil {
			a.lg.Error("a fork recorded during an erasure did not get its path: it cannot be read", "session", sid, "err", err)
		} else if err := reg.ForgetForks(ctx, sid); err != nil {
			a.lg.Warn("the registry of forks keeps an erased session's forks", "session", sid, "err", err)
		}
	}
	line.Records = out.Records
	if err := ledger.RecordErasure(ctx, line); err != nil {
		// Erased; the line written first stays, without the count.
		a.lg.Warn("the ledger line of an erasure was not updated", "session", sid, "err", err)
	}
	a.purgedHere(sid, true)
	a.stats.erased.Add(1)
	a.lg.Info("audit: session erased", "session", sid, "by", by, "records", out.Records, "archivedCopies", out.ArchivedCopies)
	return out, nil
}

// findCopies is Find, with no archive at all meaning no copies.
func (a *Archiver) findCopies(ctx context.Context, sid string) ([]wire.ArchiveCopy, error) {
	cs, err := a.b.Find(ctx, sid)
	if errors.Is(err, wire.ErrNotFound) {
		return nil, nil
	}
	return cs, err
}

// dropErased is the pass's look at the ledger after it put a copy of sid:
// an erased session's copies are erased and gone is true.
func (a *Archiver) dropErased(ctx context.Context, sid string) (gone bool, err error) {
	ledger, ok := a.b.(session.ErasureLedger)
	if !ok {
		return false, nil
	}
	erased, err := ledger.Erased(ctx, sid)
	if err != nil || !erased {
		return false, err
	}
	copies, err := a.findCopies(ctx, sid)
	if err == nil && len(copies) > 0 {
		err = a.b.Delete(ctx, copies)
	}
	if err != nil {
		return true, fmt.Errorf("archive %s: erased meanwhile, and its copy stays: %w", sid, err)
	}
	a.lg.Info("an archived copy of an erased session was erased", "session", sid)
	return true, nil
}

// Erasures is the ledger of erasures.
func (a *Archiver) Erasures(ctx context.Context) ([]wire.Erasure, error) {
	ledger, ok := a.b.(session.ErasureLedger)
	if !ok {
		return nil, fmt.Errorf("%w: this node keeps no ledger of erasures", errors.ErrUnsupported)
	}
	return ledger.Erasures(ctx)
}
