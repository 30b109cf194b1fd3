package archive

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Outcome is what Archive did with one session.
type Outcome int

const (
	// Archived: a complete copy is in the archive, the session's records
	// and cursors are gone from the log, and the purge notice is out.
	Archived Outcome = iota
	// Repaired: as Archived, but a write landed during the purge; the copy
	// holds it too (see Archive).
	Repaired
	// Active: the session was written to after cutoff; it stays.
	Active
	// Gone: the Store no longer has the session (archived meanwhile).
	Gone
	// Erased: a retention policy's deleteAfter erased it (PolicyPass).
	Erased
)

func (o Outcome) String() string {
	return [...]string{"archived", "repaired", "active", "gone", "erased"}[o]
}

// Archive moves one session to the archive if its last record is older
// than cutoff, and returns the size of the copy. The steps, each safe to
// repeat and to run on two nodes at once:
//
//  1. Export the session from the Store: the pi JSONL as of its last
//     sequence L (what export returns).
//  2. Ask the log for the session's last sequence (the Store may lag): a
//     later record written after cutoff means the session is active; one
//     written before is a record the Store skipped (not a pi line), and
//     the purge extends to it.
//  3. Put the copy and wait for the archive's ack.
//  4. Purge the session's records up to L, its cursors, then publish the
//     purge notice, upon which every Store drops the session.
//
// JetStream cannot purge "only if nothing was appended": a write may land
// between step 4's check and the purge, leaving entries without their
// header in the log. Live Stores still hold the whole session then (no
// notice was sent), but one rebuilt from the log would skip those entries.
// Putting the prefix back in front is impossible (stream order), and
// re-publishing the session is refused for a while (the new entries' ids
// are in the log's dedupe window). So the purge is completed instead: the
// new records are appended to the copy, the copy is put again, the purge
// extends to them, and only then the notice goes out. Nothing
// acknowledged is lost; the writer's next append fails (the session is
// archived), and a restore brings it all back.
func (a *Archiver) Archive(ctx context.Context, sid string, cutoff time.Time) (Outcome, int64, error) {
	if err := a.Provision(ctx); err != nil {
		return Active, 0, err
	}
	c, data, out, err := a.export(ctx, sid, cutoff)
	if err != nil || out != Archived {
		return out, 0, err
	}
	// Its forks by reference get their path before it leaves the log
	// (and again after, for a fork recorded meanwhile).
	reg, forks := a.b.(session.ForkRegistry)
	if forks {
		if _, err := session.InheritForks(ctx, a.log, reg, sid, session.LogTree(a.log, sid)); err != nil {
			return Active, 0, fmt.Errorf("archive %s: its forks: %w", sid, err)
		}
	}
	if err := a.b.Put(ctx, c, data); err != nil {
		return Active, 0, err
	}
	// An erasure since the export (the Store holds an erased session
	// until it applies the notice) must not leave this copy behind.
	if gone, err := a.dropErased(ctx, sid); gone || err != nil {
		return Gone, 0, err
	}
	out, n, err := a.purge(ctx, &c, data)
	if gone, derr := a.dropErased(ctx, sid); gone || derr != nil {
		return Gone, 0, derr // a repair's copies too
	}
	if err == nil && (out == Archived || out == Repaired) {
		a.stats.archived(out)
		a.notePurged(sid)
		if forks {
			a.inheritAfter(ctx, reg, sid, data)
		}
	}
	return out, n, err
}

// inheritAfter gives a fork recorded while sid was archived its path,
// from the archived copy data, and forgets sid's forks.
func (a *Archiver) inheritAfter(ctx context.Context, reg session.ForkRegistry, sid string, data []byte) {
	// The copy keeps no sequences: such a fork's inherited lines take its
	// header's.
	fromCopy := func(context.Context) (*tree.Session, []uint64, error) {
		f, err := tree.Read(data, tree.ReadOptions{})
		if err != nil {
			return nil, nil, err
		}
		return f.Session, nil, nil
	}
	if _, err := session.InheritForks(ctx, a.log, reg, sid, fromCopy); err != nil {
		a.lg.Error("a fork recorded while its parent was archived did not get its path: restore the parent to read it", "session", sid, "err", err)
		return
	}
	if err := reg.ForgetForks(ctx, sid); err != nil {
		a.lg.Warn("the registry of forks keeps an archived session's forks", "session", sid, "err", err)
	}
}

// repairFor bounds the repair of a torn session. It goes on when the
// pass's context ends (a shutdown): stopping halfway would leave the log
// torn for longer.
const repairFor = time.Minute

// purge is step 4, and the repair of a session a write tore (see Archive).
func (a *Archiver) purge(ctx context.Context, c *wire.ArchiveCopy, data []byte) (Outcome, int64, error) {
	sid, upTo := c.SessionID, c.LastSeq
	remaining, err := a.b.PurgeUpTo(ctx, sid, upTo)
	var conflict *wire.ConflictError
	switch {
	case errors.As(err, &conflict):
		// Written to after step 2, and nothing purged: the session stays.
		// The copy stays in the archive as a stale one; a restore finds
		// the session live, and a later pass puts a newer copy.
		a.lg.Debug("session became active while being archived", "session", sid, "lastSeq", conflict.LastSeq)
		return Active, 0, nil
	case err != nil:
		return Active, 0, err
	case remaining == 0:
		return Archived, int64(len(data)), nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), repairFor)
	defer cancel()
	backoff := 50 * time.Millisecond
	for {
		a.lg.Warn("a write landed while a session was purged; archiving it with the session",
			"session", sid, "purgedUpTo", upTo, "lastSeq", remaining)
		var done bool
		data, upTo, done, err = a.complete(rctx, c, data, upTo)
		if err == nil && !done {
			remaining, err = a.b.PurgeUpTo(rctx, sid, upTo)
			if errors.As(err, &conflict) {
				// More writes since complete read the log: the prefix is
				// purged already, so they are added like the first ones.
				remaining, err = conflict.LastSeq, nil
			}
			done = err == nil && remaining == 0
		}
		if done {
			return Repaired, int64(len(data)), nil
		}
		if err == nil {
			continue
		}
		select {
		case <-rctx.Done():
			// The Stores still hold the whole session (no notice went out):
			// the next pass that finds it idle archives the Store's copy and
			// completes the purge.
			return Active, 0, fmt.Errorf("archive %s: torn: records up to %d are purged (the archive has them), later ones are in the log without their header, until a pass completes it: %w", sid, upTo, err)
		case <-time.After(backoff):
			backoff = min(2*backoff, 2*time.Second)
		}
	}
}

