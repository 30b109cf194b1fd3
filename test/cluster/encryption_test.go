//go:build linux

package cluster

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// writeKey writes a key file as pi-ctl gen-secrets does: 64 hex digits.
func writeKey(t *testing.T, dir, name string) string {
	t.Helper()
	return testutil.WriteKeyFile(t, dir, name)
}

// filesHolding lists the files under dirs that hold any of needles, with
// the needle found.
func filesHolding(t *testing.T, dirs []string, needles ...string) []string {
	t.Helper()
	return testutil.FilesHolding(t, dirs, needles...)
}

// waitSnapshots waits until every node's Store snapshot holds the log up
// to last (its file name is the sequence it applied). On a sharded store
// (PI_NODE_SHARDS) each shard's Store has its own directory, store-K, and
// last is a sequence of the session's shard: the test writes one session,
// so the newest snapshot of any shard is its shard's.
func waitSnapshots(t *testing.T, nodes []*piNode, last uint64) {
	t.Helper()
	testutil.WaitFor(t, time.Minute, func() error {
		for _, nd := range nodes {
			paths, _ := filepath.Glob(filepath.Join(nd.dataDir, "store*", "store-*.snap"))
			at := uint64(0)
			for _, p := range paths {
				n, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "store-"), ".snap"), 10, 64)
				at = max(at, n)
			}
			if at < last {
				return fmt.Errorf("%s: snapshot at %d, want %d (%v)", nd.name, at, last, paths)
			}
		}
		return nil
	})
}

// markedSession is one session written in rounds, each round's entries
// holding a marker of their own; its cwd holds marker 0.
type markedSession struct {
	t      *testing.T
	ctx    context.Context
	sid    string
	parent string
	last   uint64
	at     time.Time
}

func (m *markedSession) mark(k int) string {
	return fmt.Sprintf("MARKER%d-%s", k, strings.ReplaceAll(m.sid[24:], "-", ""))
}

// marks are the markers of rounds 0 to k.
func (m *markedSession) marks(k int) []string {
	var out []string
	for i := range k + 1 {
		out = append(out, m.mark(i))
	}
	return out
}

func (m *markedSession) create(nodes []*piNode) {
	m.t.Helper()
	m.at = time.Now()
	if _, err := createSession(m.ctx, proctest.ProbeClient, []string{nodes[0].base}, 0, m.sid, "/work/"+m.mark(0), m.at); err != nil {
		m.t.Fatal(err)
	}
}

// write appends round k: 20 entries, spread over the nodes.
func (m *markedSession) write(nodes []*piNode, k int) {
	m.t.Helper()
	var bases []string
	for _, nd := range nodes {
		bases = append(bases, nd.base)
	}
	for i := range 20 {
		id := fmt.Sprintf("%02d%06x", k, i)
		m.at = m.at.Add(time.Millisecond)
		wr, err := appendRetry(m.ctx, proctest.ProbeClient, bases, i, m.sid, proctest.NewEntry(id, m.parent, fmt.Sprintf("entry %d of round %d: %s", i, k, m.mark(k)), m.at))
		if err != nil {
			m.t.Fatal(err)
		}
		m.parent, m.last = id, wr.LastSeq
	}
}

// check requires every node to serve the same export, holding rounds 1
// to k, and to find each round's 20 entries by its marker; it returns the
// export.
func (m *markedSession) check(nodes []*piNode, k int) []byte {
	m.t.Helper()
	export := sameOnAll(m.t, nodes, "/v1/sessions/"+m.sid+"/export", m.last)
	for r := 1; r <= k; r++ {
		if !bytes.Contains(export, []byte(m.mark(r))) {
			m.t.Fatalf("the export lacks round %d", r)
		}
		for _, nd := range nodes {
			// A failed search is asked again: after a restart its index
			// (in memory when encrypted) follows the log again, and while
			// the streams elect their leaders it answers 503, or 504 once
			// minSeq's wait runs out (docs/API.md), or not within the
			// probe client's timeout. A search answered is the verdict.
			testutil.WaitFor(m.t, time.Minute, func() error {
				hits, err := searchAll(m.ctx, nd.base, m.mark(r), m.last)
				if err != nil {
					return fmt.Errorf("%s: %w", nd.name, err)
				}
				if len(hits) != 20 {
					m.t.Fatalf("%s: search %s: %d hits, want 20", nd.name, m.mark(r), len(hits))
				}
				return nil
			})
		}
	}
	return export
}

// onDisk fails the test if any file under dirs holds a marker of rounds 0
// to k, once every node has written a snapshot of all of it.
func (m *markedSession) onDisk(nodes []*piNode, dirs []string, k int, when string) {
	m.t.Helper()
	waitSnapshots(m.t, nodes, m.last)
	if found := filesHolding(m.t, dirs, m.marks(k)...); len(found) != 0 {
		m.t.Fatalf("%s: %s", when, strings.Join(found, "; "))
	}
}

// encryptedStatus requires /v1/status to say encryptedAtRest.
func encryptedStatus(t *testing.T, nodes []*piNode) {
	t.Helper()
	for _, nd := range nodes {
		st, _, body, err := proctest.Do(context.Background(), proctest.ProbeClient, http.MethodGet, nd.base+"/v1/status", nil)
		if err != nil || st != http.StatusOK || !bytes.Contains(body, []byte(`"encryptedAtRest":true`)) {
			t.Fatalf("%s /v1/status: %d %v, want encryptedAtRest true: %s", nd.name, st, err, body)
		}
	}
}

