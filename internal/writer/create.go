package writer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// CreateRecords publishes a new session's records (header first) on an
// empty subject as one atomic batch. ErrExists if the session exists —
// unless it is exactly our own earlier attempt whose ack was lost.
func CreateRecords(ctx context.Context, log session.Log, sid string, recs []session.Record, pol RetryPolicy) ([]uint64, error) {
	return Publish(ctx, log, sid, 0, &fixedPlan{sid: sid, recs: recs, exclusive: true}, pol)
}

// fixedPlan publishes records that must land as they are: a new session's
// (exclusive: on an empty subject) or the next chunk of one. Any record
// beyond what it knew is another writer's, so a conflict is final — unless
// the records found are its own earlier attempt.
type fixedPlan struct {
	sid       string
	recs      []session.Record
	exclusive bool
}

func (p *fixedPlan) Records() []session.Record { return p.recs }

func (p *fixedPlan) Reconcile(_ context.Context, missed []session.Stored, uncertain bool) ([]uint64, error) {
	seqs, ok := alreadyStored(missed, p.recs)
	switch {
	case ok && uncertain && (!p.exclusive || seqs[0] == missed[0].Seq):
		return seqs, nil
	case p.exclusive:
		return nil, fmt.Errorf("create %s: %w", p.sid, wire.ErrExists)
	}
	return nil, fmt.Errorf("%w: session %s changed while it was being written", wire.ErrConflict, p.sid)
}

// publishSession creates a whole session that is already complete (an
// import or a fork) and returns the sequence of every record, header
// first. One atomic batch when it fits. Beyond MaxBatch it goes as
// consecutive CAS batches, its header announcing the record count
// (Record.Total), so that every reader keeps the session hidden until the
// last batch is stored: readers see it whole or not at all.
//
// A subject that already holds a prefix of exactly these records (an
// earlier attempt that died, or one running beside this one) is continued
// from where it stops; the complete identical session, or anything else,
// is ErrExists. If a batch fails for good (another writer's record, an
// abandoned-session claim), the session is purged; if the log is only
// unavailable (or the caller gave up), what is stored stays, hidden, for a
// retry to continue — or for the Stores' cleanup of abandoned sessions.
func publishSession(ctx context.Context, log session.Log, s *tree.Session, pol RetryPolicy) ([]uint64, error) {
	sid := s.Header.ID
	recs := make([]session.Record, 0, 1+s.Len())
	recs = append(recs, session.HeaderRecord(&s.Header))
	for i := range s.Len() {
		recs = append(recs, session.RecordOf(s.Entry(i)))
	}
	max := log.MaxBatch()
	if wc, ok := log.(session.WholeCreator); ok && len(recs) > max {
		return wc.CreateWhole(ctx, sid, recs)
	}
	if len(recs) <= max {
		return CreateRecords(ctx, log, sid, recs, pol)
	}
	recs[0].Total = len(recs)
	seqs, wrote, err := publishChunks(ctx, log, sid, recs, pol)
	if err == nil {
		return seqs, nil
	}
	if wrote && !transient(err) {
		// Best effort under a fresh context: the caller's may be what failed.
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		if perr := log.Purge(pctx, sid); perr != nil {
			err = fmt.Errorf("%w (and purging the partial session failed: %v)", err, perr)
		}
		cancel()
	}
	return nil, fmt.Errorf("write session %s (%d records in batches of %d): %w", sid, len(recs), max, err)
}

// publishChunks publishes recs in batches of MaxBatch from wherever the
// log's copy of the session stops. wrote reports whether this call stored
// any batch.
func publishChunks(ctx context.Context, log session.Log, sid string, recs []session.Record, pol RetryPolicy) (seqs []uint64, wrote bool, err error) {
	max := log.MaxBatch()
	seqs = make([]uint64, len(recs))
	done, last := 0, uint64(0)
	// Each resume follows a conflict that showed more of our own records
	// stored (another attempt's progress) or a record not yet readable:
	// bounded, as every round either advances or waits in Publish.
	for resumes := 0; done < len(recs); {
		chunk := recs[done:min(done+max, len(recs))]
		var got []uint64
		if done == 0 {
			got, err = CreateRecords(ctx, log, sid, chunk, pol)
		} else {
			got, err = Publish(ctx, log, sid, last, &fixedPlan{sid: sid, recs: chunk}, pol)
		}
		if err == nil {
			copy(seqs[done:], got)
			done += len(chunk)
			last, wrote = got[len(got)-1], true
			continue
		}
		if !errors.Is(err, wire.ErrExists) && !errors.Is(err, wire.ErrConflict) {
			return nil, wrote, err
		}
		if resumes++; resumes > 10 {
			return nil, wrote, err
		}
		stored, rerr := readAll(ctx, log, sid, pol)
		if errors.Is(rerr, wire.ErrNotFound) {
			// Purged (within the dedupe window, which still refuses
			// its ids) or not readable yet.
			return nil, wrote, err
		}
		if rerr != nil {
			return nil, wrote, rerr
		}
		k, ok := storedPrefix(stored, recs)
		switch {
		case !ok:
			return nil, wrote, fmt.Errorf("%w: session %s holds records that are not this session's (or an abandoned attempt of it being removed)", wire.ErrExists, sid)
		case k == len(recs) && !wrote:
			return nil, wrote, fmt.Errorf("create %s: %w", sid, wire.ErrExists)
		}
		for i := range k {
			seqs[i] = stored[i].Seq
		}
		done, last = k, stored[k-1].Seq
	}
	return seqs, wrote, nil
}

