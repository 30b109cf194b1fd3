package region

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
		rep.HomeState = "already done: " + to + " is the home region (" + rec.Change + ")"
		return rep, nil
	}
	if _, stale := rec.Stale[to]; stale {
		return rep, fmt.Errorf("%w: region %s is stale (its stream does not mirror the home's history); run 'pi-ctl failback --from %s' first", ErrRefused, to, to)
	}
	home, target := rec.Assets(a.Base, rec.Home), rec.Assets(a.Base, to)

	a.Progress("probing home region %s (stream %s)", rec.Home, home.Stream)
	hs, err := a.probeHome(ctx, home.Stream)
	if err != nil {
		return rep, err
	}
	switch {
	case hs.Reachable && !hs.Sealed && !force:
		return rep, fmt.Errorf("%w: home region %s is healthy (stream %s answers, leader %s, last seq %d); "+
			"a failover now would leave two regions taking writes. Use --force for a planned switchover (the home is fenced first and nothing is lost)",
			ErrRefused, rec.Home, home.Stream, hs.Leader, hs.LastSeq)
	case hs.Reachable && !hs.Sealed:
		a.Progress("fencing home region %s (sealing %s and its cursor bucket)", rec.Home, home.Stream)
		if err := jetstream.Fence(ctx, a.JS, home); err != nil {
			return rep, err
		}
		rep.HomeState = "fenced by --force"
	case hs.Reachable:
		rep.HomeState = "fenced"
	default:
		rep.HomeState = "unreachable: " + hs.Problem
	}

	ts, err := jetstream.Probe(ctx, a.JS, target.Stream)
	if err != nil {
		return rep, err
	}
	promoted := ts.Reachable && ts.MirrorOf == "" && len(ts.Subjects) == 1 && ts.Subjects[0] == target.SubjectPrefix+".*"
	switch {
	case !ts.Reachable:
		return rep, fmt.Errorf("region %s's stream %s is not reachable: %s", to, target.Stream, ts.Problem)
	case ts.MirrorOf != home.Stream && !promoted:
		return rep, fmt.Errorf("%w: %s is not a mirror of %s (mirror of %q)", ErrRefused, target.Stream, home.Stream, ts.MirrorOf)
	}
	if hs.Reachable && !promoted {
		if err := a.catchUp(ctx, home, target); err != nil {
			return rep, err
		}
	}
	if !hs.Reachable && !promoted {
		rep.Lost = lostOf(rec.Home, ts)
	}
	a.Progress("promoting %s and its cursor bucket in region %s", target.Stream, to)
	if err := jetstream.Promote(ctx, a.JS, target, to); err != nil {
		return rep, err
	}
	ps, err := jetstream.Probe(ctx, a.JS, target.Stream)
	if err != nil {
		return rep, err
	}
	// Nothing writes to the new home's subjects before the record names
	// it, so its last sequence now is exactly what it inherited.
	rep.ForkSeq = ps.LastSeq
	a.Progress("recording %s as the home region", to)
	next, err := reg.Update(ctx, func(r *Record, _ bool) error {
		if r.Home != rec.Home || r.Epoch != rec.Epoch {
			return fmt.Errorf("the region record changed during the failover (home %s, epoch %d): another operator is at work", r.Home, r.Epoch)
		}
		r.Home, r.Epoch, r.ForkSeq = to, r.Epoch+1, rep.ForkSeq
		if r.Stale == nil {
			r.Stale = map[string]uint64{}
		}
		for name := range r.Regions {
			if shared, ok := r.Stale[name]; name != to && (!ok || shared > rep.ForkSeq) {
				r.Stale[name] = rep.ForkSeq
			}
		}
		delete(r.Stale, to)
		r.UpdatedAt = a.Now().UTC()
		r.Change = fmt.Sprintf("failover from %s to %s (%s)", rec.Home, to, rep.HomeState)
		return nil
	})
	if err != nil {
		return rep, err
	}
	rep.Changed, rep.Epoch, rep.Stale, rep.Took = true, next.Epoch, next.Stale, a.Now().Sub(start)
	return rep, nil
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

// catchUp waits until target's mirrors hold everything home's stream and
// bucket hold; home is fenced, so that is all it will ever hold.
func (a *Admin) catchUp(ctx context.Context, home, target jetstream.Config) error {
	for _, p := range [][2]string{{home.Stream, target.Stream}, {"KV_" + home.Bucket, "KV_" + target.Bucket}} {
		st, err := jetstream.Probe(ctx, a.JS, p[0])
		if err != nil {
			return err
		}
		a.Progress("waiting for %s to mirror %s up to sequence %d", p[1], p[0], st.LastSeq)
		if err := jetstream.WaitMirror(ctx, a.JS, p[1], st.LastSeq); err != nil {
			return err
		}
	}
	return nil
}
