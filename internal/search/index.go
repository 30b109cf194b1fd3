package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Index is the full-text index of one log (one shard's stream): derived
// state like the Store, rebuilt from the log and never written by
// clients. Run follows the log from where the index left off: each group
// of records is one bleve batch that also records the sequence it reaches
// (and the cwd of the sessions it begins), so that what is on disk is
// always the index of a prefix of the log — after kill -9 too — and a
// restart indexes only the tail. Records are indexed under the id
// session/entry, so indexing one twice replaces it.
type Index struct {
	dir string // "" in memory
	idx bleve.Index
	log *slog.Logger

	mu       sync.Mutex
	applied  uint64 // the last sequence indexed
	firstEnd uint64 // the log's end as first learned by Run (0: not yet)
	ident    string // the log's identity the index was built from
	progress chan struct{}
	err      string // the last failure of Run, while it retries
	cwds     map[string]string

	lockf *os.File // dir.lock, held while the Index is open (lock)

	// resets carries FeedReset's requests to the goroutine that applies;
	// mustReset (that goroutine's) is one it could not carry out yet.
	resets    chan chan struct{}
	mustReset bool

	cwdSource atomic.Pointer[func(sid string) (string, bool)] // SetCwdSource
}

// Internal keys, in the same batches as the documents.
const (
	keySeq     = "seq"     // the last sequence indexed
	keyIdent   = "ident"   // the identity of the log (session.Identifier)
	keyMapping = "mapping" // mappingVersion
	keyCwd     = "cwd/"    // + session id: {"seq": header sequence}
)

// cwdRecord is what the index keeps of a session's header: its sequence
// (a purge at or above it removes the session's documents). Not the cwd
// itself: see cwdOf.
type cwdRecord struct {
	Seq uint64 `json:"seq"`
}

// Open returns the index in dir (dir "" keeps it in memory). It opens
// it if it can at once; an index another process's or a closing Store's
// index still holds is opened by Run when it is free. An index of another
// mapping version, or one that cannot be read, is removed and built again
// from the log.
func Open(dir string, logger *slog.Logger) (*Index, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	x := &Index{dir: dir, log: logger, progress: make(chan struct{}), cwds: map[string]string{}, resets: make(chan chan struct{})}
	if dir == "" {
		m, err := newMapping()
		if err != nil {
			return nil, err
		}
		idx, err := newMemIndex(m)
		if err != nil {
			return nil, err
		}
		x.setIndex(idx)
		return x, nil
	}
	if err := x.open(100 * time.Millisecond); err != nil && !errors.Is(err, bolterrors.ErrTimeout) {
		return nil, err
	}
	return x, nil
}

// open opens or creates the index on disk, waiting at most wait for
// another holder of it to let go (its lock file, then bolt's lock).
func (x *Index) open(wait time.Duration) error {
	if err := x.lock(wait); err != nil {
		return err
	}
	cfg := map[string]any{"bolt_timeout": wait.String()}
	if _, err := os.Stat(path.Join(x.dir, "index_meta.json")); err == nil {
		idx, err := bleve.OpenUsing(x.dir, cfg)
		switch {
		case errors.Is(err, bolterrors.ErrTimeout):
			return err
		case err != nil:
			x.log.Warn("search index unreadable: rebuilding it from the log", "dir", x.dir, "err", err)
		default:
			v, _ := idx.GetInternal([]byte(keyMapping))
			if string(v) == mappingVersion {
				if err := x.load(idx); err != nil {
					_ = idx.Close()
					return err
				}
				x.setIndex(idx)
				return nil
			}
			x.log.Info("search index of another version: rebuilding it from the log", "dir", x.dir, "version", string(v))
			_ = idx.Close()
		}
		if err := os.RemoveAll(x.dir); err != nil {
			return err
		}
	}
	m, err := newMapping()
	if err != nil {
		return err
	}
	idx, err := bleve.NewUsing(x.dir, m, bleve.Config.DefaultIndexType, bleve.Config.DefaultKVStore, cfg)
	if err != nil {
		return fmt.Errorf("search index %s: %w", x.dir, err)
	}
	if err := idx.SetInternal([]byte(keyMapping), []byte(mappingVersion)); err != nil {
		_ = idx.Close()
		return err
	}
	x.setIndex(idx)
	return nil
}

// lock takes the index directory's lock file, beside it (dir.lock), for
// as long as this Index lives, waiting at most wait for another holder to
// let go. bolt's own lock is on a file inside the directory, which a reset
// removes and creates again: another process (two nodes given one data
// dir) waiting on the removed file's lock would then open the new index
// too, and two writers of one index crash scorch.
func (x *Index) lock(wait time.Duration) error {
	if x.lockf != nil {
		return nil
	}
	if err := os.MkdirAll(path.Dir(x.dir), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(x.dir+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(wait)
	for !lockFile(f) {
		if time.Now().After(deadline) {
			_ = f.Close()
			return fmt.Errorf("search index %s: in use by another index (another process on the same data dir?): %w", x.dir, bolterrors.ErrTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	x.lockf = f
	return nil
}

// newMemIndex is an index in memory: scorch, as on disk (bleve's
// NewMemOnly is another engine, upsidedown, which ranks ties otherwise).
func newMemIndex(m *mapping.IndexMappingImpl) (bleve.Index, error) {
	return bleve.NewUsing("", m, scorch.Name, scorch.Name, nil)
}

// setIndex makes idx the index searches read.
func (x *Index) setIndex(idx bleve.Index) {
	x.mu.Lock()
	x.idx = idx
	x.mu.Unlock()
}

// index is the open index, or nil while Run has yet to open it.
func (x *Index) index() bleve.Index {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.idx
}

// load reads where a reopened index left off.
func (x *Index) load(idx bleve.Index) error {
	v, err := idx.GetInternal([]byte(keySeq))
	if err != nil {
		return err
	}
	var applied uint64
	if len(v) > 0 {
		if applied, err = strconv.ParseUint(string(v), 10, 64); err != nil {
			return fmt.Errorf("search index %s: bad sequence %q", x.dir, v)
		}
	}
	id, err := idx.GetInternal([]byte(keyIdent))
	if err != nil {
		return err
	}
	x.mu.Lock()
	x.applied, x.ident = applied, string(id)
	x.mu.Unlock()
	return nil
}

// Close closes the index; Run must have returned.
func (x *Index) Close() error {
	var err error
	if idx := x.index(); idx != nil {
		err = idx.Close()
	}
	if x.lockf != nil {
		err = errors.Join(err, x.lockf.Close()) // and with it the lock
		x.lockf = nil
	}
	return err
}

// Applied is the last sequence indexed.
func (x *Index) Applied() uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.applied
}

// CaughtUp reports whether the index has reached the log's end as Run
// first learned it: until then it misses what the log held before.
func (x *Index) CaughtUp() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.firstEnd > 0 && x.applied >= x.firstEnd-1
}

// WaitFor waits until the index has indexed seq (and, first, caught up
// with the log as Run found it).
func (x *Index) WaitFor(ctx context.Context, seq uint64) error {
	for {
		x.mu.Lock()
		ok := x.firstEnd > 0 && x.applied >= x.firstEnd-1 && x.applied >= seq
		ch, why := x.progress, x.err
		x.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			if why != "" {
				return fmt.Errorf("the search index failed to follow the log (%s): %w", why, wire.ErrUnavailable)
			}
			return fmt.Errorf("the search index has not reached sequence %d (it is at %d): %w", max(seq, x.firstEndSeq()), x.Applied(), wire.ErrUnavailable)
		}
	}
}

func (x *Index) firstEndSeq() uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.firstEnd - min(x.firstEnd, 1)
}

// advanced moves applied to seq and wakes the waiters.
func (x *Index) advanced(seq uint64) {
	x.mu.Lock()
	x.applied, x.err = seq, ""
	close(x.progress)
	x.progress = make(chan struct{})
	x.mu.Unlock()
}

// Run follows feed from where the index left off and indexes what it
// gains, until ctx ends. It retries on failure, as the Store does.
func (x *Index) Run(ctx context.Context, feed session.Feed) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		var err error
		if x.index() == nil {
			// Held a moment ago by the Store of this shard that is
			// closing (a shard handed back and taken again).
			err = x.open(5 * time.Second)
		}
		if err == nil {
			err = x.run(ctx, feed)
		}
		if ctx.Err() != nil {
			return
		}
		x.mu.Lock()
		x.err = err.Error()
		x.mu.Unlock()
		x.log.Warn("search index: following the log failed; retrying", "err", err)
		if !session.Sleep(ctx, &backoff, 5*time.Second) {
			return
		}
	}
}

