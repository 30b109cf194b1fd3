package writer

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Options configure a Writer. The zero value is usable.
type Options struct {
	Now   func() time.Time // clock for entry timestamps; default time.Now
	Rand  io.Reader        // entry id source; default crypto/rand
	Retry RetryPolicy
	// Pi11 writes as pi 1.1.0's SessionManager: a new session (or fork) is
	// published at its first user or assistant message, not only at the
	// first assistant message (pi #10000: the prompt is kept when the
	// first turn never completes); a branch summary's fromId is the leaf
	// left behind, not the entry branched to; a session name's CR/LF runs
	// become one space (SessionInfo11); a fork re-chains its path over the
	// labels it drops (tree.Fork11); the header's cwd is resolved (pi's
	// resolvePath). The default is pi 0.73.1's, this store's documented
	// rule.
	Pi11 bool
}

// cwd is the header's cwd: as given, or with Pi11 resolved as pi 1.1's
// resolvePath resolves it ("/a//b/" is "/a/b"; a relative one against
// this process's directory, as pi's against its own).
func (o Options) cwd(cwd string) string {
	if !o.Pi11 || cwd == "" {
		return cwd
	}
	if abs, err := filepath.Abs(cwd); err == nil {
		return abs
	}
	return filepath.Clean(cwd)
}

func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// Writer appends to one session the way pi's SessionManager does, with the
// log as the file:
//
//   - Until the first assistant message exists nothing is published: entries
//     wait in memory, and a crash loses them, as in pi (no orphan questions).
//     The first assistant message publishes the header, every pending entry
//     and itself as ONE atomic batch that only succeeds on an empty subject.
//   - After that each append is one optimistic (CAS) publish after the last
//     sequence the Writer knows. If another writer appended meanwhile, the
//     Writer reads what it missed, takes a fresh id if its own was taken, and
//     tries again; the entry still lands as a child of the parent it was
//     given. Several entries at once go as one atomic batch.
//
// A Writer is safe for concurrent use; its appends are serialized (one CAS
// append in flight per session).
type Writer struct {
	log  session.Log
	opts Options
	ids  tree.IDGen

	mu      sync.Mutex
	s       *tree.Session
	seqs    []uint64 // per entry of s; 0 while pending (not yet published)
	lastSeq uint64   // the session's last sequence on the log that we know
	flushed bool     // the session exists on the log
	leaf    int      // index of the current leaf in s; -1 = null (before the first entry)
}

// CreateOptions describe a new session's header.
type CreateOptions struct {
	ID            string // default: a new UUIDv7
	Cwd           string
	ParentSession string
}

// Create starts a new session. Nothing is published until the first
// assistant message (see Writer).
func Create(log session.Log, c CreateOptions, opts Options) (*Writer, error) {
	id := c.ID
	if id == "" {
		u, err := uuid.NewV7()
		if err != nil {
			return nil, fmt.Errorf("new session id: %w", err)
		}
		id = u.String()
	}
	if err := session.ValidSessionID(id); err != nil {
		return nil, err
	}
	h := tree.NewHeader(id, tree.FormatTimestamp(opts.now()), opts.cwd(c.Cwd), c.ParentSession)
	return newWriter(log, tree.NewSession(h), opts), nil
}

func newWriter(log session.Log, s *tree.Session, opts Options) *Writer {
	return &Writer{log: log, opts: opts, ids: tree.IDGen{R: opts.Rand}, s: s, leaf: s.Len() - 1}
}

// Open resumes writing an existing session: it reads the whole session from
// the log; the leaf is pi's default, the last entry.
func Open(ctx context.Context, log session.Log, sessionID string, opts Options) (*Writer, error) {
	if err := session.ValidSessionID(sessionID); err != nil {
		return nil, err
	}
	recs, err := log.Read(ctx, sessionID, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", sessionID, err)
	}
	s, seqs, err := session.BuildFrom(ctx, log, recs)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", sessionID, err)
	}
	w := newWriter(log, s, opts)
	w.seqs, w.flushed, w.lastSeq = seqs, true, recs[len(recs)-1].Seq
	return w, nil
}

// ID returns the session id.
func (w *Writer) ID() string { return w.s.Header.ID }

// Header returns the session header.
func (w *Writer) Header() tree.Header { return w.s.Header }

// LastSeq returns the session's last stream sequence known to the writer
// (0 before the session exists on the log): its version.
func (w *Writer) LastSeq() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastSeq
}

// Flushed reports whether the session exists on the log.
func (w *Writer) Flushed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushed
}

// LeafID returns the current leaf ("" for null).
func (w *Writer) LeafID() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.leafID()
}

