package jetstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/session"
)

// applyError marks an error returned by Follow's apply, which ends Follow,
// as opposed to a transport error, after which Follow resumes.
type applyError struct{ err error }

func (e *applyError) Error() string { return e.err.Error() }

// Follow delivers the stream from sequence from on, in order, until ctx is
// done or apply fails; see session.Feed.
//
// It reads with an ordered consumer, which recreates itself after missed
// heartbeats, reconnects and gaps, resuming after the last message it
// received. The records of an atomic batch are held until the message
// carrying Nats-Batch-Commit arrives: a consumer may see a prefix of a batch
// that the server is still storing, never an uncommitted one. If the consumer
// fails for good, Follow starts a new one after the last record it delivered,
// dropping what it held, so no sequence is skipped or repeated.
func (l *Log) Follow(ctx context.Context, from uint64, apply func([]session.Stored) error) error {
	next := max(from, 1)
	wait := 100 * time.Millisecond
	for {
		delivered := next
		err := l.follow(ctx, &next, apply)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ae *applyError
		if errors.As(err, &ae) {
			return ae.err
		}
		if next > delivered {
			wait = 100 * time.Millisecond // progress was made: this is a new failure
		}
		// Until a new consumer can be made (that needs the meta leader,
		// which may be the node that just died), read on from the stream
		// leader directly, so the Store does not fall behind meanwhile.
		gerr := l.catchUpByGets(ctx, &next, apply)
		if errors.As(gerr, &ae) {
			return ae.err
		}
		if next == delivered && ctx.Err() == nil {
			// Neither way brought anything: say why, or a Store that
			// applies nothing for minutes says nothing (the caller's
			// report; Follow itself returns only at the end).
			session.ReportFollowRetry(ctx, retryError(l.cfg.Stream, next, err, gerr))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second) // each wait adds to how far a Store falls behind
	}
}

// retryError says why an attempt of Follow delivered nothing: how the
// consumer ended (or could not be made), and how the leader gets did.
func retryError(stream string, next uint64, cerr, gerr error) error {
	gets := "nothing more to read"
	if gerr != nil {
		gets = gerr.Error()
	}
	if cerr == nil {
		cerr = errors.New("ended")
	}
	return fmt.Errorf("stream %s from sequence %d: consumer: %w; leader gets: %s", stream, next, cerr, gets)
}

// follow runs one ordered consumer from *next, advancing *next past every
// record apply accepted. It returns when the consumer fails, ctx is done, or
// apply fails (as an *applyError).
func (l *Log) follow(ctx context.Context, next *uint64, apply func([]session.Stored) error) error {
	// Bounded: creating a consumer during an election can hang until the
	// API timeout; a new attempt a moment later may reach the new leader.
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	c, err := startConsumer(cctx, l.js, l.cfg.Stream, jetstream.OrderedConsumerConfig{
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       *next,
		InactiveThreshold: time.Minute,
	})
	cancel() // only the creation is bounded; consuming goes on
	if err != nil {
		return err
	}
	failed := false
	defer func() {
		if failed {
			c.abandon() // Follow reads on at once: see abandon
		} else {
			c.stop()
		}
	}()

	// Records go to apply in groups: whatever has arrived by the time the
	// previous group is applied, up to maxGroup. On a busy or rebuilding
	// Store that turns one lock and one wake-up per record into one per
	// few hundred; on an idle one a group is a single record, at once.
	const maxGroup = 512
	var ready []session.Stored
	var batches batchAssembler
	stalled := l.stallCheck(ctx, next, &batches)
	msg, nerr := c.nextWatched(ctx, stalled)
	for {
		if nerr != nil {
			failed = ctx.Err() == nil
			return nerr
		}
		s, err := l.decodeMsg(msg)
		if err != nil {
			return err
		}
		ready = batches.add(ready, s, batchOf(msg.Headers()))
		if len(ready) >= maxGroup {
			if err := deliver(apply, &ready, next); err != nil {
				return err
			}
		}
		if m, ok := c.tryNext(); ok {
			msg = m
			continue
		}
		if err := deliver(apply, &ready, next); err != nil {
			return err
		}
		msg, nerr = c.nextWatched(ctx, stalled)
	}
}