// maxBatch bounds the records of one bleve batch.
const maxBatch = 4096

// groupWindow is how long a batch gathers after its first records, and
// maxGather how long when more arrive meanwhile: a few ms of a search's
// wait for the node's own write, against a batch (and its fsyncs) per
// appended record. Under a steady stream of appends a batch gathers
// maxGather: at a fixed 10 ms
// its segments were small enough that the work growing with their number
// (zapx's realloc, merges) made the index cost a node about 15% more CPU
// per append (docs/BENCHMARKS.md, the production shape).
const (
	groupWindow = 10 * time.Millisecond
	maxGather   = 50 * time.Millisecond
)

// FeedReset empties the index for a feed that starts over on another
// history (region.Feed's View: the region's stream switched to one that
// holds other records at the sequences indexed). The feed calls it between
// two deliveries, from inside Follow; it returns once what was delivered
// before is dropped and the index is empty (or, if emptying failed, once
// Run is bound to empty it before it follows again).
func (x *Index) FeedReset() {
	done := make(chan struct{})
	x.resets <- done
	<-done
}

func (x *Index) run(ctx context.Context, feed session.Feed) error {
	if x.mustReset {
		if err := x.reset(); err != nil {
			return err
		}
		x.mustReset = false
	}
	if idf, ok := feed.(session.Identifier); ok {
		id, err := idf.Identity(ctx)
		if err != nil {
			return err
		}
		if id != x.ident && (x.applied > 0 || x.ident != "") {
			// Another log (a stream deleted and created again): its
			// sequences say nothing of this index.
			x.log.Info("search index: the log changed identity; rebuilding the index", "was", x.ident, "now", id)
			if err := x.reset(); err != nil {
				return err
			}
		}
		x.ident = id
	}
	x.mu.Lock()
	learned := x.firstEnd > 0
	x.mu.Unlock()
	if !learned {
		end, err := feed.LastSeq(ctx)
		if err != nil {
			return err
		}
		x.mu.Lock()
		x.firstEnd = end + 1
		close(x.progress)
		x.progress = make(chan struct{})
		x.mu.Unlock()
	}
	recs := make(chan []session.Stored, 64)
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ferr := make(chan error, 1)
	go func() {
		ferr <- feed.Follow(fctx, x.Applied()+1, func(rs []session.Stored) error {
			select {
			case recs <- rs:
				return nil
			case <-fctx.Done():
				return fctx.Err()
			}
		})
		close(recs)
	}()
	// stop ends the follow: what is still queued is dropped, a reset
	// asked meanwhile left to the next run.
	stop := func(err error) error {
		cancel()
		for {
			select {
			case _, ok := <-recs:
				if !ok {
					<-ferr
					return err
				}
			case done := <-x.resets:
				x.mustReset = true
				close(done)
			}
		}
	}
	for {
		var rs []session.Stored
		select {
		case r, ok := <-recs:
			if !ok {
				return <-ferr
			}
			rs = r
		case done := <-x.resets:
			// What is queued is of the history the feed left: dropped
			// (the feed waits in FeedReset, so nothing more comes).
			for queued := true; queued; {
				select {
				case _, ok := <-recs:
					queued = ok
				default:
					queued = false
				}
			}
			err := x.reset()
			if err != nil {
				x.mustReset = true
			}
			close(done)
			if err != nil {
				return stop(err)
			}
			continue
		}
		// Take what else arrives within a moment: one batch (one fsync
		// of the segment and one of bolt) for all of it. Appends come one
		// record at a time; the node and JetStream fsync too. When more
		// come within groupWindow, the batch gathers maxGather in all
		// (see groupWindow).
		first, busy := time.Now(), false
		gather := time.NewTimer(groupWindow)
		for more := true; more && len(rs) < maxBatch; {
			select {
			case r, ok := <-recs:
				if !ok {
					more = false
					break
				}
				rs = append(rs, r...)
				if !busy {
					busy = true
					if !gather.Stop() {
						<-gather.C
					}
					gather.Reset(maxGather - time.Since(first))
				}
			case <-gather.C:
				more = false
			}
		}
		gather.Stop()
		erased, err := x.apply(rs)
		if err != nil {
			return stop(err)
		}
		if erased {
			x.mergeErased(ctx)
		}
	}
}

