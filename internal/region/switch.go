package region

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// The Service and the Store are built once, at start; the region they write
// to and read from changes at runtime. The types in this file and feed.go
// are the seams: each implements one of the session package's interfaces by
// delegating to the current target, which the Node switches when the
// region record changes. A call in flight finishes on the target it
// started on; a write that fails there with ErrUnavailable (the old home is
// lost or fenced) is retried by the Service, and the retry reaches the new
// target.

// Compile-time checks.
var (
	_ session.Log     = (*Log)(nil)
	_ session.Eraser  = (*Log)(nil)
	_ session.Cursors = (*Cursors)(nil)
)

// Log is the write side: the home region's stream, switchable.
type Log struct {
	cur atomic.Pointer[jetstream.Log]
}

func (l *Log) set(t *jetstream.Log) { l.cur.Store(t) }

func (l *Log) get() (*jetstream.Log, error) {
	if t := l.cur.Load(); t != nil {
		return t, nil
	}
	return nil, fmt.Errorf("%w: the home region is not known yet", wire.ErrUnavailable)
}

// Append appends to the home region's stream; see session.Log.
func (l *Log) Append(ctx context.Context, sid string, expectLast uint64, recs []session.Record) ([]uint64, error) {
	t, err := l.get()
	if err != nil {
		return nil, err
	}
	return t.Append(ctx, sid, expectLast, recs)
}

// Read reads from the home region's stream, authoritatively; see session.Log.
func (l *Log) Read(ctx context.Context, sid string, afterSeq uint64) ([]session.Stored, error) {
	t, err := l.get()
	if err != nil {
		return nil, err
	}
	return t.Read(ctx, sid, afterSeq)
}

// SessionLastSeq asks the home region's stream leader; see session.Log.
func (l *Log) SessionLastSeq(ctx context.Context, sid string) (uint64, error) {
	t, err := l.get()
	if err != nil {
		return 0, err
	}
	return t.SessionLastSeq(ctx, sid)
}

// Purge purges in the home region's stream; see session.Log.
func (l *Log) Purge(ctx context.Context, sid string) error {
	t, err := l.get()
	if err != nil {
		return err
	}
	return t.Purge(ctx, sid)
}

// Erase erases the session from the home region's stream; see
// session.Eraser. The other regions erase their copies when the notice
// reaches them (Node.eraseCopies).
func (l *Log) Erase(ctx context.Context, sid string, expectLast uint64) (session.Erased, error) {
	t, err := l.get()
	if err != nil {
		return session.Erased{}, err
	}
	return t.Erase(ctx, sid, expectLast)
}

// MaxBatch is the home stream's atomic batch limit.
func (l *Log) MaxBatch() int {
	if t := l.cur.Load(); t != nil {
		return t.MaxBatch()
	}
	return jetstream.NewConfig().MaxBatch
}

// Cursors are the home region's cursor bucket, switchable. Binding to a
// bucket asks JetStream about it, which fails while the home region is
// unreachable; so the target is bound on first use, not when it is set, and
// a node can start (and serve reads) while its home is down.
type Cursors struct {
	js natsjs.JetStream

	mu      sync.Mutex
	cfg     jetstream.Config
	bound   *jetstream.Cursors // bound to cfg; nil until a use succeeds
	changed chan struct{}      // closed when cfg changes
}

func newCursors(js natsjs.JetStream) *Cursors {
	return &Cursors{js: js, changed: make(chan struct{})}
}

func (c *Cursors) set(cfg jetstream.Config) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cfg.Bucket == c.cfg.Bucket {
		return
	}
	c.cfg, c.bound = cfg, nil
	close(c.changed)
	c.changed = make(chan struct{})
}

// target returns the bound bucket and the channel that announces a switch.
func (c *Cursors) target(ctx context.Context) (*jetstream.Cursors, <-chan struct{}, error) {
	c.mu.Lock()
	cfg, bound, changed := c.cfg, c.bound, c.changed
	c.mu.Unlock()
	if bound != nil {
		return bound, changed, nil
	}
	if cfg.Bucket == "" {
		return nil, nil, fmt.Errorf("%w: the home region is not known yet", wire.ErrUnavailable)
	}
	b, err := jetstream.NewCursors(ctx, c.js, cfg)
	if err != nil {
		if !errors.Is(err, wire.ErrUnavailable) {
			err = &jetstream.BackendError{Sentinel: wire.ErrUnavailable, Reason: "the cursor bucket " + cfg.Bucket + " cannot be opened", Cause: err}
		}
		return nil, nil, err
	}
	c.mu.Lock()
	if c.cfg.Bucket == cfg.Bucket {
		c.bound = b
	}
	c.mu.Unlock()
	return b, changed, nil
}

// Get reads a cursor from the home bucket; see session.Cursors.
func (c *Cursors) Get(ctx context.Context, sid, client string) (session.CursorEntry, error) {
	t, _, err := c.target(ctx)
	if err != nil {
		return session.CursorEntry{}, err
	}
	return t.Get(ctx, sid, client)
}

// Put stores a cursor in the home bucket; see session.Cursors.
func (c *Cursors) Put(ctx context.Context, sid, client string, cur session.Cursor) (uint64, error) {
	t, _, err := c.target(ctx)
	if err != nil {
		return 0, err
	}
	return t.Put(ctx, sid, client, cur)
}

// Update changes a cursor in the home bucket; see session.Cursors.
func (c *Cursors) Update(ctx context.Context, sid, client string, cur session.Cursor, expectRev uint64) (uint64, error) {
	t, _, err := c.target(ctx)
	if err != nil {
		return 0, err
	}
	return t.Update(ctx, sid, client, cur, expectRev)
}

// Delete removes a cursor from the home bucket; see session.Cursors.
func (c *Cursors) Delete(ctx context.Context, sid, client string) error {
	t, _, err := c.target(ctx)
	if err != nil {
		return err
	}
	return t.Delete(ctx, sid, client)
}

// List lists a session's cursors in the home bucket; see session.Cursors.
func (c *Cursors) List(ctx context.Context, sid string) ([]session.CursorEntry, error) {
	t, _, err := c.target(ctx)
	if err != nil {
		return nil, err
	}
	return t.List(ctx, sid)
}

// Watch watches a session's cursors in the home bucket and moves to the new
// home's bucket when the home changes; see session.Cursors. Changes made
// during the switch may be missed, as changes a lagging watcher skips are.
func (c *Cursors) Watch(ctx context.Context, sid string, fn func(e session.CursorEntry, deleted bool)) error {
	for {
		t, changed, err := c.target(ctx)
		if err != nil {
			return err
		}
		wctx, cancel := context.WithCancel(ctx)
		// Joined below, so that no goroutine outlives the call.
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			select {
			case <-changed:
				cancel()
			case <-wctx.Done():
			}
		}()
		err = t.Watch(wctx, sid, fn)
		cancel()
		<-watched
		if ctx.Err() != nil {
			return ctx.Err()
		}
		select {
		case <-changed:
			continue
		default:
			return err
		}
	}
}
