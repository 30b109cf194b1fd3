package store

import (
	"context"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
)

// unheldPoll is how often a watch of a session on a shard this node does
// not hold reads the log again: it has no feed to tell it of new entries.
const unheldPoll = 250 * time.Millisecond

// Unheld returns the Store of a shard this node does not hold (pi-node's
// --hold): it follows nothing and keeps nothing, and every read of it is a
// read of the session from log — the stream leader's copy, which holds
// every acknowledged write. So it waits for no sequence (WaitFor returns at
// once), its reads are never stale, it lists no session (the catalog asks
// the shard's holders), and Open and Close do nothing. A node serves such
// a shard's requests itself only when none of its holders answers.
func Unheld(feed session.Feed) *Store {
	st := New(feed, Options{})
	st.unheld = true
	st.opened = true
	close(st.rebuilt)
	return st
}

// Held reports whether the Store follows its shard (false: Unheld).
func (st *Store) Held() bool { return !st.unheld }

// unheldChanged is Changed of an Unheld Store: a tick, not a change.
func unheldChanged() <-chan struct{} {
	ch := make(chan struct{})
	time.AfterFunc(unheldPoll, func() { close(ch) })
	return ch
}

// unheldFreshness is what a read of an Unheld Store reflects: the log as
// its leader had it, now.
func (st *Store) unheldFreshness() Freshness {
	k := st.known()
	return Freshness{Applied: k, Known: k, EndKnown: true, CaughtUpAt: st.opts.Now()}
}

// WaitCaughtUp waits until the Store has applied what its log held when it
// was called and reports how long that took, for a node taking a shard
// over: it serves the shard once this returns.
func (st *Store) WaitCaughtUp(ctx context.Context) error {
	for {
		err := st.CatchUp(ctx)
		if err == nil || ctx.Err() != nil {
			return err
		}
		// The log's end could not be read (an election): ask again.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