// mergeErased merges the index on disk into one segment after an
// erasure: a deleted document stays in its segment's files (its terms in
// the dictionary, its stored fields) until a merge rewrites the segment,
// and an erased session must leave no bytes behind (docs/SECURITY.md,
// "Erasure"). Indexing waits meanwhile; erasures are rare. An index in
// memory has no files.
func (x *Index) mergeErased(ctx context.Context) {
	if x.dir == "" {
		return
	}
	adv, err := x.idx.Advanced()
	if err != nil {
		x.log.Warn("search index: merge after an erasure", "err", err)
		return
	}
	sc, ok := adv.(*scorch.Scorch)
	if !ok {
		return
	}
	// The planner leaves a lone segment alone, deleted documents and all
	// (and after the first merge there is one): a document in a batch of
	// its own makes a second one to merge with. It has no text, and goes
	// again after the merge.
	b := x.idx.NewBatch()
	err = b.Index(anchorID, map[string]any{fType: "anchor"})
	if err == nil {
		err = x.idx.Batch(b)
	}
	if err == nil {
		err = sc.ForceMerge(ctx, &mergeplan.SingleSegmentMergePlanOptions)
	}
	if err == nil {
		b = x.idx.NewBatch()
		b.Delete(anchorID)
		err = x.idx.Batch(b)
	}
	if err != nil && ctx.Err() == nil {
		x.log.Warn("search index: merge after an erasure", "err", err)
	}
}

