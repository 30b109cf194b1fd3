//go:build linux

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/testutil"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// waitAllApplied waits until every node's Store has applied the stream's
// last sequence (each shard's, with shards), and returns it (the highest).
func waitAllApplied(t *testing.T, nodes []*piNode) uint64 {
	t.Helper()
	var ends []uint64
	testutil.WaitFor(t, readyTimeout, testutil.Awaiting("every node applied the log's last sequence", func() error {
		var sts []nodeStatus
		for _, nd := range nodes {
			st, err := status(nd.base)
			if err != nil {
				return fmt.Errorf("%s: %w", nd.name, err)
			}
			ends = maxEnds(ends, st.logEnds())
			sts = append(sts, st)
		}
		for i, st := range sts {
			if err := st.lacks(ends); err != nil {
				return fmt.Errorf("%s %w", nodes[i].name, err)
			}
		}
		return nil
	}))
	return slices.Max(ends)
}

// storedEntries is the /entries reply.
type storedEntries struct {
	Entries []struct {
		Seq   uint64 `json:"seq"`
		Entry struct {
			ID       string  `json:"id"`
			ParentID *string `json:"parentId"`
		} `json:"entry"`
	} `json:"entries"`
	LastSeq uint64 `json:"lastSeq"`
}

// verifyWriters checks every writer's session on every node against what
// the writer was told: each acknowledged entry exactly once, at the
// sequence its ack named, in order, parent after parent; nothing else but
// possibly the one entry a writer was still retrying; and the same bytes
// (entries, export, tree) on every node. It returns the number of entries
// found twice and the number of acknowledged entries missing.
func verifyWriters(t *testing.T, nodes []*piNode, writers []*writer, minSeq uint64) (dups, lost int) {
	t.Helper()
	for _, w := range writers {
		var want []byte
		for _, nd := range nodes {
			body, _ := mustDo(t, http.MethodGet, fmt.Sprintf("%s/v1/sessions/%s/entries?limit=10000&minSeq=%d", nd.base, w.sid, minSeq), nil, http.StatusOK)
			if want == nil {
				want = body
			} else if string(body) != string(want) {
				t.Errorf("writer %d: %s's entries differ from %s's", w.idx, nd.name, nodes[0].name)
			}
			var got storedEntries
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			d, l := checkChain(t, nd.name, w, got)
			dups, lost = max(dups, d), max(lost, l)
		}
		for _, path := range []string{"/export", "/tree"} {
			sameOnAll(t, nodes, "/v1/sessions/"+w.sid+path, minSeq)
		}
	}
	return dups, lost
}

// checkChain compares one node's copy of a writer's session with its acks.
func checkChain(t *testing.T, node string, w *writer, got storedEntries) (dups, lost int) {
	t.Helper()
	count := map[string]int{}
	seqOf := map[string]uint64{}
	for k, e := range got.Entries {
		count[e.Entry.ID]++
		seqOf[e.Entry.ID] = e.Seq
		if count[e.Entry.ID] == 2 {
			dups++
			t.Errorf("%s: writer %d: entry %s stored twice", node, w.idx, e.Entry.ID)
		}
		wantParent := ""
		if k > 0 {
			wantParent = got.Entries[k-1].Entry.ID
		}
		if p := e.Entry.ParentID; (p == nil) != (wantParent == "") || (p != nil && *p != wantParent) {
			t.Errorf("%s: writer %d: entry %s has parent %v, want %q", node, w.idx, e.Entry.ID, p, wantParent)
		}
	}
	for _, a := range w.acks {
		switch {
		case count[a.id] == 0:
			lost++
			t.Errorf("%s: writer %d: acknowledged entry %s (seq %d, via node %d) is missing", node, w.idx, a.id, a.seq, a.node)
		case seqOf[a.id] != a.seq:
			t.Errorf("%s: writer %d: entry %s acknowledged at seq %d, stored at %d", node, w.idx, a.id, a.seq, seqOf[a.id])
		}
	}
	extra := len(got.Entries) - len(w.acks)
	if extra > 1 || (extra == 1 && got.Entries[len(got.Entries)-1].Entry.ID != w.pending) {
		t.Errorf("%s: writer %d: %d entries stored, %d acknowledged (pending %q)", node, w.idx, len(got.Entries), len(w.acks), w.pending)
	}
	return dups, lost
}

// logScan is what the stream itself holds, read with a raw ordered
// consumer: the check that no record is stored twice does not rely on
// pi-node's own reading of the log.
type logScan struct {
	msgs    int
	dupIDs  []string // Nats-Msg-Ids seen more than once
	recs    []scanned
	lastSeq uint64
}

// scanned is one message of the stream: where and when it was stored.
type scanned struct {
	seq  uint64
	at   time.Time // the stream's timestamp, set by the leader that stored it
	kind string    // "header", "probe" or "writer"
}

// scanStream reads the whole stream through url, up to lastSeq.
func scanStream(t *testing.T, url string, ends []uint64, probeSID string) logScan {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	var scan logScan
	seen := map[string]int{}
	for k, stream := range streams() {
		lastSeq := shard.Raw(ends[k])
		cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{})
		if err != nil {
			t.Fatal(err)
		}
		var at uint64
		for at < lastSeq {
			// Each Fetch of an ordered consumer creates a fresh consumer after
			// the last message delivered, so batches keep that cheap.
			batch, err := cons.Fetch(1000, jetstream.FetchMaxWait(5*time.Second))
			if err != nil {
				if ctx.Err() != nil {
					t.Fatalf("reading %s after seq %d of %d: %v", stream, at, lastSeq, err)
				}
				continue // e.g. the first pull reached a server that did not know the consumer yet
			}
			for msg := range batch.Messages() {
				meta, err := msg.Metadata()
				if err != nil {
					t.Fatal(err)
				}
				scan.msgs++
				at = meta.Sequence.Stream
				seq := shard.Seq(k, at)
				scan.lastSeq = max(scan.lastSeq, seq)
				id := msg.Headers().Get(jetstream.MsgIDHeader)
				if seen[id]++; seen[id] == 2 {
					scan.dupIDs = append(scan.dupIDs, id)
				}
				kind := "writer"
				switch {
				case strings.HasPrefix(id, probeSID+"/"):
					kind = "probe"
				case strings.HasSuffix(id, "/header"):
					kind = "header"
				}
				scan.recs = append(scan.recs, scanned{seq: seq, at: meta.Timestamp, kind: kind})
			}
			if err := batch.Error(); err != nil && ctx.Err() != nil {
				t.Fatalf("reading %s after seq %d of %d: %v", stream, at, lastSeq, err)
			}
		}
	}
	if len(ends) > 1 {
		// The shards' records in the order they were stored, for the gaps.
		slices.SortStableFunc(scan.recs, func(a, b scanned) int { return a.at.Compare(b.at) })
	}
	return scan
}

// fmtCounts renders a map of counts in a stable order.
func fmtCounts(m map[string]int) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+strconv.Itoa(m[k]))
	}
	return strings.Join(parts, ", ")
}
