//go:build linux

package cluster

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// shardStatus is the part of /v1/status about shards.
type shardStatus struct {
	Store struct {
		Sessions int `json:"sessions"`
		Shards   []struct {
			Shard    int    `json:"shard"`
			Applied  uint64 `json:"applied"`
			Sessions int    `json:"sessions"`
		} `json:"shards"`
	} `json:"store"`
	JetStream struct {
		Shards []struct {
			Name      string `json:"name"`
			Replicas  int    `json:"replicas"`
			Leader    string `json:"leader"`
			LastSeq   uint64 `json:"lastSeq"`
			Followers []struct {
				Name    string `json:"name"`
				Current bool   `json:"current"`
			} `json:"followers"`
		} `json:"shards"`
	} `json:"jetstream"`
}

// TestShardedCluster: three embedded nodes with --shards 4. Every shard's
// stream has three replicas and a leader, listed in /v1/status; writers
// on every node spread their sessions over the shards; a node killed with
// SIGKILL under that load loses no acknowledged entry, and every node
// serves every session with read-your-writes (each session's own lastSeq
// as minSeq, a sequence of its shard). A node started with another
// --shards refuses to.
func TestShardedCluster(t *testing.T) {
	skipShort(t)
	t.Parallel()
	const shards = 4
	nodes := startEmbeddedClusterWith(t, 3, "--shards", fmt.Sprint(shards))
	bases := []string{nodes[0].base, nodes[1].base, nodes[2].base}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	var st shardStatus
	testutil.WaitFor(t, readyTimeout, testutil.Awaiting("every shard's stream with a leader and three replicas", func() error {
		st = shardStatus{}
		if err := proctest.GetJSON(nodes[0].base+"/v1/status", &st); err != nil {
			return err
		}
		if len(st.JetStream.Shards) != shards || len(st.Store.Shards) != shards {
			return fmt.Errorf("status lists %d streams and %d Stores, want %d", len(st.JetStream.Shards), len(st.Store.Shards), shards)
		}
		for k, s := range st.JetStream.Shards {
			want := "PI_SESSIONS"
			if k > 0 {
				want = fmt.Sprintf("PI_SESSIONS_%d", k)
			}
			if s.Name != want || s.Replicas != 3 || s.Leader == "" || len(s.Followers) != 2 {
				return fmt.Errorf("shard %d: %+v, want stream %s with a leader and two followers", k, s, want)
			}
		}
		return nil
	}))
	// The nodes spread the leaders: no server leads two more shards than
	// another (JetStream alone often puts most on one).
	var leaders map[string]int
	spreadIn := testutil.WaitFor(t, readyTimeout, testutil.Awaiting("the shards' leaders spread over the servers", func() error {
		var s shardStatus
		if err := proctest.GetJSON(nodes[1].base+"/v1/status", &s); err != nil {
			return err
		}
		leaders = map[string]int{nodes[0].name: 0, nodes[1].name: 0, nodes[2].name: 0}
		for _, sh := range s.JetStream.Shards {
			if sh.Leader == "" {
				return fmt.Errorf("shard %s has no leader", sh.Name)
			}
			leaders[sh.Leader]++
		}
		lo, hi := shards, 0
		for _, c := range leaders {
			lo, hi = min(lo, c), max(hi, c)
		}
		if hi-lo > 1 {
			return fmt.Errorf("leaders per server %v", leaders)
		}
		return nil
	}))
	t.Logf("MEASURED shards: stream leaders per server %v, %v after the nodes were ready", leaders, spreadIn.Round(time.Millisecond))
	if out := piCtlStatus(t, nodes[0].base); !strings.Contains(out, "SHARD") || !strings.Contains(out, "PI_SESSIONS_3") || !strings.Contains(out, "3 of 3 current") {
		t.Errorf("pi-ctl status lacks the shards' table:\n%s", out)
	}

	// Writers: two per node, each on sessions of its own, entry by entry
	// with explicit parents, retrying across nodes; what was acknowledged
	// is recorded. One node is killed while they write.
	var mu sync.Mutex
	var all []*ackedSession
	killAfter := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			hc := proctest.ProbeClient
			for i := 0; ctx.Err() == nil && i < 4; i++ {
				s := &ackedSession{id: testutil.SessionID(t)}
				seq, err := createSession(ctx, hc, bases, w%3, s.id, "/work/"+s.id[:8], time.Now())
				if err != nil {
					t.Error(err)
					return
				}
				s.last = seq
				parent := ""
				for j := range 15 {
					e := proctest.NewEntry(fmt.Sprintf("e%02d%02d%02d", w, i, j), parent, fmt.Sprintf("w%d s%d #%d", w, i, j), time.Now())
					wr, err := appendRetry(ctx, hc, bases, (w+j)%3, s.id, e)
					if err != nil {
						t.Error(err)
						return
					}
					if k := shard.Of(s.id, shards); shard.OfSeq(wr.LastSeq) != k {
						t.Errorf("session %s of shard %d acknowledged at %d, a sequence of shard %d", s.id, k, wr.LastSeq, shard.OfSeq(wr.LastSeq))
					}
					s.acked, s.last, parent = append(s.acked, e.ID), wr.LastSeq, e.ID
				}
				mu.Lock()
				all = append(all, s)
				if len(all) == 6 {
					once.Do(func() { close(killAfter) })
				}
				mu.Unlock()
			}
		})
	}
	victim := nodes[2]
	select {
	case <-killAfter:
	case <-ctx.Done():
		t.Fatal("the writers did not get going")
	}
	victim.Kill()
	t.Logf("SIGKILL %s with writers running", victim.name)
	wg.Wait()
	if t.Failed() {
		return
	}

	onShard := make([]int, shards)
	for _, s := range all {
		onShard[shard.Of(s.id, shards)]++
	}
	for k, n := range onShard {
		if n == 0 {
			t.Fatalf("no session of %d on shard %d: %v", len(all), k, onShard)
		}
	}

	// The survivors serve every acknowledged entry, reading each session
	// with its own lastSeq.
	checkAll := func(on []*piNode) {
		t.Helper()
		checkAcked(ctx, t, on, all)
	}
	checkAll(nodes[:2])

	// The killed node restarts on its data and catches every shard up.
	victim.Start(t)
	victim.waitReady(t)
	checkAll(nodes)
	t.Logf("MEASURED shards: %d sessions, %d acknowledged entries each, spread %v over %d shards; none lost", len(all), len(all[0].acked), onShard, shards)

	// Another shard count over the same store: refused, with both named.
	wrong := startOddNode(t, nodes, "--shards", "2")
	testutil.WaitFor(t, readyTimeout, testutil.Awaiting("the node with --shards 2 to exit", func() error {
		if wrong.Running() {
			return fmt.Errorf("still running")
		}
		return nil
	}))
	if !wrong.LogContains("is a store of 4 shard(s), not 2") || !wrong.LogContains("start every node with --shards 4") {
		t.Fatalf("--shards 2 over a store of 4: want a message naming both; log:\n%s", wrong.Tail(20))
	}
}

