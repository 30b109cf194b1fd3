package region

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

// Source is what a Feed reads: a stream as a session.Feed, with Read for a
// Store's reloads of evicted sessions and Identity for its snapshots.
// *jetstream.MirrorLog is one.
type Source interface {
	session.Feed
	session.Log
	session.Identifier
}

// Compile-time checks: a Store takes a Feed as its feed and its reload log.
var (
	_ session.Feed       = (*Feed)(nil)
	_ session.Log        = (*Feed)(nil)
	_ session.Identifier = (*Feed)(nil)
)

// Feed is the read side a Store follows, switchable between streams while
// the Store follows it: the region's own stream (home or mirror) or, for a
// stale region, the home's stream.
//
// Sequences are what make a switch cheap or not. A mirror keeps its origin's
// sequences, and a promoted mirror continues them, so two streams of one
// history hold the same record at the same sequence: a Store that applied
// sequence n of one can go on at n+1 of the other (keep). A stream of
// another history — the new home after a failover, for a Store that had
// applied records of the old home the new one never received — holds other
// records at those sequences: the Store must start over (reset). Switch
// takes that decision as a function of the sequence the Store has applied,
// evaluated when the old stream has delivered its last record to it.
type Feed struct {
	mu       sync.Mutex
	src      Source
	switched chan struct{}              // closed when src changes
	store    follower                   // the Store's
	views    []*follower                // others' (View), each deciding for itself
	onSwitch func(kept bool, at uint64) // tells the Node (and its log) what the Store's did
	// onNotice hears of every purge and erasure notice the Store applies,
	// with the stream that delivered it: the Node purges or erases the
	// region's own copy.
	onNotice func(src Source, n session.PurgeNotice)
}

// follower is one reader of a Feed: the decision of the switches it has not
// taken yet, and how it starts over.
type follower struct {
	keep  func(applied uint64) bool
	reset func() // empties what it built
}

func newFeed() *Feed { return &Feed{switched: make(chan struct{})} }

// SetReset names the function that empties the Store (store.Store.Reset);
// set it before the Store starts following.
func (f *Feed) SetReset(reset func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.store.reset = reset
}

// View is another follower of the Feed than the Store (the full-text
// index): the same stream and switches, with its own keep-or-reset
// decision, taken for what it has applied when it reaches the switch;
// reset empties what it built, between two calls of its apply.
func (f *Feed) View(reset func()) session.Feed {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := &follower{reset: reset}
	f.views = append(f.views, v)
	return &view{f: f, who: v}
}

type view struct {
	f   *Feed
	who *follower
}

func (v *view) Follow(ctx context.Context, from uint64, apply func([]session.Stored) error) error {
	return v.f.follow(ctx, v.who, from, apply)
}

func (v *view) LastSeq(ctx context.Context) (uint64, error) { return v.f.LastSeq(ctx) }

// Identity is the Feed's: a follower that keeps one across a switch must
// not start over because the stream's name changed.
func (v *view) Identity(ctx context.Context) (string, error) { return v.f.Identity(ctx) }

// Switch makes src the stream to follow. keep says, for the sequence a
// follower has applied when the switch happens, whether src holds the same
// records up to there; when it does not, the follower is reset and follows
// src from the start. Switches that pile up before a follower takes them
// keep it only if each of them would.
func (f *Feed) Switch(src Source, keep func(applied uint64) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range append([]*follower{&f.store}, f.views...) {
		prev := w.keep
		w.keep = func(applied uint64) bool { return (prev == nil || prev(applied)) && keep(applied) }
	}
	f.src = src
	close(f.switched)
	f.switched = make(chan struct{})
}

// current returns the source and its switch channel, first taking w's
// pending switch decision for what it has applied up to applied; it
// returns where w goes on from.
func (f *Feed) current(w *follower, applied uint64) (Source, <-chan struct{}, uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.src == nil {
		return nil, nil, 0, fmt.Errorf("%w: no stream to follow yet", wire.ErrUnavailable)
	}
	next := applied + 1
	if w.keep != nil {
		kept := w.keep(applied)
		w.keep = nil
		if !kept && applied > 0 {
			if w.reset == nil {
				return nil, nil, 0, errors.New("region feed: a switch needs a reset, and none is set")
			}
			w.reset()
			next = 1
		}
		if w == &f.store && f.onSwitch != nil {
			f.onSwitch(kept || applied == 0, applied)
		}
	}
	return f.src, f.switched, next, nil
}

