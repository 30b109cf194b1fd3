package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pifleet/sessionlog/internal/seal"
	"github.com/pifleet/sessionlog/internal/search"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Doc is one session as a Store holds it: the tree (raw JSON lines plus
// pi's indexes) and where each line sits in the log. While a Doc is evicted
// (Tree nil) the catalog fields stay current, so listings need no reload.
type Doc struct {
	ID        string
	Tree      *tree.Session // nil while evicted
	Seqs      []uint64      // stream sequence of each entry of Tree
	HeaderSeq uint64
	LastSeq   uint64    // the session's last sequence: its version
	Modified  time.Time // when the log stored the last record: the retention clock
	// LastEntry is the latest entry timestamp (the header's without
	// entries): the catalog's modified, as pi's /resume sorts sessions,
	// so that imported history is as old as its entries. Zero while
	// unknown (restored from a snapshot without it): Modified stands in.
	LastEntry time.Time
	Created   time.Time // the header's timestamp
	Entries   int       // entry count, also while evicted

	// Catalog data kept only while evicted (derived from Tree otherwise).
	cwd, parentSession string
	name               string
	hasName            bool
	labels             map[string]string
	first              *string // firstMessage, when firstKnown
	firstKnown         bool    // false for a session restored evicted from a snapshot

	// While evicted with a snapshot block to come back from: the block, and
	// the records applied after it. Without a base, an evicted session is
	// reloaded from the log.
	base *snapRef
	tail []session.Stored

	lastUse atomic.Int64 // Store.clock at the last read or write, for eviction

	// forkDepth is session.ForkOf.Depth of a fork by reference whose
	// header this Store applied (0: a plain session, or restored from a
	// snapshot, which does not keep it).
	forkDepth int

	// The slab Compact packed the tree's lines into (nil: none), and how
	// many of its bytes they take.
	slab      *slab
	slabBytes int
}

// Info returns the catalog record.
func (d *Doc) Info() wire.Info {
	// Milliseconds, as pi's header timestamp (created) has them: both
	// times of the record at one precision.
	modified := d.LastEntry
	if modified.IsZero() {
		modified = d.Modified
	}
	in := wire.Info{SessionID: d.ID, Created: d.Created.Truncate(time.Millisecond), Modified: modified.Truncate(time.Millisecond), EntryCount: d.Entries, LastSeq: d.LastSeq}
	cwd, parent, name, hasName := d.cwd, d.parentSession, d.name, d.hasName
	if d.Tree != nil {
		cwd, parent = d.Tree.Header.Cwd, d.Tree.Header.ParentSession
		name, hasName = d.Tree.Name()
	}
	in.Cwd = cwd
	if hasName {
		in.Name = &name
	}
	if parent != "" {
		in.ParentSession = &parent
	}
	return in
}

// firstMessage is the catalog's preview of the first user message (see
// wire.Info.FirstMessage): from the tree, or as noted when it was evicted;
// nil when there is none, or none is known (restored from a snapshot).
func (d *Doc) firstMessage() *string {
	if d.Tree == nil {
		return d.first // nil unless known
	}
	if p, ok := d.Tree.FirstMessage(); ok {
		return &p
	}
	return nil
}

// ForkDepth is how many forks by reference lead to this session, as far
// as this Store knows (session.MaxForkDepth).
func (d *Doc) ForkDepth() int { return d.forkDepth }

// HasLabel reports whether any entry carries label text.
func (d *Doc) HasLabel(text string) bool {
	labels := d.labels
	if d.Tree != nil {
		labels = d.Tree.Labels()
	}
	for _, l := range labels {
		if l == text {
			return true
		}
	}
	return false
}

// Options configure a Store.
type Options struct {
	// MemoryBudget caps the JSON bytes of session trees held in memory; the
	// least recently used sessions are evicted beyond it and reloaded from
	// the log on demand. 0 means no limit.
	MemoryBudget int64
	// Log reloads evicted sessions; required when MemoryBudget is set.
	Log session.Log
	// Parents is where the path of a fork by reference is read when this
	// Store does not hold its parent loaded (a parent in another shard, or
	// evicted): the whole log, every shard. Default Log.
	Parents session.Reader
	Logger  *slog.Logger
	Now     func() time.Time
	// SnapshotDir, when set, holds the Store's snapshots: written every
	// SnapshotEvery (default 5 minutes) while records arrive and by Close,
	// restored by Open, so a restart serves at once and then applies only
	// what the log gained since. Snapshots and spill files are mode 0600,
	// the directory 0700 when the Store creates it: they hold whole sessions.
	SnapshotDir   string
	SnapshotEvery time.Duration
	// Seal, when set, encrypts the snapshot and spill blocks and the
	// snapshot's index (encryption at rest, snapshot.go). Unencrypted
	// snapshots found in SnapshotDir are then removed, unread.
	Seal *seal.Ring
	// Writer, when set, is the log the Store removes abandoned multi-batch
	// sessions from (pending.go): one whose last record is older than
	// AbandonedAfter (default 30 s) while it is still incomplete. Without
	// it the Store keeps such a session hidden and leaves its removal to
	// other nodes.
	Writer         session.Log
	AbandonedAfter time.Duration
	// Search, when set, is the full-text index of this Store's log: it
	// follows the log on its own (from where it left off) once the Store
	// has caught up after Open, and closes with it. It follows SearchFeed
	// when set (a region's: a view of the Store's feed with its own
	// switch decisions), else the Store's feed.
	Search     *search.Index
	SearchFeed session.Feed
}

// Store holds every session's tree in memory, fed by one ordered pass over
// the whole log (a Feed). Reads are served from memory; WaitFor lets a
// client read its own writes on any node by naming the sequence its write
// was acknowledged with.
type Store struct {
	feed session.Feed
	opts Options
	log  *slog.Logger

	mu       sync.RWMutex
	docs     map[string]*Doc
	applied  uint64                 // last sequence applied
	progress chan struct{}          // closed and replaced whenever applied moves
	held     int64                  // bytes of loaded trees
	clock    atomic.Int64           // use counter for LRU
	ident    atomic.Pointer[string] // the log's identity, once known (identity)
	budget   atomic.Int64           // MemoryBudget as set now (SetMemoryBudget)

	pending map[string]*pendingDoc // under mu: multi-batch sessions not yet whole (pending.go)

	stats storeStats

	snapMu sync.Mutex // one snapshot writer at a time
	snap   *snapFile  // the newest snapshot, blocks of evicted sessions
	snapAt uint64     // st.applied when snap was taken (its own applied may be lower: snapshotApplied)
	// indexLacks: sessions restored from a snapshot without previews and
	// entry times (an earlier version's) lack them: the next snapshot is
	// due even if nothing was applied since, as it reads their lines and
	// fills them in.
	indexLacks bool
	// Unix nanos of SnapshotAt: an atomic, so a metrics scrape takes no lock.
	snapTime atomic.Int64
	// erased asks snapshotLoop for a snapshot now: an erasure notice was
	// applied, and the files on disk must stop holding the session.
	erased chan struct{}

	// Under mu: blocks of sessions evicted since the last snapshot (spill.go).
	spill    *spill
	spills   []*snapFile
	spillBuf []byte
	sealBuf  []byte // spillBuf's block sealed (Options.Seal)

	// The compaction after the rebuild (compact.go): started once the
	// Store first caught up; rebuilt is closed when it is done. Until it
	// starts, lines keep the feed's buffers (no copy: it moves them).
	compacting atomic.Bool // set under mu
	rebuilt    chan struct{}
	ctx        context.Context // Open's, for the compaction

	unheld bool               // Unheld: a shard this node does not hold
	opened bool               // Open ran: a Store follows once, also after Close
	cancel context.CancelFunc // stops the goroutines Open started; nil once closed
	wg     sync.WaitGroup     // follow, watchLag and snapshotLoop

	// claimID names this Store in its abandonment markers (pending.go).
	claimID string

	// What followRetry last warned of: the applied position and when.
	// The follow goroutine's alone.
	retryApplied uint64
	retryLogged  time.Time
}

type storeStats struct {
	applied     atomic.Uint64 // records applied
	skipped     atomic.Uint64 // records that were not valid lines
	evictions   atomic.Uint64
	reloads     atomic.Uint64
	logLastSeq  atomic.Uint64 // the log's last sequence, last time we asked
	polledAt    atomic.Int64  // unix nanos when that poll was answered (0: never yet): what logLastSeq is the log's end as of
	noted       atomic.Uint64 // the highest sequence NoteLogSeq was told of
	firstEnd    atomic.Uint64 // 1 + the log's last sequence as first learned since Open (or Reset); 0: not yet
	caughtUpAt  atomic.Int64  // unix nanos when applied last reached logLastSeq
	followError atomic.Value  // string
	abandoned   atomic.Uint64 // abandoned multi-batch sessions this Store claimed and purged
}

// New returns a Store over feed; call Open to start following it.
func New(feed session.Feed, opts Options) *Store {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	st := &Store{feed: feed, opts: opts, log: opts.Logger, docs: make(map[string]*Doc), pending: make(map[string]*pendingDoc), progress: make(chan struct{}),
		rebuilt: make(chan struct{}), claimID: rand.Text(), erased: make(chan struct{}, 1)}
	st.budget.Store(opts.MemoryBudget)
	return st
}

// SetMemoryBudget changes the budget of a Store made with one: a node that
// takes shards over and hands them back shares its --memory-budget among
// the Stores it holds. A lower budget evicts at once. It cannot turn the
// budget on or off (with one, each line is a copy of its own, so that
// what eviction frees is what it counts).
func (st *Store) SetMemoryBudget(b int64) error {
	if (b > 0) != (st.opts.MemoryBudget > 0) {
		return fmt.Errorf("store: a memory budget of %d for a Store made with %d: it can change, not come or go", b, st.opts.MemoryBudget)
	}
	st.budget.Store(b)
	st.mu.Lock()
	st.evictLocked()
	st.mu.Unlock()
	return nil
}

// Open starts following the log from the beginning (or from where a
// restored snapshot left off) in goroutines that Close stops.
func (st *Store) Open(ctx context.Context) error {
	if st.opened {
		return nil
	}
	st.opened = true
	if st.opts.SnapshotDir != "" {
		removeStaleSpills(st.opts.SnapshotDir)
	}
	st.restore(ctx)
	if st.opts.SnapshotDir != "" && st.snapTime.Load() == 0 {
		st.snapTime.Store(st.opts.Now().UnixNano()) // nothing on disk covers what comes from here
	}
	ctx, st.cancel = context.WithCancel(context.WithoutCancel(ctx))
	st.ctx = ctx
	st.wg.Go(func() { st.follow(ctx) })
	st.wg.Go(func() { st.watchLag(ctx) })
	if st.opts.SnapshotDir != "" {
		st.wg.Go(func() { st.snapshotLoop(ctx) })
	}
	if st.opts.Writer != nil {
		st.wg.Go(func() { st.reapLoop(ctx) })
	}
	if st.opts.Search != nil {
		st.wg.Go(func() {
			// The index follows once the Store has caught up: a node
			// rebuilding, or taking a shard over, serves its reads first
			// and does not read the log twice at once.
			select {
			case <-st.rebuilt:
			case <-ctx.Done():
				return
			}
			feed := st.opts.SearchFeed
			if feed == nil {
				feed = st.feed
			}
			st.opts.Search.SetCwdSource(st.cwdOf)
			st.opts.Search.Run(ctx, feed)
		})
	}
	return nil
}

// Close stops following and waits for every goroutine Open started: the
// last snapshot below must not race with a periodic one, and nothing may
// poll the log once its owner closes the connection.
func (st *Store) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return st.CloseContext(ctx)
}

