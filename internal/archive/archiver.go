package archive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/wire"
	"github.com/pifleet/sessionlog/internal/writer"
)

// Options configure an Archiver. Only Node is required.
type Options struct {
	// Retention: Run archives the sessions whose last record is older.
	// 0 disables Run's passes; Pass and Restore still work. Policies,
	// when set, replace it.
	Retention time.Duration
	// Policies is the retention per tenant (--retention-policy): Run's
	// passes archive and erase by it.
	Policies *Policies
	// Every is the interval of Run's passes (default 10 minutes).
	Every time.Duration
	// Node names this node as the holder of the archiver's lease.
	Node string
	// Workers is how many sessions a pass archives at once (default 8):
	// each takes a few round trips to the stream leader, mostly waiting.
	Workers int
	// LeaseTTL is how long the lease lasts unless renewed (default one
	// minute; a pass renews it every third of that). A node that dies
	// mid-pass holds it up to this long.
	LeaseTTL time.Duration
	// Retry bounds a restore's import (default: 4 attempts).
	Retry writer.RetryPolicy
	// Serves, on a node that holds a share of the shards, lists the shards
	// it serves: a pass archives only those, each under a lease of its own
	// (the archive must be a *shard.Archive whose shards' leases
	// are distinct), so that every shard is archived by one of its holders.
	// Nil: every shard, under the one lease.
	Serves func() []int
	Logger *slog.Logger
	Now    func() time.Time
}

// Archiver moves idle sessions from the log to the archive and back. Run
// is the periodic job; Pass, Archive, Restore and List are what operators
// call through the API. Safe for concurrent use.
type Archiver struct {
	store store.Shards
	log   session.Log
	b     session.Archive
	opts  Options
	lg    *slog.Logger

	// pass holds a token while a pass runs: one pass at a time on this
	// node. An operator's pass waits for a periodic one rather than fail,
	// since it cannot know when the next tick is; a tick that finds a pass
	// running skips.
	pass        chan struct{}
	provisioned atomic.Bool
	stats       stats

	// purged: sessions this Archiver purged and sent the notice of, and
	// when. Until the Store applies the notice it still holds the session
	// while the log has none of it, which is also what a pass that died
	// before its notice leaves; a session purged here is then not archived
	// (and counted) a second time (purgedHere).
	purgedMu sync.Mutex
	purged   map[string]time.Time
}

// purgedMemory is how long purged remembers a session: far beyond a Store's
// lag behind the log.
const purgedMemory = 10 * time.Minute

// notePurged records that sid's purge and notice are done.
func (a *Archiver) notePurged(sid string) {
	a.purgedMu.Lock()
	defer a.purgedMu.Unlock()
	now := a.opts.Now()
	if a.purged == nil {
		a.purged = map[string]time.Time{}
	}
	for k, at := range a.purged {
		if now.Sub(at) > purgedMemory {
			delete(a.purged, k)
		}
	}
	a.purged[sid] = now
}

// purgedHere reports whether this Archiver purged sid, with its notice,
// within purgedMemory; forget drops it (a restore brings the session back).
func (a *Archiver) purgedHere(sid string, forget bool) bool {
	a.purgedMu.Lock()
	defer a.purgedMu.Unlock()
	at, ok := a.purged[sid]
	if forget {
		delete(a.purged, sid)
	}
	return ok && a.opts.Now().Sub(at) <= purgedMemory
}

