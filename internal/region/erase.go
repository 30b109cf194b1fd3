package region

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/session"
)

// Erasure across regions. A delete erases the session from the home's
// stream and appends the erasure notice there (jetstream.Log.Erase); the
// mirrors copy the notice but not the erasure, so each region erases its
// own copy when its Stores apply the notice (and purges it on a purge's
// notice, a rolled-back import's). Before erasing, the delete
// writes the session's line in the ledger of erasures, a bucket in the
// tie-breaker's cluster: it outlives either main region. Against the
// ledger every node reconciles its region's copy when it starts and when
// the record changes; in the home region that also erases (with a notice)
// what a lost home erased but never sent, and a failback merges nothing
// the ledger names (mergeSessions).

// LedgerBucket is the bucket of the ledger of erasures beside record
// bucket b.
func LedgerBucket(recordBucket string) string { return recordBucket + "_ERASED" }

// Ledger is the deployment's ledger of erasures (in the tie-breaker's
// cluster), for the node's delete.
func (n *Node) Ledger() *jetstream.Ledger { return n.ledger }

// eraseJob is the erasure (or the purge) of a session from the stream
// that delivered its notice (src), or with src nil a reconcile of the
// region's copy against the ledger.
type eraseJob struct {
	src   Source
	sid   string
	upTo  uint64
	purge bool // a purge notice (a rolled-back import): purged, not erased
}

// eraseQueue holds the jobs of the Node's eraser goroutine, unbounded: a
// Store's follow must never wait for an erasure.
type eraseQueue struct {
	mu   sync.Mutex
	jobs []eraseJob
	wake chan struct{} // a token when jobs is not empty
}

func (q *eraseQueue) push(j eraseJob) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if j.src == nil && len(q.jobs) > 1 && q.jobs[len(q.jobs)-1].src == nil {
		// One reconcile waiting is as good as two (the first job may be
		// running, having read the ledger and record already: never that).
		return
	}
	q.jobs = append(q.jobs, j)
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// next waits for the first job; ok is false once ctx is done.
func (q *eraseQueue) next(ctx context.Context) (eraseJob, bool) {
	for {
		q.mu.Lock()
		if len(q.jobs) > 0 {
			j := q.jobs[0]
			q.mu.Unlock()
			return j, true
		}
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			return eraseJob{}, false
		case <-q.wake:
		}
	}
}

// done drops the first job, which next returned.
func (q *eraseQueue) done() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.jobs = q.jobs[1:]
}

// noticed queues the erasure, or the purge, of the notice's session from
// src.
func (n *Node) noticed(src Source, no session.PurgeNotice) {
	n.erasing.push(eraseJob{src: src, sid: no.Session, upTo: no.UpTo, purge: !no.Erase})
}

// eraseCopies runs the queued jobs in order, each until it succeeds: an
// erasure that failed (the stream without a leader for a moment) is
// tried again after a pause, before any later one.
func (n *Node) eraseCopies(ctx context.Context) {
	var backoff time.Duration
	for {
		j, ok := n.erasing.next(ctx)
		if !ok {
			return
		}
		err := n.runErase(ctx, j)
		if err == nil {
			n.erasing.done()
			backoff = 0
			continue
		}
		if ctx.Err() != nil {
			return
		}
		n.Logger.Warn("region: erasing from this region's copy failed; trying again", "session", j.sid, logKeyErr, err)
		backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
}

// eraseTimeout bounds one erasure (or purge) of a copy, and one line of a
// reconcile: a request without an answer must not hold up the jobs behind.
const eraseTimeout = time.Minute

func (n *Node) runErase(ctx context.Context, j eraseJob) error {
	if j.src == nil {
		return n.reconcileErasures(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, eraseTimeout)
	defer cancel()
	ml, ok := j.src.(*jetstream.MirrorLog)
	if !ok {
		return nil // not a stream (tests' sources)
	}
	if j.purge {
		return ml.PurgeCopy(ctx, j.sid, j.upTo)
	}
	erased, err := ml.EraseCopy(ctx, j.sid, j.upTo, time.Time{}, false)
	if erased > 0 {
		n.Logger.Info("region: erased a session from this region's copy", "session", j.sid, logKeyStream, ml.Stream(), "records", erased)
	}
	return err
}

// reconcileErasures erases from the region's copy every session the
// ledger names, as it was when erased (records stored later are a session
// created again). In the home region the erasure is noticed, so that the
// Stores of every region drop the session: the home that erased it may
// have been lost before its notice reached this region.
func (n *Node) reconcileErasures(ctx context.Context) error {
	lines, err := jetstream.ReadLedger(ctx, n.JS, n.ledger.Bucket())
	if err != nil || len(lines) == 0 {
		return err
	}
	n.mu.Lock()
	rec, feed := n.rec.clone(), n.feed
	n.mu.Unlock()
	role, m := roleOf(&rec, n.Region), n.shardMap()
	if role == RoleStale {
		return nil // it reads the home's streams: the home reconciles them
	}
	home := role == RoleHome
	js := n.JS
	if home {
		js = n.WriteJS
	}
	var errs []error
	total := 0
	for _, line := range lines {
		l := jetstream.NewLog(js, feed.Shard(m.Of(line.Session)))
		lctx, cancel := context.WithTimeout(ctx, eraseTimeout)
		erased, err := l.EraseCopy(lctx, line.Session, math.MaxUint64, line.At, home)
		cancel()
		total += erased
		if err != nil {
			errs = append(errs, err)
		}
	}
	if total > 0 {
		n.Logger.Info("region: erased what the ledger of erasures names from this region's copy", logKeyRole, role, "records", total)
	}
	return errors.Join(errs...)
}