// deliver applies the records in *ready, if any, and moves *next past them.
// *ready is then empty; apply keeps the slice it was given.
func deliver(apply func([]session.Stored) error, ready *[]session.Stored, next *uint64) error {
	if len(*ready) == 0 {
		return nil
	}
	if err := apply(*ready); err != nil {
		return &applyError{err}
	}
	*next = (*ready)[len(*ready)-1].Seq + 1
	*ready = nil
	return nil
}

// stallCheck returns the check follow's consumer runs while no message
// comes. The consumer is stuck when the stream holds records beyond what it
// delivered and nothing came for a whole stallCheck: start a new one. When
// the log's end cannot even be asked (its leader or the meta leader is being
// elected), a few silent checks in a row also count as stalled: Follow then
// reads on by leader gets, which need only the stream's new leader, and
// tries a new consumer.
func (l *Log) stallCheck(ctx context.Context, next *uint64, batches *batchAssembler) func() error {
	unknown := 0
	return func() error {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		last, err := l.LastSeq(pctx)
		if err != nil {
			if unknown++; unknown >= 3 {
				return fmt.Errorf("consumer silent and the stream's end unknown: %w", err)
			}
			return nil
		}
		unknown = 0
		if held, ok := batches.heldThrough(); last < *next || ok && last <= held {
			return nil // nothing is missing yet (the rest of a held batch is being stored)
		}
		return fmt.Errorf("consumer stalled: the stream's last sequence is %d, next expected %d", last, *next)
	}
}

// catchUpByGets delivers the records from *next on by leader gets (any
// session: next_by_subj with the wildcard), up to catchUpLimit records or
// catchUpFor, as it reads them, holding an atomic batch until its commit
// record as follow does. It stops at the
// stream's end or at the first error; what it delivered stays delivered, and
// a batch still held is dropped, to be read again. It returns apply's error
// (an *applyError), else the error that stopped it before the stream's end
// (the leader did not answer), else nil.
func (l *Log) catchUpByGets(ctx context.Context, next *uint64, apply func([]session.Stored) error) error {
	var ready []session.Stored
	var batches batchAssembler
	var stopped error
	seq := *next
	start, delivered := time.Now(), time.Now()
	for n := 0; n < catchUpLimit && time.Since(start) < catchUpFor; n++ {
		gctx, cancel := context.WithTimeout(ctx, time.Second)
		m, err := leaderGet(gctx, l.js, l.api, l.cfg.Stream, msgGetRequest{Seq: seq, NextFor: l.cfg.SubjectPrefix + ".*"})
		cancel()
		if err != nil {
			if !isNotFound(err) { // not found: caught up
				stopped = err // the leader is not there yet, or did not answer
			}
			break
		}
		s, err := l.decodeStored(m.Subject, m.Seq, m.Header, m.Data, m.Time)
		if err != nil {
			stopped = err
			break
		}
		seq = m.Seq + 1
		ready = batches.add(ready, s, batchOf(m.Header))
		// Applied as they come, not at the end: each get is a round trip
		// to the leader, and on a loaded machine 2,000 of them took a
		// minute in which the Store applied nothing (TestKillStreamLeader
		// over 4 shards).
		if len(ready) >= catchUpGroup || len(ready) > 0 && time.Since(delivered) >= catchUpEvery {
			if err := deliver(apply, &ready, next); err != nil {
				return err
			}
			delivered = time.Now()
		}
	}
	if err := deliver(apply, &ready, next); err != nil {
		return err
	}
	return stopped
}

// A catch-up delivers what it read every catchUpGroup records or
// catchUpEvery, whichever comes first, and ends after catchUpFor to try a
// consumer again (the fast way, once the meta leader answers).
const (
	catchUpGroup = 64
	catchUpEvery = 50 * time.Millisecond
	catchUpFor   = 2 * time.Second
)

// catchUpLimit bounds one catch-up by gets (about 60 µs each): enough to
// carry a Store through an election, short enough to retry the consumer.
const catchUpLimit = 2000
