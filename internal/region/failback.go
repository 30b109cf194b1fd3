package region

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pifleet/sessionlog/internal/jetstream"
)

// FailbackReport says what Failback did.
type FailbackReport struct {
	// Changed is false when the region was not stale (a rerun): nothing
	// was done.
	Changed  bool       `json:"changed"`
	From     string     `json:"from"`
	Home     string     `json:"home"`
	Shared   uint64     `json:"shared"` // the last sequence the region's stream shared with the home's history
	Merged   bool       `json:"merged"` // false when the region's streams were already gone or mirrors (a rerun)
	Stats    MergeStats `json:"stats"`
	MirrorAt uint64     `json:"mirrorAt"` // the home's last sequence the new mirror reached before the record changed
	// SharedShards and MirrorAtShards are Shared and MirrorAt by shard,
	// with several shards.
	SharedShards   []uint64      `json:"sharedShards,omitempty"`
	MirrorAtShards []uint64      `json:"mirrorAtShards,omitempty"`
	Took           time.Duration `json:"tookNs"`
}

// Failback brings a stale region — the old home once it is back, or any
// region whose stream holds an older history — back into the home's:
//
//  1. its stream and bucket are fenced (sealed), so nothing lands in them
//     any more;
//  2. every entry they hold beyond the shared history that the home lacks
//     (acknowledged by the old home but never mirrored, or written there
//     while it was cut off) is republished into the home unchanged: same
//     ids, same parentIds, so each appears where it was, as a branch. Ids are
//     immutable, so the merge is a set union per session and nothing is
//     duplicated; cursors the home lacks, or has older, are copied;
//  3. the merge is verified, then the region's stream and bucket are
//     recreated as mirrors of the home's;
//  4. once the new mirror has caught up, the record stops calling the
//     region stale and its nodes switch to reading it — without a restart,
//     and keeping their state, since the mirror has the home's sequences.
//
// The region must be reachable: deleting a stream whose servers are down
// deletes it from their disks when they come back. Every step can be run
// again; a failback that stopped half-way is finished by running it again.
func (a *Admin) Failback(ctx context.Context, from string) (FailbackReport, error) {
	a.defaults()
	start := a.Now()
	rep := FailbackReport{From: from}
	reg, rec, err := a.load(ctx)
	if err != nil {
		return rep, err
	}
	rep.Home = rec.Home
	if err := ValidName(from); err != nil {
		return rep, err
	}
	if from == rec.Home {
		return rep, fmt.Errorf("%w: %s is the home region; fail back from a stale region (stale: %v)", ErrRefused, from, staleNames(&rec))
	}
	shared, stale := rec.Stale[from]
	if _, known := rec.Regions[from]; !known && !stale {
		return rep, fmt.Errorf("%w: no node has registered region %s (regions: %v)", ErrRefused, from, rec.RegionNames())
	}
	if !stale {
		// Done already: a retry must succeed without touching anything.
		rep.Took = a.Now().Sub(start)
		return rep, nil
	}
	shards := rec.ShardCount()
	sharedBy := make([]uint64, shards)
	for k := range shards {
		sharedBy[k], _ = rec.StaleOf(from, k)
	}
	rep.Shared = shared
	if shards > 1 {
		rep.SharedShards = sharedBy
	}
	src, home := rec.Assets(a.Base, from), rec.Assets(a.Base, rec.Home)
	// What was erased, in either region, stays erased.
	lines, err := jetstream.ReadLedger(ctx, a.JS, LedgerBucket(a.RecordBucket))
	if err != nil {
		return rep, err
	}
	erased := make(map[string]time.Time, len(lines))
	for _, l := range lines {
		erased[l.Session] = l.At
	}

	// Every shard is merged before any is replaced by a mirror: a rerun
	// after a stop half-way merges what is left, and the cursors go with
	// shard 0 (its fence seals the bucket; its replacement replaces it).
	// The shards side by side: their sessions and streams are apart.
	var mu sync.Mutex // rep
	errs := make([]error, shards)
	var wg sync.WaitGroup
	for k := range shards {
		wg.Go(func() {
			sk, hk := src.Shard(k), home.Shard(k)
			ss, err := a.probeReturning(ctx, sk.Stream)
			switch {
			case err != nil:
				errs[k] = err
			case ss.Exists && !ss.Reachable:
				errs[k] = fmt.Errorf("%w: region %s is not reachable (%s %s; waited %v, --wait); bring it back first — its stream must not be deleted while it is down",
					ErrRefused, from, sk.Stream, ss.Problem, a.ReturnWait)
			case !ss.Exists || ss.MirrorOf == hk.Stream:
				a.Progress("%s is already replaced (%s); nothing to merge", sk.Stream, orNone(ss.MirrorOf, "gone"))
			default:
				st, err := a.merge(ctx, ss, src, home, k, sharedBy[k], erased)
				mu.Lock()
				rep.Stats.add(st)
				rep.Merged = true
				mu.Unlock()
				errs[k] = err
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return rep, err
	}

	a.Progress("recreating %s and its cursor bucket as mirrors of %s", streamsOf(src, shards), streamsOf(home, shards))
	if err := jetstream.RecreateMirrorShards(ctx, a.JS, src, home, from, shards); err != nil {
		return rep, err
	}
	at := make([]uint64, shards)
	for k := range shards {
		sk, hk := src.Shard(k), home.Shard(k)
		hs, err := jetstream.Probe(ctx, a.JS, hk.Stream)
		if err != nil {
			return rep, err
		}
		a.Progress("waiting for %s to mirror %s up to sequence %d", sk.Stream, hk.Stream, hs.LastSeq)
		if err := jetstream.WaitMirror(ctx, a.JS, sk.Stream, hs.LastSeq); err != nil {
			return rep, err
		}
		at[k] = hs.LastSeq
	}
	// The cursors too: a failover to this region must not find them behind.
	bs, err := jetstream.Probe(ctx, a.JS, "KV_"+home.Bucket)
	if err != nil {
		return rep, err
	}
	if err := jetstream.WaitMirror(ctx, a.JS, "KV_"+src.Bucket, bs.LastSeq); err != nil {
		return rep, err
	}
	rep.MirrorAt = at[0]
	if shards > 1 {
		rep.MirrorAtShards = at
	}
	a.Progress("recording %s as a mirror region", from)
	_, err = reg.Update(ctx, func(r *Record, _ bool) error {
		if r.Home != rec.Home || r.Epoch != rec.Epoch {
			return fmt.Errorf("the region record changed during the failback (home %s, epoch %d): run it again", r.Home, r.Epoch)
		}
		r.clearStale(from)
		r.UpdatedAt = a.Now().UTC()
		r.Change = fmt.Sprintf("failback from %s: %d entries and %d cursors merged into %s", from, rep.Stats.Entries, rep.Stats.Cursors, rec.Home)
		return nil
	})
	rep.Changed, rep.Took = err == nil, a.Now().Sub(start)
	return rep, err
}

// probeReturning probes a returning region's stream, giving it up to
// ReturnWait to answer: its nodes may serve (reading from the home) a
// moment before the region's own stream has been recovered from disk and
// has a leader.
func (a *Admin) probeReturning(ctx context.Context, stream string) (jetstream.StreamState, error) {
	deadline := a.Now().Add(a.ReturnWait)
	for first := true; ; first = false {
		// The last probe ends at the deadline, so the wait is bounded.
		pctx, cancel := context.WithTimeout(ctx, max(min(a.ProbeTimeout, deadline.Sub(a.Now())), 100*time.Millisecond))
		st, err := jetstream.Probe(pctx, a.JS, stream)
		cancel()
		if err != nil || st.Reachable || !st.Exists || !a.Now().Before(deadline) {
			return st, err
		}
		if first {
			a.Progress("waiting up to %v (--wait) for %s to answer", a.ReturnWait, stream)
		}
		a.Progress("waiting for %s to answer (%s)", stream, st.Problem)
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// merge fences shard k's stream of the region (with shard 0, its cursor
// bucket too) and merges what it holds after shared into the home's shard
// k, and, with shard 0, the cursors.
func (a *Admin) merge(ctx context.Context, ss jetstream.StreamState, src, home jetstream.Config, k int, shared uint64, erased map[string]time.Time) (MergeStats, error) {
	sk, hk := src.Shard(k), home.Shard(k)
	if ss.MirrorOf == "" && !ss.Sealed {
		what := sk.Stream
		if k == 0 {
			what += " and its cursor bucket"
		}
		a.Progress("fencing %s", what)
		if err := jetstream.FenceShard(ctx, a.JS, src, k); err != nil {
			return MergeStats{}, err
		}
	}
	a.Progress("merging the entries of %s after sequence %d into %s", sk.Stream, shared, hk.Stream)
	st, err := mergeSessions(ctx, jetstream.NewLog(a.JS, sk), jetstream.NewLog(a.JS, hk), shared, erased)
	if err != nil || k != 0 {
		return st, err
	}
	a.Progress("merging the cursors of %s into %s", src.Bucket, home.Bucket)
	srcCur, err := jetstream.NewCursors(ctx, a.JS, src)
	if err != nil {
		return st, err
	}
	homeCur, err := jetstream.NewCursors(ctx, a.JS, home)
	if err != nil {
		return st, err
	}
	return st, mergeCursors(ctx, srcCur, homeCur, erased, &st)
}

func staleNames(r *Record) []string {
	var out []string
	for _, name := range r.RegionNames() {
		if _, ok := r.Stale[name]; ok {
			out = append(out, name)
		}
	}
	return out
}

func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return "mirror of " + s
}
