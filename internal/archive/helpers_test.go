package archive_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/archive"
	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/jetstream/embedded/embeddedtest"
	"github.com/pifleet/sessionlog/internal/jetstream/jstest"
	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// fixture is one node on a real JetStream server: the log (with a short
// dedupe window, so restores need not wait two minutes), the archive, a
// Store, the Service that writes, and an Archiver with a settable clock.
type fixture struct {
	t     *testing.T
	urls  []string
	conn  *jetstream.Conn
	cfg   jetstream.Config
	log   *jetstream.Log
	arch  *jetstream.Archive
	store *store.Store
	svc   *service.Service
	clock *clock
	a     *archive.Archiver
}

// clock is the Archiver's: real time plus an offset, so a test can make
// sessions look idle without waiting, or stopped at a given time.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
	fixed  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.fixed.IsZero() {
		return c.fixed
	}
	return time.Now().Add(c.offset)
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

func (c *clock) stop(at time.Time) {
	c.mu.Lock()
	c.fixed = at
	c.mu.Unlock()
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	srv := embeddedtest.RunServer(t, false)
	return newNode(t, "n1", 1, []string{srv.ClientURL()}, func(*jetstream.ArchiveConfig) {})
}

// newNode wires a node on the servers at urls; tune adjusts the archive.
func newNode(t *testing.T, name string, replicas int, urls []string, tune func(*jetstream.ArchiveConfig)) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := &fixture{t: t, urls: urls, conn: jstest.Connect(t, urls...), cfg: jetstream.NewConfig(), clock: &clock{}}
	f.cfg.Replicas = replicas
	f.cfg.Duplicates = 100 * time.Millisecond
	if err := jetstream.Provision(ctx, f.conn.JS, f.cfg); err != nil {
		t.Fatal(err)
	}
	f.log = jetstream.NewLog(f.conn.JS, f.cfg)
	cursors, err := jetstream.NewCursors(ctx, f.conn.JS, f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	acfg := jetstream.NewArchiveConfig(f.cfg)
	tune(&acfg)
	f.arch = jetstream.NewArchive(f.log, acfg)
	f.store = f.newStore()
	f.svc = &service.Service{Log: f.log, Store: f.store, Cursors: cursors}
	f.a = archive.New(f.store, f.log, f.arch, archive.Options{Node: name, Now: f.clock.Now, Workers: 4})
	return f
}

// newStore opens another Store on the log, as another node would.
func (f *fixture) newStore() *store.Store {
	f.t.Helper()
	st := store.New(f.log, store.Options{})
	if err := st.Open(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { st.Close() })
	return st
}

// create stores a session of n chained message entries and waits until
// the fixture's Store has it.
func (f *fixture) create(n int) wire.WriteResult {
	f.t.Helper()
	entries := make([]json.RawMessage, n)
	for i := range entries {
		entries[i] = entryJSON(fmt.Sprintf("question %d", i))
	}
	res, err := f.svc.Create(context.Background(), wire.CreateRequest{Entries: entries})
	if err != nil {
		f.t.Fatal(err)
	}
	f.wait(f.store, res.LastSeq)
	return res
}

// appendOne appends one entry and waits for the Store.
func (f *fixture) appendOne(sid, text string) wire.WriteResult {
	f.t.Helper()
	res, err := f.svc.Append(context.Background(), sid, wire.AppendRequest{Entries: []json.RawMessage{entryJSON(text)}})
	if err != nil {
		f.t.Fatalf("append to %s: %v", sid, err)
	}
	f.wait(f.store, res.LastSeq)
	return res
}

// entryJSON is a user message entry for Create and Append.
func entryJSON(text string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"message","message":{"role":"user","content":%q}}`, text))
}

func (f *fixture) wait(st *store.Store, seq uint64) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := st.WaitFor(ctx, seq); err != nil {
		f.t.Fatal(err)
	}
}

// export returns the session's JSONL from the fixture's Store.
func (f *fixture) export(st *store.Store, sid string) string {
	f.t.Helper()
	svc := service.Service{Log: f.log, Store: st}
	data, _, err := svc.Export(context.Background(), sid)
	if err != nil {
		f.t.Fatalf("export %s: %v", sid, err)
	}
	return string(data)
}

// logEnd is the log's last sequence: waiting for it makes a Store current
// with everything written so far (purge notices included).
func (f *fixture) logEnd() uint64 {
	f.t.Helper()
	last, err := f.log.LastSeq(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return last
}

// restore restores sid, retrying while the log's dedupe window (100 ms
// here; the Archiver's clock is ahead, so only the server's counts) still
// remembers its ids.
func (f *fixture) restore(sid string) wire.ImportResult {
	f.t.Helper()
	var res wire.ImportResult
	var err error
	testutil.WaitFor(f.t, 10*time.Second, func() error {
		res, err = f.a.Restore(context.Background(), sid)
		var tr *archive.TooRecentError
		if errors.As(err, &tr) {
			return fmt.Errorf("restore outside the dedupe window: %w", err)
		}
		return nil
	})
	if err != nil {
		f.t.Fatalf("restore %s: %v", sid, err)
	}
	return res
}
