package store

import (
	"context"
	"time"

	"github.com/pifleet/sessionlog/internal/shard"
)

// Freshness is how current a read was: what the Store had applied when it
// read the data, and how far the log went as far as the node knew then.
type Freshness struct {
	// Applied is the Store's last applied sequence when the data was read
	// (taken under the same lock): the body reflects every record up to it.
	Applied uint64
	// Known is the highest sequence the node knew the log to hold at that
	// moment: the log's end as last polled, and every sequence it was told
	// of since (its own writes' acknowledgements, leaders' answers to
	// linearizable reads). In a mirror region, the home's end.
	Known uint64
	// CaughtUpAt is when the Store last knew itself caught up (zero: never).
	CaughtUpAt time.Time
	// EndKnown: the Store has learned the log's end since it opened (or
	// was reset). Until then Known is only what it was told, and Lag is a
	// lower bound — in a mirror region that has never heard from a home
	// that does not answer, nothing at all.
	EndKnown bool
}

// Lag is how many records the node knew to exist and had not applied.
func (f Freshness) Lag() uint64 {
	if f.Known > f.Applied {
		return shard.Raw(f.Known) - shard.Raw(f.Applied) // see Stats.Lag
	}
	return 0
}

// Freshness returns the Store's freshness now (for replies that read no
// session: a read returns its own). Cheap: for every response.
func (st *Store) Freshness() Freshness {
	st.mu.RLock()
	defer st.mu.RUnlock()
	return st.freshnessLocked()
}

// freshnessLocked is Freshness under st.mu (read or write).
func (st *Store) freshnessLocked() Freshness {
	if st.unheld {
		return st.unheldFreshness()
	}
	f := Freshness{Applied: st.applied, Known: st.known(), EndKnown: st.polled()}
	if ns := st.stats.caughtUpAt.Load(); ns != 0 {
		f.CaughtUpAt = time.Unix(0, ns)
	}
	return f
}

// NoteLogSeq tells the Store that the log holds seq: this node acknowledged
// a write at it, or a leader named it. Until the Store has applied it, lag
// counts it — so a node is never "caught up" while it has not applied a
// write it acknowledged itself, which the log's end (polled) may not show
// yet.
func (st *Store) NoteLogSeq(seq uint64) {
	for {
		cur := st.stats.noted.Load()
		if seq <= cur || st.stats.noted.CompareAndSwap(cur, seq) {
			return
		}
	}
}

// polled reports whether the Store has read the log's end since it opened
// (or was reset).
func (st *Store) polled() bool { return st.stats.polledAt.Load() != 0 }

// known is the highest sequence the Store knows the log to hold.
func (st *Store) known() uint64 {
	return max(st.stats.logLastSeq.Load(), st.stats.noted.Load())
}

// LogLastSeq asks the log for its last sequence now (from its leader) and
// notes it, for a linearizable read of the catalog.
func (st *Store) LogLastSeq(ctx context.Context) (uint64, error) {
	last, err := st.feed.LastSeq(ctx)
	if err != nil {
		return 0, err
	}
	st.NoteLogSeq(last)
	st.noteFirstEnd(last)
	return last, nil
}

// FirstEnd returns the log's last sequence as the Store first learned it
// after Open (or a Reset), and whether it has learned it yet. A node that
// restarted has forgotten which writes it acknowledged before: they are
// all at or below this, so reads wait for it to read their own writes.
func (st *Store) FirstEnd() (uint64, bool) {
	if st.unheld {
		return 0, true // it acknowledged nothing it could have forgotten: reads are the log's
	}
	v := st.stats.firstEnd.Load()
	return v - 1, v != 0
}

// noteFirstEnd records last as FirstEnd unless one is known. Either value
// of two racing first polls is a valid bound: both were read after Open.
func (st *Store) noteFirstEnd(last uint64) {
	st.stats.firstEnd.CompareAndSwap(0, last+1)
}