// startOddNode starts a fourth pi-node that joins nodes' cluster as a
// plain NATS member of it with extra flags (its own embedded server,
// routes to every node), and returns it without waiting for it to be ready.
func startOddNode(t *testing.T, nodes []*piNode, extra ...string) *piNode {
	t.Helper()
	return startJoiningNode(t, nodes, "n4", extra...)
}

// startJoiningNode is startOddNode for a node called name.
func startJoiningNode(t *testing.T, nodes []*piNode, name string, extra ...string) *piNode {
	t.Helper()
	ports := testutil.FreePorts(t, 3)
	var routes []string
	for _, nd := range nodes {
		routes = append(routes, nd.route)
	}
	routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[1]))
	nd := &piNode{name: name, base: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), dataDir: t.TempDir()}
	nd.Proc = proctest.New(t, nd.name, piNodeBin, append([]string{
		"--node-name", nd.name, "--cluster-name", "pi-test",
		"--cluster-listen", fmt.Sprintf("127.0.0.1:%d", ports[1]),
		"--routes", strings.Join(routes, ","), "--replicas", "3", "--data-dir", nd.dataDir,
		"--client-listen", fmt.Sprintf("127.0.0.1:%d", ports[2]),
		"--http-listen", fmt.Sprintf("127.0.0.1:%d", ports[0]),
	}, extra...)...)
	nd.Start(t)
	return nd
}

// ackedSession is a session a test wrote to: the entries acknowledged, in
// order, and the last sequence it was told.
type ackedSession struct {
	id    string
	acked []string
	last  uint64
}

// ackedClient is checkAcked's: it waits past the node's own bound on a
// minSeq read (5 s, then 504), so that the node's answer is what the
// test judges; the probe client's 5 s gave up at that very moment.
var ackedClient = &http.Client{Timeout: 4 * 5 * time.Second}

// checkAcked exports every session from every node of on, with its last
// sequence as minSeq, and fails unless each holds every acknowledged entry.
func checkAcked(ctx context.Context, t *testing.T, on []*piNode, all []*ackedSession) {
	t.Helper()
	asked := 0
	for _, s := range all {
		for _, nd := range on {
			// A 503 is what a node answers while the stream it must ask
			// elects a leader (a node was just killed), a 504 when what it
			// applies has not reached minSeq within its bound (its
			// consumer waits for that election too): asked again, as
			// docs/API.md tells clients to.
			var data []byte
			testutil.WaitFor(t, testutil.Scale(time.Minute), func() error {
				asked++
				st, _, body, err := proctest.Do(ctx, ackedClient, http.MethodGet,
					fmt.Sprintf("%s/v1/sessions/%s/export?minSeq=%d", nd.base, s.id, s.last), nil)
				if err == nil && (st == http.StatusServiceUnavailable || st == http.StatusGatewayTimeout) {
					return fmt.Errorf("%s: export %s: %d %s", nd.name, s.id, st, body)
				}
				if err != nil || st != http.StatusOK {
					t.Fatalf("%s: export %s: %d %v %s", nd.name, s.id, st, err, body)
				}
				data = body
				return nil
			})
			for _, id := range s.acked {
				if !strings.Contains(string(data), `"id":"`+id+`"`) {
					t.Fatalf("%s: session %s lacks acknowledged entry %s", nd.name, s.id, id)
				}
			}
		}
	}
	t.Logf("MEASURED %d exports of %d sessions from %d nodes, %d asked again after a 503 or 504", asked, len(all), len(on), asked-len(all)*len(on))
}
