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
	keep     func(applied uint64) bool  // the decision of switches not yet taken
	reset    func()                     // empties the Store
	onSwitch func(kept bool, at uint64) // tells the Node (and its log) what happened
}

func newFeed() *Feed { return &Feed{switched: make(chan struct{})} }

// SetReset names the function that empties the Store (store.Store.Reset);
// set it before the Store starts following.
func (f *Feed) SetReset(reset func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reset = reset
}

// Switch makes src the stream to follow. keep says, for the sequence the
// Store has applied when the switch happens, whether src holds the same
// records up to there; when it does not, the Store is reset and follows src
// from the start. Switches that pile up before the Store takes them keep the
// Store only if each of them would.
func (f *Feed) Switch(src Source, keep func(applied uint64) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	prev := f.keep
	f.keep = func(applied uint64) bool { return (prev == nil || prev(applied)) && keep(applied) }
	f.src = src
	close(f.switched)
	f.switched = make(chan struct{})
}

// current returns the source and its switch channel, first taking a pending
// switch decision for the Store that has applied up to applied; it returns
// where the Store goes on from.
func (f *Feed) current(applied uint64) (Source, <-chan struct{}, uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.src == nil {
		return nil, nil, 0, fmt.Errorf("%w: no stream to follow yet", wire.ErrUnavailable)
	}
	next := applied + 1
	if f.keep != nil {
		kept := f.keep(applied)
		f.keep = nil
		if !kept && applied > 0 {
			if f.reset == nil {
				return nil, nil, 0, errors.New("region feed: a switch needs a Store reset, and none is set")
			}
			f.reset()
			next = 1
		}
		if f.onSwitch != nil {
			f.onSwitch(kept || applied == 0, applied)
		}
	}
	return f.src, f.switched, next, nil
}

// Follow delivers the current stream from sequence from on, and goes on
// with the next stream when the Feed is switched; see session.Feed. A reset
// (see Switch) happens between two calls of apply.
func (f *Feed) Follow(ctx context.Context, from uint64, apply func([]session.Stored) error) error {
	applied := from - min(from, 1)
	for {
		src, switched, next, err := f.current(applied)
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