// New returns an Archiver of the sessions store holds, which live in log,
// into b.
func New(store store.Shards, log session.Log, b session.Archive, opts Options) *Archiver {
	if opts.Every <= 0 {
		opts.Every = 10 * time.Minute
	}
	if opts.Workers <= 0 {
		opts.Workers = 8
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = time.Minute
	}
	if opts.Retry.Attempts <= 0 {
		opts.Retry.Attempts = 4
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Archiver{store: store, log: log, b: b, opts: opts, lg: opts.Logger, pass: make(chan struct{}, 1)}
}

// Retention is the retention of Run's passes (0: none): the default
// policy's archiveAfter.
func (a *Archiver) Retention() time.Duration { return a.policies().Default.ArchiveAfter }

// policies are Run's: Options.Policies, or Retention for every session.
func (a *Archiver) policies() Policies {
	if a.opts.Policies != nil {
		return *a.opts.Policies
	}
	return Uniform(a.opts.Retention)
}

// Run runs a pass with the retention every Every until ctx is done. The
// first pass waits one interval, for the Store to catch up with the log
// after a start. A pass that finds another node holding the lease does
// nothing: that node archives for the cluster.
func (a *Archiver) Run(ctx context.Context) {
	pol := a.policies()
	if !pol.Active() {
		return
	}
	t := time.NewTicker(a.opts.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		select {
		case a.pass <- struct{}{}:
		default:
			continue // an operator's pass is running
		}
		res, err := a.pass1(ctx, pol, false)
		<-a.pass
		var held *LeaseHeldError
		switch {
		case errors.As(err, &held):
			a.lg.Debug("archive pass skipped: another node holds the lease", "holder", held.Lease.Holder)
		case err != nil && ctx.Err() == nil:
			a.lg.Warn("archive pass failed", "err", err, "archived", res.Archived, "failed", res.Failed)
		case err == nil && res.Candidates > 0:
			a.lg.Info("archive pass", "archived", res.Archived, "repaired", res.Repaired, "active", res.Active,
				"erased", res.Erased, "failed", res.Failed, "bytes", res.Bytes, "seconds", res.Seconds)
		}
	}
}

// LeaseHeldError: another node is running passes. Unwraps to ErrConflict.
type LeaseHeldError struct{ Lease session.Lease }

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("node %s holds the archiver lease until %s: it is archiving now", e.Lease.Holder, e.Lease.Until.UTC().Format(time.RFC3339))
}

// Unwrap makes errors.Is(err, wire.ErrConflict) true.
func (e *LeaseHeldError) Unwrap() error { return wire.ErrConflict }

// Pass archives every session whose last record is older than olderThan,
// under the cluster-wide lease; a *LeaseHeldError if another node has it.
// A pass already running on this node is waited for.
// Sessions that fail are counted and left for the next pass; the first
// error is returned with the result.
func (a *Archiver) Pass(ctx context.Context, olderThan time.Duration) (wire.ArchivePass, error) {
	if olderThan < 0 {
		return wire.ArchivePass{}, wire.Invalid("olderThan", "must not be negative")
	}
	// 0 is "every session idle now", not a policy's "off".
	return a.PolicyPass(ctx, Uniform(max(olderThan, time.Nanosecond)), false)
}

// PolicyPass is a pass by pol: each session archived or erased as its
// tenant's policy says (Policies.For), archived copies erased past their
// deleteAfter too. dryRun plans it and does nothing: the result's Planned
// lists each session and what would happen to it.
func (a *Archiver) PolicyPass(ctx context.Context, pol Policies, dryRun bool) (wire.ArchivePass, error) {
	select {
	case a.pass <- struct{}{}:
	case <-ctx.Done():
		return wire.ArchivePass{}, fmt.Errorf("waiting for the pass running on this node: %w", context.Cause(ctx))
	}
	defer func() { <-a.pass }()
	return a.pass1(ctx, pol, dryRun)
}

// RunPass is the API's pass: every session archived after olderThan, or
// without it the node's policies (--retention-policy, or
// --session-retention for all); dryRun plans it only.
func (a *Archiver) RunPass(ctx context.Context, olderThan *time.Duration, dryRun bool) (wire.ArchivePass, error) {
	pol := a.policies()
	switch {
	case olderThan != nil && *olderThan < 0:
		return wire.ArchivePass{}, wire.Invalid("olderThan", "must not be negative")
	case olderThan != nil:
		// 0 is "every session idle now", not a policy's "off".
		pol = Uniform(max(*olderThan, time.Nanosecond))
	case !pol.Active():
		return wire.ArchivePass{}, wire.Invalid("olderThan", "required: this node has no --session-retention or --retention-policy to default to")
	}
	return a.PolicyPass(ctx, pol, dryRun)
}

// pass1 is PolicyPass with the pass token held.
func (a *Archiver) pass1(ctx context.Context, pol Policies, dryRun bool) (wire.ArchivePass, error) {
	start := a.opts.Now()
	res := wire.ArchivePass{DryRun: dryRun}
	if d := pol.Default.ArchiveAfter; d > 0 {
		res.Cutoff = start.Add(-d)
	}
	if !dryRun {
		if err := a.Provision(ctx); err != nil {
			return res, err
		}
	}
	if a.opts.Serves != nil {
		return a.passShards(ctx, res, start, pol, dryRun)
	}
	if dryRun {
		jobs, err := a.plan(ctx, pol, a.store, true, start)
		return a.planned(res, jobs, start), err
	}
	ctx, stop, err := a.lease(ctx, a.b)
	if err != nil {
		return res, err
	}
	defer stop()
	jobs, err := a.plan(ctx, pol, a.store, true, start)
	if err != nil {
		return res, err
	}
	res, err = a.runJobs(ctx, res, jobs, start)
	a.stats.pass(res)
	return res, err
}