// anchorID is the document mergeErased adds and removes.
const anchorID = "\x00anchor"

// reset empties the index (a log of another history).
func (x *Index) reset() error {
	m, err := newMapping()
	if err != nil {
		return err
	}
	// Closed once: a reset that fails below leaves no index, and Run
	// opens the directory again (another process sharing the data dir
	// may hold it: a closed index closed again panics in scorch).
	if old := x.index(); old != nil {
		x.setIndex(nil)
		_ = old.Close()
	}
	var idx bleve.Index
	if x.dir == "" {
		idx, err = newMemIndex(m)
	} else {
		if err = os.RemoveAll(x.dir); err != nil {
			return err
		}
		idx, err = bleve.New(x.dir, m)
	}
	if err != nil {
		return err
	}
	x.setIndex(idx)
	x.cwds = map[string]string{}
	x.advanced(0)
	return idx.SetInternal([]byte(keyMapping), []byte(mappingVersion))
}

// apply indexes rs as one batch, with the sequence it reaches; erased
// reports an erasure notice among them.
func (x *Index) apply(rs []session.Stored) (erased bool, err error) {
	b := x.idx.NewBatch()
	last := x.Applied()
	for i := range rs {
		r := &rs[i]
		if r.Seq <= last {
			continue // already indexed (a feed restarted below)
		}
		last = r.Seq
		if r.Session == session.PurgeToken {
			e, err := x.purge(b, r)
			if err != nil {
				return false, err
			}
			erased = erased || e
			continue
		}
		if r.IsHeader() {
			var h struct {
				Cwd string `json:"cwd"`
			}
			_ = json.Unmarshal(r.Data, &h)
			cwd := cleanCwd(h.Cwd)
			x.cwds[r.Session] = cwd
			v, _ := json.Marshal(cwdRecord{Seq: r.Seq})
			b.SetInternal([]byte(keyCwd+r.Session), v)
			continue
		}
		lines := [][]byte{r.Data}
		switch {
		case r.IsInherit():
			// A fork's path, written into it before its parent went: its
			// entries are the fork's from now on (while the parent lives,
			// they are found under the parent).
			lines = session.InheritLines(r.Record)
		case r.IsMarker():
			continue
		}
		for _, line := range lines {
			d, ok := Extract(line)
			if !ok {
				continue
			}
			cwd, err := x.cwdOf(r.Session)
			if err != nil {
				return false, err
			}
			if err := b.Index(DocID(r.Session, d.Entry), fields(&d, r.Session, cwd)); err != nil {
				return false, fmt.Errorf("index entry %s of session %s (seq %d): %w", d.Entry, r.Session, r.Seq, err)
			}
		}
	}
	if last == x.Applied() {
		return erased, nil
	}
	b.SetInternal([]byte(keySeq), []byte(strconv.FormatUint(last, 10)))
	if x.ident != "" {
		b.SetInternal([]byte(keyIdent), []byte(x.ident))
	}
	if err := x.idx.Batch(b); err != nil {
		return false, err
	}
	x.advanced(last)
	return erased, nil
}