func (w *Writer) leafID() string {
	if w.leaf < 0 {
		return ""
	}
	return w.s.Entry(w.leaf).ID
}

// Seq returns the stream sequence of entry id (0 while pending).
func (w *Writer) Seq(id string) (uint64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	i, ok := w.s.Index(id)
	if !ok {
		return 0, false
	}
	return w.seqs[i], true
}

// View calls fn with the writer's session (stored and pending entries) under
// the writer's lock; fn must not keep s.
func (w *Writer) View(fn func(s *tree.Session, leaf int)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fn(w.s, w.leaf)
}

// Context builds pi's context for the current leaf.
func (w *Writer) Context() tree.Context {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.s.ContextAt(w.leaf)
}

// Branch moves the leaf to id; the next append becomes its child.
func (w *Writer) Branch(id string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	i, ok := w.s.Index(id)
	if !ok {
		return fmt.Errorf("branch: entry %q: %w", id, wire.ErrNotFound)
	}
	w.leaf = i
	return nil
}

// ResetLeaf moves the leaf before the first entry: the next append is a new root.
func (w *Writer) ResetLeaf() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.leaf = -1
}

// AppendMessage appends an AgentMessage as a child of the leaf and returns its id.
func (w *Writer) AppendMessage(ctx context.Context, message []byte) (string, error) {
	return w.one(ctx, Message(message))
}

// AppendModelChange appends a model change.
func (w *Writer) AppendModelChange(ctx context.Context, provider, modelID string) (string, error) {
	return w.one(ctx, ModelChange(provider, modelID))
}

// AppendThinkingLevelChange appends a thinking level change.
func (w *Writer) AppendThinkingLevelChange(ctx context.Context, level string) (string, error) {
	return w.one(ctx, ThinkingLevelChange(level))
}

// AppendCompaction appends a compaction.
func (w *Writer) AppendCompaction(ctx context.Context, summary, firstKeptEntryID string, tokensBefore float64, details []byte, fromHook *bool) (string, error) {
	return w.one(ctx, Compaction(summary, firstKeptEntryID, tokensBefore, details, fromHook))
}

// AppendCustomEntry appends extension state.
func (w *Writer) AppendCustomEntry(ctx context.Context, customType string, data []byte) (string, error) {
	return w.one(ctx, CustomEntry(customType, data))
}

// AppendCustomMessage appends an extension message that joins the context.
func (w *Writer) AppendCustomMessage(ctx context.Context, customType string, content []byte, display bool, details []byte) (string, error) {
	return w.one(ctx, CustomMessage(customType, content, display, details))
}

// AppendSessionInfo names the session.
func (w *Writer) AppendSessionInfo(ctx context.Context, name string) (string, error) {
	return w.one(ctx, SessionInfo(name))
}

// AppendLabel sets (nil: clears) the label of an existing entry.
func (w *Writer) AppendLabel(ctx context.Context, targetID string, label *string) (string, error) {
	w.mu.Lock()
	ok := w.s.Has(targetID)
	w.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("label: entry %q: %w", targetID, wire.ErrNotFound)
	}
	return w.one(ctx, Label(targetID, label))
}

// BranchWithSummary moves the leaf to fromID ("" = before the first entry)
// and appends a branch summary of the path left behind there.
func (w *Writer) BranchWithSummary(ctx context.Context, fromID, summary string, details []byte, fromHook *bool) (string, error) {
	return w.BranchWithSummaryUsage(ctx, fromID, summary, details, nil, fromHook)
}

// BranchWithSummaryUsage is BranchWithSummary with the usage (raw JSON,
// nil left out) of the call that wrote the summary, as pi 1.1 stores it.
// Its fromId is fromID ("root" for ""), or with Options.Pi11 the leaf
// left behind ("root" when there was none), as each pi version writes it.
func (w *Writer) BranchWithSummaryUsage(ctx context.Context, fromID, summary string, details, usage []byte, fromHook *bool) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	leaf, from := -1, "root"
	if fromID != "" {
		i, ok := w.s.Index(fromID)
		if !ok {
			return "", fmt.Errorf("branch: entry %q: %w", fromID, wire.ErrNotFound)
		}
		leaf, from = i, fromID
	}
	if w.opts.Pi11 {
		from = cmp.Or(w.leafID(), "root")
	}
	old := w.leaf
	w.leaf = leaf
	ids, err := w.append(ctx, []Spec{branchSummary(from, summary, details, usage, fromHook)})
	if err != nil {
		w.leaf = old
		return "", err
	}
	return ids[0], nil
}

