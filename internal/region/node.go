package region

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Role is what a region's own stream is, as a node sees it.
type Role string

// The roles of a region.
const (
	// RoleHome: the region's stream takes the writes.
	RoleHome Role = "home"
	// RoleMirror: the region's stream mirrors the home's; the node reads
	// from it and writes to the home over the gateway.
	RoleMirror Role = "mirror"
	// RoleStale: the region's stream holds another history (an old home,
	// or a mirror of one) until failback; the node reads and writes the home.
	RoleStale Role = "stale"
)

// roleOf returns region's role under rec.
func roleOf(rec *Record, region string) Role {
	switch _, stale := rec.Stale[region]; {
	case rec.Home == region:
		return RoleHome
	case stale:
		return RoleStale
	}
	return RoleMirror
}

// Attribute keys of the Node's and the Registry's log records.
const (
	logKeyRegion   = "region"
	logKeyRole     = "role"
	logKeyHome     = "home"
	logKeyEpoch    = "epoch"
	logKeyReads    = "reads"
	logKeyWrites   = "writes"
	logKeyKept     = "kept"
	logKeyApplied  = "applied"
	logKeyBucket   = "bucket"
	logKeyStream   = "stream"
	logKeyMirrorOf = "mirror_of"
	logKeyRevision = "revision"
	logKeyErr      = "err"
)

// Node wires one pi-node into a cross-region deployment: it registers the
// node's region in the region record, provisions the region's own stream
// and bucket (primary or mirror), and keeps Log, Cursors and Feed pointed
// where the record says — switching them, without a restart, whenever the
// record changes. Configure the exported fields, Open, then build the
// Service on Log and Cursors and the Store on Feed (with Feed.SetReset).
type Node struct {
	JS natsjs.JetStream
	// WriteJS, when set, carries Log and Cursors (the writes to the home
	// region), so that they never wait behind the Feed's reads of the
	// local stream on one connection; JS carries the rest.
	WriteJS natsjs.JetStream
	Base    jetstream.Config // single-region names and shape; Replicas is this region's
	Region  string
	// HomeRegion is the home written to the record when there is none yet.
	HomeRegion string
	// RecordBucket (default PI_REGION) holds the record, placed in the
	// cluster RecordCluster (the tie-breaker) with RecordReplicas.
	RecordBucket   string
	RecordCluster  string
	RecordReplicas int
	Logger         *slog.Logger
	Now            func() time.Time

	// Set by Open.
	Log     *Log
	Cursors *Cursors
	Feed    *Feed

	reg *Registry

	mu    sync.Mutex
	rec   Record
	wired bool
	feed  jetstream.Config // the stream the Feed follows
	epoch uint64           // the history of that stream

	cancel context.CancelFunc
	done   chan struct{}
}

// Open registers the region, provisions its assets, wires Log, Cursors and
// Feed, and starts watching the record; Close stops the watch.
func (n *Node) Open(ctx context.Context) error {
	if err := ValidName(n.Region); err != nil {
		return err
	}
	if n.RecordCluster == "" {
		return errors.New("region: the record's cluster (the tie-breaker) is not set")
	}
	if n.Logger == nil {
		n.Logger = slog.New(slog.DiscardHandler)
	}
	if n.Now == nil {
		n.Now = time.Now
	}
	if n.RecordBucket == "" {
		n.RecordBucket = DefaultRecordBucket
	}
	if n.WriteJS == nil {
		n.WriteJS = n.JS
	}
	n.Log, n.Cursors, n.Feed = &Log{}, newCursors(n.WriteJS), newFeed()
	n.Feed.onSwitch = func(kept bool, at uint64) {
		n.Logger.Info("region: the Store follows another stream now", logKeyKept, kept, logKeyApplied, at)
	}
	var err error
	if n.reg, err = OpenRegistry(ctx, n.JS, n.RecordBucket, n.RecordCluster, max(n.RecordReplicas, 1), n.Logger); err != nil {
		return err
	}
	rec, err := n.registerRetrying(ctx)
	if err != nil {
		return err
	}
	if rec, err = n.provision(ctx, rec); err != nil {
		return err
	}
	n.apply(rec)
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n.cancel, n.done = cancel, make(chan struct{})
	go func() {
		defer close(n.done)
		n.reg.Watch(wctx, n.Logger, n.apply)
	}()
	return nil
}

// Close stops watching the record.
func (n *Node) Close() {
	if n.cancel != nil {
		n.cancel()
		<-n.done
		n.cancel = nil
	}
}