// cleanCwd is a cwd as the index holds it: cleaned when absolute (the
// Store's CwdUnder cleans it too), as it is otherwise.
func cleanCwd(cwd string) string {
	if len(cwd) > 0 && cwd[0] == '/' {
		return path.Clean(cwd)
	}
	return cwd
}

// cwdDirs is what the index holds of a cwd (cleanCwd's): the directory
// and each above it, so that cwd:DIR and a tenant's confinement are one
// term, not a term and a prefix of the cwds under it. A relative cwd is
// under no directory.
func cwdDirs(cwd string) []string {
	if len(cwd) == 0 || cwd[0] != '/' {
		return nil
	}
	out := []string{cwd}
	for cwd != "/" {
		cwd = path.Dir(cwd)
		out = append(out, cwd)
	}
	return out
}

// cwdOf is the cwd of a session whose header the index has seen: from
// memory, or after a restart from the source SetCwdSource gave (the
// Store's catalog). The index's own files keep no cwd: an erased session's
// would outlive it in the free pages of root.bolt. A session neither
// knows is indexed under no directory (its purge notice is on its way).
func (x *Index) cwdOf(sid string) (string, error) {
	if c, ok := x.cwds[sid]; ok {
		return c, nil
	}
	var c string
	if src := x.cwdSource.Load(); src != nil {
		if cwd, ok := (*src)(sid); ok {
			c = cleanCwd(cwd)
		}
	}
	x.cwds[sid] = c
	return c, nil
}

// SetCwdSource gives the index the cwds of the sessions whose headers it
// applied before a restart (a Store's: Store.Open sets it).
func (x *Index) SetCwdSource(src func(sid string) (string, bool)) { x.cwdSource.Store(&src) }

// purge removes a purged session's documents: what an archived or erased
// session leaves behind; erased reports an erasure's notice.
func (x *Index) purge(b *bleve.Batch, r *session.Stored) (erased bool, err error) {
	n, ok := session.ParseNotice(r.Data)
	if !ok {
		return false, nil
	}
	v, err := x.idx.GetInternal([]byte(keyCwd + n.Session))
	if err != nil {
		return false, err
	}
	var c cwdRecord
	if len(v) > 0 && json.Unmarshal(v, &c) == nil && c.Seq > n.UpTo {
		return false, nil // created again after the purge: the documents are the new session's
	}
	// Documents of the session still in this batch go too.
	if err := x.idx.Batch(b); err != nil {
		return false, err
	}
	b.Reset()
	for {
		q := query.NewTermQuery(n.Session)
		q.SetField(fSession)
		req := bleve.NewSearchRequestOptions(q, 10000, 0, false)
		res, err := x.idx.Search(req)
		if err != nil {
			return false, err
		}
		if len(res.Hits) == 0 {
			break
		}
		del := x.idx.NewBatch()
		for _, h := range res.Hits {
			del.Delete(h.ID)
		}
		if err := x.idx.Batch(del); err != nil {
			return false, err
		}
	}
	delete(x.cwds, n.Session)
	b.DeleteInternal([]byte(keyCwd + n.Session))
	return n.Erase, nil
}