func (w *Writer) one(ctx context.Context, s Spec) (string, error) {
	ids, err := w.Append(ctx, s)
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// Append appends specs as a chain (each the parent of the next, the first a
// child of the leaf) in one atomic write, and moves the leaf to the last.
// On error nothing was appended and the leaf is unchanged.
func (w *Writer) Append(ctx context.Context, specs ...Spec) ([]string, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.append(ctx, specs)
}

func (w *Writer) append(ctx context.Context, specs []Spec) ([]string, error) {
	entries, err := w.build(specs, nil)
	if err != nil {
		return nil, err
	}
	if !w.flushed {
		if !w.flushes(entries) {
			w.add(entries, nil) // pending: pi writes nothing yet
			return idsOf(entries), nil
		}
		return w.create(ctx, entries)
	}
	plan := &AppendPlan{Log: w.log, ID: w.ID(), Target: writerTarget{w}, Placer: &chain{w: w, specs: specs, prev: entries}}
	plan.entries = entries
	seqs, err := Publish(ctx, w.log, w.ID(), w.lastSeq, plan, w.opts.Retry)
	if err != nil {
		return nil, err
	}
	entries = plan.Entries()
	if _, done := plan.Done(); done { // found already stored and absorbed
		w.leaf, _ = w.s.Index(entries[len(entries)-1].ID)
		return idsOf(entries), nil
	}
	w.add(entries, seqs)
	return idsOf(entries), nil
}

// chain places a Writer's append: its specs as a chain from the Writer's
// leaf, keeping the ids of the last placement that are still free.
type chain struct {
	w     *Writer
	specs []Spec
	prev  []tree.Entry
}

func (c *chain) Place(v View, uncertain bool) ([]tree.Entry, []uint64, error) {
	if seqs, ok := storedAsIs(v, c.prev); ok && uncertain {
		return c.prev, seqs, nil
	}
	// Ids another writer took are drawn again.
	entries, err := c.w.build(c.specs, c.prev)
	if err != nil {
		return nil, nil, err
	}
	c.prev = entries
	return entries, nil, nil
}

// storedAsIs reports whether every entry is in v with the same bytes, and
// returns their sequences.
func storedAsIs(v View, entries []tree.Entry) ([]uint64, bool) {
	if len(entries) == 0 {
		return nil, false
	}
	seqs := make([]uint64, len(entries))
	for k := range entries {
		e, seq, ok := v.Lookup(entries[k].ID)
		if !ok || !bytes.Equal(e.Raw, entries[k].Raw) {
			return nil, false
		}
		seqs[k] = seq
	}
	return seqs, true
}

// writerTarget is a Writer's own copy of the session, as an append's Target.
type writerTarget struct{ w *Writer }

func (t writerTarget) With(_ context.Context, fn func(View) error) error { return fn(t) }
func (t writerTarget) Absorb(missed []session.Stored)                    { t.w.absorb(missed) }
func (t writerTarget) Leaf() string                                      { return t.w.leafID() }
func (t writerTarget) LastSeq() uint64                                   { return t.w.lastSeq }

func (t writerTarget) Lookup(id string) (*tree.Entry, uint64, bool) {
	i, ok := t.w.s.Index(id)
	if !ok {
		return nil, 0, false
	}
	return t.w.s.Entry(i), t.w.seqs[i], true
}

// build makes the entries for specs, chained from the current leaf, reusing
// the ids of prev (an earlier build) where they are still free.
func (w *Writer) build(specs []Spec, prev []tree.Entry) ([]tree.Entry, error) {
	entries := make([]tree.Entry, len(specs))
	parent := w.leafID()
	taken := func(id string) bool {
		if w.s.Has(id) {
			return true
		}
		for k := range entries {
			if entries[k].ID == id {
				return true
			}
		}
		return false
	}
	ts := tree.FormatTimestamp(w.opts.now())
	for k, spec := range specs {
		m := tree.Meta{ParentID: parent, Timestamp: ts}
		m.Checkpoint = w.checkpoint(&m, k)
		if prev != nil && !taken(prev[k].ID) {
			m.ID, m.Timestamp = prev[k].ID, prevTimestamp(&prev[k], ts)
		} else {
			m.ID = w.ids.New(taken)
		}
		e, err := spec(m)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", wire.ErrInvalid, err)
		}
		if e.Kind == tree.KindContextEdit {
			if e, err = w.contextEdit(e, entries[:k]); err != nil {
				return nil, wire.InvalidShape(fmt.Sprintf("entries[%d]", k), err)
			}
		}
		// Messages and custom content are the caller's raw JSON: pi's
		// shapes are checked here, before anything is published.
		if err := tree.CheckLine(e.Raw); err != nil {
			return nil, wire.InvalidShape(fmt.Sprintf("entries[%d]", k), err)
		}
		entries[k] = e
		parent = e.ID
	}
	return entries, nil
}

