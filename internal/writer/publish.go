package writer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// RetryPolicy bounds the optimistic append loop.
type RetryPolicy struct {
	// Attempts is the most publishes one append makes (default 100). A
	// conflict means another writer made progress, so under contention an
	// append may need many; each costs a round trip, and the waits between
	// them grow (ConflictBackoff), so the bound is far from a busy loop.
	Attempts int
	// Backoff is the first wait after ErrUnavailable; it doubles up to
	// MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// AttemptTimeout bounds one publish (default 500 ms plus 1 ms per
	// record, tens of times a normal append's latency): a publish sent to a
	// leader that just died or stepped down gets no answer at all, and the
	// retry after the timeout reaches the new leader, so this bounds how much
	// a write gap exceeds the election itself. UnavailableFor bounds the
	// time spent retrying while the log is unavailable (default 10 s): then
	// the caller gets ErrUnavailable (HTTP 503) and decides, instead of a
	// client timeout.
	AttemptTimeout, UnavailableFor time.Duration
	// ConflictBackoff is the first wait after the second conflict in a row
	// (the first retries at once: reading what was missed took a round trip
	// already). It doubles up to MaxBackoff; with jitter, so that writers
	// racing for one session take turns instead of starving one another.
	ConflictBackoff time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Attempts <= 0 {
		p.Attempts = 100
	}
	if p.Backoff <= 0 {
		p.Backoff = 50 * time.Millisecond
	}
	if p.MaxBackoff <= 0 {
		// Short: an election ends at an unknown moment, and each wait
		// beyond it is added to the write gap.
		p.MaxBackoff = 500 * time.Millisecond
	}
	if p.UnavailableFor <= 0 {
		p.UnavailableFor = 10 * time.Second
	}
	if p.ConflictBackoff <= 0 {
		p.ConflictBackoff = 2 * time.Millisecond
	}
	return p
}

// ReconcileFunc is told what the log holds beyond what the caller knew and
// returns what to publish next. done (with seqs) means the records are
// already stored by an earlier attempt whose ack was lost; uncertain says
// whether such an attempt exists (an earlier publish of this call failed
// with ErrUnavailable, so its outcome is unknown).
type ReconcileFunc func(missed []session.Stored, recs []session.Record, uncertain bool) (next []session.Record, seqs []uint64, done bool, err error)

