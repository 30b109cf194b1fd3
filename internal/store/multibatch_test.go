package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/enginetest"
	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/jetstream/embedded/embeddedtest"
	"github.com/pifleet/sessionlog/internal/jetstream/jstest"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
	"github.com/pifleet/sessionlog/internal/writer"
)

// Sessions written in several atomic batches (imports and forks beyond
// MaxBatch) are hidden until whole, on MemLog and on the JetStream adapter,
// both with batches of 10 records.

const smallBatch = 10

type logFeed interface {
	session.Log
	session.Feed
}

func multiBatchLogs() map[string]func(t *testing.T) logFeed {
	return map[string]func(t *testing.T) logFeed{
		"Mem": func(t *testing.T) logFeed { return session.NewMemLog(smallBatch, 1<<20) },
		"JetStream": func(t *testing.T) logFeed {
			cfg := jetstream.NewConfig()
			cfg.MaxBatch = smallBatch
			l, _ := jstest.BackendConfig(t, cfg, embeddedtest.RunServer(t, false).ClientURL())
			return l
		},
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func open(t *testing.T, feed session.Feed, opts store.Options) *store.Store {
	t.Helper()
	st := store.New(feed, opts)
	if err := st.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func waitApplied(t *testing.T, st *store.Store, seq uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := st.WaitFor(ctx, seq); err != nil {
		t.Fatal(err)
	}
}

func lastSeq(t *testing.T, f session.Feed) uint64 {
	t.Helper()
	last, err := f.LastSeq(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return last
}

// hookLog calls after once each Append has stored its records.
type hookLog struct {
	session.Log
	after func(seqs []uint64)
}

func (h hookLog) Append(ctx context.Context, sid string, expect uint64, recs []session.Record) ([]uint64, error) {
	seqs, err := h.Log.Append(ctx, sid, expect, recs)
	if err == nil {
		h.after(seqs)
	}
	return seqs, err
}

// dyingLog stores the first n Appends, then fails like a node that died.
type dyingLog struct {
	session.Log
	n     int64
	calls atomic.Int64
}

func (d *dyingLog) Append(ctx context.Context, sid string, expect uint64, recs []session.Record) ([]uint64, error) {
	if d.calls.Add(1) > d.n {
		return nil, fmt.Errorf("injected death: %w", wire.ErrUnavailable)
	}
	return d.Log.Append(ctx, sid, expect, recs)
}

var quick = writer.RetryPolicy{Attempts: 3, Backoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, UnavailableFor: 10 * time.Millisecond}

// observer checks every reader of a Store for one session: each look must
// find it absent or complete (entries of them), never partial.
type observer struct {
	st       *store.Store
	log      session.Log
	sid      string
	entries  int
	base     int // other sessions the Store holds
	absent   atomic.Int64
	complete atomic.Int64
}

func (o *observer) look(ctx context.Context) error {
	seen := func(n int, how string) error {
		switch n {
		case 0:
			o.absent.Add(1)
		case o.entries:
			o.complete.Add(1)
		default:
			return fmt.Errorf("%s: %d of %d entries", how, n, o.entries)
		}
		return nil
	}
	n := 0
	err := o.st.View(ctx, o.sid, func(d *store.Doc) error { n = d.Tree.Len(); return nil })
	if err != nil && !errors.Is(err, wire.ErrNotFound) {
		return err
	}
	if err := seen(n, "View"); err != nil {
		return err
	}
	n = 0
	_, err = o.st.ViewOrRead(ctx, o.log, o.sid, func(d *store.Doc) error { n = d.Tree.Len(); return nil })
	if err != nil && !errors.Is(err, wire.ErrNotFound) {
		return err
	}
	if err := seen(n, "ViewOrRead"); err != nil {
		return err
	}
	infos, _ := o.st.List(context.Background(), store.ListFilter{Limit: 1000})
	n = 0
	for _, in := range infos {
		if in.SessionID == o.sid {
			n = in.EntryCount
		}
	}
	if err := seen(n, "List"); err != nil {
		return err
	}
	s := o.st.Stats()
	if s.Sessions != o.base && s.Sessions != o.base+1 || s.Sessions == o.base+1 && s.Pending != 0 {
		return fmt.Errorf("Stats: %d sessions, %d pending (other sessions: %d)", s.Sessions, s.Pending, o.base)
	}
	return nil
}

// TestMultiBatchNeverPartial: while a 400-entry import goes in 41 batches,
// every reader finds it absent or complete: after each batch (once the
// Store applied it) and by readers polling all along. A memory budget
// evicts the other sessions meanwhile; the pending one is kept.
func TestMultiBatchNeverPartial(t *testing.T) {
	for name, newLog := range multiBatchLogs() {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			l := newLog(t)
			for k := range 3 {
				if _, err := writer.Import(ctx, l, enginetest.SessionFile(testutil.SessionID(t), 30, uint32(100+k)), nil, writer.RetryPolicy{}); err != nil {
					t.Fatal(err)
				}
			}
			st := open(t, l, store.Options{Log: l, MemoryBudget: 4 << 10})
			waitApplied(t, st, lastSeq(t, l))
			sid := testutil.SessionID(t)
			o := &observer{st: st, log: l, sid: sid, entries: 400, base: 3}

			stop := make(chan struct{})
			var wg sync.WaitGroup
			var failed atomic.Value
			for range 2 {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						if err := o.look(ctx); err != nil {
							failed.CompareAndSwap(nil, err)
							return
						}
					}
				})
			}
			var stepErr error
			// What the Store showed after each batch the hook saw, by the
			// batch's last sequence. Not every batch: one whose ack was late
			// (JetStream under load: "no reply in time") is sent again and
			// reconciled by the writer without a successful Append.
			type step struct {
				last    uint64
				pending int
			}
			var steps []step
			hl := hookLog{Log: l, after: func(seqs []uint64) {
				if stepErr != nil {
					return
				}
				if stepErr = st.WaitFor(ctx, seqs[len(seqs)-1]); stepErr == nil {
					stepErr = o.look(ctx)
				}
				steps = append(steps, step{seqs[len(seqs)-1], st.Stats().Pending})
			}}
			res, err := writer.Import(ctx, hl, enginetest.SessionFile(sid, 400, 1), nil, writer.RetryPolicy{})
			close(stop)
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if stepErr != nil {
				t.Fatal(stepErr)
			}
			if err, _ := failed.Load().(error); err != nil {
				t.Fatal(err)
			}
			waitApplied(t, st, res.LastSeq)
			if err := o.look(ctx); err != nil {
				t.Fatal(err)
			}
			if s := st.Stats(); s.Sessions != 4 || s.Pending != 0 {
				t.Fatalf("after the import: %d sessions, %d pending", s.Sessions, s.Pending)
			}
			// Pending after every batch but the last, as far as the hook saw.
			seen := 0
			for _, sp := range steps {
				if sp.last < res.LastSeq {
					if sp.pending != 1 {
						t.Fatalf("after the batch ending at %d of %d: %d pending, want 1", sp.last, res.LastSeq, sp.pending)
					}
					seen++
				}
			}
			if seen == 0 {
				t.Fatalf("no batch before the last seen of %d: the test does not exercise the pending state", len(steps))
			}
			var n int
			if err := st.View(ctx, sid, func(d *store.Doc) error { n = d.Tree.Len(); return nil }); err != nil || n != 400 {
				t.Fatalf("complete import: %d entries, %v", n, err)
			}
			if s := st.Stats(); s.Evictions == 0 {
				t.Fatal("the memory budget evicted nothing: the test does not exercise eviction")
			}
			t.Logf("observations: %d absent, %d complete", o.absent.Load(), o.complete.Load())
		})
	}
}