// CloseContext is Close with the last snapshot bounded by ctx (a shutdown's
// deadline): one cut short leaves the previous snapshot in place, and the
// next start reads more of the log.
func (st *Store) CloseContext(ctx context.Context) error {
	if st.cancel == nil {
		return nil
	}
	st.cancel()
	st.wg.Wait()
	st.cancel = nil
	// A last snapshot, so the next start has nothing to re-read.
	err := st.Snapshot(ctx)
	st.snapMu.Lock()
	if st.snap != nil {
		st.snap.f.Close()
		st.snap = nil
	}
	st.snapMu.Unlock()
	st.mu.Lock()
	spills := st.spills
	st.spills, st.spill = nil, nil
	st.mu.Unlock()
	removeFiles(spills)
	if st.opts.Search != nil {
		err = errors.Join(err, st.opts.Search.Close())
	}
	return err
}

func (st *Store) follow(ctx context.Context) {
	ctx = session.WithFollowRetries(ctx, st.followRetry)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		from := st.Applied() + 1
		err := st.feed.Follow(ctx, from, st.apply)
		if ctx.Err() != nil {
			return
		}
		st.stats.followError.Store(fmt.Sprint(err))
		st.log.Warn("following the log failed; retrying", "from", from, "err", err)
		if !session.Sleep(ctx, &backoff, 5*time.Second) {
			return
		}
	}
}

