package writer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// A Plan is one compare-and-swap append in flight: the records it publishes
// next, and what it does when the log holds records it did not know of.
// Publish drives it; the Writer, whole-session creation and the request
// service each bring their own (AppendPlan serves the first and the last).
type Plan interface {
	// Records returns the records to publish next; never empty.
	Records() []session.Record
	// Reconcile is told what the log holds beyond what the plan knew
	// (missed, never empty) and whether an earlier publish of this append
	// may have landed (uncertain: it failed with ErrUnavailable, so its
	// outcome is unknown). It returns the records' sequences when they are
	// stored already (an earlier attempt's ack was lost), or nil after
	// preparing the next Records, or the error to give up with.
	Reconcile(ctx context.Context, missed []session.Stored, uncertain bool) (stored []uint64, err error)
}

// Publish publishes p's records after expectLast, the one loop every writer
// uses: on ErrConflict it reads what it missed and lets p reconcile; on
// ErrUnavailable it retries the same records (same ids: a retry whose first
// attempt landed is recognized by p, never duplicated). It returns the
// sequences of the records finally stored.
func Publish(ctx context.Context, log session.Log, sid string, expectLast uint64, p Plan, pol RetryPolicy) ([]uint64, error) {
	pol = pol.withDefaults()
	l := &casLoop{log: log, sid: sid, expect: expectLast, plan: p, pol: pol,
		backoff: pol.Backoff, conflictBackoff: pol.ConflictBackoff}
	for range pol.Attempts {
		seqs, done, err := l.attempt(ctx)
		if done {
			return seqs, err
		}
	}
	if errors.Is(l.lastErr, wire.ErrUnavailable) {
		return nil, fmt.Errorf("append to %s: gave up after %d attempts: %w (last error: %v)", sid, pol.Attempts, wire.ErrUnavailable, l.lastErr)
	}
	return nil, fmt.Errorf("append to %s: gave up after %d attempts: %w", sid, pol.Attempts, l.lastErr)
}

// casLoop is the state of one Publish.
type casLoop struct {
	log    session.Log
	sid    string
	expect uint64 // the last sequence of the session the plan knows
	plan   Plan
	pol    RetryPolicy

	backoff, conflictBackoff time.Duration
	lastErr                  error
	uncertain                bool // an earlier publish may have landed
	conflicts                int
	unavailableSince         time.Time
	// slow doubles the attempt timeout after each attempt that timed
	// out, up to maxSlow, and is 1 again once one is answered: a log whose
	// answers take longer than the timeout (a loaded machine, a server
	// whose read loop waits on a disk) would otherwise time out every
	// attempt until the append gives up, though every publish lands.
	slow int
}

// maxSlow bounds how far the attempt timeout grows: 4× the default is 2 s,
// which a write gap after an election (a publish to a leader gone that no
// answer will come for) can exceed the election by at most.
const maxSlow = 4

// attempt publishes once and handles the outcome; done means Publish
// returns seqs and err.
func (l *casLoop) attempt(ctx context.Context) (seqs []uint64, done bool, err error) {
	recs := l.plan.Records()
	timeout := l.pol.AttemptTimeout
	if timeout <= 0 {
		timeout = defaultAttemptTimeout(recs)
	}
	timeout *= time.Duration(max(l.slow, 1))
	actx, cancel := context.WithTimeout(ctx, timeout)
	seqs, err = l.log.Append(actx, l.sid, l.expect, recs)
	cancel()
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		err = fmt.Errorf("%w: no ack within %v: %w", wire.ErrUnavailable, timeout, err)
		l.slow = min(max(l.slow, 1)*2, maxSlow)
	} else {
		l.slow = 1
	}
	switch {
	case err == nil:
		return seqs, true, nil
	case errors.Is(err, wire.ErrConflict), errors.Is(err, wire.ErrExists):
		return l.conflict(ctx, err, timeout)
	case errors.Is(err, wire.ErrUnavailable):
		l.lastErr, l.uncertain = err, true
		if l.unavailableTooLong() {
			// ErrUnavailable alone, not err: err may also wrap the
			// attempt's DeadlineExceeded, which would read as the
			// caller's own timeout (504) instead of 503.
			return nil, true, fmt.Errorf("append to %s: still unavailable after %v: %w (last error: %v)", l.sid, l.pol.UnavailableFor, wire.ErrUnavailable, err)
		}
		if !session.Sleep(ctx, &l.backoff, l.pol.MaxBackoff) {
			return nil, true, fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		return nil, false, nil
	default:
		return nil, true, err
	}
}