// planned is a dry run's result.
func (a *Archiver) planned(res wire.ArchivePass, jobs []job, start time.Time) wire.ArchivePass {
	res.Candidates = len(jobs)
	res.Planned = []wire.RetentionAction{}
	for _, j := range jobs {
		res.Planned = append(res.Planned, j.RetentionAction)
	}
	res.Seconds = a.opts.Now().Sub(start).Seconds()
	return res
}

// passShards is a pass of a node holding a share: each shard it serves,
// under that shard's lease; a shard whose lease another holder has is
// that holder's to archive. The archive's copies (one stream for every
// shard) are the holder of shard 0's.
func (a *Archiver) passShards(ctx context.Context, res wire.ArchivePass, start time.Time, pol Policies, dryRun bool) (wire.ArchivePass, error) {
	sh, ok := a.b.(*shard.Archive)
	if !ok {
		return res, errors.New("archive: Options.Serves needs a sharded archive")
	}
	all := a.store.All()
	var first error
	ran := false
	var dry []job
	for _, k := range a.opts.Serves() {
		if k >= len(all) {
			continue
		}
		if dryRun {
			jobs, err := a.plan(ctx, pol, store.Subset{all[k]}, k == 0, start)
			if err != nil && first == nil {
				first = err
			}
			dry = append(dry, jobs...)
			continue
		}
		sctx, stop, err := a.lease(ctx, sh.Shard(k))
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		ran = true
		jobs, err := a.plan(sctx, pol, store.Subset{all[k]}, k == 0, start)
		part := wire.ArchivePass{Cutoff: res.Cutoff}
		if err == nil {
			part, err = a.runJobs(sctx, part, jobs, start)
		}
		stop()
		res.Candidates += part.Candidates
		res.Archived += part.Archived
		res.Repaired += part.Repaired
		res.Active += part.Active
		res.Gone += part.Gone
		res.Failed += part.Failed
		res.Erased += part.Erased
		res.Bytes += part.Bytes
		var held *LeaseHeldError
		if err != nil && !errors.As(err, &held) && first == nil {
			first = err
		}
	}
	if dryRun {
		return a.planned(res, dry, start), first
	}
	res.Seconds = a.opts.Now().Sub(start).Seconds()
	if ran {
		a.stats.pass(res)
	}
	var held *LeaseHeldError
	if ran && errors.As(first, &held) {
		first = nil // others archive those shards: this pass did its part
	}
	return res, first
}

// job is one session of a pass: what to do with it, and for an archive,
// the cutoff its policy sets.
type job struct {
	wire.RetentionAction
	cutoff time.Time
}

// plan is what pol asks of the sessions of stores, and with archived of
// the archive's copies: a session idle past its tenant's deleteAfter is
// erased, one past its archiveAfter archived.
func (a *Archiver) plan(ctx context.Context, pol Policies, stores store.Shards, archived bool, now time.Time) ([]job, error) {
	cutoff := func(d time.Duration) time.Time {
		if d <= 0 {
			return time.Time{}
		}
		return now.Add(-d)
	}
	var jobs []job
	idle := store.IdleFor(stores, func(cwd string) time.Time {
		p := pol.For(cwd)
		// The later cutoff of the two: the shorter age finds both.
		c := cutoff(p.ArchiveAfter)
		if e := cutoff(p.DeleteAfter); e.After(c) {
			c = e
		}
		return c
	})
	for _, s := range idle {
		p := pol.For(s.Cwd)
		act := wire.RetentionAction{SessionID: s.ID, Cwd: s.Cwd, Tenant: p.Tenant, Where: "log", Modified: s.Modified}
		switch e, c := cutoff(p.DeleteAfter), cutoff(p.ArchiveAfter); {
		case !e.IsZero() && s.Modified.Before(e):
			act.Action = "erase"
			jobs = append(jobs, job{RetentionAction: act})
		case !c.IsZero() && s.Modified.Before(c):
			act.Action = "archive"
			jobs = append(jobs, job{RetentionAction: act, cutoff: c})
		}
	}
	if !archived || !pol.erases() {
		return jobs, nil
	}
	// Archived sessions past their deleteAfter: one headers-only read of
	// the archive per pass.
	seen := map[string]bool{}
	for _, j := range jobs {
		seen[j.SessionID] = true
	}
	for from := uint64(0); ; {
		page, next, err := a.b.List(ctx, "", from, 1000)
		if errors.Is(err, wire.ErrNotFound) {
			return jobs, nil // no archive
		}
		if err != nil {
			return jobs, fmt.Errorf("retention: the archive's copies: %w", err)
		}
		for _, c := range page {
			p := pol.For(c.Cwd)
			e := cutoff(p.DeleteAfter)
			if seen[c.SessionID] || e.IsZero() || !c.Modified.Before(e) || a.store.For(c.SessionID).Has(c.SessionID) {
				continue // a copy of a live session goes with it, or stays
			}
			seen[c.SessionID] = true
			jobs = append(jobs, job{RetentionAction: wire.RetentionAction{SessionID: c.SessionID, Cwd: c.Cwd, Tenant: p.Tenant,
				Action: "erase", Where: "archive", Modified: c.Modified}})
		}
		if next == 0 {
			return jobs, nil
		}
		from = next
	}
}