// DocID is the index's id of an entry.
func DocID(sid, entry string) string { return sid + "/" + entry }

// fields is what the index holds of d.
func fields(d *Doc, sid, cwd string) map[string]any {
	f := map[string]any{fText: d.Text, fSession: sid, fType: d.Type}
	if dirs := cwdDirs(cwd); len(dirs) > 0 {
		f[fCwd] = dirs
	}
	if d.Role != "" {
		f[fRole] = d.Role
	}
	if len(d.Tools) > 0 {
		f[fTool] = d.Tools
	}
	if d.Model != "" {
		f[fModel] = d.Model
	}
	if t, err := time.Parse(time.RFC3339Nano, d.Timestamp); err == nil {
		f[fTimestamp] = timeKey(t)
	}
	return f
}

// Hit is one matching entry, as the index ranks it.
type Hit struct {
	Session, Entry string
	Score          float64
	id             string // DocID(Session, Entry), as the index gave it
}

// After is a position in a ranking: hits rank by score, best first, then
// by id.
type After struct {
	Score float64 `json:"s"`
	ID    string  `json:"i"`
}

// Less reports whether a ranks before b.
func (a After) Less(b After) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.ID < b.ID
}

// Key is h's position in the ranking.
func (h Hit) Key() After {
	if h.id == "" {
		h.id = DocID(h.Session, h.Entry)
	}
	return After{Score: h.Score, ID: h.id}
}

// Page is a part of a ranking: its hits, the number of hits of the whole
// query, and where it stopped when that is not at its last hit.
type Page struct {
	Hits  []Hit
	Total uint64
	// Cut is set when the page stopped short, neither full nor at the
	// ranking's end: it checked its budget of entries against their text
	// (CheckBudget). The next page goes on after Cut, not after the last
	// hit: what lies between was checked.
	Cut *After
}

// CheckBudget is how many entries one page checks against their text (a
// query with phrases) before it stops short: two common words whose
// phrase is rare must not read every entry that holds both in one request.
var CheckBudget = 4096

// Search returns up to size hits of q ranked after `after` (nil: from the
// first) and the total number of hits; r resolves name: and label: and
// gives the text phrases are checked against, cwdPrefix confines the
// search (a tenant's).
func (x *Index) Search(ctx context.Context, q *Query, r Resolver, cwdPrefix string, size int, after *After) (Page, error) {
	idx := x.index()
	if idx == nil {
		return Page{}, fmt.Errorf("the search index is not open yet: %w", wire.ErrUnavailable)
	}
	bq := q.bleveQuery(r, cwdPrefix)
	if !q.checked() {
		hits, total, err := x.rank(ctx, idx, bq, size, after)
		return Page{Hits: hits, Total: total}, err
	}
	// Phrases: the index finds the entries holding their words, and each,
	// in ranking order, is checked against its text until the page is
	// full. The total counts what the index found: more than the hits
	// when some hold the words but not in a row.
	var p Page
	checked := 0
	n := size + 1
	counted := false // p.Total
	if after == nil {
		// A first page checks the window it ranks by score in one pass
		// of bleve (rank): the next request ranks every candidate again
		// (two common words: 65,000 of a million entries) and, by
		// (score, id), reads the id of each, while the checks against
		// the text cost little.
		hits, total, more, err := x.window(ctx, idx, bq, max(size, firstWindow))
		if err != nil {
			return Page{}, err
		}
		if len(hits) > 0 || !more {
			p.Total, counted = total, true
			for i := range hits {
				if h := &hits[i]; x.check(ctx, q, r, h) {
					if p.Hits = append(p.Hits, *h); len(p.Hits) == size {
						return p, nil
					}
				}
			}
			if !more {
				return p, nil
			}
			k := hits[len(hits)-1].Key()
			after, checked = &k, len(hits)
			n = max(1, CheckBudget-checked)
		}
	}
	for {
		if checked >= CheckBudget {
			p.Cut = after
			return p, nil
		}
		hits, total, err := x.rank(ctx, idx, bq, n, after)
		if err != nil {
			return Page{}, err
		}
		if !counted {
			p.Total, counted = total, true
		}
		for i := range hits {
			h := &hits[i]
			k := h.Key()
			after = &k
			if x.check(ctx, q, r, h) {
				if p.Hits = append(p.Hits, *h); len(p.Hits) == size {
					return p, nil
				}
			}
			if checked++; checked == CheckBudget && (i+1 < len(hits) || len(hits) == n) {
				p.Cut = &k
				return p, nil
			}
		}
		if len(hits) < n {
			return p, nil
		}
		// The rest of the budget at once: each request ranks every
		// candidate again.
		n = max(1, CheckBudget-checked)
	}
}

