package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/session"
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

// Workers appending entry after entry through one node (16 at once), each naming the
// previous one as its parent (what the Go client and pi-style clients
// send), makes no log read for a parent this node itself acknowledged a
// moment ago, and no cursor read when the parent is named: the node waits
// for its Store to apply its own write instead.
func TestOwnWritesNeedNoLogRead(t *testing.T) {
	b := jetStreamBackend(t, true)
	log := &countingLog{Log: b.log}
	cur := &countingCursors{Cursors: b.cursors}
	svc := &service.Service{Log: log, Store: openStore(t, b), Cursors: cur}
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
	// A Store slower than the wait (20 ms) on a loaded machine may still
	// send one to the log now and then; without the wait a third of them did.
	if r := log.reads.Load(); r > writers*n/20 {
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
		{Log: log, Store: openStore(t, b), Cursors: b.cursors},
		{Log: log, Store: openStore(t, b), Cursors: b.cursors},
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
	// Without the wait (parentWait 0) 80-92 of the 320 appends read the
	// log here; with it 1-22, and 44 once under .ci/run's race-detector
	// load, where a Store can take longer than the wait (5 ms) to apply a
	// parent. A sixth (53) tells them apart.
	if r := log.reads.Load(); r > writers*n/6 {
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
