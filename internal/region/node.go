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
	logKeyShard    = "shard"
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
	// Shards is the shard count of every region's copy (pi-node's
	// --shards): written to the record when there is none yet, and else
	// checked against it; 0 takes the record's.
	Shards int
	Logger *slog.Logger
	Now    func() time.Time

	// Set by Open, one per shard of the record: the home's stream of each
	// shard to write to, and what each shard's Store follows. Their
	// sequences are each stream's own; WriteLog, ReadLog, StoreFeed and
	// SearchFeed qualify them (shard.Seq) as a sharded log does.
	Logs    []*Log
	Feeds   []*Feed
	Cursors *Cursors

	reg *Registry
	// ledger is the ledger of erasures; erasing, the jobs that erase
	// from the region's copy what the home erased (erase.go).
	ledger  *jetstream.Ledger
	erasing eraseQueue

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
	n.Cursors = newCursors(n.WriteJS)
	var err error
	if n.reg, err = OpenRegistry(ctx, n.JS, n.RecordBucket, n.RecordCluster, max(n.RecordReplicas, 1), n.Logger); err != nil {
		return err
	}
	rec, err := n.registerRetrying(ctx)
	if err != nil {
		return err
	}
	n.ledger = jetstream.NewLedger(n.JS, LedgerBucket(n.RecordBucket), n.RecordCluster, max(n.RecordReplicas, 1))
	n.erasing.wake = make(chan struct{}, 1)
	n.Logs, n.Feeds = nil, nil
	for k := range rec.ShardCount() {
		f := newFeed()
		f.onSwitch = func(kept bool, at uint64) {
			n.Logger.Info("region: the Store follows another stream now", logKeyShard, k, logKeyKept, kept, logKeyApplied, at)
		}
		f.onNotice = n.noticed
		n.Logs, n.Feeds = append(n.Logs, &Log{}), append(n.Feeds, f)
	}
	if rec, err = n.provision(ctx, rec); err != nil {
		return err
	}
	n.apply(rec)
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n.cancel, n.done = cancel, make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { n.reg.Watch(wctx, n.Logger, n.apply) })
	wg.Go(func() { n.eraseCopies(wctx) })
	go func() {
		wg.Wait()
		close(n.done)
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
			if n.Shards > 1 {
				r.Shards = n.Shards
			}
		}
		if r.Names != names {
			return fmt.Errorf("region record names the assets %+v, this node %+v: start it with the same --stream, --subject-prefix and --bucket", r.Names, names)
		}
		if n.Shards != 0 && n.Shards != r.ShardCount() {
			return &ShardsError{Record: r.ShardCount(), Node: n.Shards}
		}
		if other := clashes(n.Region, append(r.RegionNames(), r.Home), r.ShardCount()); other != "" {
			return fmt.Errorf("%w: region %s beside region %s: with %d shards one's shard stream would carry the other's name (%s); name the regions apart",
				ErrRefused, n.Region, other, r.ShardCount(), r.ShardAssets(n.Base, n.Region, 0).Stream)
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
	local, home, shards := rec.Assets(n.Base, n.Region), rec.Assets(n.Base, rec.Home), rec.ShardCount()
	switch roleOf(&rec, n.Region) {
	case RoleHome:
		return rec, jetstream.ProvisionPrimaryShards(ctx, n.JS, local, n.Region, shards)
	case RoleStale:
		return rec, nil
	}
	if err := jetstream.ProvisionMirrorShards(ctx, n.JS, local, home, n.Region, shards); err != nil {
		return rec, err
	}
	// One shard's stream that is not a mirror of the home's shard makes
	// the region stale: it reads every shard from the home until failback.
	for k := range shards {
		lk, hk := local.Shard(k), home.Shard(k)
		st, err := jetstream.Probe(ctx, n.JS, lk.Stream)
		if err != nil || !st.Reachable || st.MirrorOf == hk.Stream {
			if err != nil {
				return rec, err
			}
			continue
		}
		n.Logger.Warn("region: this region's stream is not a mirror of the home's; reading from the home until 'pi-ctl failback --from "+n.Region+"'",
			logKeyStream, lk.Stream, logKeyMirrorOf, st.MirrorOf, logKeyHome, hk.Stream)
		return n.reg.Update(ctx, func(r *Record, _ bool) error {
			if _, ok := r.Stale[n.Region]; ok || r.Home == n.Region {
				return errNoChange
			}
			// Nothing known to be shared: failback merges all of it.
			r.setStale(n.Region, make([]uint64, r.ShardCount()))
			r.UpdatedAt, r.Change = n.Now().UTC(), "region "+n.Region+" found stale by a node"
			return nil
		})
	}
	return rec, nil
}

