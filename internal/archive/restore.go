package archive

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
	"github.com/pifleet/sessionlog/internal/writer"
)

// Restore brings an archived session back into the log, byte for byte as
// it was archived, under its own id (it gets new sequences), and then
// removes its copies from the archive. It is refused
//   - with ErrNotFound when the archive has no copy of it;
//   - with a *TooRecentError while its last write is inside the log's
//     dedupe window (a session archived minutes after it was written: the
//     log would drop the restored entries as duplicates);
//   - with ErrExists when the session is in the log: restored already, or
//     written to again after a stale copy was made.
//
// A restore that fails midway leaves nothing in the log (an import is
// atomic) and the copies in the archive, so it can be run again.
func (a *Archiver) Restore(ctx context.Context, sid string) (wire.ImportResult, error) {
	if err := session.ValidSessionID(sid); err != nil {
		return wire.ImportResult{}, err
	}
	a.purgedHere(sid, true) // the session comes back: a later purge is a new one
	copies, err := a.b.Find(ctx, sid)
	if err != nil {
		return wire.ImportResult{}, fmt.Errorf("restore %s: %w", sid, err)
	}
	if len(copies) == 0 {
		return wire.ImportResult{}, fmt.Errorf("restore %s: %w: the archive has no copy of this session", sid, wire.ErrNotFound)
	}
	best := newest(copies)
	if until := best.Modified.Add(a.b.DuplicateWindow() + dedupeMargin); a.opts.Now().Before(until) {
		return wire.ImportResult{}, &TooRecentError{Session: sid, Modified: best.Modified, Until: until}
	}
	data, err := a.b.Fetch(ctx, best)
	if err != nil {
		return wire.ImportResult{}, fmt.Errorf("restore %s: %w", sid, err)
	}
	res, err := writer.Import(ctx, a.log, data, nil, a.opts.Retry)
	if errors.Is(err, wire.ErrExists) {
		if _, lerr := a.b.LastSeq(ctx, sid); errors.Is(lerr, wire.ErrNotFound) {
			// Not in the log, yet refused: the dedupe window of a node
			// whose clock runs behind.
			until := a.opts.Now().Add(a.b.DuplicateWindow())
			return res, &TooRecentError{Session: sid, Modified: best.Modified, Until: until}
		}
		return res, fmt.Errorf("restore %s: %w: the session is in the log (restored already, or written to again after this copy was made)", sid, wire.ErrExists)
	}
	if err != nil {
		return res, fmt.Errorf("restore %s: %w", sid, err)
	}
	a.stats.restores.Add(1)
	// The session is whole in the log again: its copies are redundant.
	// Left behind (this failing), a copy is harmless: a restore of it
	// finds the session live.
	if err := a.b.Delete(ctx, copies); err != nil {
		a.lg.Warn("restored session's copies stay in the archive", "session", sid, "err", err)
	}
	return res, nil
}

// dedupeMargin covers clock differences between the node and the servers
// that stamped the records.
const dedupeMargin = 2 * time.Second

// newest is the copy with the highest last sequence (the latest archive
// pass wins over a stale copy), the later one of equals.
func newest(cs []wire.ArchiveCopy) wire.ArchiveCopy {
	best := cs[0]
	for _, c := range cs[1:] {
		if c.LastSeq > best.LastSeq || c.LastSeq == best.LastSeq && c.Seq > best.Seq {
			best = c
		}
	}
	return best
}

// List returns a page of the archive: up to limit copies (default 100, at
// most 1000) of month ("" for all), from archive sequence from on, and the
// sequence of the next page (0 on the last).
func (a *Archiver) List(ctx context.Context, month string, from uint64, limit int) ([]wire.ArchivedSession, uint64, error) {
	if month != "" {
		if err := session.ValidArchiveMonth(month); err != nil {
			return nil, 0, err
		}
	}
	if limit <= 0 {
		limit = 100
	}
	cs, next, err := a.b.List(ctx, month, from, min(limit, 1000))
	if err != nil {
		return nil, 0, err
	}
	out := make([]wire.ArchivedSession, len(cs))
	for i, c := range cs {
		out[i] = wire.ArchivedSession{ArchiveCopy: c, Live: a.store.For(c.SessionID).Has(c.SessionID)}
	}
	return out, next, nil
}
