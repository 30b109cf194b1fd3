package service_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
	"github.com/pifleet/sessionlog/internal/writer"
)

// importAll imports files concurrently and returns the highest sequence.
func importAll(t *testing.T, log session.Log, files [][]byte) uint64 {
	t.Helper()
	ctx := ctxT(t)
	var last atomic.Uint64
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range 16 {
		wg.Go(func() {
			for {
				k := int(next.Add(1)) - 1
				if k >= len(files) {
					return
				}
				// The test is of the Store's rebuild, not of the writer's
				// patience: on a machine this loaded (16 importers under
				// -race), a publish may go unanswered past the default 10 s
				// of retries (CI: 'no reply from JetStream in time').
				res, err := writer.Import(ctx, log, files[k], nil, writer.RetryPolicy{UnavailableFor: testutil.Scale(time.Minute)})
				if err != nil {
					t.Errorf("import %d: %v", k, err)
					return
				}
				for {
					old := last.Load()
					if res.LastSeq <= old || last.CompareAndSwap(old, res.LastSeq) {
						break
					}
				}
			}
		})
	}
	wg.Wait()
	return last.Load()
}

func testStoreRestart(t *testing.T, b backend) {
	sessions, entries := 10000, 20
	if testing.Short() {
		sessions = 1000
	}
	r := rand.New(rand.NewPCG(1, 2))
	files := make([][]byte, sessions)
	for k := range files {
		files[k] = genSession(t, r, entries)
	}
	start := time.Now()
	load := b.load
	if load == nil {
		load = func(t *testing.T, files [][]byte) uint64 { return importAll(t, b.log, files) }
	}
	last := load(t, files)
	t.Logf("imported %d sessions in %v", sessions, time.Since(start))
	start = time.Now()
	st1 := openStore(t, b)
	waitApplied(t, st1, last)
	_ = st1.Close()
	st2 := openStore(t, b) // a restart: rebuilt from the log alone
	waitApplied(t, st2, last)
	t.Logf("two stores rebuilt in %v", time.Since(start))
	if s := st2.Stats(); s.Sessions < sessions {
		t.Fatalf("restarted store holds %d sessions, want %d", s.Sessions, sessions)
	}
	for _, f := range files {
		id := string(f[bytes.Index(f, []byte(`"id":"`))+6:][:36])
		got := exportOf(t, st2, id)
		if !bytes.Equal(got, f) {
			t.Fatalf("session %s differs after restart", id)
		}
		if !bytes.Equal(exportOf(t, st1, id), got) {
			t.Fatalf("session %s differs between the stores", id)
		}
	}
}

func testEvictAndReload(t *testing.T, b backend) {
	ctx := ctxT(t)
	r := rand.New(rand.NewPCG(3, 4))
	files := make([][]byte, 40)
	total := 0
	for k := range files {
		files[k] = genSession(t, r, 10)
		total += len(files[k])
	}
	budget := int64(total / 4)
	st := store.New(b.feed, store.Options{Log: b.log, MemoryBudget: budget})
	if err := st.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	last := importAll(t, b.log, files)
	waitApplied(t, st, last)
	s := st.Stats()
	if s.Evictions == 0 || s.BytesHeld > budget {
		t.Fatalf("no eviction under budget %d: %+v", budget, s)
	}
	// An evicted session still lists, reloads on read, and takes appends.
	svc := &service.Service{Log: b.log, Store: st, Cursors: b.cursors}
	for _, f := range files {
		id := string(f[bytes.Index(f, []byte(`"id":"`))+6:][:36])
		if got := exportOf(t, st, id); !bytes.Equal(got, f) {
			t.Fatalf("reloaded session %s differs", id)
		}
	}
	if s := st.Stats(); s.Reloads == 0 {
		t.Fatal("no reload happened")
	}
	infos, _ := st.List(context.Background(), store.ListFilter{Limit: 1000})
	if len(infos) < len(files) {
		t.Fatalf("list shows %d sessions", len(infos))
	}
	// Name an evicted session: the catalog learns it without a reload.
	id := infos[0].SessionID
	res, err := svc.Append(ctx, id, wire.AppendRequest{Entries: raws(`{"type":"session_info","name":"  renamed  "}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitApplied(t, st, res.LastSeq)
	infos, _ = st.List(context.Background(), store.ListFilter{Name: "RENAMED"})
	if len(infos) != 1 || *infos[0].Name != "renamed" {
		t.Fatalf("name filter found %v", infos)
	}
}

// failingLog fails the n-th Append (counting from 1) with ErrUnavailable
// before storing anything.
type failingLog struct {
	session.Log
	n     int
	calls atomic.Int64
}

func (f *failingLog) Append(ctx context.Context, sid string, expect uint64, recs []session.Record) ([]uint64, error) {
	if int(f.calls.Add(1)) == f.n {
		return nil, fmt.Errorf("injected: %w", wire.ErrInvalid)
	}
	return f.Log.Append(ctx, sid, expect, recs)
}

func testChunkedImportAndPurge(t *testing.T, b backend) {
	ctx := ctxT(t)
	st := openStore(t, b)
	r := rand.New(rand.NewPCG(5, 6))
	big := genSession(t, r, 2500) // three atomic batches
	res, err := writer.Import(ctx, b.log, big, nil, writer.RetryPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	waitApplied(t, st, res.LastSeq)
	if got := exportOf(t, st, res.SessionID); !bytes.Equal(got, big) {
		t.Fatal("chunked import differs")
	}
	// The third batch fails: the import leaves nothing, in the log and in Stores.
	other := genSession(t, r, 2500)
	fl := &failingLog{Log: b.log, n: 3}
	_, err = writer.Import(ctx, fl, other, nil, writer.RetryPolicy{})
	if err == nil {
		t.Fatal("import with a failing batch succeeded")
	}
	id := string(other[bytes.Index(other, []byte(`"id":"`))+6:][:36])
	if _, err := b.log.Read(ctx, id, 0); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("a failed import left records: %v", err)
	}
	waitApplied(t, st, lastSeq(t, b))
	if err := st.View(ctx, id, func(*store.Doc) error { return nil }); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("the store still holds the purged import: %v", err)
	}
}

// silentLog never acknowledges an append: every publish times out, as on a
// node cut off from the stream's quorum.
type silentLog struct{ session.Log }

func (silentLog) Append(ctx context.Context, sid string, expect uint64, recs []session.Record) ([]uint64, error) {
	return nil, fmt.Errorf("append to %s: %w: %w", sid, wire.ErrUnavailable, context.DeadlineExceeded)
}

// TestGiveUpIsUnavailable: a write that stays unacknowledged past
// UnavailableFor (or Attempts) fails with ErrUnavailable only (HTTP 503),
// never with the attempts' DeadlineExceeded, which callers read as their
// own deadline (504).
func TestGiveUpIsUnavailable(t *testing.T) {
	ctx := ctxT(t)
	r := rand.New(rand.NewPCG(7, 8))
	data := genSession(t, r, 3)
	for _, pol := range []writer.RetryPolicy{
		{UnavailableFor: 20 * time.Millisecond, Backoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond},
		{Attempts: 3, Backoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond},
	} {
		_, err := writer.Import(ctx, silentLog{session.NewMemLog(1000, 1<<20)}, data, nil, pol)
		if !errors.Is(err, wire.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("policy %+v: %v; want ErrUnavailable and not DeadlineExceeded", pol, err)
		}
	}
}