// apply points Log, Cursors and Feed where rec says. It makes no requests,
// so it cannot fail: a target that is unreachable fails the calls made to
// it, as the old one did.
func (n *Node) apply(rec Record) {
	if rec.ShardCount() != len(n.Feeds) {
		// Written by another version, or by hand: following it would
		// route sessions to other shards than they are on.
		n.Logger.Error("region: ignoring a region record of another shard count than this node's copies",
			"record_shards", rec.ShardCount(), "node_shards", len(n.Feeds), "record_change", rec.Change)
		return
	}
	role := roleOf(&rec, n.Region)
	home := rec.Assets(n.Base, rec.Home)
	feed := rec.Assets(n.Base, n.Region)
	if role == RoleStale {
		feed = home
	}
	for k := range n.Logs {
		n.Logs[k].set(jetstream.NewLog(n.WriteJS, home.Shard(k)))
	}
	n.Cursors.set(home)

	n.mu.Lock()
	defer n.mu.Unlock()
	first, prevStream, prevEpoch := !n.wired, n.feed.Stream, n.epoch
	n.rec, n.wired, n.feed, n.epoch = rec, true, feed, rec.Epoch
	switch {
	case first:
		// The Stores have not started: their snapshots, if any, are
		// checked against the streams' identity when they open.
		for k, f := range n.Feeds {
			f.Switch(jetstream.NewMirrorLog(n.JS, feed.Shard(k)), func(uint64) bool { return true })
		}
	case prevStream != feed.Stream:
		for k, f := range n.Feeds {
			f.Switch(jetstream.NewMirrorLog(n.JS, feed.Shard(k)), keeps(prevEpoch, rec, k))
		}
	case prevEpoch != rec.Epoch:
		// The same streams in a new epoch: this region's mirrors were
		// promoted. Everything they hold is in the new history.
	default:
		return
	}
	// A new wiring, a new look at the ledger: a region that has just
	// become the home may hold what the lost home erased.
	n.erasing.push(eraseJob{})
	n.Logger.Info("region: wired", logKeyRegion, n.Region, logKeyRole, role, logKeyHome, rec.Home, logKeyEpoch, rec.Epoch,
		logKeyReads, feed.Stream, logKeyWrites, home.Stream, "shards", len(n.Feeds))
}