// runJobs runs jobs with the pass's workers, under a lease held.
func (a *Archiver) runJobs(ctx context.Context, res wire.ArchivePass, jobs []job, start time.Time) (wire.ArchivePass, error) {
	res.Candidates = len(jobs)
	var mu sync.Mutex
	var first error
	work := make(chan job)
	var wg sync.WaitGroup
	for range a.opts.Workers {
		wg.Go(func() {
			for j := range work {
				var out Outcome
				var n int64
				var err error
				if j.Action == "erase" {
					_, err = a.Erase(ctx, j.SessionID, 0, "retention:"+j.Tenant)
					out = Erased
					if errors.Is(err, wire.ErrNotFound) {
						out, err = Gone, nil
					}
				} else {
					out, n, err = a.Archive(ctx, j.SessionID, j.cutoff)
				}
				if err == nil && (out == Erased || out == Archived || out == Repaired) {
					a.stats.retained(j.Tenant, j.Action)
					a.lg.Info("audit: retention", "session", j.SessionID, "tenant", j.Tenant, "action", j.Action, "from", j.Where,
						"modified", j.Modified)
				}
				mu.Lock()
				count(&res, out, n, err)
				if err != nil && first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
feed:
	for _, j := range jobs {
		select {
		case work <- j:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	res.Seconds = a.opts.Now().Sub(start).Seconds()
	if cause := context.Cause(ctx); cause != nil && first == nil {
		first = cause
	}
	return res, first
}

// Provision creates the archive if this Archiver has not yet: a node
// starts without one, so that a deployment that never archives has no
// archive stream either. Passes and Archive call it; a caller that wants a
// misconfiguration to show at start calls it first, once for all.
func (a *Archiver) Provision(ctx context.Context) error {
	if a.provisioned.Load() {
		return nil
	}
	if err := a.b.Provision(ctx); err != nil {
		return err
	}
	a.provisioned.Store(true)
	return nil
}

// count adds one session's outcome to the pass result r.
func count(r *wire.ArchivePass, out Outcome, n int64, err error) {
	switch {
	case err != nil:
		r.Failed++
	case out == Archived || out == Repaired:
		r.Archived++
		r.Bytes += n
		if out == Repaired {
			r.Repaired++
		}
	case out == Active:
		r.Active++
	case out == Gone:
		r.Gone++
	case out == Erased:
		r.Erased++
	}
}

// lease takes the archiver's lease and keeps renewing it until stop; the
// returned context ends if the lease is lost (a renewal failed for longer
// than the lease lasts, or another node took it).
func (a *Archiver) lease(ctx context.Context, b session.Archive) (context.Context, func(), error) {
	l, err := b.Lease(ctx, a.opts.Node, a.opts.LeaseTTL)
	if err != nil {
		return nil, nil, err
	}
	if l.Holder != a.opts.Node {
		return nil, nil, &LeaseHeldError{Lease: l}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(a.opts.LeaseTTL / 3)
		defer t.Stop()
		until := l.Until
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			l, err := b.Lease(ctx, a.opts.Node, a.opts.LeaseTTL)
			switch {
			case err == nil && l.Holder == a.opts.Node:
				until = l.Until
			case err == nil:
				cancel(&LeaseHeldError{Lease: l})
				return
			case time.Now().After(until): // the backend stamps leases with the real clock
				cancel(fmt.Errorf("archiver lease lost: %w", err))
				return
			}
		}
	}()
	stop := func() {
		close(done)
		cancel(nil)
		<-exited // no renewal may follow the release
		uctx, ucancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer ucancel()
		if err := b.Unlease(uctx, a.opts.Node); err != nil {
			a.lg.Warn("giving up the archiver lease failed; it expires by itself", "err", err)
		}
	}
	return ctx, stop, nil
}