// Follow delivers the current stream from sequence from on to the Store,
// and goes on with the next stream when the Feed is switched; see
// session.Feed. A reset (see Switch) happens between two calls of apply.
func (f *Feed) Follow(ctx context.Context, from uint64, apply func([]session.Stored) error) error {
	return f.follow(ctx, &f.store, from, apply)
}

func (f *Feed) follow(ctx context.Context, w *follower, from uint64, apply func([]session.Stored) error) error {
	applied := from - min(from, 1)
	for {
		src, switched, next, err := f.current(w, applied)
		if err != nil {
			return err
		}
		applied = next - 1
		fctx, cancel := context.WithCancel(ctx)
		// Joined below, so that no goroutine outlives the call.
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			select {
			case <-switched:
				cancel()
			case <-fctx.Done():
			}
		}()
		err = src.Follow(fctx, next, func(recs []session.Stored) error {
			if err := apply(recs); err != nil {
				return err
			}
			if w == &f.store && f.onNotice != nil {
				for _, r := range recs {
					if n, ok := notice(r); ok {
						f.onNotice(src, n)
					}
				}
			}
			applied = recs[len(recs)-1].Seq
			return nil
		})
		cancel()
		<-watched
		if ctx.Err() != nil {
			return ctx.Err()
		}
		select {
		case <-switched:
			continue
		default:
			return err
		}
	}
}

func (f *Feed) source() (Source, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.src == nil {
		return nil, fmt.Errorf("%w: no stream to follow yet", wire.ErrUnavailable)
	}
	return f.src, nil
}

// caughtUp reports whether the current stream has held everything its
// origin held at least once (see jetstream.MirrorLog.CaughtUp); a source
// that cannot tell is taken at its word.
func (f *Feed) caughtUp() bool {
	src, err := f.source()
	if err != nil {
		return false
	}
	c, ok := src.(interface{ CaughtUp() bool })
	return !ok || c.CaughtUp()
}

// LastSeq is the current stream's (a mirror's: its origin's as it knows it).
func (f *Feed) LastSeq(ctx context.Context) (uint64, error) {
	src, err := f.source()
	if err != nil {
		return 0, err
	}
	return src.LastSeq(ctx)
}

// Identity names the current stream, for the Store's snapshots.
func (f *Feed) Identity(ctx context.Context) (string, error) {
	src, err := f.source()
	if err != nil {
		return "", err
	}
	return src.Identity(ctx)
}

// Read reads a session from the current stream (the Store's reloads).
func (f *Feed) Read(ctx context.Context, sid string, afterSeq uint64) ([]session.Stored, error) {
	src, err := f.source()
	if err != nil {
		return nil, err
	}
	return src.Read(ctx, sid, afterSeq)
}

// SessionLastSeq asks the current stream; see session.Log.
func (f *Feed) SessionLastSeq(ctx context.Context, sid string) (uint64, error) {
	src, err := f.source()
	if err != nil {
		return 0, err
	}
	return src.SessionLastSeq(ctx, sid)
}

// Append is not how a Store uses its Feed; it writes to the current stream.
func (f *Feed) Append(ctx context.Context, sid string, expectLast uint64, recs []session.Record) ([]uint64, error) {
	src, err := f.source()
	if err != nil {
		return nil, err
	}
	return src.Append(ctx, sid, expectLast, recs)
}

// Purge is not how a Store uses its Feed; it purges in the current stream.
func (f *Feed) Purge(ctx context.Context, sid string) error {
	src, err := f.source()
	if err != nil {
		return err
	}
	return src.Purge(ctx, sid)
}

// MaxBatch is the current stream's batch limit.
func (f *Feed) MaxBatch() int {
	src, err := f.source()
	if err != nil {
		return 1
	}
	return src.MaxBatch()
}

// notice decodes r as a purge or erasure notice.
func notice(r session.Stored) (session.PurgeNotice, bool) {
	if r.Session != session.PurgeToken {
		return session.PurgeNotice{}, false
	}
	n, ok := session.ParseNotice(r.Data)
	if !ok || session.ValidSessionID(n.Session) != nil {
		return session.PurgeNotice{}, false
	}
	return n, true
}