// defaultAttemptTimeout is 500 ms, plus 1 ms per record and 500 ms per
// MiB: the leader answers once the batch is replicated and synced, which
// for a batch of several MiB takes seconds on a loaded machine. (With 500
// ms and a millisecond per record, an append of two 4.4 MiB entries timed
// out, was retried, and its reading of what was missed timed out in turn
// until it gave up with 503.)
func defaultAttemptTimeout(recs []session.Record) time.Duration {
	bytes := 0
	for _, r := range recs {
		bytes += len(r.Data)
	}
	return 500*time.Millisecond + time.Duration(len(recs))*time.Millisecond + time.Duration(bytes)*500*time.Millisecond/(1<<20)
}

// conflict reads what the plan missed and lets it reconcile.
func (l *casLoop) conflict(ctx context.Context, cause error, timeout time.Duration) ([]uint64, bool, error) {
	rctx, cancel := context.WithTimeout(ctx, max(timeout, 2*time.Second))
	missed, err := readMissed(rctx, l.log, l.sid, l.expect)
	cancel()
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		// As for the publish: a give-up after attempts must read as
		// ErrUnavailable, not as the caller's own timeout.
		err = fmt.Errorf("%w: %w", wire.ErrUnavailable, err)
	}
	switch {
	case errors.Is(err, wire.ErrUnavailable):
		l.lastErr = err
		if l.unavailableTooLong() {
			return nil, true, fmt.Errorf("append to %s: reading what was missed: still unavailable after %v: %w", l.sid, l.pol.UnavailableFor, wire.ErrUnavailable)
		}
		if !session.Sleep(ctx, &l.backoff, l.pol.MaxBackoff) {
			return nil, true, ctx.Err()
		}
		return nil, false, nil
	case err != nil:
		return nil, true, err
	case len(missed) == 0:
		// The competing write is not readable yet (10164: still in
		// flight on R3) or was purged: wait a little and try again.
		l.lastErr = cause
		if !session.Sleep(ctx, &l.backoff, l.pol.MaxBackoff) {
			return nil, true, fmt.Errorf("%w (%w)", ctx.Err(), cause)
		}
		return nil, false, nil
	}
	stored, err := l.plan.Reconcile(ctx, missed, l.uncertain)
	switch {
	case err != nil:
		return nil, true, err
	case stored != nil:
		return stored, true, nil
	case len(l.plan.Records()) == 0:
		return nil, true, fmt.Errorf("nothing left to publish after %v", cause)
	}
	l.expect, l.lastErr = missed[len(missed)-1].Seq, cause
	if l.conflicts++; l.conflicts >= 2 && !session.Sleep(ctx, &l.conflictBackoff, l.pol.MaxBackoff) {
		return nil, true, fmt.Errorf("%w (%w)", ctx.Err(), cause)
	}
	return nil, false, nil
}

// unavailableTooLong notes one more failure of a run of unavailability and
// reports whether the run has outlasted UnavailableFor.
func (l *casLoop) unavailableTooLong() bool {
	if l.unavailableSince.IsZero() {
		l.unavailableSince = time.Now()
		return false
	}
	return time.Since(l.unavailableSince) > l.pol.UnavailableFor
}

// readMissed reads the session's records after seq; none when it has none
// (or no longer exists).
func readMissed(ctx context.Context, log session.Log, sid string, after uint64) ([]session.Stored, error) {
	missed, err := log.Read(ctx, sid, after)
	if errors.Is(err, wire.ErrNotFound) {
		return nil, nil
	}
	return missed, err
}
