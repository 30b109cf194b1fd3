package region

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/jetstream"
)

// ErrRefused means an operation was refused because it would be unsafe:
// the message says why and what would make it safe.
var ErrRefused = errors.New("refused")

// Admin runs failover and failback (pi-ctl) through a connection to any
// server of the supercluster that can reach the meta layer's quorum — in
// practice, a server of a surviving region.
type Admin struct {
	JS natsjs.JetStream
	// Base carries the settings of the assets beside their names (message
	// size, dedupe window, batch size); the names come from the record.
	Base         jetstream.Config
	RecordBucket string // default PI_REGION
	// ProbeTimeout bounds each of the two requests that decide whether the
	// home answers (default 2 s). A lost region is often not reported as
	// offline at once (its servers were killed, not shut down): then only
	// the timeouts tell, and they are part of the time to recover.
	ProbeTimeout time.Duration
	// ReturnWait bounds how long Failback waits for a returning region's
	// stream to answer before it refuses (default 30 s): its nodes may
	// serve a moment before the stream is recovered from disk.
	ReturnWait time.Duration
	// Progress, when set, receives one line per step, for the operator.
	Progress func(msg string, args ...any)
	Logger   *slog.Logger
	Now      func() time.Time
}

func (a *Admin) defaults() {
	if a.RecordBucket == "" {
		a.RecordBucket = DefaultRecordBucket
	}
	if a.Logger == nil {
		a.Logger = slog.New(slog.DiscardHandler)
	}
	if a.Now == nil {
		a.Now = time.Now
	}
	if a.ProbeTimeout <= 0 {
		a.ProbeTimeout = 2 * time.Second
	}
	if a.ReturnWait <= 0 {
		a.ReturnWait = DefaultReturnWait
	}
	if a.Progress == nil {
		a.Progress = func(string, ...any) {}
	}
	if a.Base.Stream == "" {
		a.Base = jetstream.NewConfig()
	}
	a.Base.Logger = a.Logger
}

// DefaultReturnWait is Admin.ReturnWait's default.
const DefaultReturnWait = 30 * time.Second

// FailoverReport says what Failover did.
type FailoverReport struct {
	// Changed is false when the region was the home already (a rerun):
	// nothing was done, and the other fields describe the record as it is.
	Changed   bool              `json:"changed"`
	From      string            `json:"from"`
	To        string            `json:"to"`
	Epoch     uint64            `json:"epoch"`
	ForkSeq   uint64            `json:"forkSeq"`   // the last sequence the new home inherited
	HomeState string            `json:"homeState"` // why the old home could be replaced
	Stale     map[string]uint64 `json:"stale"`
	// ForkSeqs and StaleShards are ForkSeq and Stale by shard, with
	// several shards.
	ForkSeqs    []uint64            `json:"forkSeqs,omitempty"`
	StaleShards map[string][]uint64 `json:"staleShards,omitempty"`
	// Lost says, when the home did not answer, what is known of what the
	// new home lacks (the RPO, until failback merges it back): the mirror's
	// lag at its last contact with the old home, or that it never had one.
	Lost string        `json:"lost,omitempty"`
	Took time.Duration `json:"tookNs"`
}

