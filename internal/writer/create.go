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
// import or a fork): one atomic batch when it fits, else consecutive CAS
// batches; if any batch fails the subject is purged, so the result is the
// complete session or nothing. It returns the sequence of every record,
// header first.
func publishSession(ctx context.Context, log session.Log, s *tree.Session, pol RetryPolicy) ([]uint64, error) {
	sid := s.Header.ID
	recs := make([]session.Record, 0, 1+s.Len())
	recs = append(recs, session.HeaderRecord(&s.Header))
	for i := range s.Len() {
		recs = append(recs, session.RecordOf(s.Entry(i)))
	}
	max := log.MaxBatch()
	if len(recs) <= max {
		return CreateRecords(ctx, log, sid, recs, pol)
	}
	var last uint64
	all := make([]uint64, 0, len(recs))
	for start := 0; start < len(recs); start += max {
		chunk := recs[start:min(start+max, len(recs))]
		var seqs []uint64
		var err error
		if start == 0 {
			seqs, err = CreateRecords(ctx, log, sid, chunk, pol)
		} else {
			seqs, err = Publish(ctx, log, sid, last, &fixedPlan{sid: sid, recs: chunk}, pol)
		}
		if err != nil {
			if start > 0 || !errors.Is(err, wire.ErrExists) {
				// Best effort under a fresh context: the caller's may be what failed.
				pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
				if perr := log.Purge(pctx, sid); perr != nil {
					err = fmt.Errorf("%w (and purging the partial session failed: %v)", err, perr)
				}
				cancel()
			}
			return nil, fmt.Errorf("write session %s (records %d-%d of %d): %w", sid, start+1, start+len(chunk), len(recs), err)
		}
		last = seqs[len(seqs)-1]
		all = append(all, seqs...)
	}
	return all, nil
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
func ImportWith(ctx context.Context, log session.Log, data []byte, opt tree.ReadOptions, pol RetryPolicy) (wire.ImportResult, error) {
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
		return wire.ImportResult{}, err
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
// a fork is an explicit operator action, not an unanswered question.
func Fork(ctx context.Context, log session.Log, src *tree.Session, leafID string, now time.Time, rand io.Reader, pol RetryPolicy) (string, uint64, error) {
	leaf, ok := src.Index(leafID)
	if !ok {
		return "", 0, fmt.Errorf("fork: entry %q: %w", leafID, wire.ErrNotFound)
	}
	u, err := uuid.NewV7()
	if err != nil {
		return "", 0, err
	}
	h := tree.NewHeader(u.String(), tree.FormatTimestamp(now), src.Header.Cwd, src.Header.ID)
	s, err := tree.Fork(src, leaf, h, tree.IDGen{R: rand})
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