// checkpoint gives the system prompt in force where the k-th entry of a
// chain goes (pi 1.1's compaction checkpoint), stamped with its time. An
// entry after others of its chain gets the one at the chain's start: a
// chain rarely holds a system message before a compaction.
func (w *Writer) checkpoint(m *tree.Meta, k int) func() []byte {
	leaf := w.leaf
	return func() []byte {
		if i, ok := w.s.Index(m.ParentID); ok && k == 0 {
			leaf = i
		}
		ts, err := time.Parse(time.RFC3339Nano, m.Timestamp)
		if err != nil {
			return nil
		}
		return w.s.SystemMessageAt(leaf, ts.UnixMilli())
	}
}

// contextEdit checks an edit as pi 1.1's appendContextEdit does (its
// target is on the edit's branch and contributes model content; chain is
// the entries built before it in this append) and stores it as pi does.
func (w *Writer) contextEdit(e tree.Entry, chain []tree.Entry) (tree.Entry, error) {
	lookup := func(id string) *tree.Entry {
		for k := range chain {
			if chain[k].ID == id {
				return &chain[k]
			}
		}
		if i, ok := w.s.Index(id); ok {
			return w.s.Entry(i)
		}
		return nil
	}
	if err := tree.CheckEditTarget(e.EditTarget(), e.ParentID, lookup); err != nil {
		return e, err
	}
	return tree.ContextEditFor(e, lookup(e.EditTarget()))
}

// prevTimestamp keeps an entry's original timestamp when it is rebuilt.
func prevTimestamp(e *tree.Entry, fallback string) string {
	if ms, ok := e.TimeMillis(); ok {
		return tree.FormatTimestamp(time.UnixMilli(ms))
	}
	return fallback
}

// create publishes header + pending entries + entries as one atomic batch on
// an empty subject.
func (w *Writer) create(ctx context.Context, entries []tree.Entry) ([]string, error) {
	n := 1 + w.s.Len() + len(entries)
	if max := w.log.MaxBatch(); n > max {
		return nil, fmt.Errorf("%w: creating the session takes %d records (header and %d entries before the first assistant message) but one atomic batch holds at most %d; nothing was published",
			wire.ErrTooLarge, n, n-1, max)
	}
	recs := make([]session.Record, 0, n)
	recs = append(recs, session.HeaderRecord(&w.s.Header))
	for i := range w.s.Len() {
		recs = append(recs, session.RecordOf(w.s.Entry(i)))
	}
	for k := range entries {
		recs = append(recs, session.RecordOf(&entries[k]))
	}
	seqs, err := CreateRecords(ctx, w.log, w.ID(), recs, w.opts.Retry)
	if err != nil {
		return nil, err
	}
	for i := range w.seqs {
		w.seqs[i] = seqs[1+i]
	}
	w.flushed = true
	w.add(entries, seqs[1+len(w.seqs):])
	return idsOf(entries), nil
}

// add appends built entries to the local session and moves the leaf.
func (w *Writer) add(entries []tree.Entry, seqs []uint64) {
	for k := range entries {
		w.s.Append(entries[k])
		var seq uint64
		if seqs != nil {
			seq = seqs[k]
			w.lastSeq = max(w.lastSeq, seq)
		}
		w.seqs = append(w.seqs, seq)
	}
	w.leaf = w.s.Len() - 1
}

// absorb applies records another writer appended; the leaf stays.
func (w *Writer) absorb(missed []session.Stored) {
	for _, r := range missed {
		w.lastSeq = max(w.lastSeq, r.Seq)
		if r.IsHeader() || r.IsMarker() {
			continue
		}
		e, err := tree.ParseEntry(r.Data)
		if err != nil {
			continue
		}
		w.s.Append(e)
		w.seqs = append(w.seqs, r.Seq)
	}
}

// Sync reads what other writers appended since the writer last looked.
func (w *Writer) Sync(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.flushed {
		return nil
	}
	missed, err := w.log.Read(ctx, w.ID(), w.lastSeq)
	if err != nil && !errors.Is(err, wire.ErrNotFound) {
		return err
	}
	w.absorb(missed)
	return nil
}

// flushes reports whether entries publish a pending session: they hold an
// assistant message (pi 0.73.1), or a user or assistant message (pi 1.1).
func (w *Writer) flushes(entries []tree.Entry) bool {
	for k := range entries {
		if e := &entries[k]; e.Kind == tree.KindMessage && (e.Role == tree.RoleAssistant || (w.opts.Pi11 && e.Role == tree.RoleUser)) {
			return true
		}
	}
	return false
}

func idsOf(entries []tree.Entry) []string {
	ids := make([]string, len(entries))
	for k := range entries {
		ids[k] = entries[k].ID
	}
	return ids
}