// registerRetrying registers, retrying while the record bucket is not
// answering yet (just created, its stream still electing a leader) and
// while there is no record: a node started without --home-region waits
// for one that has it.
func (n *Node) registerRetrying(ctx context.Context) (Record, error) {
	var rec Record
	wait := 250 * time.Millisecond
	for {
		err := jetstream.RetryProvisioning(ctx, n.Logger, "region record", func(ctx context.Context) error {
			var err error
			rec, err = n.register(ctx)
			return err
		})
		if !errors.Is(err, ErrNoRecord) || ctx.Err() != nil {
			return rec, err
		}
		n.Logger.Info("region: waiting for a node started with --home-region to create the region record", logKeyBucket, n.RecordBucket)
		select {
		case <-ctx.Done():
			return rec, fmt.Errorf("%w: %w", ErrNoRecord, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// register writes the region into the record (creating the record with
// HomeRegion as the home if there is none) and returns the record.
func (n *Node) register(ctx context.Context) (Record, error) {
	names := NamesOf(n.Base)
	return n.reg.Update(ctx, func(r *Record, exists bool) error {
		if !exists {
			if n.HomeRegion == "" {
				return ErrNoRecord
			}
			if err := ValidName(n.HomeRegion); err != nil {
				return err
			}
			*r = Record{Home: n.HomeRegion, Epoch: 1, Names: names, Regions: map[string]RegionInfo{},
				Change: "bootstrap: home " + n.HomeRegion + ", by a node of " + n.Region}
		}
		if r.Names != names {
			return fmt.Errorf("region record names the assets %+v, this node %+v: start it with the same --stream, --subject-prefix and --bucket", r.Names, names)
		}
		if info, ok := r.Regions[n.Region]; ok && info.Replicas == n.Base.Replicas {
			return errNoChange
		}
		r.Regions[n.Region] = RegionInfo{Replicas: n.Base.Replicas}
		r.UpdatedAt = n.Now().UTC()
		if exists {
			r.Change = "region " + n.Region + " registered"
		}
		return nil
	})
}

// provision creates the region's own assets: the primary in the home
// region, a mirror of the home elsewhere. A mirror region whose existing
// stream is not a mirror of the home's (it holds another history) is marked
// stale in the record, so its nodes read from the home until an operator
// runs failback for it. Assets are never replaced here.
func (n *Node) provision(ctx context.Context, rec Record) (Record, error) {
	local, home := rec.Assets(n.Base, n.Region), rec.Assets(n.Base, rec.Home)
	switch roleOf(&rec, n.Region) {
	case RoleHome:
		return rec, jetstream.ProvisionPrimary(ctx, n.JS, local, n.Region)
	case RoleStale:
		return rec, nil
	}
	if err := jetstream.ProvisionMirror(ctx, n.JS, local, home, n.Region); err != nil {
		return rec, err
	}
	st, err := jetstream.Probe(ctx, n.JS, local.Stream)
	if err != nil || !st.Reachable || st.MirrorOf == home.Stream {
		return rec, err
	}
	n.Logger.Warn("region: this region's stream is not a mirror of the home's; reading from the home until 'pi-ctl failback --from "+n.Region+"'",
		logKeyStream, local.Stream, logKeyMirrorOf, st.MirrorOf, logKeyHome, home.Stream)
	return n.reg.Update(ctx, func(r *Record, _ bool) error {
		if _, ok := r.Stale[n.Region]; ok || r.Home == n.Region {
			return errNoChange
		}
		if r.Stale == nil {
			r.Stale = map[string]uint64{}
		}
		r.Stale[n.Region] = 0 // nothing known to be shared: failback merges all of it
		r.UpdatedAt, r.Change = n.Now().UTC(), "region "+n.Region+" found stale by a node"
		return nil
	})
}

// apply points Log, Cursors and Feed where rec says. It makes no requests,
// so it cannot fail: a target that is unreachable fails the calls made to
// it, as the old one did.
func (n *Node) apply(rec Record) {
	role := roleOf(&rec, n.Region)
	home := rec.Assets(n.Base, rec.Home)
	feed := rec.Assets(n.Base, n.Region)
	if role == RoleStale {
		feed = home
	}
	n.Log.set(jetstream.NewLog(n.WriteJS, home))
	n.Cursors.set(home)

	n.mu.Lock()
	defer n.mu.Unlock()
	first, prevStream, prevEpoch := !n.wired, n.feed.Stream, n.epoch
	n.rec, n.wired, n.feed, n.epoch = rec, true, feed, rec.Epoch
	switch {
	case first:
		// The Store has not started: its snapshot, if any, is checked
		// against the stream's identity when it opens.
		n.Feed.Switch(jetstream.NewMirrorLog(n.JS, feed), func(uint64) bool { return true })
	case prevStream != feed.Stream:
		n.Feed.Switch(jetstream.NewMirrorLog(n.JS, feed), keeps(prevEpoch, rec))
	case prevEpoch != rec.Epoch:
		// The same stream in a new epoch: this region's mirror was
		// promoted. Everything it holds is in the new history.
	default:
		return
	}
	n.Logger.Info("region: wired", logKeyRegion, n.Region, logKeyRole, role, logKeyHome, rec.Home, logKeyEpoch, rec.Epoch,
		logKeyReads, feed.Stream, logKeyWrites, home.Stream)
}

// keeps says whether a Store that followed a stream of history prevEpoch,
// and has applied up to some sequence, may go on in rec's history: within
// one history, always; into the next one, if it applied nothing past the
// sequence at which the new home forked from the old; else never.
func keeps(prevEpoch uint64, rec Record) func(applied uint64) bool {
	return func(applied uint64) bool {
		switch rec.Epoch {
		case prevEpoch:
			return true
		case prevEpoch + 1:
			return applied <= rec.ForkSeq
		}
		return false
	}
}

// Record returns the record the node is wired by.
func (n *Node) Record() Record {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rec.clone()
}

// FeedConfig returns the stream the Store follows now.
func (n *Node) FeedConfig() jetstream.Config {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.feed
}

// homeProbeTimeout bounds Status's question to the home: a lost home must
// not hold up /v1/status.
const homeProbeTimeout = 500 * time.Millisecond

// Ready reports why the node should not take traffic yet as far as its
// region goes, or nil: in a mirror region, until the mirror it reads has
// held everything the home held at least once since the node started
// following it — before that it is still copying what the home
// acknowledged earlier, and a failover would inherit none of it.
func (n *Node) Ready() error {
	n.mu.Lock()
	rec, reads := n.rec.clone(), n.feed.Stream
	n.mu.Unlock()
	if roleOf(&rec, n.Region) != RoleMirror || n.Feed.caughtUp() {
		return nil
	}
	return fmt.Errorf("region %s: the mirror %s has not caught up with the home's stream %s yet since this node started", n.Region, reads, rec.Assets(n.Base, rec.Home).Stream)
}

// Status reports the node's region, role, the streams it reads and writes,
// and, in a mirror region, the mirror's lag.
func (n *Node) Status(ctx context.Context) wire.RegionStatus {
	n.mu.Lock()
	rec, reads := n.rec.clone(), n.feed.Stream // one wiring, not two
	n.mu.Unlock()
	st := wire.RegionStatus{
		Region: n.Region, Role: string(roleOf(&rec, n.Region)), Home: rec.Home, Epoch: rec.Epoch, ForkSeq: rec.ForkSeq,
		Regions: rec.RegionNames(), Stale: rec.Stale, Reads: reads, Writes: rec.Assets(n.Base, rec.Home).Stream,
		RecordUpdated: rec.UpdatedAt, RecordChange: rec.Change,
	}
	if st.Role != string(RoleMirror) {
		return st
	}
	ps, err := jetstream.Probe(ctx, n.JS, reads)
	m := &wire.MirrorStatus{Origin: ps.MirrorOf, LastSeq: ps.LastSeq, Error: ps.MirrorErr, Reachable: ps.Reachable, CaughtUp: n.Feed.caughtUp()}
	if ps.Active > 0 {
		m.LastContact = ps.Active.Round(time.Millisecond).String()
	}
	if err != nil {
		m.Error = err.Error()
	} else if !ps.Reachable {
		m.Error = ps.Problem
	}
	// The lag counts what the home acknowledged, from the home's own state:
	// the mirror's report is 0 until its first messages arrive.
	p := jetstream.MirrorPosition{LastSeq: ps.LastSeq, Reported: ps.Reachable && ps.Active >= 0, ReportedLag: ps.Lag}
	hctx, cancel := context.WithTimeout(ctx, homeProbeTimeout)
	hs, herr := jetstream.Probe(hctx, n.JS, st.Writes)
	cancel()
	if herr == nil && hs.Reachable {
		p.OriginLastSeq, p.OriginAnswered = hs.LastSeq, true
		m.HomeLastSeq = &hs.LastSeq
	}
	m.LagFrom = "unknown" // the mirror's own state is not known either
	if lag, ok := p.Lag(); ok && ps.Reachable {
		m.Lag, m.LagFrom = &lag, p.LagSource()
	}
	st.Mirror = m
	return st
}
