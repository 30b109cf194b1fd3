package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/wire"
)

var _ session.Eraser = (*Log)(nil)

// eraseWindow is how many message erasures are in flight at once: each is
// a Raft proposal on a replicated stream, so one at a time would take a
// round trip per entry.
const eraseWindow = 32

// Erase erases the session's records from the stream with JetStream's
// message delete that overwrites the message in its block file (a purge
// only marks messages deleted, and their bytes stay in the block until it
// is compacted), then its cursors, then publishes the erasure notice; see
// session.Eraser. Newest records go first, in windows of eraseWindow, the
// header alone at the end: a crash half-way leaves a shorter session, and
// Erase again finishes the job.
//
// A replicated stream's Raft log holds the appends too, until the group's
// next snapshot compacts it (docs/SECURITY.md, "Erasure").
func (l *Log) Erase(ctx context.Context, sid string, expectLast uint64) (session.Erased, error) {
	if err := session.ValidSessionID(sid); err != nil {
		return session.Erased{}, fmt.Errorf("erase %s: %w", sid, err)
	}
	var out session.Erased
	for round := 0; ; round++ {
		recs, err := l.read(ctx, sid, 0)
		if errors.Is(err, wire.ErrNotFound) && round > 0 {
			break
		}
		if err != nil {
			return session.Erased{}, fmt.Errorf("erase %s: %w", sid, err)
		}
		last := recs[len(recs)-1].Seq
		if round == 0 && expectLast != 0 && last != expectLast {
			return session.Erased{}, &wire.ConflictError{LastSeq: last,
				Reason: fmt.Sprintf("session %s is at %d, not %d", sid, last, expectLast)}
		}
		seqs := make([]uint64, len(recs))
		for i, r := range recs {
			seqs[i] = r.Seq
		}
		if err := l.eraseSeqs(ctx, seqs); err != nil {
			return session.Erased{}, fmt.Errorf("erase %s: %w", sid, err)
		}
		out.Records += len(recs)
		out.LastSeq = max(out.LastSeq, last)
		// Appends that raced with the reads are erased by the next round;
		// a writer's next append finds the session gone (its expected last
		// sequence no longer matches an empty subject).
	}
	if err := l.purgeCursors(ctx, sid); err != nil {
		return session.Erased{}, fmt.Errorf("erase %s: %w", sid, err)
	}
	if err := l.notifyErase(ctx, sid, out.LastSeq); err != nil {
		return session.Erased{}, fmt.Errorf("erase %s: notice: %w", sid, err)
	}
	return out, nil
}

// eraseSeqs erases the messages seqs (ascending) of the log's stream:
// newest first, eraseWindow at a time, the first (the header) alone last.
func (l *Log) eraseSeqs(ctx context.Context, seqs []uint64) error {
	seqs = slices.Clone(seqs)
	slices.Reverse(seqs)
	head := seqs[len(seqs)-1]
	rest := seqs[:len(seqs)-1]
	for len(rest) > 0 {
		n := min(eraseWindow, len(rest))
		if err := eraseMsgs(ctx, l.js, l.api, l.cfg.Stream, rest[:n]); err != nil {
			return err
		}
		rest = rest[n:]
	}
	return eraseMsgs(ctx, l.js, l.api, l.cfg.Stream, []uint64{head})
}

// msgDeleteRequest is the body of $JS.API.STREAM.MSG.DELETE.<stream>;
// without no_erase the server overwrites the message's bytes.
type msgDeleteRequest struct {
	Seq uint64 `json:"seq"`
}

