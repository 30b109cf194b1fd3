//go:build linux

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// searchAll pages through every hit of q at base (limit 100 a page) and
// returns them in ranking order; an error for any answer but 200.
func searchAll(ctx context.Context, base, q string, minSeq uint64) ([]wire.SearchHit, error) {
	var out []wire.SearchHit
	cursor := ""
	for {
		v := url.Values{"q": {q}, "limit": {"100"}}
		if cursor != "" {
			v.Set("cursor", cursor)
		}
		if minSeq > 0 {
			v.Set("minSeq", fmt.Sprint(minSeq))
		}
		st, _, data, err := proctest.Do(ctx, proctest.ProbeClient, http.MethodGet, base+"/v1/search?"+v.Encode(), nil)
		if err != nil {
			return nil, err
		}
		if st != http.StatusOK {
			return nil, fmt.Errorf("search %q: %d %s", q, st, data)
		}
		var rep wire.SearchReply
		if err := json.Unmarshal(data, &rep); err != nil {
			return nil, err
		}
		out = append(out, rep.Hits...)
		if cursor = rep.Next; cursor == "" {
			return out, nil
		}
	}
}

// hitKeys are the hits as session/entry, in order; an error naming one
// that comes twice.
func hitKeys(hits []wire.SearchHit) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, h := range hits {
		k := h.SessionID + "/" + h.EntryID
		if seen[k] {
			return nil, fmt.Errorf("hit %s twice", k)
		}
		seen[k] = true
		out = append(out, k)
	}
	return out, nil
}

// TestSearchKill9: entries acknowledged while a node is killed with
// SIGKILL are all found by a search after it restarts on its data dir —
// the index on disk goes on from its checkpoint — and none twice.
func TestSearchKill9(t *testing.T) {
	skipShort(t)
	t.Parallel()
	nd := startSingleNode(t, "--snapshot-interval", "1s")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	hc := proctest.ProbeClient
	sid := testutil.SessionID(t)
	last, err := createSession(ctx, hc, []string{nd.base}, 0, sid, "/work/kill", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // acked, parent and last: the writer goroutine's, read by the test
	var acked []string
	parent := ""
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	write := func(i int) error {
		mu.Lock()
		defer mu.Unlock()
		id := fmt.Sprintf("k%05d", i)
		e := proctest.NewEntry(id, parent, fmt.Sprintf("saltword uniq%05d", i), time.Now())
		st, _, data, err := proctest.Do(ctx, hc, http.MethodPost, nd.base+"/v1/sessions/"+sid+"/entries", proctest.AppendBody(e))
		if err != nil || st != http.StatusOK {
			return fmt.Errorf("append %s: %d %v %s", id, st, err, data)
		}
		var wr proctest.WriteResult
		if err := json.Unmarshal(data, &wr); err != nil {
			return err
		}
		acked, parent, last = append(acked, id), id, wr.LastSeq
		return nil
	}
	for i := range 300 {
		if err := write(i); err != nil {
			t.Fatal(err)
		}
	}
	// Searched once before the kill: the index has been written to disk.
	if hits, err := searchAll(ctx, nd.base, "saltword", 0); err != nil || len(hits) != len(acked) {
		t.Fatalf("before the kill: %d hits (%v), want %d", len(hits), err, len(acked))
	}
	// A writer in flight when the node dies.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 300; ctx.Err() == nil; i++ {
			if write(i) != nil {
				return
			}
		}
	}()
	testutil.WaitFor(t, time.Minute, func() error {
		if n := count(); n < 400 {
			return fmt.Errorf("%d entries acknowledged", n)
		}
		return nil
	})
	nd.Kill()
	<-done // the writer has stopped: acked is the test's alone
	t.Logf("SIGKILL after %d acknowledged entries", len(acked))
	nd.Start(t)
	nd.waitReady(t)

	hits, err := searchAll(ctx, nd.base, "saltword", last)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := hitKeys(hits)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, k := range keys {
		found[strings.TrimPrefix(k, sid+"/")] = true
	}
	for _, id := range acked {
		if !found[id] {
			t.Fatalf("%s, acknowledged before the kill, is not found after the restart (%d hits)", id, len(hits))
		}
	}
	// At most the one append in flight at the kill is stored unacknowledged.
	if len(found) > len(acked)+1 {
		t.Fatalf("%d hits, %d entries acknowledged", len(found), len(acked))
	}
	// A word of one entry: exactly that entry.
	one, err := searchAll(ctx, nd.base, "uniq00399", 0)
	if err != nil || len(one) != 1 || one[0].EntryID != "k00399" {
		t.Fatalf("uniq00399: %+v %v", one, err)
	}
}

