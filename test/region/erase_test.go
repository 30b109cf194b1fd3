//go:build linux

package region

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// deleteSession deletes sid through the node at base, asking again on
// 503 and 504 as clients are told to.
func deleteSession(t *testing.T, base, sid string) {
	t.Helper()
	testutil.WaitFor(t, time.Minute, testutil.Awaiting("delete "+sid+" through "+base, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		st, _, body, err := proctest.Do(ctx, proctest.ProbeClient, http.MethodDelete, base+"/v1/sessions/"+sid, nil)
		switch {
		case err != nil:
			return err
		case st == http.StatusOK:
			return nil
		case st == http.StatusServiceUnavailable || st == http.StatusGatewayTimeout:
			return fmt.Errorf("delete: %d %s", st, body)
		}
		t.Fatalf("delete %s through %s: %d %s", sid, base, st, body)
		return nil
	}))
}

// goneIn waits until sid is gone from each node's reads (404) and from
// the stream of each node's region's copy, straight from JetStream:
// erased, not only dropped by the Stores.
func goneIn(t *testing.T, ctx context.Context, sid string, nodes ...*node) {
	t.Helper()
	start := time.Now()
	for _, n := range nodes {
		testutil.WaitFor(t, time.Minute, testutil.Awaiting(sid+" gone from "+n.name+"'s reads", func() error {
			_, err := entries(ctx, n.base, sid, 0)
			var se *statusError
			if errors.As(err, &se) && se.status == http.StatusNotFound {
				return nil
			}
			return fmt.Errorf("entries of an erased session: %v", err)
		}))
		_, js := connectJS(t, n.natsURL)
		cfg := jetstream.NewConfig()
		cfg.Stream, cfg.SubjectPrefix = "PI_SESSIONS_"+n.region, "pi.sess."+n.region
		cfg = cfg.Shard(shardOfSession(sid))
		testutil.WaitFor(t, time.Minute, testutil.Awaiting(sid+" erased from "+cfg.Stream, func() error {
			recs, err := jetstream.NewLog(js, cfg).Read(ctx, sid, 0)
			if errors.Is(err, wire.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			return fmt.Errorf("%s holds %d records of %s", cfg.Stream, len(recs), sid)
		}))
		t.Logf("MEASURED delete: %s gone from %s's reads and erased from %s %v after the check began (right after the delete's answer, or after the failback)",
			sid, n.name, cfg.Stream, time.Since(start).Round(time.Millisecond))
	}
}

// archiveRefused checks that a node in cross-region mode refuses an
// archive pass, saying why.
func archiveRefused(t *testing.T, base string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, _, body, err := proctest.Do(ctx, proctest.ProbeClient, http.MethodPost, base+"/v1/archive/run", []byte(`{"olderThan":"1h"}`))
	if err != nil || st != http.StatusBadRequest || !strings.Contains(string(body), "cross-region") {
		t.Errorf("archive run in cross-region mode: %d %s %v, want 400 naming cross-region mode", st, body, err)
	}
}

// TestRegionEraseMarkers is issue 37's marker test across regions: a
// marker unique to a session's content is in files of both regions' nodes
// (the streams, the Stores' snapshots) before its delete, and in none of
// them after it and the documented wait (each Store's next snapshot, each
// index's merge); the session beside it keeps its marker.
func TestRegionEraseMarkers(t *testing.T) {
	skipShort(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	top := startTopology(t, 1, "--snapshot-interval", "1s")
	a, b := top.regions["A"][0], top.regions["B"][0]
	dirs := []string{a.dataDir, b.dataDir}
	mark := func(sid string) string { return "MARKER-" + strings.ReplaceAll(sid[24:], "-", "") }
	gone, kept := uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String()
	for _, sid := range []string{gone, kept} {
		createMarked(t, a.base, sid, mark(sid))
	}
	// Before: in both regions' streams and Store snapshots, or the test
	// could not fail there.
	testutil.WaitFiles(t, time.Minute, func() error {
		for _, d := range dirs {
			found := strings.Join(testutil.FilesHolding(t, []string{d}, mark(gone)), "\n")
			for _, want := range []string{"/streams/", "/store"} {
				if !strings.Contains(found, want) {
					return fmt.Errorf("no file of %s under %q holds the marker yet:\n%s", d, want, found)
				}
			}
		}
		return nil
	})

	deleteSession(t, b.base, gone) // through the mirror region
	goneIn(t, ctx, gone, a, b)
	if got, err := proctest.Metrics(b.base); err != nil || got["pi_sessions_erased_total"] != 1 {
		t.Errorf("b1's pi_sessions_erased_total after its delete: %v (%v), want 1", got["pi_sessions_erased_total"], err)
	}
	testutil.WaitFiles(t, time.Minute, func() error {
		if found := testutil.FilesHolding(t, dirs, mark(gone)); len(found) > 0 {
			return fmt.Errorf("after the delete: %s", strings.Join(found, "; "))
		}
		return nil
	})
	for _, d := range dirs {
		if found := testutil.FilesHolding(t, []string{d}, mark(kept)); len(found) == 0 {
			t.Fatalf("the session beside the erased one is in no file of %s any more", d)
		}
	}
}

// TestRegionEncryptionMarkers is issue 37's marker test of encryption at
// rest across regions: with --encryption-key-file on every pi-node, a
// session written in the home and mirrored to the other region, snapshotted
// by both nodes, leaves its marker in no file of either data dir (the
// mirror's stream is in the same encrypted file store). In the clear the
// same files hold it: TestRegionEraseMarkers fails when they do not.
func TestRegionEncryptionMarkers(t *testing.T) {
	skipShort(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	key := testutil.WriteKeyFile(t, t.TempDir(), "region.key")
	top := startTopology(t, 1, "--snapshot-interval", "1s", "--encryption-key-file", key)
	a, b := top.regions["A"][0], top.regions["B"][0]
	sid := uuid.Must(uuid.NewV7()).String()
	marker := "MARKER-" + strings.ReplaceAll(sid[24:], "-", "")
	last := createMarked(t, a.base, sid, marker)
	testutil.WaitFor(t, time.Minute, testutil.Awaiting(sid+" served by B", func() error {
		_, err := entries(ctx, b.base, sid, last)
		return err
	}))
	for _, n := range []*node{a, b} {
		testutil.WaitFor(t, time.Minute, testutil.Awaiting(n.name+"'s Store snapshot past the session", func() error {
			return snapshotAt(n, last)
		}))
	}
	if found := testutil.FilesHolding(t, []string{a.dataDir, b.dataDir}, marker); len(found) > 0 {
		t.Fatalf("encrypted at rest, yet files hold the marker: %s", strings.Join(found, "; "))
	}
}

// snapshotAt checks that the node's Store has a snapshot at or past seq
// (of the session's shard: the test writes one session, so the newest
// snapshot of any shard is its shard's).
func snapshotAt(n *node, seq uint64) error {
	paths, _ := filepath.Glob(filepath.Join(n.dataDir, "store*", "store-*.snap"))
	at := uint64(0)
	for _, p := range paths {
		v, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "store-"), ".snap"), 10, 64)
		at = max(at, v)
	}
	if at < shard.Raw(seq) {
		return fmt.Errorf("snapshot at %d, want %d (%v)", at, seq, paths)
	}
	return nil
}

// createMarked creates sid through base with a root and two entries whose
// text holds marker, and returns the session's last sequence.
func createMarked(t *testing.T, base, sid, marker string) uint64 {
	t.Helper()
	es := []proctest.Entry{proctest.NewEntry("root", "", "root of "+sid+" "+marker, time.Now())}
	for i := 1; i < 3; i++ {
		es = append(es, proctest.NewEntry(fmt.Sprintf("e%d", i), es[i-1].ID, "entry "+marker, time.Now()))
	}
	return createEntries(t, base, sid, es)
}