// export is steps 1 and 2: the copy of an idle session, up to the
// sequence the purge goes to; Archived means "go on". The Store may lag
// behind the log: when the log has later records of the session, export
// waits until the Store has applied them and exports again. A record the
// Store has applied but not added to the session is one it skipped (a
// line that is not pi's, a repeated header): the purge goes up to it, and
// it is left out of the copy, as it is out of the Store's export.
func (a *Archiver) export(ctx context.Context, sid string, cutoff time.Time) (wire.ArchiveCopy, []byte, Outcome, error) {
	for range 3 {
		// Read before the export: the export holds at least what the Store
		// had applied by then.
		applied := a.store.For(sid).Applied()
		var c wire.ArchiveCopy
		var data []byte
		err := a.store.For(sid).View(ctx, sid, func(d *store.Doc) error {
			c.Info = d.Info()
			// A copy's modified is the retention clock: when the log
			// stored the session's last record, not its entries' time
			// (imported history is old at once), as restore's wait for
			// the duplicate window needs it.
			c.Modified = d.Modified
			if c.Modified.Before(cutoff) {
				data = d.Tree.AppendJSONL(make([]byte, 0, d.Tree.Bytes()+d.Tree.Len()+1))
			}
			return nil
		})
		switch {
		case errors.Is(err, wire.ErrNotFound):
			return c, nil, Gone, nil
		case err != nil:
			return c, nil, Active, fmt.Errorf("archive %s: export: %w", sid, err)
		case data == nil:
			return c, nil, Active, nil
		}
		c.Month = session.ArchiveMonth(sid, c.Created)
		last, err := a.b.LastSeq(ctx, sid)
		switch {
		case errors.Is(err, wire.ErrNotFound) && a.purgedHere(sid, false):
			// Purged by this node, its notice out: the Store has not
			// applied it yet (it lags under load) and will drop the session.
			return c, nil, Gone, nil
		case errors.Is(err, wire.ErrNotFound):
			// Purged already (a pass that died before its notice): archive
			// the Store's copy anyway; the notice goes out after it.
			return c, data, Archived, nil
		case err != nil:
			return c, nil, Active, fmt.Errorf("archive %s: %w", sid, err)
		case last <= c.LastSeq:
			return c, data, Archived, nil
		}
		later, err := a.log.Read(ctx, sid, c.LastSeq)
		if err != nil && !errors.Is(err, wire.ErrNotFound) {
			return c, nil, Active, fmt.Errorf("archive %s: read after %d: %w", sid, c.LastSeq, err)
		}
		if len(later) == 0 {
			continue // purged meanwhile: look again
		}
		for _, r := range later {
			if !r.Time.Before(cutoff) || r.IsHeader() {
				return c, nil, Active, nil
			}
		}
		end := later[len(later)-1].Seq
		if applied >= end {
			c.LastSeq = end // applied, yet not in the session: skipped
			return c, data, Archived, nil
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = a.store.For(sid).WaitFor(wctx, end)
		cancel()
		if err != nil {
			return c, nil, Active, fmt.Errorf("archive %s: this node's Store lags the log: %w", sid, err)
		}
	}
	return wire.ArchiveCopy{}, nil, Active, nil // written to as fast as we look
}

// complete adds the records after upTo to the copy and puts it again; it
// returns the copy's data and new last sequence, or done when nothing is
// left to purge. Records another archiver purged meanwhile are not there
// to add: the next PurgeUpTo finds the subject empty and sends the notice.
func (a *Archiver) complete(ctx context.Context, c *wire.ArchiveCopy, data []byte, upTo uint64) ([]byte, uint64, bool, error) {
	later, err := a.log.Read(ctx, c.SessionID, upTo)
	if errors.Is(err, wire.ErrNotFound) {
		return data, upTo, false, nil
	}
	if err != nil {
		return data, upTo, false, err
	}
	created := false
	for i, r := range later {
		if r.IsHeader() {
			// The subject was empty for a moment and someone created the
			// session anew: that one is not ours and stays. Entries before
			// it have no header; they go in the copy, and Stores skip them.
			later, created = later[:i], true
			break
		}
	}
	if len(later) > 0 {
		for _, r := range later {
			if !r.IsMarker() {
				data = append(append(data, r.Data...), '\n')
			}
		}
		last := later[len(later)-1]
		c.LastSeq, c.Modified = last.Seq, last.Time
		c.EntryCount += len(later)
		if err := a.b.Put(ctx, *c, data); err != nil {
			return data, upTo, false, err
		}
		upTo = last.Seq
	}
	if created {
		return data, upTo, true, a.b.Notify(ctx, c.SessionID, upTo)
	}
	return data, upTo, false, nil
}