// TestSearchShardsCluster: three nodes over four shards, each holding
// two: every node answers a search with the same hits in the same order
// (its own shards from its indexes, the others from their holders); with
// a node killed, the survivors take its shards over and answer the same
// hits again once caught up.
func TestSearchShardsCluster(t *testing.T) {
	skipShort(t)
	t.Parallel()
	if testShards() > 1 {
		t.Skipf("starts its own store of 4 shards; PI_NODE_SHARDS=%d would give every node another count", testShards())
	}
	const shards = 4
	nodes := startEmbeddedClusterWith(t, 3, "--shards", fmt.Sprint(shards), "--hold", "2")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	heldByExactly(t, nodes, shards, 2, readyTimeout)
	hc := proctest.ProbeClient
	bases := make([]string, len(nodes))
	for i, nd := range nodes {
		bases[i] = nd.base
	}
	// Two sessions a shard, written through different nodes; the words
	// repeat so that hits rank by more than their ids.
	var want []string
	for i := range 2 * shards {
		sid := testutil.SessionID(t)
		for shard.Of(sid, shards) != i%shards {
			sid = testutil.SessionID(t)
		}
		if _, err := createSession(ctx, hc, bases, i, sid, fmt.Sprintf("/work/s%d", i), time.Now()); err != nil {
			t.Fatal(err)
		}
		parent := ""
		for j := range 3 {
			e := proctest.NewEntry(fmt.Sprintf("e%d", j), parent, strings.Repeat("deadlock ", 1+(i+j)%4)+fmt.Sprintf("shard%d", i%shards), time.Now())
			if _, err := appendRetry(ctx, hc, bases, i+j, sid, e); err != nil {
				t.Fatal(err)
			}
			parent = e.ID
			want = append(want, sid+"/"+e.ID)
		}
	}
	slices.Sort(want)
	same := func(nodes []*piNode) []string {
		t.Helper()
		var first []string
		testutil.WaitFor(t, 2*time.Minute, func() error {
			first = nil
			for _, nd := range nodes {
				hits, err := searchAll(ctx, nd.base, "deadlock", 0)
				if err != nil {
					return fmt.Errorf("%s: %w", nd.name, err)
				}
				keys, err := hitKeys(hits)
				if err != nil {
					return fmt.Errorf("%s: %w", nd.name, err)
				}
				sorted := slices.Sorted(slices.Values(keys))
				if !slices.Equal(sorted, want) {
					return fmt.Errorf("%s: %d hits, want %d", nd.name, len(keys), len(want))
				}
				if first == nil {
					first = keys
				} else if !slices.Equal(keys, first) {
					return fmt.Errorf("%s ranks the hits %v, %s %v", nd.name, keys, nodes[0].name, first)
				}
			}
			return nil
		})
		return first
	}
	before := same(nodes)
	// A filter on one shard's word: the hits of that shard only.
	for _, nd := range nodes {
		hits, err := searchAll(ctx, nd.base, "shard2", 0)
		if err != nil || len(hits) != 6 {
			t.Fatalf("%s: shard2: %d hits, %v", nd.name, len(hits), err)
		}
	}
	nodes[2].Kill()
	t.Logf("SIGKILL %s", nodes[2].name)
	heldByExactly(t, nodes[:2], shards, 2, 2*time.Minute)
	after := same(nodes[:2])
	if !slices.Equal(before, after) {
		t.Fatalf("after the takeover the hits rank %v, before %v", after, before)
	}
}