// TestAbandonedImportPurged: an import whose writer dies between two
// batches stays hidden on every Store, and once its last record is older
// than AbandonedAfter one of the two Stores claims it, purges it and
// counts it. A complete multi-batch session is never touched.
func TestAbandonedImportPurged(t *testing.T) {
	for name, newLog := range multiBatchLogs() {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			l := newLog(t)
			opts := store.Options{Log: l, Writer: l, AbandonedAfter: 300 * time.Millisecond}
			stores := []*store.Store{open(t, l, opts), open(t, l, opts)}

			kept := testutil.SessionID(t)
			if _, err := writer.Import(ctx, l, enginetest.SessionFile(kept, 45, 2), nil, writer.RetryPolicy{}); err != nil {
				t.Fatal(err)
			}
			sid := testutil.SessionID(t)
			if _, err := writer.Import(ctx, &dyingLog{Log: l, n: 2}, enginetest.SessionFile(sid, 45, 1), nil, quick); !errors.Is(err, wire.ErrUnavailable) {
				t.Fatalf("dying import: %v", err)
			}
			prefix, err := l.Read(ctx, sid, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range stores {
				waitApplied(t, st, prefix[len(prefix)-1].Seq)
				o := &observer{st: st, log: l, sid: sid, entries: 45, base: 1}
				if err := o.look(ctx); err != nil || o.complete.Load() != 0 {
					t.Fatalf("the prefix shows: %v", err)
				}
				if s := st.Stats(); s.Pending != 1 {
					t.Fatalf("pending %d; want 1", s.Pending)
				}
			}
			// The bound runs from the leftover's last record, as the log
			// stamped it (the waits above take part of it already).
			start := prefix[len(prefix)-1].Time
			testutil.WaitFor(t, 10*time.Second, testutil.Awaiting("the leftover purged on both Stores", func() error {
				if _, err := l.Read(ctx, sid, 0); !errors.Is(err, wire.ErrNotFound) {
					return fmt.Errorf("log read: %v", err)
				}
				for _, st := range stores {
					if err := st.CatchUp(ctx); err != nil {
						return err
					}
					if p := st.Stats().Pending; p != 0 {
						return fmt.Errorf("%d pending", p)
					}
				}
				return nil
			}))
			// Not before the bound: measured from the last record's time,
			// with 50 ms of slack for the clocks of the log and the test.
			if d := time.Since(start); d < 250*time.Millisecond {
				t.Fatalf("purged %v after the last record, before the bound (300 ms)", d)
			}
			if n := stores[0].Stats().AbandonedPurged + stores[1].Stats().AbandonedPurged; n != 1 {
				t.Fatalf("%d cleanups counted; want exactly 1", n)
			}
			for _, st := range stores {
				var n int
				if err := st.View(ctx, kept, func(d *store.Doc) error { n = d.Tree.Len(); return nil }); err != nil || n != 45 {
					t.Fatalf("the complete multi-batch session: %d entries, %v", n, err)
				}
			}
			t.Logf("purged %v after the leftover's last record", time.Since(start))
		})
	}
}

