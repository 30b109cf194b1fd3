package region

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// MergeStats count what a failback merged.
type MergeStats struct {
	Scanned  int `json:"scanned"`  // records of the old stream read (after the shared prefix)
	Sessions int `json:"sessions"` // sessions that got records
	Created  int `json:"created"`  // of them, sessions the home did not have at all
	Entries  int `json:"entries"`  // entries republished into the home
	Present  int `json:"present"`  // entries the home had already (mirrored, or re-sent by a client)
	// Conflicts are entries whose id the home holds with other bytes: ids
	// are drawn at random per session, so two regions taking writes at
	// once may, very rarely, pick the same one. The home's is kept.
	Conflicts    int `json:"conflicts"`
	PurgeNotices int `json:"purgeNotices"` // purges in the old stream, not replayed (a merge only adds)
	// Erased are records of erased sessions (the ledger's), not merged:
	// a failback brings back nothing a delete erased, in either region.
	Erased        int `json:"erased"`
	Cursors       int `json:"cursors"`       // cursors copied or moved forward
	CursorsKept   int `json:"cursorsKept"`   // cursors the home had newer
	VerifiedTotal int `json:"verifiedTotal"` // entries checked present in the home afterwards
}

// add adds o's counts to s's (the merges of several shards).
func (s *MergeStats) add(o MergeStats) {
	s.Scanned += o.Scanned
	s.Sessions += o.Sessions
	s.Created += o.Created
	s.Entries += o.Entries
	s.Present += o.Present
	s.Conflicts += o.Conflicts
	s.PurgeNotices += o.PurgeNotices
	s.Erased += o.Erased
	s.Cursors += o.Cursors
	s.CursorsKept += o.CursorsKept
	s.VerifiedTotal += o.VerifiedTotal
}

