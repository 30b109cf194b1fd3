package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/writer"
)

// SessionOption configures Create, Open and Fork.
type SessionOption func(*sessionOptions)

type sessionOptions struct {
	client string
	minSeq uint64
	latest bool
	create writer.CreateOptions
}

// WithClientID gives the Session a cursor: this client's own leaf in the
// session, stored in the log's cursor bucket and moved (compare-and-swap)
// by every append, Branch and ResetLeaf. Open resumes at it. Client ids
// match [A-Za-z0-9_-]{1,64}; a worker's name ("worker-7") is typical.
func WithClientID(id string) SessionOption { return func(o *sessionOptions) { o.client = id } }

// WithMinSeq makes Open read at least up to log sequence seq, a
// Written.Seq another worker handed over (see SyncTo).
func WithMinSeq(seq uint64) SessionOption { return func(o *sessionOptions) { o.minSeq = seq } }

// WithLatest makes Open linearizable: it reflects every write acknowledged
// before it began, by any worker through any pi-node. Over JetStream every
// Open already is (it reads from the stream leader); over the API
// transports it costs one consistency=strong request first.
func WithLatest() SessionOption { return func(o *sessionOptions) { o.latest = true } }

// WithCwd sets a new session's working directory (Create, Fork; a fork
// defaults to its source's).
func WithCwd(cwd string) SessionOption { return func(o *sessionOptions) { o.create.Cwd = cwd } }

// WithSessionID chooses a new session's id, a UUID (Create, Fork; default a
// new UUIDv7, which sorts by creation time).
func WithSessionID(id string) SessionOption { return func(o *sessionOptions) { o.create.ID = id } }

// WithParentSession records the session a new one was branched from
// (Create; Fork sets it to its source).
func WithParentSession(id string) SessionOption {
	return func(o *sessionOptions) { o.create.ParentSession = id }
}

// Session is one pi session as pi's SessionManager holds it — the header,
// the entries, a leaf — written through a Client. It is safe for concurrent
// use; its writes are serialized.
//
// A new Session (Create) is pending: nothing is stored until its first
// assistant message, which stores the header and everything before it as
// one atomic creation. After that each write is one compare-and-swap append
// on the session's last sequence; when another worker appended meanwhile,
// the Session reads what it missed, merges it into its view, and stores
// its entries anyway, as children of the parent they were given. See the
// package documentation.
type Session struct {
	c      *Client
	w      *writer.Writer
	client string // cursor client id ("": no cursor)

	mu  sync.Mutex // serializes writes and cursor moves
	rev uint64     // the cursor's revision as last written or read (0: none)
}

func newOptions(opts []SessionOption) sessionOptions {
	var o sessionOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// Create starts a new session in memory: nothing reaches the log until its
// first assistant message (see Session). A worker that dies before that
// leaves no trace, as pi leaves no file. ErrInvalid for a bad session or
// client id.
func (c *Client) Create(opts ...SessionOption) (*Session, error) {
	o := newOptions(opts)
	if o.client != "" {
		if err := session.ValidClientID(o.client); err != nil {
			return nil, err
		}
	}
	w, err := writer.Create(c.log, o.create, c.writer)
	if err != nil {
		return nil, err
	}
	return &Session{c: c, w: w, client: o.client}, nil
}

// Open resumes a stored session: it reads the whole session, and stands on
// pi's default leaf (the last entry) — or, WithClientID, on that client's
// cursor when it has one. ErrNotFound when the session is not stored (a
// pending session of another worker is not).
func (c *Client) Open(ctx context.Context, sessionID string, opts ...SessionOption) (*Session, error) {
	if err := session.ValidSessionID(sessionID); err != nil {
		return nil, err
	}
	o := newOptions(opts)
	c.seen(sessionID, o.minSeq)
	if o.latest {
		last, err := c.log.SessionLastSeq(ctx, sessionID)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", sessionID, err)
		}
		c.seen(sessionID, last)
	}
	var cur *session.CursorEntry
	if o.client != "" {
		e, err := c.cursors.Get(ctx, sessionID, o.client)
		switch {
		case err == nil:
			cur = &e
			c.seen(sessionID, e.Seq) // the read below must include the cursor's leaf
		case !errors.Is(err, ErrNotFound):
			return nil, fmt.Errorf("open %s: cursor %s: %w", sessionID, o.client, err)
		}
	}
	w, err := writer.Open(ctx, c.log, sessionID, c.writer)
	if err != nil {
		return nil, err
	}
	s := &Session{c: c, w: w, client: o.client}
	if cur == nil {
		return s, nil
	}
	if cur.LeafID == "" {
		w.ResetLeaf()
	} else if err := w.Branch(cur.LeafID); err != nil {
		return nil, fmt.Errorf("open %s: cursor %s names an entry the session does not hold: %w", sessionID, o.client, err)
	}
	s.rev = cur.Revision
	return s, nil
}