// ackLostLog stores the first abandonment marker it is given and answers
// as if its ack was lost (a stream leader stepping down mid-publish, as
// pi-node's leader balancing over shards does): the claim landed, the
// claimer was not told.
type ackLostLog struct {
	session.Log
	lost atomic.Bool
}

func (a *ackLostLog) Append(ctx context.Context, sid string, expect uint64, recs []session.Record) ([]uint64, error) {
	seqs, err := a.Log.Append(ctx, sid, expect, recs)
	if err == nil && len(recs) == 1 && recs[0].IsAbandon() && a.lost.CompareAndSwap(false, true) {
		return nil, fmt.Errorf("injected lost ack: %w", wire.ErrUnavailable)
	}
	return seqs, err
}

// TestAbandonedClaimAckLost: a Store whose claim was stored but not
// acknowledged still counts and logs the cleanup as its own (its marker is
// in the log; no other node will count it), and purges the leftover.
func TestAbandonedClaimAckLost(t *testing.T) {
	for name, newLog := range multiBatchLogs() {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			l := newLog(t)
			sid := testutil.SessionID(t)
			if _, err := writer.Import(ctx, &dyingLog{Log: l, n: 2}, enginetest.SessionFile(sid, 45, 1), nil, quick); !errors.Is(err, wire.ErrUnavailable) {
				t.Fatalf("dying import: %v", err)
			}
			logs := &testutil.SyncBuffer{}
			st := open(t, l, store.Options{Log: l, Writer: &ackLostLog{Log: l}, AbandonedAfter: 200 * time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(logs, nil))})
			testutil.WaitFor(t, 10*time.Second, testutil.Awaiting("the leftover purged", func() error {
				if _, err := l.Read(ctx, sid, 0); !errors.Is(err, wire.ErrNotFound) {
					return fmt.Errorf("log read: %v", err)
				}
				if err := st.CatchUp(ctx); err != nil {
					return err
				}
				if p := st.Stats().Pending; p != 0 {
					return fmt.Errorf("%d pending", p)
				}
				return nil
			}))
			if n := st.Stats().AbandonedPurged; n != 1 {
				t.Fatalf("%d cleanups counted; want 1 (the marker in the log is this Store's)\n%s", n, logs)
			}
			if !strings.Contains(logs.String(), "removing an abandoned multi-batch session") {
				t.Fatalf("the cleanup is not logged:\n%s", logs)
			}
		})
	}
}