// followRetry records why the feed's Follow retries without having
// delivered anything (session.WithFollowRetries): the last follow error in
// /v1/status, and a warning on the first such retry since the Store last
// applied a record, then one every retryLogEvery while it still applies
// nothing. Follow retries by itself and returns only at the end: without
// this, a Store that applied nothing for a minute after a takeover said
// nothing of why (TestKillStreamLeader over 4 shards). Called from the
// follow goroutine only, which alone touches retryApplied and retryLogged.
func (st *Store) followRetry(err error) {
	st.stats.followError.Store(err.Error())
	applied, now := st.Applied(), st.opts.Now()
	if applied == st.retryApplied && !st.retryLogged.IsZero() && now.Sub(st.retryLogged) < retryLogEvery {
		return
	}
	st.retryApplied, st.retryLogged = applied, now
	st.log.Warn("following the log: nothing read; retrying", "applied", applied, "err", err)
}

// retryLogEvery is how often followRetry repeats its warning while the
// Store applies nothing.
const retryLogEvery = 10 * time.Second

// watchLag polls the log's last sequence so readiness and lag metrics know
// how far behind the Store is.
func (st *Store) watchLag(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		// A bounded poll: one sent as a leader dies would otherwise wait out
		// the API timeout, freezing what the Store believes is the log's end.
		start := st.opts.Now()
		pctx, cancel := context.WithTimeout(ctx, pollTimeout)
		last, err := st.feed.LastSeq(pctx)
		cancel()
		// An answer read after the poll's bound is no news of the log's end
		// now: a process paused with the poll in flight (SIGSTOP, a stalled
		// VM) reads it on waking, seconds old, and taking it for the end as
		// of now made a Store that slept through seconds of writes read as
		// current (Pi-Lag 0, not stale: the Jepsen suite's honest-lag).
		if err == nil && st.opts.Now().Sub(start) <= pollTimeout {
			st.stats.logLastSeq.Store(last)
			st.stats.polledAt.Store(st.opts.Now().UnixNano()) // after: see caughtUpLocked
			st.noteFirstEnd(last)
			if !st.compacting.Load() { // a Store that caught up before it knew
				st.mu.Lock()
				st.compactAfterRebuildLocked()
				st.mu.Unlock()
			}
			st.mu.RLock()
			st.caughtUpLocked()
			st.mu.RUnlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pollTimeout bounds a poll of the log's end, and how old its answer may
// be when read.
const pollTimeout = time.Second

// caughtUpLocked records when the Store was last caught up: if it has
// applied everything it knows the log to hold, it is current as of the
// moment the last poll of the log's end was answered — not now. While
// polls fail (an election, a leader that lost its lease, a partition) the
// records the Store applies meanwhile are no news of the log's end, and a
// read must not look fresh for them (Pi-Stale, /readyz). The answer's time,
// not the request's: the end it names is at most the poll's duration old
// (pollTimeout at most: watchLag drops a later answer), and a loaded machine's slow polls would
// otherwise age every Store past Pi-Stale's second. Under st.mu.
func (st *Store) caughtUpLocked() {
	// polledAt before logLastSeq, which is stored before it: a poll time
	// read with an older end would say the Store was current later than
	// it was; the other way round it errs early.
	at := st.stats.polledAt.Load()
	if at == 0 || st.applied < st.known() {
		return
	}
	for {
		cur := st.stats.caughtUpAt.Load()
		if at <= cur || st.stats.caughtUpAt.CompareAndSwap(cur, at) {
			return
		}
	}
}

// Applied returns the last log sequence applied.
func (st *Store) Applied() uint64 {
	st.mu.RLock()
	defer st.mu.RUnlock()
	return st.applied
}

// WaitFor blocks until the Store has applied seq, ctx ends (ErrTimeout), or
// the Store is closed.
func (st *Store) WaitFor(ctx context.Context, seq uint64) error {
	if st.unheld {
		return nil // its reads are the log's: nothing to wait for
	}
	for {
		st.mu.RLock()
		applied, ch := st.applied, st.progress
		st.mu.RUnlock()
		if applied >= seq {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%w: waiting for sequence %d, applied %d (%d behind)", wire.ErrTimeout, seq, applied, shard.Raw(seq)-shard.Raw(applied))
		}
	}
}

// WaitForEntry waits until the Store holds entry id of session sid, or ctx
// ends, and reports whether it does. A node asked to append under a parent
// that another node acknowledged a moment ago has usually not applied it
// yet, and will within a millisecond or so: waiting for it is cheaper than
// reading the session from the stream leader. An evicted session counts
// as not holding it (the caller reads the log as before).
func (st *Store) WaitForEntry(ctx context.Context, sid, id string) bool {
	if st.unheld {
		return false // it will never hold it: read the log now
	}
	for {
		st.mu.RLock()
		d, ch := st.docs[sid], st.progress
		has := d != nil && d.Tree != nil && d.Tree.Has(id)
		evicted := d != nil && d.Tree == nil
		st.mu.RUnlock()
		if has || evicted {
			return has
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// CatchUp waits until the Store has applied everything the log held when it
// was called, so that this node's reads reflect a write it made without a
// sequence to wait for (an archive pass's purges).
func (st *Store) CatchUp(ctx context.Context) error {
	if st.unheld {
		return nil
	}
	last, err := st.feed.LastSeq(ctx)
	if err != nil {
		return err
	}
	return st.WaitFor(ctx, last)
}

// apply folds records from the log into the sessions. It never fails: a
// record that is not a valid line is counted and skipped, as pi skips it.
func (st *Store) apply(recs []session.Stored) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	for i := range recs {
		st.applyOne(&recs[i])
		st.applied = max(st.applied, recs[i].Seq)
	}
	st.stats.applied.Add(uint64(len(recs)))
	st.caughtUpLocked()
	st.compactAfterRebuildLocked()
	close(st.progress)
	st.progress = make(chan struct{})
	st.evictLocked()
	return nil
}

func (st *Store) applyOne(r *session.Stored) {
	if r.Session == session.PurgeToken {
		st.applyPurge(r)
		return
	}
	if p := st.pending[r.Session]; p != nil {
		st.applyPending(p, r)
		return
	}
	d := st.docs[r.Session]
	if r.IsHeader() {
		if d != nil {
			return // a repeated header: ignored, as pi does
		}
		h, err := tree.ParseHeader(st.line(r))
		if err != nil {
			st.skip(r, err)
			return
		}
		if r.Total > 1 {
			st.startPending(r, h)
			return
		}
		d = newDoc(r, h)
		st.docs[r.Session] = d
		st.touch(d)
		if r.Fork != nil {
			st.materializeLocked(d, r)
		}
		if d.Tree != nil {
			st.held += int64(d.Tree.Bytes())
		}
		return
	}
	if r.IsMarker() {
		// An abandonment marker only ever follows an incomplete session;
		// one that is not pending here is not an entry either. Inherited
		// lines are the path a fork holds already, or reads back with
		// them (session.BuildFrom).
		return
	}
	if d == nil {
		st.skip(r, errors.New("entry of a session without a header"))
		return
	}
	st.applyEntry(d, r)
}

// materializeLocked gives d, a fork by reference whose header r is, the
// path it inherits: from its parent's tree when this Store holds it loaded
// (the path's lines are the parent's, shared), else from the log, in the
// background. Meanwhile d waits as an evicted session without a snapshot
// block, which a read reloads from the log at once.
func (st *Store) materializeLocked(d *Doc, r *session.Stored) {
	h := d.Tree.Header
	d.forkDepth = r.Fork.Depth
	if p := st.docs[r.Fork.Session]; p != nil && p.Tree != nil {
		t, seqs, err := session.ForkPath(p.Tree, p.Seqs, r.Fork, h)
		if err == nil {
			d.Tree, d.Seqs, d.Entries = t, session.PathSeqs(seqs, r.Seq), t.Len()
			for i := range t.Len() {
				d.noteTime(t.Entry(i))
			}
			return
		}
		st.log.Warn("a fork's parent does not hold its fork point; reading the fork from the log", "session", d.ID, "parent", r.Fork.Session, "err", err)
	}
	d.cwd, d.parentSession = h.Cwd, h.ParentSession
	d.Tree, d.Seqs, d.firstKnown = nil, nil, false
	if st.opts.Log == nil || st.ctx == nil {
		// Reads say the session cannot be reloaded here (ErrUnavailable).
		st.log.Warn("a fork's parent is not here and the Store has no log to read it from", "session", d.ID, "parent", r.Fork.Session)
		return
	}
	ctx, id := st.ctx, d.ID
	st.wg.Go(func() {
		if err := st.reload(ctx, id); err != nil && ctx.Err() == nil {
			st.log.Warn("reading a fork's path from the log failed; a read retries", "session", id, "err", err)
		}
	})
}

// line returns the record's line for the Store to keep. The record's Data
// is a slice of the NATS message, whose headers (about as long as a short
// entry) a session would keep alive for as long as it is held: a copy of
// exactly the line, except during the rebuild without a memory budget,
// whose lines the compaction moves anyway (a copy per record was a tenth
// of the rebuild's CPU, with its garbage collection). With a budget, a
// line's memory must be what eviction counts.
func (st *Store) line(r *session.Stored) []byte {
	if st.compacting.Load() || st.opts.MemoryBudget > 0 {
		return bytes.Clone(r.Data)
	}
	return r.Data
}

// applyEntry applies an entry record to d.
func (st *Store) applyEntry(d *Doc, r *session.Stored) {
	if r.Seq <= d.LastSeq {
		return // already there (reloaded from the log after an eviction)
	}
	e, err := tree.ParseEntry(st.line(r))
	if err != nil {
		st.skip(r, err)
		return
	}
	d.LastSeq, d.Modified = r.Seq, r.Time
	d.noteTime(&e)
	d.Entries++
	if d.Tree == nil {
		d.noteEvicted(&e)
		if d.base != nil {
			d.tail = append(d.tail, session.Stored{Session: r.Session, Seq: r.Seq, Time: r.Time, Record: session.Record{Type: r.Type, ID: r.ID, Parent: r.Parent, Data: e.Raw}})
		}
		return
	}
	d.Tree.Append(e)
	d.Seqs = appendSeq(d.Seqs, r.Seq)
	st.held += int64(len(r.Data))
}

// noteEvicted keeps an evicted session's name and labels current.
func (d *Doc) noteEvicted(e *tree.Entry) {
	if d.firstKnown && d.first == nil {
		if p, ok := e.UserPreview(); ok {
			d.first = &p
		}
	}
	switch e.Kind {
	case tree.KindSessionInfo:
		d.name, d.hasName = e.SessionName()
	case tree.KindLabel:
		if target, label, set, ok := e.LabelChange(); ok {
			if set {
				if d.labels == nil {
					d.labels = make(map[string]string)
				}
				d.labels[target] = label
			} else {
				delete(d.labels, target)
			}
		}
	}
}

// appendSeq grows by 1.25x, not 2x: see tree's appendEntry.
func appendSeq(s []uint64, v uint64) []uint64 {
	if len(s) == cap(s) {
		grown := make([]uint64, len(s), len(s)+len(s)/4+4)
		copy(grown, s)
		s = grown
	}
	return append(s, v)
}

func (st *Store) skip(r *session.Stored, err error) {
	st.stats.skipped.Add(1)
	st.log.Warn("skipping a record that is not a session line", "session", r.Session, "seq", r.Seq, "err", err)
}

// parseCreated reads the header timestamp, falling back to the log's time.
// newDoc is the Doc of a session whose header r is.
func newDoc(r *session.Stored, h tree.Header) *Doc {
	created := parseCreated(h.Timestamp, r.Time)
	return &Doc{ID: r.Session, Tree: tree.NewSession(h), HeaderSeq: r.Seq, LastSeq: r.Seq, Modified: r.Time, Created: created, LastEntry: created}
}

// noteTime moves LastEntry to e's timestamp if it is later (entries of
// several writers need not come in the order of their clocks).
func (d *Doc) noteTime(e *tree.Entry) {
	if ms, ok := e.TimeMillis(); ok {
		if t := time.UnixMilli(ms); t.After(d.LastEntry) {
			d.LastEntry = t
		}
	}
}

// timesFromTree sets an unknown LastEntry from the tree (a session read
// back that was restored from a snapshot without it).
func (d *Doc) timesFromTree() {
	if !d.LastEntry.IsZero() {
		return
	}
	d.LastEntry = d.Created
	for i := range d.Tree.Len() {
		d.noteTime(d.Tree.Entry(i))
	}
}

func parseCreated(ts string, fallback time.Time) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
		return t
	}
	return fallback
}
