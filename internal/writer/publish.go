package writer

import (
	"bytes"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
)

// RetryPolicy bounds the optimistic append loop.
type RetryPolicy struct {
	// Attempts is the most publishes one append makes (default 100). A
	// conflict means another writer made progress, so under contention an
	// append may need many; each costs a round trip, and the waits between
	// them grow (ConflictBackoff), so the bound is far from a busy loop.
	Attempts int
	// Backoff is the first wait after ErrUnavailable; it doubles up to
	// MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// AttemptTimeout bounds one publish (default 500 ms plus 1 ms per
	// record and 500 ms per MiB, tens of times a normal append's latency;
	// reading what a conflict missed gets as long, 2 s at least): a publish sent to a
	// leader that just died or stepped down gets no answer at all, and the
	// retry after the timeout reaches the new leader, so this bounds how much
	// a write gap exceeds the election itself. After an attempt that timed
	// out the next one waits twice as long, up to 4× (the log may only be
	// slow: every publish lands, every ack comes late), and after an answer
	// the timeout is back to its start. UnavailableFor bounds the time spent
	// retrying since the log was first unavailable (default 10 s): then the
	// caller gets ErrUnavailable (HTTP 503) and decides, instead of a client
	// timeout.
	AttemptTimeout, UnavailableFor time.Duration
	// ConflictBackoff is the first wait after the second conflict in a row
	// (the first retries at once: reading what was missed took a round trip
	// already). It doubles up to MaxBackoff; with jitter, so that writers
	// racing for one session take turns instead of starving one another.
	ConflictBackoff time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Attempts <= 0 {
		p.Attempts = 100
	}
	if p.Backoff <= 0 {
		p.Backoff = 50 * time.Millisecond
	}
	if p.MaxBackoff <= 0 {
		// Short: an election ends at an unknown moment, and each wait
		// beyond it is added to the write gap.
		p.MaxBackoff = 500 * time.Millisecond
	}
	if p.UnavailableFor <= 0 {
		p.UnavailableFor = 10 * time.Second
	}
	if p.ConflictBackoff <= 0 {
		p.ConflictBackoff = 2 * time.Millisecond
	}
	return p
}

// alreadyStored reports whether every record is in stored with the same
// bytes, as a contiguous run (an earlier attempt of the same atomic append),
// and returns their sequences.
func alreadyStored(stored []session.Stored, recs []session.Record) ([]uint64, bool) {
	for start := range stored {
		if !sameRecord(stored[start].Record, recs[0]) {
			continue
		}
		if len(stored)-start < len(recs) {
			return nil, false
		}
		seqs := make([]uint64, len(recs))
		for k := range recs {
			if !sameRecord(stored[start+k].Record, recs[k]) {
				return nil, false
			}
			seqs[k] = stored[start+k].Seq
		}
		return seqs, true
	}
	return nil, false
}

func sameRecord(a, b session.Record) bool {
	return a.Type == b.Type && a.ID == b.ID && bytes.Equal(a.Data, b.Data)
}