// Failover makes region to the home: its mirror of the home's stream and
// bucket is promoted, and the record names it, which every node follows.
//
// It is refused while the home answers and is not fenced, since both
// regions would then take writes; force fences the home first (its stream
// and bucket are sealed) and waits until to's mirror holds everything the
// home acknowledged, a planned switchover that loses nothing. A home that
// does not answer (its stream is offline, or nothing replies) is replaced
// as it is: what it acknowledged and never mirrored stays in its stream,
// which failback merges back when the region returns.
//
// Every other region becomes stale: its stream holds the old home's
// history, and failback --from it turns it into a mirror of the new home.
func (a *Admin) Failover(ctx context.Context, to string, force bool) (FailoverReport, error) {
	a.defaults()
	start := a.Now()
	reg, rec, err := a.load(ctx)
	if err != nil {
		return FailoverReport{}, err
	}
	rep := FailoverReport{From: rec.Home, To: to}
	if err := ValidName(to); err != nil {
		return rep, err
	}
	if _, ok := rec.Regions[to]; !ok {
		return rep, fmt.Errorf("%w: no node has registered region %s (regions: %v)", ErrRefused, to, rec.RegionNames())
	}
	if rec.Home == to {
		// Done already (by this operation, its reply lost, or another):
		// a retry must succeed without touching anything.
		rep.From, rep.Epoch, rep.ForkSeq, rep.Stale, rep.Took = "", rec.Epoch, rec.ForkSeq, rec.Stale, a.Now().Sub(start)
		rep.ForkSeqs, rep.StaleShards = rec.ForkSeqs, rec.StaleShards
		rep.HomeState = "already done: " + to + " is the home region (" + rec.Change + ")"
		return rep, nil
	}
	if _, stale := rec.Stale[to]; stale {
		return rep, fmt.Errorf("%w: region %s is stale (its stream does not mirror the home's history); run 'pi-ctl failback --from %s' first", ErrRefused, to, to)
	}
	home, target, shards := rec.Assets(a.Base, rec.Home), rec.Assets(a.Base, to), rec.ShardCount()

	a.Progress("probing home region %s (%s)", rec.Home, streamsOf(home, shards))
	hss, err := a.probeHomeShards(ctx, home, shards)
	if err != nil {
		return rep, err
	}
	// The home answers if one shard does: a failover then would leave two
	// regions taking writes (on that shard). Unreachable shards are
	// replaced as they are; fencing reaches the others.
	answering, unsealed, problem := 0, 0, ""
	for k, hs := range hss {
		switch {
		case hs.Reachable:
			answering++
			if !hs.Sealed {
				unsealed++
			}
		case problem == "":
			problem = hs.Problem
			if shards > 1 {
				problem = home.Shard(k).Stream + ": " + problem
			}
		}
	}
	switch {
	case unsealed > 0 && !force:
		hs := hss[0]
		return rep, fmt.Errorf("%w: home region %s is healthy (stream %s answers, leader %s, last seq %d); "+
			"a failover now would leave two regions taking writes. Use --force for a planned switchover (the home is fenced first and nothing is lost)",
			ErrRefused, rec.Home, home.Stream, hs.Leader, hs.LastSeq)
	case unsealed > 0:
		a.Progress("fencing home region %s (sealing %s and its cursor bucket)", rec.Home, streamsOf(home, shards))
		for k, hs := range hss {
			if hs.Reachable && !hs.Sealed {
				if err := jetstream.FenceShard(ctx, a.JS, home, k); err != nil {
					return rep, err
				}
			}
		}
		rep.HomeState = "fenced by --force"
	case answering == shards:
		rep.HomeState = "fenced"
	default:
		rep.HomeState = "unreachable: " + problem
	}
	if answering > 0 && answering < shards && rep.HomeState != "" {
		rep.HomeState += fmt.Sprintf(" (%d of %d shards answered; the others are unreachable: %s)", answering, shards, problem)
	}

	// Every shard is checked, and caught up where its home answers,
	// before any is promoted: shard 0's promotion promotes the cursor
	// bucket too, and a half-promoted region is a second home.
	promoted := make([]bool, shards)
	lost := map[int]jetstream.StreamState{} // shards whose home did not answer
	for k := range shards {
		tk, hk := target.Shard(k), home.Shard(k)
		ts, err := jetstream.Probe(ctx, a.JS, tk.Stream)
		if err != nil {
			return rep, err
		}
		promoted[k] = ts.Reachable && ts.MirrorOf == "" && len(ts.Subjects) == 1 && ts.Subjects[0] == tk.SubjectPrefix+".*"
		switch {
		case !ts.Reachable:
			return rep, fmt.Errorf("region %s's stream %s is not reachable: %s", to, tk.Stream, ts.Problem)
		case ts.MirrorOf != hk.Stream && !promoted[k]:
			return rep, fmt.Errorf("%w: %s is not a mirror of %s (mirror of %q)", ErrRefused, tk.Stream, hk.Stream, ts.MirrorOf)
		}
		if !hss[k].Reachable && !promoted[k] {
			lost[k] = ts
		}
	}
	for k := range shards {
		if hss[k].Reachable && !promoted[k] {
			if err := a.catchUpStream(ctx, home.Shard(k).Stream, target.Shard(k).Stream); err != nil {
				return rep, err
			}
		}
	}
	if hss[0].Reachable && !promoted[0] {
		if err := a.catchUpStream(ctx, "KV_"+home.Bucket, "KV_"+target.Bucket); err != nil {
			return rep, err
		}
	}
	rep.Lost = lostOfShards(rec.Home, lost)
	a.Progress("promoting %s and its cursor bucket in region %s", streamsOf(target, shards), to)
	if err := jetstream.PromoteShards(ctx, a.JS, target, to, shards); err != nil {
		return rep, err
	}
	// Nothing writes to the new home's subjects before the record names
	// it, so each stream's last sequence now is exactly what it inherited.
	forks := make([]uint64, shards)
	for k := range shards {
		ps, err := jetstream.Probe(ctx, a.JS, target.Shard(k).Stream)
		if err != nil {
			return rep, err
		}
		forks[k] = ps.LastSeq
	}
	rep.ForkSeq = forks[0]
	if shards > 1 {
		rep.ForkSeqs = forks
	}
	a.Progress("recording %s as the home region", to)
	next, err := reg.Update(ctx, func(r *Record, _ bool) error {
		if r.Home != rec.Home || r.Epoch != rec.Epoch {
			return fmt.Errorf("the region record changed during the failover (home %s, epoch %d): another operator is at work", r.Home, r.Epoch)
		}
		r.Home, r.Epoch, r.ForkSeq = to, r.Epoch+1, forks[0]
		if shards > 1 {
			r.ForkSeqs = forks
		}
		for name := range r.Regions {
			if name == to {
				continue
			}
			// A region stale already shares no more than it did.
			shared := slices.Clone(forks)
			for k := range shared {
				if was, ok := r.StaleOf(name, k); ok {
					shared[k] = min(shared[k], was)
				}
			}
			r.setStale(name, shared)
		}
		r.clearStale(to)
		r.UpdatedAt = a.Now().UTC()
		r.Change = fmt.Sprintf("failover from %s to %s (%s)", rec.Home, to, rep.HomeState)
		return nil
	})
	if err != nil {
		return rep, err
	}
	rep.Changed, rep.Epoch, rep.Stale, rep.StaleShards, rep.Took = true, next.Epoch, next.Stale, next.StaleShards, a.Now().Sub(start)
	return rep, nil
}

