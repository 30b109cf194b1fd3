package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/jetstream/embedded/embeddedtest"
	"github.com/pifleet/sessionlog/internal/jetstream/jstest"
	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// countingCursors counts cursor reads.
type countingCursors struct {
	session.Cursors
	gets atomic.Int64
}

func (c *countingCursors) Get(ctx context.Context, sid, client string) (session.CursorEntry, error) {
	c.gets.Add(1)
	return c.Cursors.Get(ctx, sid, client)
}

// noTimeout is the waits for the Store (Service.OwnWait, ParentWait) in the
// tests of what they save: long enough that the Store always applies the
// write first, so the count of log reads depends on the mechanism alone,
// not on how fast a loaded machine applies (with the defaults, 20 ms and
// 5 ms, a Store slowed by the race detector at load 10 made 40 of 640
// appends read the log once). The defaults' cost and gain are a matter of
// latency, measured in BenchmarkAppendChain.
var noTimeout = testutil.Scale(time.Minute)

// Workers appending entry after entry through one node (16 at once), each naming the
// previous one as its parent (what the Go client and pi-style clients
// send), makes no log read for a parent this node itself acknowledged a
// moment ago, and no cursor read when the parent is named: the node waits
// for its Store to apply its own write instead.
func TestOwnWritesNeedNoLogRead(t *testing.T) {
	b := jetStreamBackend(t, true)
	log := &countingLog{Log: b.log}
	cur := &countingCursors{Cursors: b.cursors}
	svc := &service.Service{Log: log, Store: openStore(t, b), Cursors: cur, OwnWait: noTimeout}
	ctx := ctxT(t)
	const writers, n = 16, 40
	sids, leaves := make([]string, writers), make([]string, writers)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			created, err := svc.Create(ctx, wire.CreateRequest{Entries: raws(`{"type":"message","id":"root","message":{"role":"user","content":"q"}}`)})
			if err != nil {
				errs <- err
				return
			}
			sids[w] = created.SessionID
			leaf, err := appendChain(ctx, func(int) *service.Service { return svc }, sids[w], "w", n)
			if err != nil {
				errs <- fmt.Errorf("writer %d: %w", w, err)
				return
			}
			leaves[w] = leaf
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Without the wait a third of them read the log.
	if r := log.reads.Load(); r > 0 {
		t.Errorf("%d log reads for %d appends of this node's own chains", r, writers*n)
	}
	if g := cur.gets.Load(); g != 0 {
		t.Errorf("%d cursor reads for appends that name their parent", g)
	}
	for w, sid := range sids {
		c, err := b.cursors.Get(ctx, sid, "w")
		if err != nil || c.LeafID != leaves[w] {
			t.Errorf("cursor after the appends: %+v %v, want leaf %s", c, err, leaves[w])
		}
	}
	t.Logf("%d appends by %d writers: %d log reads, %d cursor reads", writers*n, writers, log.reads.Load(), cur.gets.Load())
}

// TestWritersMovingBetweenNodes: writers whose appends alternate between
// two nodes (any worker picks any session up) name parents the other node
// wrote a moment ago. Each node waits for its Store to apply the parent
// rather than reading the session from the log.
func TestWritersMovingBetweenNodes(t *testing.T) {
	b := jetStreamBackend(t, true)
	log := &countingLog{Log: b.log}
	nodes := []*service.Service{
		{Log: log, Store: openStore(t, b), Cursors: b.cursors, OwnWait: noTimeout, ParentWait: noTimeout},
		{Log: log, Store: openStore(t, b), Cursors: b.cursors, OwnWait: noTimeout, ParentWait: noTimeout},
	}
	ctx := ctxT(t)
	const writers, n = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			created, err := nodes[0].Create(ctx, wire.CreateRequest{Entries: raws(`{"type":"message","id":"root","message":{"role":"user","content":"q"}}`)})
			if err != nil {
				errs <- err
				return
			}
			if _, err := appendChain(ctx, func(k int) *service.Service { return nodes[(k+1)%2] }, created.SessionID, "", n); err != nil {
				errs <- fmt.Errorf("writer %d: %w", w, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Without the wait 80-92 of the 320 appends read the log here.
	if r := log.reads.Load(); r > 0 {
		t.Errorf("%d log reads for %d appends alternating between two nodes", r, writers*n)
	}
	t.Logf("%d appends by %d writers over 2 nodes: %d log reads", writers*n, writers, log.reads.Load())
}

// appendChain appends n entries to sid one by one, each naming the one
// before as its parent (the first: "root"), the k-th through node(k), and
// returns the last id.
func appendChain(ctx context.Context, node func(k int) *service.Service, sid, client string, n int) (string, error) {
	parent := "root"
	for k := range n {
		id := fmt.Sprintf("e%03d", k)
		raw, _ := json.Marshal(map[string]any{"type": "message", "id": id, "parentId": parent, "message": map[string]any{"role": "user", "content": "x"}})
		res, err := node(k).Append(ctx, sid, wire.AppendRequest{Client: client, Entries: []json.RawMessage{raw}})
		if err != nil {
			return "", fmt.Errorf("append %d: %w", k, err)
		}
		if res.Entries[0].ID != id {
			return "", fmt.Errorf("append %d stored %s", k, res.Entries[0].ID)
		}
		parent = id
	}
	return parent, nil
}

// BenchmarkAppendChain: one writer appending entry after entry, each naming
// the previous one as its parent, through a node with the default waits for
// its Store (own-wait) and with none (log-read: every append whose parent
// the Store has not applied yet reads the session from the log): the
// latency the waits buy, and how many appends still read the log.
func BenchmarkAppendChain(b *testing.B) {
	s := embeddedtest.RunServer(b, true)
	l, cur := jstest.Backend(b, 1, s.ClientURL())
	for _, c := range []struct {
		name string
		wait time.Duration
	}{{"own-wait", 0}, {"log-read", time.Nanosecond}} {
		b.Run(c.name, func(b *testing.B) {
			log := &countingLog{Log: l}
			st := store.New(l, store.Options{Log: l})
			if err := st.Open(context.Background()); err != nil {
				b.Fatal(err)
			}
			defer func() { _ = st.Close() }()
			svc := &service.Service{Log: log, Store: st, Cursors: cur, OwnWait: c.wait, ParentWait: c.wait}
			ctx := context.Background()
			created, err := svc.Create(ctx, wire.CreateRequest{Entries: raws(`{"type":"message","id":"root","message":{"role":"user","content":"q"}}`)})
			if err != nil {
				b.Fatal(err)
			}
			parent := "root"
			k := 0
			for b.Loop() {
				id := fmt.Sprintf("e%06d", k)
				k++
				raw, _ := json.Marshal(map[string]any{"type": "message", "id": id, "parentId": parent, "message": map[string]any{"role": "user", "content": "x"}})
				if _, err := svc.Append(ctx, created.SessionID, wire.AppendRequest{Client: "w", Entries: []json.RawMessage{raw}}); err != nil {
					b.Fatal(err)
				}
				parent = id
			}
			b.ReportMetric(float64(log.reads.Load())/float64(k), "log-reads/append")
		})
	}
}
