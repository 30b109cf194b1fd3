//go:build linux

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// TestExternalCluster covers issue item 2: pi-node with --nats-url against a
// separately started three-server nats-server cluster. Two pi-nodes, each
// connected to a different server, provision the R3 stream and bucket,
// read each other's writes with minSeq, and serve identical answers; both
// appending to one session at once exercises the CAS retry on a real R3
// stream (conflicts 10071/10164).
func TestExternalCluster(t *testing.T) {
	skipShort(t)
	t.Parallel()
	servers := startNATSCluster(t, 3)
	a := startExternalNode(t, "pi-a", servers[0].url)
	b := startExternalNode(t, "pi-b", servers[1].url)
	a.waitReady(t)
	b.waitReady(t)
	nodes := []*piNode{a, b}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Both report the external mode, the R3 stream, its leader (a server
	// name, ext1..3) and two followers with their lag.
	members := make([]*piNode, len(servers))
	for i, s := range servers {
		members[i] = &piNode{name: s.name}
	}
	checkStreamStatus(t, nodes, members, "external")

	// Writes through one node are read on the other with minSeq, both ways.
	var lastSeq uint64
	var sids []string
	for i, writer := range nodes {
		sid := testutil.SessionID(t)
		sids = append(sids, sid)
		seq, err := createSession(ctx, proctest.ProbeClient, []string{writer.base}, 0, sid, "/ext", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		lastSeq = max(lastSeq, seq)
		own := seq
		parent := ""
		for k := range 5 {
			e := proctest.NewEntry(fmt.Sprintf("x%d-%02d", i, k), parent, "via "+writer.name, time.Now())
			wr, err := appendRetry(ctx, proctest.ProbeClient, []string{writer.base}, 0, sid, e)
			if err != nil {
				t.Fatal(err)
			}
			parent, lastSeq, own = e.ID, max(lastSeq, wr.LastSeq), wr.LastSeq
		}
		for _, path := range []string{"", "/export", "/tree", "/entries", "/context?format=llm"} {
			sameOnAll(t, nodes, "/v1/sessions/"+sid+path, floor(own, lastSeq))
		}
	}

	// Concurrent appends to one session through both nodes, parents left
	// to the server (each follows the leaf): every one lands exactly once,
	// in one chain, whichever node's CAS lost.
	sid := sids[0]
	const perNode = 15
	var wg sync.WaitGroup
	errs := make(chan error, len(nodes))
	var mu sync.Mutex
	var sidLast uint64 // sid's own last sequence: with shards, of its shard
	for i, nd := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range perNode {
				body, _ := json.Marshal(map[string]any{"entries": []any{map[string]any{
					"type": "message", "id": fmt.Sprintf("c%d-%02d", i, k),
					"message": map[string]any{"role": "user", "content": "concurrent", "timestamp": time.Now().UnixMilli()},
				}}})
				st, _, data, err := proctest.Do(ctx, proctest.ProbeClient, http.MethodPost, nd.base+"/v1/sessions/"+sid+"/entries", body)
				if err != nil || st != http.StatusOK {
					errs <- fmt.Errorf("%s: append %d: %d %v %s", nd.name, k, st, err, data)
					return
				}
				var wr proctest.WriteResult
				_ = json.Unmarshal(data, &wr)
				mu.Lock()
				lastSeq, sidLast = max(lastSeq, wr.LastSeq), max(sidLast, wr.LastSeq)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	body := sameOnAll(t, nodes, "/v1/sessions/"+sid+"/entries?limit=1000", floor(sidLast, lastSeq))
	var got struct {
		Entries []struct {
			Entry struct {
				ID       string  `json:"id"`
				ParentID *string `json:"parentId"`
			} `json:"entry"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if want := 5 + 2*perNode; len(got.Entries) != want {
		t.Fatalf("%d entries, want %d: %s", len(got.Entries), want, body)
	}
	// Defaulted parents follow the leaf even under contention: one chain.
	for k := 1; k < len(got.Entries); k++ {
		e, prev := got.Entries[k].Entry, got.Entries[k-1].Entry
		if e.ParentID == nil || *e.ParentID != prev.ID {
			t.Errorf("entry %d (%s) has parent %v, want %s: the chain forked", k, e.ID, e.ParentID, prev.ID)
		}
	}
	for _, path := range []string{"/export", "/tree"} {
		sameOnAll(t, nodes, "/v1/sessions/"+sid+path, floor(sidLast, lastSeq))
	}
	sameOnAll(t, nodes, catalogPath, lastSeq)
}