// mergeSessions republishes into dst every entry of src after sequence
// after that dst lacks, unchanged (same id, same parentId, same bytes), in
// src's order per session — so each appears in dst's tree where it was, as
// a branch beside what dst gained meanwhile. Ids are immutable, so this is
// a set union per session: nothing is stored twice, however often it runs.
// It checks afterwards that every entry it read is in dst. Records of a
// session erased (erased: when, by the ledger of erasures) stored at or
// before its erasure are left out.
func mergeSessions(ctx context.Context, src, dst *jetstream.Log, after uint64, erased map[string]time.Time) (MergeStats, error) {
	var st MergeStats
	bySession := map[string][]session.Stored{}
	var order []string
	_, err := src.Scan(ctx, after, func(recs []session.Stored) error {
		for _, r := range recs {
			st.Scanned++
			if r.Session == session.PurgeToken {
				st.PurgeNotices++
				continue
			}
			if at, ok := erased[r.Session]; ok && !r.Time.After(at) {
				st.Erased++
				continue
			}
			if bySession[r.Session] == nil {
				order = append(order, r.Session)
			}
			bySession[r.Session] = append(bySession[r.Session], r)
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	for _, sid := range order {
		if err := mergeSession(ctx, src, dst, sid, bySession[sid], &st); err != nil {
			return st, fmt.Errorf("merge session %s: %w", sid, err)
		}
	}
	return st, nil
}

// mergeSession merges one session's records while writers of the home may
// append to it: the publish is conditional on the session's last sequence,
// as every write is, and after a conflict only what was missed is read
// (as the Service's own append loop does) before trying again, so a busy
// session does not starve the merge.
func mergeSession(ctx context.Context, src, dst *jetstream.Log, sid string, recs []session.Stored, st *MergeStats) error {
	h := homeView{stored: map[string][]byte{}}
	if err := h.readMore(ctx, dst, sid); err != nil {
		return err
	}
	var header *session.Record // src's header, once fetched
	republished, conflicts := 0, 0
	for attempt := 0; attempt < 200; attempt++ {
		missing, present, clash := h.missing(recs)
		if len(missing) == 0 {
			st.Present += present - republished
			st.Conflicts += clash
			st.VerifiedTotal += present + clash
			return nil
		}
		if !h.hasHeader {
			if header == nil {
				r, err := srcHeader(ctx, src, sid)
				if err != nil {
					return err
				}
				header = &r
			}
			missing = append([]session.Record{*header}, missing...)
		}
		n, err := publish(ctx, dst, sid, h.last, missing)
		if n > 0 {
			if republished == 0 {
				st.Sessions++
			}
			if h.last == 0 {
				st.Created++
			}
			republished += n - headers(missing[:n])
			st.Entries += n - headers(missing[:n])
		}
		switch {
		case err == nil:
		case errors.Is(err, wire.ErrConflict), errors.Is(err, wire.ErrExists), errors.Is(err, wire.ErrUnavailable):
			if conflicts++; conflicts > 3 {
				// Several in a row: let the writers through for a moment.
				wait := time.Duration(rand.IntN(conflicts*5)+1) * time.Millisecond
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(wait):
				}
			}
		default:
			return err
		}
		// Read what changed: our own records (then the next round
		// verifies them) or the writers' (then it tries again after them).
		if err := h.readMore(ctx, dst, sid); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: the session kept changing while it was merged", wire.ErrUnavailable)
}

// homeView is what the home holds of one session, read incrementally.
type homeView struct {
	stored    map[string][]byte // entry id -> its line
	hasHeader bool
	last      uint64 // the session's last sequence in the home (0: none)
}

// readMore reads the session's records after the last one seen.
func (h *homeView) readMore(ctx context.Context, dst *jetstream.Log, sid string) error {
	recs, err := dst.Read(ctx, sid, h.last)
	if errors.Is(err, wire.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.IsHeader() {
			h.hasHeader = true
		} else {
			h.stored[r.ID] = r.Data
		}
		h.last = max(h.last, r.Seq)
	}
	return nil
}

// missing returns the entries of recs the home lacks, in recs' order, and
// counts those it has with the same bytes (present) and with other bytes
// (clash).
func (h *homeView) missing(recs []session.Stored) (missing []session.Record, present, clash int) {
	for _, r := range recs {
		if r.IsHeader() {
			continue
		}
		data, ok := h.stored[r.ID]
		switch {
		case !ok:
			missing = append(missing, r.Record)
		case bytes.Equal(data, r.Data):
			present++
		default:
			clash++
		}
	}
	return missing, present, clash
}

// srcHeader reads the session's header from the old stream, for a session
// the home lacks entirely: it began after the shared history (and is in
// the merged records), or in it (and the home has lost it to a purge).
func srcHeader(ctx context.Context, src *jetstream.Log, sid string) (session.Record, error) {
	all, err := src.Read(ctx, sid, 0)
	if err != nil {
		return session.Record{}, fmt.Errorf("read the header: %w", err)
	}
	if len(all) == 0 || !all[0].IsHeader() {
		return session.Record{}, fmt.Errorf("%w: the old stream has entries of the session but no header", wire.ErrInvalid)
	}
	return all[0].Record, nil
}

// publish appends recs to the session after last, in atomic batches of at
// most the log's batch size, and returns how many it stored.
func publish(ctx context.Context, dst *jetstream.Log, sid string, last uint64, recs []session.Record) (int, error) {
	n := 0
	for n < len(recs) {
		chunk := recs[n:min(n+dst.MaxBatch(), len(recs))]
		seqs, err := dst.Append(ctx, sid, last, chunk)
		if err != nil {
			return n, err
		}
		n, last = n+len(chunk), seqs[len(seqs)-1]
	}
	return n, nil
}

func headers(recs []session.Record) int {
	n := 0
	for _, r := range recs {
		if r.IsHeader() {
			n++
		}
	}
	return n
}

// mergeCursors copies into dst every cursor of src that dst lacks, and
// moves forward those src set later (by their updatedAt) than dst's. A
// cursor src deleted is not deleted in dst: a merge only adds. The
// cursors of an erased session set before its erasure are left out.
func mergeCursors(ctx context.Context, src, dst *jetstream.Cursors, erased map[string]time.Time, st *MergeStats) error {
	all, err := src.All(ctx)
	if err != nil {
		return err
	}
	for _, e := range all {
		if at, ok := erased[e.Session]; ok && !e.UpdatedAt.After(at) {
			continue
		}
		for attempt := 0; ; attempt++ {
			cur, err := dst.Get(ctx, e.Session, e.Client)
			var expect uint64
			switch {
			case errors.Is(err, wire.ErrNotFound):
			case err != nil:
				return err
			case !e.UpdatedAt.After(cur.UpdatedAt):
				st.CursorsKept++
			default:
				expect = cur.Revision
			}
			if err == nil && expect == 0 {
				break // kept
			}
			_, err = dst.Update(ctx, e.Session, e.Client, e.Cursor, expect)
			if errors.Is(err, wire.ErrConflict) && attempt < 20 {
				continue // moved meanwhile: compare again
			}
			if err != nil {
				return fmt.Errorf("cursor %s/%s: %w", e.Session, e.Client, err)
			}
			st.Cursors++
			break
		}
	}
	return nil
}
