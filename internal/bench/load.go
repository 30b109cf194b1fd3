package bench

import (
	"context"
	"fmt"
	"math/rand/v2"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/jetstream"
)

// LoadOptions say what Load puts on the log.
type LoadOptions struct {
	Sessions int
	Entries  int // in all, spread evenly over the sessions
	// Active is how many sessions are being written at any time (default
	// 1000): their records interleave in the stream as concurrent agents'
	// do, so one session's records are spread over the stream, not
	// contiguous — which is what makes a filtered read of one session slow.
	Active int
	Seed   uint64
	// KeepIDs keeps every entry id (for reads at random leaves).
	KeepIDs bool
}

// Loaded is what Load put on the log.
type Loaded struct {
	Sessions  []LoadedSession `json:"sessions"`
	Records   int             `json:"records"` // headers and entries
	Entries   int             `json:"entries"`
	JSONBytes int64           `json:"jsonBytes"` // lines without newlines: what Stores hold
	LastSeq   uint64          `json:"lastSeq"`
}

// LoadedSession is one loaded session.
type LoadedSession struct {
	ID       string   `json:"id"`
	Entries  int      `json:"entries"`
	LastSeq  uint64   `json:"lastSeq"`
	EntryIDs []string `json:"entryIds,omitempty"` // with KeepIDs
}

// Load publishes realistic sessions (Gen.Realistic) with the messages the
// adapter builds (jetstream.Log.Msg), without waiting for each ack: far
// faster than creating them one atomic batch at a time, for scenarios whose
// subject is what comes after (reads, rebuilds). One connection publishes
// in order, so every session's header comes before its entries.
func Load(ctx context.Context, js natsjs.JetStream, log *jetstream.Log, o LoadOptions, prog Progress) (*Loaded, error) {
	if o.Sessions <= 0 || o.Entries < 0 {
		return nil, fmt.Errorf("load: %d sessions, %d entries", o.Sessions, o.Entries)
	}
	if o.Active <= 0 {
		o.Active = 1000
	}
	gen := NewGen(o.Seed)
	pick := rand.New(rand.NewPCG(o.Seed, 7))
	out := &Loaded{Sessions: make([]LoadedSession, o.Sessions)}
	type slot struct {
		s   Session
		pos int // next record to publish
		idx int // in out.Sessions
	}
	var slots []*slot
	started := 0
	startNext := func() *slot {
		n := o.Entries / o.Sessions
		if started < o.Entries%o.Sessions {
			n++
		}
		sl := &slot{s: gen.Realistic(n), idx: started}
		ls := &out.Sessions[started]
		ls.ID, ls.Entries = sl.s.ID, n
		if o.KeepIDs {
			ls.EntryIDs = sl.s.EntryIDs()
		}
		out.Records += len(sl.s.Recs)
		out.Entries += n
		out.JSONBytes += sl.s.Bytes
		started++
		return sl
	}
	for started < o.Sessions && len(slots) < o.Active {
		slots = append(slots, startNext())
	}

	type pending struct {
		f   natsjs.PubAckFuture
		idx int
	}
	var window []pending
	published := 0
	// drain waits for the oldest n acks. The window stays below nats.go's
	// default of 4000 unacknowledged publishes, past which it stalls.
	drain := func(n int) error {
		for _, p := range window[:n] {
			select {
			case ack := <-p.f.Ok():
				ls := &out.Sessions[p.idx]
				ls.LastSeq = max(ls.LastSeq, ack.Sequence)
				out.LastSeq = max(out.LastSeq, ack.Sequence)
			case err := <-p.f.Err():
				return fmt.Errorf("load: %w", err)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		window = append(window[:0], window[n:]...)
		prog.report("loading", published-len(window), o.Entries+o.Sessions)
		return nil
	}
	for len(slots) > 0 {
		k := pick.IntN(len(slots))
		sl := slots[k]
		f, err := js.PublishMsgAsync(log.Msg(sl.s.ID, sl.s.Recs[sl.pos]))
		if err != nil {
			return nil, fmt.Errorf("load: %w", err)
		}
		window = append(window, pending{f, sl.idx})
		published++
		if sl.pos++; sl.pos == len(sl.s.Recs) {
			if started < o.Sessions {
				slots[k] = startNext()
			} else {
				slots[k] = slots[len(slots)-1]
				slots = slots[:len(slots)-1]
			}
		}
		if len(window) >= 2048 {
			if err := drain(1024); err != nil {
				return nil, err
			}
		}
	}
	if err := drain(len(window)); err != nil {
		return nil, err
	}
	return out, nil
}