// keeps says whether shard k's Store, which followed a stream of history
// prevEpoch and has applied up to some sequence of it, may go on in rec's
// history: within one history, always; into the next one, if it applied
// nothing past the sequence at which the new home's shard k forked from
// the old; else never.
func keeps(prevEpoch uint64, rec Record, k int) func(applied uint64) bool {
	fork := rec.ForkSeqOf(k)
	return func(applied uint64) bool {
		switch rec.Epoch {
		case prevEpoch:
			return true
		case prevEpoch + 1:
			return applied <= fork
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

// OwnConfig returns this region's own copy (shard 0's names).
func (n *Node) OwnConfig() jetstream.Config {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rec.Assets(n.Base, n.Region)
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
// region goes, or nil: in a mirror region, until every shard's mirror it
// reads has held everything the home held at least once since the node
// started following it — before that it is still copying what the home
// acknowledged earlier, and a failover would inherit none of it.
func (n *Node) Ready() error {
	n.mu.Lock()
	rec, reads := n.rec.clone(), n.feed
	n.mu.Unlock()
	if roleOf(&rec, n.Region) != RoleMirror {
		return nil
	}
	home := rec.Assets(n.Base, rec.Home)
	for k, f := range n.Feeds {
		if !f.caughtUp() {
			return fmt.Errorf("region %s: the mirror %s has not caught up with the home's stream %s yet since this node started", n.Region, reads.Shard(k).Stream, home.Shard(k).Stream)
		}
	}
	return nil
}

// Status reports the node's region, role, the streams it reads and writes
// (shard 0's), and, in a mirror region, its mirrors' lag.
func (n *Node) Status(ctx context.Context) wire.RegionStatus {
	n.mu.Lock()
	rec, reads := n.rec.clone(), n.feed // one wiring, not two
	n.mu.Unlock()
	home := rec.Assets(n.Base, rec.Home)
	st := wire.RegionStatus{
		Region: n.Region, Role: string(roleOf(&rec, n.Region)), Home: rec.Home, Epoch: rec.Epoch, ForkSeq: rec.ForkSeq,
		Regions: rec.RegionNames(), Stale: rec.Stale, Reads: reads.Stream, Writes: home.Stream,
		RecordUpdated: rec.UpdatedAt, RecordChange: rec.Change,
	}
	if rec.ShardCount() > 1 {
		st.Shards, st.ForkSeqs, st.StaleShards = rec.Shards, rec.ForkSeqs, rec.StaleShards
	}
	if st.Role != string(RoleMirror) {
		return st
	}
	// Side by side: a home that does not answer costs each probe its
	// timeout, which must not add up over the shards.
	ms := make([]wire.MirrorStatus, len(n.Feeds))
	var wg sync.WaitGroup
	for k := range n.Feeds {
		wg.Go(func() { ms[k] = n.mirrorStatus(ctx, reads.Shard(k).Stream, home.Shard(k).Stream, n.Feeds[k]) })
	}
	wg.Wait()
	if len(ms) == 1 {
		st.Mirror = &ms[0]
		return st
	}
	st.ShardMirrors = ms
	st.Mirror = sumMirrors(ms)
	return st
}

// mirrorStatus is the state of the mirror reads, which f follows, against
// its origin writes.
func (n *Node) mirrorStatus(ctx context.Context, reads, writes string, f *Feed) wire.MirrorStatus {
	ps, err := jetstream.Probe(ctx, n.JS, reads)
	m := wire.MirrorStatus{Origin: ps.MirrorOf, LastSeq: ps.LastSeq, Error: ps.MirrorErr, Reachable: ps.Reachable, CaughtUp: f.caughtUp()}
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
	hs, herr := jetstream.Probe(hctx, n.JS, writes)
	cancel()
	if herr == nil && hs.Reachable {
		p.OriginLastSeq, p.OriginAnswered = hs.LastSeq, true
		m.HomeLastSeq = &hs.LastSeq
	}
	m.LagFrom = "unknown" // the mirror's own state is not known either
	if lag, ok := p.Lag(); ok && ps.Reachable {
		m.Lag, m.LagFrom = &lag, p.LagSource()
	}
	return m
}

// sumMirrors is the state of every shard's mirror as one: sequences and
// lags summed (the lag unknown if one is; the home's last sequence unknown
// if one did not answer), caught up and reachable if every one is, the
// first error, the longest time since a contact.
func sumMirrors(ms []wire.MirrorStatus) *wire.MirrorStatus {
	out := &wire.MirrorStatus{Origin: ms[0].Origin, CaughtUp: true, Reachable: true, LagFrom: ms[0].LagFrom}
	var lag, home uint64
	lagKnown, homeKnown := true, true
	var contact time.Duration
	for _, m := range ms {
		out.LastSeq += m.LastSeq
		out.CaughtUp = out.CaughtUp && m.CaughtUp
		out.Reachable = out.Reachable && m.Reachable
		if out.Error == "" {
			out.Error = m.Error
		}
		if m.Lag == nil {
			lagKnown = false
		} else {
			lag += *m.Lag
		}
		if m.HomeLastSeq == nil {
			homeKnown = false
		} else {
			home += *m.HomeLastSeq
		}
		if m.LagFrom != out.LagFrom {
			out.LagFrom = "mixed"
		}
		if d, err := time.ParseDuration(m.LastContact); err == nil && d > contact {
			contact, out.LastContact = d, m.LastContact
		}
	}
	if lagKnown {
		out.Lag = &lag
	} else {
		out.LagFrom = "unknown"
	}
	if homeKnown {
		out.HomeLastSeq = &home
	}
	return out
}