// ID returns the session id.
func (s *Session) ID() string { return s.w.ID() }

// ClientID returns the cursor's client id ("" without a cursor).
func (s *Session) ClientID() string { return s.client }

// Header returns the session's header line ({"type":"session","version":3,
// "id",...}).
func (s *Session) Header() json.RawMessage { return json.RawMessage(s.w.Header().Raw) }

// Flushed reports whether the session is stored: false until its first
// assistant message.
func (s *Session) Flushed() bool { return s.w.Flushed() }

// LastSeq returns the session's version as this Session knows it: the log
// sequence of the last record it wrote or read (0 while pending). Pass it
// as minSeq to read your writes from any pi-node.
func (s *Session) LastSeq() uint64 { return s.w.LastSeq() }

// LeafID returns the current leaf ("" before the first entry, or after
// ResetLeaf): the next append becomes its child.
func (s *Session) LeafID() string { return s.w.LeafID() }

// Sync reads what other writers appended since this Session last looked
// and merges it into its view; the leaf stays where it is. (Appends do it
// by themselves when they conflict.) On JetStream it reads everything
// stored. Over the API transports it reads what the pi-node has applied,
// which trails the log by milliseconds: at least everything this Session
// has written or run into, but another worker's append of a moment ago
// may be missing — use SyncTo with that worker's Written.Seq.
func (s *Session) Sync(ctx context.Context) error { return s.w.Sync(ctx) }

// SyncTo is Sync that reads at least up to log sequence seq — a
// Written.Seq (or LastSeq) another worker handed over: over the API
// transports pi-node answers once it has applied seq, or fails with
// ErrTimeout after its minSeq timeout (5 s by default); later reads of the
// session through this Client wait for seq too.
func (s *Session) SyncTo(ctx context.Context, seq uint64) error {
	s.c.seen(s.ID(), seq)
	return s.w.Sync(ctx)
}

// has reports whether the Session knows entry id, after a Sync when it
// does not (another writer may have written it a moment ago).
func (s *Session) has(ctx context.Context, id string) (bool, error) {
	known := func() (ok bool) {
		s.w.View(func(t *tree.Session, _ int) { ok = t.Has(id) })
		return ok
	}
	if known() {
		return true, nil
	}
	if err := s.w.Sync(ctx); err != nil { // a no-op while pending
		return false, err
	}
	return known(), nil
}

// need is has, as an ErrNotFound.
func (s *Session) need(ctx context.Context, what, id string) error {
	ok, err := s.has(ctx, id)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: entry %q of session %s: %w", what, id, s.ID(), ErrNotFound)
	}
	return nil
}

// Fork is pi's createBranchedSession: a new session holding the path from
// the root to entryID (ids kept; the label entries of the path dropped and
// the labels re-created at its end), whose header names this session as
// its parent. Like pi, it is stored at once when the path holds an
// assistant message and otherwise stays pending until its first one. A
// WithPi11 client forks as pi 1.1 does: the path re-chained over the
// dropped labels, and stored at a user or assistant message. The new Session stands on its last
// entry; its cursor client is this Session's unless WithClientID says
// otherwise. WithSessionID and WithCwd apply. This Session is unchanged.
//
// The fork is a new session, so no other writer can conflict with its
// creation; if its cursor cannot be written, Fork returns the new Session
// together with the error.
func (s *Session) Fork(ctx context.Context, entryID string, opts ...SessionOption) (*Session, error) {
	o := newOptions(opts)
	if o.client == "" {
		o.client = s.client
	} else if err := session.ValidClientID(o.client); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.need(ctx, "fork", entryID); err != nil {
		return nil, err
	}
	o.create.ParentSession = ""
	w, err := s.w.Fork(ctx, entryID, o.create)
	if err != nil {
		return nil, err
	}
	ns := &Session{c: s.c, w: w, client: o.client}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns, ns.moveCursor(ctx)
}