// check reports whether h's text, as r has it now, satisfies q's phrases.
func (x *Index) check(ctx context.Context, q *Query, r Resolver, h *Hit) bool {
	text, ok := r.Text(ctx, h.Session, h.Entry)
	return ok && q.matchText(text)
}

// rank returns up to size hits of bq ranked after `after` (nil: from the
// first) and the number of hits.
func (x *Index) rank(ctx context.Context, idx bleve.Index, bq query.Query, size int, after *After) ([]Hit, uint64, error) {
	if after == nil {
		// The first page by score alone: ranking by id as well makes
		// bleve read the id of every hit (25 ms of a word in 130,000
		// entries of a million, against 9 ms). Ties are common (the same
		// label, equal short texts): a window of the best by score holds
		// the page whenever the tie at its end closes within the window;
		// otherwise the full ranking decides.
		hits, total, more, err := x.window(ctx, idx, bq, max(size, firstWindow-1))
		if err != nil {
			return nil, 0, err
		}
		if len(hits) >= size || !more {
			return hits[:min(size, len(hits))], total, nil
		}
	}
	var sa []string
	if after != nil {
		sa = []string{strconv.FormatFloat(after.Score, 'g', -1, 64), after.ID}
	}
	return x.search(ctx, idx, bq, size, []string{"-_score", "_id"}, sa)
}

// window returns the best hits of bq by score, up to n, in ranking order
// — each tie by id — and the number of hits; more reports whether any
// ranks after those returned. Asked by score alone, bleve cannot say how
// the tie at the window's end continues: its hits are left out (all n
// when the whole window is one tie).
func (x *Index) window(ctx context.Context, idx bleve.Index, bq query.Query, n int) (hits []Hit, total uint64, more bool, err error) {
	hits, total, err = x.search(ctx, idx, bq, n+1, []string{"-_score"}, nil)
	if err != nil {
		return nil, 0, false, err
	}
	if more = len(hits) > n; more {
		end := n
		for end > 0 && hits[end-1].Score == hits[n].Score {
			end--
		}
		hits = hits[:end]
	}
	// By score they are already: each tie by id.
	for i := 0; i < len(hits); {
		j := i + 1
		for j < len(hits) && hits[j].Score == hits[i].Score {
			j++
		}
		slices.SortFunc(hits[i:j], func(a, b Hit) int { return strings.Compare(a.Key().ID, b.Key().ID) })
		i = j
	}
	return hits, total, more, nil
}

// firstWindow is how many hits by score a first page looks at before it
// ranks them by (score, id) as well (a variable for the tests).
var firstWindow = 1024

func (x *Index) search(ctx context.Context, idx bleve.Index, bq query.Query, size int, sort, after []string) ([]Hit, uint64, error) {
	req := bleve.NewSearchRequestOptions(bq, size, 0, false)
	req.SortBy(sort)
	req.SearchAfter = after
	res, err := idx.SearchInContext(ctx, req)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, 0, err
		}
		return nil, 0, fmt.Errorf("search: %w", err)
	}
	hits := make([]Hit, 0, len(res.Hits))
	for _, h := range res.Hits {
		sid, entry, ok := cutID(h.ID)
		if !ok {
			continue
		}
		hits = append(hits, Hit{Session: sid, Entry: entry, Score: h.Score, id: h.ID})
	}
	return hits, res.Total, nil
}

func cutID(id string) (string, string, bool) {
	for i := len(id) - 1; i >= 0; i-- {
		if id[i] == '/' {
			return id[:i], id[i+1:], true
		}
	}
	return "", "", false
}