// streamsOf names cfg's streams of n shards, for the operator.
func streamsOf(cfg jetstream.Config, n int) string {
	if n <= 1 {
		return "stream " + cfg.Stream
	}
	return fmt.Sprintf("streams %s to %s", cfg.Stream, cfg.Shard(n-1).Stream)
}

// probeHomeShards probes every shard's stream of the home side by side: a
// lost home costs each probe its timeouts, which must not add up.
func (a *Admin) probeHomeShards(ctx context.Context, home jetstream.Config, n int) ([]jetstream.StreamState, error) {
	out := make([]jetstream.StreamState, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for k := range n {
		wg.Go(func() { out[k], errs[k] = a.probeHome(ctx, home.Shard(k).Stream) })
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// lostOf describes what a mirror promoted without its origin may lack: it
// knows only its lag at its last contact, and nothing of what the origin
// acknowledged since.
func lostOf(home string, ts jetstream.StreamState) string {
	if ts.Active < 0 {
		return fmt.Sprintf("unknown: the mirror had not heard from %s since it started; every entry %s acknowledged beyond sequence %d is missing until failback", home, home, ts.LastSeq)
	}
	return fmt.Sprintf("at least %d entries: the mirror's lag at its last contact with %s, %v before the promotion; entries %s acknowledged after that contact are missing too, until failback",
		ts.Lag, home, ts.Active.Round(time.Millisecond), home)
}

// lostOfShards is lostOf for the mirrors of the shards in lost (by
// shard), their lags added up.
func lostOfShards(home string, lost map[int]jetstream.StreamState) string {
	if len(lost) <= 1 {
		for _, ts := range lost {
			return lostOf(home, ts)
		}
		return ""
	}
	var sum uint64
	var oldest time.Duration
	var lags []string
	for _, k := range slices.Sorted(maps.Keys(lost)) {
		ts := lost[k]
		if ts.Active < 0 {
			return fmt.Sprintf("unknown: the mirror of shard %d had not heard from %s since it started; every entry %s acknowledged on that shard beyond sequence %d is missing until failback, and more on the others",
				k, home, home, ts.LastSeq)
		}
		sum += ts.Lag
		oldest = max(oldest, ts.Active)
		lags = append(lags, fmt.Sprintf("%d", ts.Lag))
	}
	return fmt.Sprintf("at least %d entries: the mirrors' lags at their last contact with %s (%s by shard), up to %v before the promotion; entries %s acknowledged after those contacts are missing too, until failback",
		sum, home, strings.Join(lags, ", "), oldest.Round(time.Millisecond), home)
}

// load binds to the record bucket and reads the record, retrying while the
// supercluster is settling: right after a region's loss the meta layer may
// be electing a new leader.
func (a *Admin) load(ctx context.Context) (*Registry, Record, error) {
	var reg *Registry
	var rec Record
	err := jetstream.RetryProvisioning(ctx, a.Logger, "region record", func(ctx context.Context) error {
		var err error
		if reg == nil {
			if reg, err = BindRegistry(ctx, a.JS, a.RecordBucket); err != nil {
				return err
			}
		}
		rec, _, err = reg.Load(ctx)
		return err
	})
	return reg, rec, err
}

// probeHome decides whether the home answers. One answer is enough to say
// it does; that it does not is concluded from two probes a moment apart,
// so a single lost request does not count as a lost region.
func (a *Admin) probeHome(ctx context.Context, stream string) (jetstream.StreamState, error) {
	var st jetstream.StreamState
	for i := range 2 {
		if i > 0 {
			select {
			case <-ctx.Done():
				return st, ctx.Err()
			case <-time.After(250 * time.Millisecond):
			}
		}
		pctx, cancel := context.WithTimeout(ctx, a.ProbeTimeout)
		var err error
		st, err = jetstream.Probe(pctx, a.JS, stream)
		cancel()
		if err != nil {
			return st, err
		}
		if !st.Exists {
			return st, fmt.Errorf("the home's stream %s does not exist", stream)
		}
		if st.Reachable {
			return st, nil
		}
	}
	return st, nil
}

// catchUpStream waits until mirror holds everything origin holds; origin
// is fenced, so that is all it will ever hold.
func (a *Admin) catchUpStream(ctx context.Context, origin, mirror string) error {
	st, err := jetstream.Probe(ctx, a.JS, origin)
	if err != nil {
		return err
	}
	a.Progress("waiting for %s to mirror %s up to sequence %d", mirror, origin, st.LastSeq)
	return jetstream.WaitMirror(ctx, a.JS, mirror, st.LastSeq)
}