// eraseMsgs erases the messages seqs of stream concurrently; one already
// gone counts as erased.
func eraseMsgs(ctx context.Context, js jetstream.JetStream, api, stream string, seqs []uint64) error {
	errs := make([]error, len(seqs))
	var wg sync.WaitGroup
	for i, seq := range seqs {
		wg.Go(func() { errs[i] = eraseMsg(ctx, js, api, stream, seq) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func eraseMsg(ctx context.Context, js jetstream.JetStream, api, stream string, seq uint64) error {
	body, _ := json.Marshal(msgDeleteRequest{Seq: seq})
	rctx, cancel := context.WithTimeout(ctx, js.Options().DefaultTimeout)
	defer cancel()
	msg, err := js.Conn().RequestWithContext(rctx, api+"STREAM.MSG.DELETE."+stream, body)
	if err != nil {
		return fmt.Errorf("erase message %d of %s: %w", seq, stream, translate(err, wire.ErrConflict))
	}
	var resp struct {
		Error   *jetstream.APIError `json:"error,omitempty"`
		Success bool                `json:"success"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return fmt.Errorf("erase message %d of %s: bad response: %w", seq, stream, err)
	}
	if resp.Error != nil {
		// A message deleted already fails as "deletion unsuccessful"
		// (10057), like other failures: look whether it is there.
		if _, gerr := leaderGet(ctx, js, api, stream, msgGetRequest{Seq: seq}); isNotFound(gerr) {
			return nil
		}
		return fmt.Errorf("erase message %d of %s: %w", seq, stream, translate(resp.Error, wire.ErrConflict))
	}
	if !resp.Success {
		return fmt.Errorf("erase message %d of %s: not successful", seq, stream)
	}
	return nil
}

// notifyErase publishes the erasure notice session.EraseRecord(sid, upTo).
func (l *Log) notifyErase(ctx context.Context, sid string, upTo uint64) error {
	return l.notify(ctx, session.EraseRecord(sid, upTo), fmt.Sprintf("%s/erase/%s/%d", session.PurgeToken, sid, upTo))
}

var _ session.ErasureLedger = (*Archive)(nil)

// ledgerBucketName is the KV bucket of the ledger of erasures: a key per
// erased session (<LeaseBucket minus _LEASE>_ERASED, PI_ARCHIVE_ERASED).
func (a *Archive) ledgerBucketName() string { return a.cfg.Stream + "_ERASED" }

// RecordErasure writes the session's line of the ledger; see
// session.ErasureLedger.
func (a *Archive) RecordErasure(ctx context.Context, e wire.Erasure) error {
	return a.ledger.RecordErasure(ctx, e)
}

// Erasures returns every line of the ledger.
func (a *Archive) Erasures(ctx context.Context) ([]wire.Erasure, error) {
	return a.ledger.Erasures(ctx)
}

// Erased reads the session's line from the ledger's leader.
func (a *Archive) Erased(ctx context.Context, sid string) (bool, error) {
	return a.ledger.Erased(ctx, sid)
}

// ForgetErasure removes the session's line.
func (a *Archive) ForgetErasure(ctx context.Context, sid string) error {
	return a.ledger.ForgetErasure(ctx, sid)
}

// bucket opens one of the archive's buckets (name), creating it on first
// use with the archive's replicas, and keeps it in *kv.
func (a *Archive) bucket(ctx context.Context, kv *jetstream.KeyValue, name, what string) (jetstream.KeyValue, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return openBucket(ctx, a.js, kv, a.cfg.assets(), name, "", what)
}

// openBucket opens bucket name (with the replicas and logger of lc, placed
// in cluster unless it is ""), creating it on first use, and keeps it in
// *kv; the caller serializes.
func openBucket(ctx context.Context, js jetstream.JetStream, kv *jetstream.KeyValue, lc Config, name, cluster, what string) (jetstream.KeyValue, error) {
	if *kv != nil {
		return *kv, nil
	}
	lc.Bucket = name
	b, err := js.KeyValue(ctx, lc.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		bc := lc.bucketConfig()
		bc.Placement = placement(cluster)
		err = retryProvision(ctx, logger(lc), "bucket "+lc.Bucket, func(ctx context.Context) error {
			return ensureBucket(ctx, js, bc)
		})
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", what, lc.Bucket, err)
		}
		b, err = js.KeyValue(ctx, lc.Bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, lc.Bucket, translate(err, wire.ErrConflict))
	}
	*kv = b
	return b, nil
}

// EraseCopy erases from the log's stream the session's records at or
// below upTo and stored at or before before (zero: whatever their time),
// and the session's cursor keys from the log's bucket; notify publishes
// the erasure notice after them (with upTo the last record erased). It
// returns how many records it erased: none when they are gone already.
//
// It serves a cross-region deployment, where each region erases its own
// copy: a mirror region when its copy delivers the home's notice, or when
// the ledger of erasures names a session its copy still holds (the notice
// was lost with its home); notify is for the home's stream, whose Stores
// must drop the session.
func (l *Log) EraseCopy(ctx context.Context, sid string, upTo uint64, before time.Time, notify bool) (int, error) {
	if err := session.ValidSessionID(sid); err != nil {
		return 0, fmt.Errorf("erase %s: %w", sid, err)
	}
	recs, err := l.read(ctx, sid, 0)
	if errors.Is(err, wire.ErrNotFound) {
		recs, err = nil, nil
	}
	if err != nil {
		return 0, fmt.Errorf("erase %s from %s: %w", sid, l.cfg.Stream, err)
	}
	var seqs []uint64
	for _, r := range recs {
		if r.Seq <= upTo && (before.IsZero() || !r.Time.After(before)) {
			seqs = append(seqs, r.Seq)
		}
	}
	if len(seqs) > 0 {
		if err := l.eraseSeqs(ctx, seqs); err != nil {
			return 0, fmt.Errorf("erase %s from %s: %w", sid, l.cfg.Stream, err)
		}
	}
	// A session created again after the erasure keeps its cursors.
	if len(seqs) > 0 || before.IsZero() {
		if err := l.purgeCursors(ctx, sid); err != nil {
			return 0, fmt.Errorf("erase %s from %s: %w", sid, l.cfg.Stream, err)
		}
	}
	if notify && len(seqs) > 0 {
		if err := l.notifyErase(ctx, sid, seqs[len(seqs)-1]); err != nil {
			return 0, fmt.Errorf("erase %s from %s: notice: %w", sid, l.cfg.Stream, err)
		}
	}
	return len(seqs), nil
}