// readAll reads the whole session, retrying while the log is unavailable
// (a read of many records takes a consumer, which waits out an election of
// the meta leader) as Publish does for writes.
func readAll(ctx context.Context, log session.Log, sid string, pol RetryPolicy) ([]session.Stored, error) {
	pol = pol.withDefaults()
	backoff, since := pol.Backoff, time.Now()
	for {
		recs, err := log.Read(ctx, sid, 0)
		if !errors.Is(err, wire.ErrUnavailable) || ctx.Err() != nil {
			return recs, err
		}
		if time.Since(since) > pol.UnavailableFor {
			// ErrUnavailable alone: the read's own DeadlineExceeded would
			// read as the caller's timeout.
			return nil, fmt.Errorf("read %s: still unavailable after %v: %w (last error: %v)", sid, pol.UnavailableFor, wire.ErrUnavailable, err)
		}
		if !session.Sleep(ctx, &backoff, pol.MaxBackoff) {
			return nil, fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
	}
}

// storedPrefix reports whether the log's records of the session are a
// prefix of recs (the same header, count included, then the same entries
// in order) and how many.
func storedPrefix(stored []session.Stored, recs []session.Record) (int, bool) {
	if len(stored) == 0 || len(stored) > len(recs) {
		return 0, false
	}
	for i, r := range stored {
		if !sameRecord(r.Record, recs[i]) || r.Total != recs[i].Total {
			return 0, false
		}
	}
	return len(stored), true
}

// transient reports whether err leaves the log as it was or unknown, as
// opposed to refusing the write: then a retry may continue the session.
func transient(err error) bool {
	return errors.Is(err, wire.ErrUnavailable) || errors.Is(err, wire.ErrTimeout) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// Import stores a pi session file (JSONL, version 1, 2 or 3; older versions
// are migrated as pi migrates them). The session keeps its header id;
// ErrExists if it is already stored. An import either completes or leaves
// nothing. It reads the file as pi does (ImportWith with the default
// options): what it kept, it stores.
func Import(ctx context.Context, log session.Log, data []byte, rand io.Reader, pol RetryPolicy) (wire.ImportResult, error) {
	return ImportWith(ctx, log, data, tree.ReadOptions{Rand: rand}, pol)
}

// ImportWith is Import with the file read under opt: opt.Validate skips
// entries that are not of pi's shapes (reported in Skipped), opt.Strict
// refuses the file at its first bad line instead, as a *wire.FieldError
// naming it ("line 7", or "line 7.message.role").
//
// A later entry with an id seen before is skipped (strict: refused) like
// any other bad line: the log holds one record per id, and publishing both
// was refused as a conflict naming no line, after every retry (48 s).
func ImportWith(ctx context.Context, log session.Log, data []byte, opt tree.ReadOptions, pol RetryPolicy) (wire.ImportResult, error) {
	opt.UniqueIDs = true
	f, err := tree.Read(data, opt)
	if err != nil {
		var le *tree.LineError
		if errors.As(err, &le) {
			field := fmt.Sprintf("line %d", le.Line)
			if le.Field != "" {
				field += "." + le.Field
			}
			return wire.ImportResult{}, wire.Invalid(field, le.Reason)
		}
		return wire.ImportResult{}, fmt.Errorf("%w: %v", wire.ErrInvalid, err)
	}
	if err := session.ValidSessionID(f.Header.ID); err != nil {
		var fe *wire.FieldError
		if errors.As(err, &fe) {
			err = wire.Invalid(fmt.Sprintf("line %d.id", f.HeaderLine), fe.Reason)
		}
		return wire.ImportResult{}, err
	}
	if err := session.ValidTimestamp(f.Header.Timestamp); err != nil {
		return wire.ImportResult{}, wire.Invalid(fmt.Sprintf("line %d.timestamp", f.HeaderLine), err.(*wire.FieldError).Reason)
	}
	res := wire.ImportResult{SessionID: f.Header.ID, Entries: f.Len(), SourceVersion: f.SourceVersion, Skipped: f.Skipped}
	seqs, err := publishSession(ctx, log, f.Session, pol)
	if err != nil {
		return res, err
	}
	res.LastSeq = seqs[len(seqs)-1]
	return res, nil
}

// Fork stores a new session holding the path from src's root to entry
// leafID (pi's createBranchedSession) and returns its id. Unlike a Writer's
// new session it is published at once, even without an assistant message:
// a fork is an explicit operator action, not an unanswered question. pi11
// forks as pi 1.1 does (tree.Fork11), else as pi 0.73.1 (tree.Fork).
func Fork(ctx context.Context, log session.Log, src *tree.Session, leafID string, now time.Time, rand io.Reader, pol RetryPolicy, pi11 bool) (string, uint64, error) {
	leaf, ok := src.Index(leafID)
	if !ok {
		return "", 0, fmt.Errorf("fork: entry %q: %w", leafID, wire.ErrNotFound)
	}
	u, err := uuid.NewV7()
	if err != nil {
		return "", 0, err
	}
	h := tree.NewHeader(u.String(), tree.FormatTimestamp(now), src.Header.Cwd, src.Header.ID)
	fork := tree.Fork
	if pi11 {
		fork = tree.Fork11
	}
	s, err := fork(src, leaf, h, tree.IDGen{R: rand})
	if err != nil {
		return "", 0, err
	}
	if err := checkFork(s); err != nil {
		return "", 0, err
	}
	seqs, err := publishSession(ctx, log, s, pol)
	if err != nil {
		return h.ID, 0, err
	}
	return h.ID, seqs[len(seqs)-1], nil
}

// ForkRef is a fork by reference to store: what ForkByReference needs of
// its parent, taken from the parent's tree where it is held.
type ForkRef struct {
	Parent tree.Header    // the parent's header (its id, cwd)
	Of     session.ForkOf // the fork point (Session: the parent's id)
	Labels []tree.Entry   // tree.ForkLabels of the fork point
	// Path is the parent's path (under the parent's header) and its
	// entries' sequences, should the parent go before the fork is stored.
	Path func() (*tree.Session, []uint64)
}

// ForkByReference stores a fork that copies nothing (session.ForkOf): its
// header, naming the parent and the fork point, and the labels of the path
// written again; readers take the path from the parent. It records the
// fork in reg first, and after storing it checks that the parent is still
// in the log: if it went meanwhile (erased, archived), or the check fails,
// the fork takes its path at once (session.Inherit), as whoever removed the parent may have
// looked for its forks before this one was recorded.
func ForkByReference(ctx context.Context, log session.Log, reg session.ForkRegistry, f ForkRef, now time.Time, pol RetryPolicy) (string, uint64, error) {
	u, err := uuid.NewV7()
	if err != nil {
		return "", 0, err
	}
	h := tree.NewHeader(u.String(), tree.FormatTimestamp(now), f.Parent.Cwd, f.Parent.ID)
	hr := session.HeaderRecord(&h)
	of := f.Of
	hr.Fork = &of
	recs := append(make([]session.Record, 0, 1+len(f.Labels)), hr)
	for i := range f.Labels {
		e := &f.Labels[i]
		if err := tree.CheckLine(e.Raw); err != nil {
			return "", 0, wire.Invalid("entryId", fmt.Sprintf("a label of the path is not valid (%v)", err))
		}
		recs = append(recs, session.RecordOf(e))
	}
	if len(recs) > log.MaxBatch() {
		return "", 0, fmt.Errorf("%w: the path has %d labels, more than one atomic batch carries", wire.ErrTooLarge, len(f.Labels))
	}
	if err := reg.RecordFork(ctx, f.Of.Session, h.ID); err != nil {
		return "", 0, fmt.Errorf("fork: %w", err)
	}
	seqs, err := CreateRecords(ctx, log, h.ID, recs, pol)
	if err != nil {
		return h.ID, 0, err
	}
	last := seqs[len(seqs)-1]
	if _, err := log.SessionLastSeq(ctx, f.Of.Session); err != nil {
		// Gone, or not known to be there: the fork takes its path now.
		pt, seqs := f.Path()
		if _, ierr := session.Inherit(ctx, log, pt, seqs, h.ID); ierr != nil {
			return h.ID, last, fmt.Errorf("fork: its parent %s (%v), and its path could not be added: %w", f.Of.Session, err, ierr)
		}
		if l, err := log.SessionLastSeq(ctx, h.ID); err == nil {
			last = l
		}
	}
	return h.ID, last, nil
}
