//go:build linux

package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// raftCompaction bounds the documented wait of an erasure on a replicated
// stream (docs/SECURITY.md, "Erasure"): the stream's Raft log keeps the
// appends until the group's next snapshot, which nats-server takes every
// two minutes plus up to one of jitter.
const raftCompaction = 5 * time.Minute

// TestEraseMarkers: DELETE /v1/sessions/{id} on a 3-node R3 cluster (every
// node holding every shard) leaves none of the session's markers — in
// its cwd and in its entries — in any file of any node's data dir (the
// stream's block files and Raft log, the Stores' snapshots, the search
// indexes) once the documented wait is over, where all of them were
// before; every node answers 404 for it and finds it in no search, a
// second delete is a 404; a session beside it keeps every byte.
func TestEraseMarkers(t *testing.T) {
	skipShort(t)
	if os.Getenv("PI_NODE_SHARDS") != "" {
		// The sharded pass erases through the shards in TestBackupRestore;
		// this test's cluster beside TestKillStreamLeader there coincided
		// with its failures (docs/TESTING.md, flake ledger).
		t.Skip("the unsharded pass runs it; TestBackupRestore erases over shards")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	ports := testutil.FreePorts(t, 9)
	nodes := embeddedClusterOn(t, dirs, ports, "--snapshot-interval", "1s", "--hold", "3")
	for _, nd := range nodes {
		nd.Start(t)
	}
	for _, nd := range nodes {
		nd.waitReady(t)
	}
	gone := &markedSession{t: t, ctx: ctx, sid: testutil.SessionID(t)}
	kept := &markedSession{t: t, ctx: ctx, sid: testutil.SessionID(t)}
	for _, m := range []*markedSession{gone, kept} {
		m.create(nodes)
		m.write(nodes, 1)
		m.write(nodes, 2)
		m.check(nodes, 2)
	}
	keptExport := kept.check(nodes, 2)
	waitSnapshots(t, nodes, max(gone.last, kept.last))
	before := filesHolding(t, dirs, gone.marks(2)...)
	// The search index's dictionaries encode terms in pieces (an FST), so
	// its files are not searched by bytes here; internal/search's
	// TestIndexErase reads the dictionaries after an erasure.
	for _, want := range []string{"streams", "_js_", "store"} {
		if !strings.Contains(strings.Join(before, "\n"), "/"+want) {
			t.Fatalf("before the delete no file under %q holds a marker: this test could not fail there:\n%s", want, strings.Join(before, "\n"))
		}
	}

	st, _, body, err := proctest.Do(ctx, proctest.ProbeClient, http.MethodDelete, nodes[1].base+"/v1/sessions/"+gone.sid+"?expectLastSeq=1", nil)
	if err != nil || st != http.StatusConflict {
		t.Fatalf("delete with a stale expectLastSeq: %d %v %s, want 409", st, err, body)
	}
	st, _, body, err = proctest.Do(ctx, proctest.ProbeClient, http.MethodDelete, fmt.Sprintf("%s/v1/sessions/%s?expectLastSeq=%d", nodes[1].base, gone.sid, gone.last), nil)
	if err != nil || st != http.StatusOK {
		t.Fatalf("delete: %d %v %s", st, err, body)
	}
	var rep wire.DeleteReply
	if err := json.Unmarshal(body, &rep); err != nil || rep.SessionID != gone.sid || rep.Records != 41 || rep.LastSeq != gone.last {
		t.Fatalf("delete: %s (%v), want 41 records up to %d", body, err, gone.last)
	}
	for _, nd := range nodes {
		testutil.WaitFor(t, time.Minute, func() error {
			st, _, body, err := proctest.Do(ctx, proctest.ProbeClient, http.MethodGet, nd.base+"/v1/sessions/"+gone.sid, nil)
			if err != nil || st != http.StatusNotFound {
				return fmt.Errorf("%s: GET after the delete: %d %v %.200s", nd.name, st, err, body)
			}
			hits, err := searchAll(ctx, nd.base, gone.mark(1), kept.last)
			if err != nil || len(hits) != 0 {
				return fmt.Errorf("%s: search after the delete: %d hits, %v", nd.name, len(hits), err)
			}
			return nil
		})
	}
	st, _, body, err = proctest.Do(ctx, proctest.ProbeClient, http.MethodDelete, nodes[2].base+"/v1/sessions/"+gone.sid, nil)
	if err != nil || st != http.StatusNotFound {
		t.Fatalf("second delete: %d %v %s, want 404", st, err, body)
	}
	if got := kept.check(nodes, 2); !bytes.Equal(got, keptExport) {
		t.Fatal("the session beside the erased one changed")
	}
	// The documented wait: each Store's next snapshot and each index's
	// merge come at once; the stream group's Raft log keeps the appends
	// until its next snapshot (minutes).
	testutil.WaitFiles(t, time.Minute, func() error {
		var found []string
		for _, f := range filesHolding(t, dirs, gone.marks(2)...) {
			if !strings.Contains(f, "/_js_/") {
				found = append(found, f)
			}
		}
		if len(found) > 0 {
			return fmt.Errorf("after the delete: %s", strings.Join(found, "; "))
		}
		return nil
	})
	if found := filesHolding(t, dirs, kept.mark(2)); len(found) == 0 {
		t.Fatal("the session beside the erased one is in no file any more")
	}
	var raftDirs []string
	for _, d := range dirs {
		raftDirs = append(raftDirs, filepath.Join(d, "jetstream", "$SYS", "_js_"))
	}
	testutil.WaitFiles(t, raftCompaction, func() error {
		if found := filesHolding(t, raftDirs, gone.marks(2)...); len(found) > 0 {
			return fmt.Errorf("after the delete, in the Raft logs: %s", strings.Join(found, "; "))
		}
		return nil
	})
}