// TestClaimedLeftoverPurged: a node that claimed an abandoned session and
// died before purging it leaves a marker; the others purge it once the
// marker is older than the bound, and do not count it as theirs.
func TestClaimedLeftoverPurged(t *testing.T) {
	ctx := ctxT(t)
	l := session.NewMemLog(smallBatch, 1<<20)
	sid := testutil.SessionID(t)
	if _, err := writer.Import(ctx, &dyingLog{Log: l, n: 2}, enginetest.SessionFile(sid, 45, 1), nil, quick); err == nil {
		t.Fatal("dying import succeeded")
	}
	recs, err := l.Read(ctx, sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	last := recs[len(recs)-1].Seq
	if _, err := l.Append(ctx, sid, last, []session.Record{session.AbandonRecord(last, "")}); err != nil {
		t.Fatal(err)
	}
	st := open(t, l, store.Options{Log: l, Writer: l, AbandonedAfter: 200 * time.Millisecond})
	testutil.WaitFor(t, 10*time.Second, testutil.Awaiting("the claimed leftover purged", func() error {
		if _, err := l.Read(ctx, sid, 0); !errors.Is(err, wire.ErrNotFound) {
			return fmt.Errorf("log read: %v", err)
		}
		if err := st.CatchUp(ctx); err != nil {
			return err
		}
		if p := st.Stats().Pending; p != 0 {
			return fmt.Errorf("%d pending", p)
		}
		return nil
	}))
	if n := st.Stats().AbandonedPurged; n != 0 {
		t.Fatalf("counted %d; the claim was another node's", n)
	}
}

// TestSnapshotMidImport: a Store closed (snapshot written) while an import
// is half done restores to the same hidden state, applies the rest when
// it comes, and a later snapshot holds it whole; the sessions created
// after the import's header are neither lost nor doubled.
func TestSnapshotMidImport(t *testing.T) {
	for name, newLog := range multiBatchLogs() {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			l := newLog(t)
			dir := t.TempDir()
			before, after := testutil.SessionID(t), testutil.SessionID(t)
			files := map[string][]byte{before: enginetest.SessionFile(before, 5, 10), after: enginetest.SessionFile(after, 5, 11)}
			if _, err := writer.Import(ctx, l, files[before], nil, writer.RetryPolicy{}); err != nil {
				t.Fatal(err)
			}
			sid := testutil.SessionID(t)
			files[sid] = enginetest.SessionFile(sid, 45, 1)
			if _, err := writer.Import(ctx, &dyingLog{Log: l, n: 2}, files[sid], nil, quick); err == nil {
				t.Fatal("dying import succeeded")
			}
			if _, err := writer.Import(ctx, l, files[after], nil, writer.RetryPolicy{}); err != nil {
				t.Fatal(err)
			}

			check := func(st *store.Store, whole bool) {
				t.Helper()
				waitApplied(t, st, lastSeq(t, l))
				for id, file := range files {
					var got []byte
					err := st.View(ctx, id, func(d *store.Doc) error { got = d.Tree.AppendJSONL(nil); return nil })
					switch {
					case id == sid && !whole:
						if !errors.Is(err, wire.ErrNotFound) {
							t.Fatalf("the half import shows: %v", err)
						}
					case err != nil:
						t.Fatalf("session %s: %v", id, err)
					case !bytes.Equal(got, file):
						t.Fatalf("session %s differs after the restore", id)
					}
				}
				want := store.Stats{Sessions: 2, Pending: 1}
				if whole {
					want = store.Stats{Sessions: 3}
				}
				if s := st.Stats(); s.Sessions != want.Sessions || s.Pending != want.Pending {
					t.Fatalf("%d sessions, %d pending; want %d, %d", s.Sessions, s.Pending, want.Sessions, want.Pending)
				}
			}
			st := store.New(l, store.Options{Log: l, SnapshotDir: dir})
			if err := st.Open(ctx); err != nil {
				t.Fatal(err)
			}
			check(st, false)
			if err := st.Close(); err != nil { // writes the snapshot
				t.Fatal(err)
			}
			st = store.New(l, store.Options{Log: l, SnapshotDir: dir})
			if err := st.Open(ctx); err != nil {
				t.Fatal(err)
			}
			check(st, false)
			if _, err := writer.Import(ctx, l, files[sid], nil, writer.RetryPolicy{}); err != nil {
				t.Fatalf("completing the import: %v", err)
			}
			check(st, true)
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			st = open(t, l, store.Options{Log: l, SnapshotDir: dir})
			check(st, true)
		})
	}
}