// CASAppend publishes recs after expectLast, the one loop every writer uses:
// on ErrConflict it reads what it missed and lets reconcile decide; on
// ErrUnavailable it retries the same records (same ids: a retry whose first
// attempt landed is recognized by reconcile, never duplicated). It returns
// the records' sequences.
func CASAppend(ctx context.Context, log session.Log, sid string, expectLast uint64, recs []session.Record, pol RetryPolicy, reconcile ReconcileFunc) ([]uint64, error) {
	pol = pol.withDefaults()
	backoff, conflictBackoff := pol.Backoff, pol.ConflictBackoff
	var lastErr error
	uncertain := false
	conflicts := 0
	// unavailableTooLong notes one more failure of a run of unavailability
	// and reports whether the run has outlasted UnavailableFor.
	var unavailableSince time.Time
	unavailableTooLong := func() bool {
		if unavailableSince.IsZero() {
			unavailableSince = time.Now()
			return false
		}
		return time.Since(unavailableSince) > pol.UnavailableFor
	}
	for attempt := 0; attempt < pol.Attempts; attempt++ {
		timeout := pol.AttemptTimeout
		if timeout <= 0 {
			timeout = 500*time.Millisecond + time.Duration(len(recs))*time.Millisecond
		}
		actx, cancel := context.WithTimeout(ctx, timeout)
		seqs, err := log.Append(actx, sid, expectLast, recs)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			err = fmt.Errorf("%w: no ack within %v: %w", wire.ErrUnavailable, timeout, err)
		}
		switch {
		case err == nil:
			return seqs, nil
		case errors.Is(err, wire.ErrConflict), errors.Is(err, wire.ErrExists):
			rctx, cancel := context.WithTimeout(ctx, max(timeout, 2*time.Second))
			missed, rerr := ReadMissed(rctx, log, sid, expectLast)
			cancel()
			if errors.Is(rerr, context.DeadlineExceeded) && ctx.Err() == nil {
				// As for the publish: a give-up after attempts must read
				// as ErrUnavailable, not as the caller's own timeout.
				rerr = fmt.Errorf("%w: %w", wire.ErrUnavailable, rerr)
			}
			if rerr != nil {
				if errors.Is(rerr, wire.ErrUnavailable) {
					lastErr = rerr
					if unavailableTooLong() {
						return nil, fmt.Errorf("append to %s: reading what was missed: still unavailable after %v: %w", sid, pol.UnavailableFor, wire.ErrUnavailable)
					}
					if !session.Sleep(ctx, &backoff, pol.MaxBackoff) {
						return nil, ctx.Err()
					}
					continue
				}
				return nil, rerr
			}
			if len(missed) == 0 {
				// The competing write is not readable yet (10164: still in
				// flight on R3) or was purged: wait a little and try again.
				lastErr = err
				if !session.Sleep(ctx, &backoff, pol.MaxBackoff) {
					return nil, fmt.Errorf("%w (%w)", ctx.Err(), err)
				}
				continue
			}
			next, done, derr := reconcileOnce(reconcile, missed, recs, uncertain, err)
			if derr != nil {
				return nil, derr
			}
			if done != nil {
				return done, nil
			}
			if len(missed) > 0 {
				expectLast = missed[len(missed)-1].Seq
			}
			recs = next
			lastErr = err
			if conflicts++; conflicts >= 2 && !session.Sleep(ctx, &conflictBackoff, pol.MaxBackoff) {
				return nil, fmt.Errorf("%w (%w)", ctx.Err(), err)
			}
		case errors.Is(err, wire.ErrUnavailable):
			lastErr, uncertain = err, true
			if unavailableTooLong() {
				// ErrUnavailable alone, not err: err may also wrap the
				// attempt's DeadlineExceeded, which would read as the
				// caller's own timeout (504) instead of 503.
				return nil, fmt.Errorf("append to %s: still unavailable after %v: %w (last error: %v)", sid, pol.UnavailableFor, wire.ErrUnavailable, err)
			}
			if !session.Sleep(ctx, &backoff, pol.MaxBackoff) {
				return nil, fmt.Errorf("%w (%w)", ctx.Err(), err)
			}
		default:
			return nil, err
		}
	}
	if errors.Is(lastErr, wire.ErrUnavailable) {
		return nil, fmt.Errorf("append to %s: gave up after %d attempts: %w (last error: %v)", sid, pol.Attempts, wire.ErrUnavailable, lastErr)
	}
	return nil, fmt.Errorf("append to %s: gave up after %d attempts: %w", sid, pol.Attempts, lastErr)
}

func reconcileOnce(reconcile ReconcileFunc, missed []session.Stored, recs []session.Record, uncertain bool, cause error) ([]session.Record, []uint64, error) {
	next, seqs, done, err := reconcile(missed, recs, uncertain)
	if err != nil {
		return nil, nil, err
	}
	if done {
		return nil, seqs, nil
	}
	if len(next) == 0 {
		return nil, nil, fmt.Errorf("nothing left to publish after %v", cause)
	}
	return next, nil, nil
}

func ReadMissed(ctx context.Context, log session.Log, sid string, after uint64) ([]session.Stored, error) {
	missed, err := log.Read(ctx, sid, after)
	if errors.Is(err, wire.ErrNotFound) {
		return nil, nil
	}
	return missed, err
}

// alreadyStored reports whether every record is in stored with the same
// bytes, as a contiguous run (an earlier attempt of the same atomic append),
// and returns their sequences.
func alreadyStored(stored []session.Stored, recs []session.Record) ([]uint64, bool) {
	for start := range stored {
		if !sameRecord(stored[start].Record, recs[0]) {
			continue
		}
		if len(stored)-start < len(recs) {
			return nil, false
		}
		seqs := make([]uint64, len(recs))
		for k := range recs {
			if !sameRecord(stored[start+k].Record, recs[k]) {
				return nil, false
			}
			seqs[k] = stored[start+k].Seq
		}
		return seqs, true
	}
	return nil, false
}

func sameRecord(a, b session.Record) bool {
	return a.Type == b.Type && a.ID == b.ID && bytes.Equal(a.Data, b.Data)
}