// TestEncryptionAtRest: a 3-node cluster started with
// --encryption-key-file holds none of the content's markers in any file of
// any node once every node has snapshotted it, while every node reads and
// searches it (TestEncryptionAtRestSingle shows the same search finding
// them in a node's files written in the clear). What nats-server cannot do to a member's data
// dir in place (rotate its key with a previous key, open it without the
// key) is refused before it starts, with what to do. Moving a cluster to
// encryption or to a new key is a backup and a restore (docs/OPERATIONS.md):
// TestBackupEncrypted and TestBackupRestore run those; the single node's
// in-place encryption and rotation are TestEncryptionAtRestSingle's.
func TestEncryptionAtRest(t *testing.T) {
	skipShort(t)
	t.Parallel()
	keys := t.TempDir()
	keyA, keyB := writeKey(t, keys, "a.key"), writeKey(t, keys, "b.key")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m := &markedSession{t: t, ctx: ctx, sid: testutil.SessionID(t)}
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	ports := testutil.FreePorts(t, 9)
	// node i with extra flags, not started. --hold 3: on a sharded store
	// (PI_NODE_SHARDS) every node holds, and snapshots, every shard, so
	// each has the session on its disk.
	node := func(i int, extra ...string) *piNode {
		return embeddedClusterOn(t, dirs, ports, append([]string{"--snapshot-interval", "1s", "--hold", "3"}, extra...)...)[i]
	}
	var nodes []*piNode
	for i := range 3 {
		nodes = append(nodes, node(i, "--encryption-key-file", keyA))
		nodes[i].Start(t)
	}
	for _, nd := range nodes {
		nd.waitReady(t)
	}
	m.create(nodes)
	m.write(nodes, 1)
	m.write(nodes, 2)
	m.check(nodes, 2)
	encryptedStatus(t, nodes)
	m.onDisk(nodes, dirs, 2, "encrypted with key A")

	if err := nodes[0].Stop(stopTimeout); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		want  string
		extra []string
	}{
		{"cannot rotate a cluster member's key in place", []string{"--encryption-key-file", keyB, "--previous-encryption-key-file", keyA}},
		{"is encrypted: start this node with its --encryption-key-file", nil},
	} {
		nd := node(0, c.extra...)
		nd.Start(t)
		testutil.WaitFor(t, time.Minute, func() error {
			if nd.Running() {
				return fmt.Errorf("%s with %v: still running", nd.name, c.extra)
			}
			return nil
		})
		if out, _ := nd.Output(); nd.ExitErr() == nil || !strings.Contains(out, c.want) {
			t.Fatalf("%s with %v: exit %v, want a refusal saying %q:\n%s", nd.name, c.extra, nd.ExitErr(), c.want, nd.Tail(20))
		}
	}
	nodes[0] = node(0, "--encryption-key-file", keyA)
	nodes[0].Start(t)
	nodes[0].waitReady(t)
	m.write(nodes, 3)
	m.check(nodes, 3)
	m.onDisk(nodes, dirs, 3, "encrypted with key A, after a restart")
}

// TestEncryptionAtRestSingle: a single node (no cluster) is encrypted in
// place — started again on its data dir with --encryption-key-file,
// nats-server encrypts its files and the node drops its plain snapshot and
// index — and rotates its key in place: the new key with the old as
// --previous-encryption-key-file, then the new alone. No file holds a
// marker after either, and the session reads and searches the same.
func TestEncryptionAtRestSingle(t *testing.T) {
	skipShort(t)
	t.Parallel()
	keys := t.TempDir()
	keyA, keyB := writeKey(t, keys, "a.key"), writeKey(t, keys, "b.key")
	dir := t.TempDir()
	ports := testutil.FreePorts(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m := &markedSession{t: t, ctx: ctx, sid: testutil.SessionID(t)}
	start := func(extra ...string) []*piNode {
		t.Helper()
		nd := &piNode{name: "solo", base: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), dataDir: dir}
		nd.Proc = proctest.New(t, "solo", piNodeBin, append([]string{"--node-name", "solo", "--data-dir", dir,
			"--http-listen", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--client-listen", fmt.Sprintf("127.0.0.1:%d", ports[1]),
			"--shutdown-grace", "10s", "--snapshot-interval", "1s"}, extra...)...)
		nd.Start(t)
		nd.waitReady(t)
		return []*piNode{nd}
	}
	stop := func(nodes []*piNode) {
		t.Helper()
		if err := nodes[0].Stop(stopTimeout); err != nil {
			t.Fatal(err)
		}
	}
	nodes := start()
	m.create(nodes)
	m.write(nodes, 1)
	plain := m.check(nodes, 1)
	waitSnapshots(t, nodes, m.last)
	if found := filesHolding(t, []string{dir}, m.mark(1)); len(found) == 0 {
		t.Fatal("written in the clear, the marker is in no file: this test could not fail")
	}
	stop(nodes)

	nodes = start("--encryption-key-file", keyA)
	if got := m.check(nodes, 1); !bytes.Equal(got, plain) {
		t.Fatal("the export differs once encrypted in place")
	}
	m.write(nodes, 2)
	m.check(nodes, 2)
	m.onDisk(nodes, []string{dir}, 2, "encrypted in place with key A")
	stop(nodes)

	nodes = start("--encryption-key-file", keyB, "--previous-encryption-key-file", keyA)
	m.check(nodes, 2)
	m.write(nodes, 3)
	m.check(nodes, 3)
	m.onDisk(nodes, []string{dir}, 3, "rotating to key B")
	stop(nodes)
	nodes = start("--encryption-key-file", keyB)
	if export := m.check(nodes, 3); !bytes.HasPrefix(export, plain) {
		t.Fatal("after the rotation, the export does not begin with what was written in the clear")
	}
	encryptedStatus(t, nodes)
	m.onDisk(nodes, []string{dir}, 3, "key B alone")
}
