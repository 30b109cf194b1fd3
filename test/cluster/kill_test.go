//go:build linux

package cluster

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/testutil"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const (
	numWriters = 50
	// writeTimeout is the writers' client timeout: an append that has no
	// answer by then is retried, with the same bytes, on the next node.
	writeTimeout = 2 * time.Second
	// maxGap is a loose bound on the write gap, only so that a hang fails;
	// the figure to watch is the one reported beside JetStream's own.
	maxGap = 20 * time.Second
)

// progress is what the test watches while the writers run.
type progress struct {
	acks    atomic.Int64
	perNode [3]atomic.Int64
	maxSeq  [shard.Max]atomic.Uint64 // the highest sequence acknowledged so far, by shard
}

// acked counts a that node acknowledged at seq.
func (p *progress) acked(node int, seq uint64) {
	p.acks.Add(1)
	p.perNode[node].Add(1)
	m := &p.maxSeq[shard.OfSeq(seq)]
	for {
		cur := m.Load()
		if seq <= cur || m.CompareAndSwap(cur, seq) {
			return
		}
	}
}

// ends is the highest sequence acknowledged in each shard.
func (p *progress) ends() []uint64 {
	out := make([]uint64, testShards())
	for k := range out {
		out[k] = p.maxSeq[k].Load()
	}
	return out
}

// TestKillStreamLeader covers issue item 3: 50 writers append through the
// HTTP API of three embedded-cluster pi-nodes, retrying every failure with
// the same entry on the next node; the process leading the stream is killed
// with SIGKILL a few seconds in, the writers carry on, the process is
// restarted on its data dir, the writers carry on. Afterwards every
// acknowledged entry is stored exactly once, at its acknowledged sequence,
// and all three nodes serve identical sessions. It reports the write gap
// beside JetStream's own failover, measured on the same kill by publishing
// straight to the stream.
func TestKillStreamLeader(t *testing.T) {
	skipShort(t)
	t.Parallel()
	nodes := startEmbeddedClusterWith(t, 3, diagFlags...)
	reportRaftOnFailure(t, nodes)
	bases := make([]string, len(nodes))
	for i, nd := range nodes {
		bases[i] = nd.base
	}
	// A bound on the whole run, not a verdict: each phase below judges
	// progress within readyTimeout, and the writers run until stop (with
	// a 3-minute bound of their own, a slow run's writers ran out of time
	// while the restarted node caught up, and failed the test).
	ctx, cancel := context.WithTimeout(context.Background(), testutil.Scale(10*time.Minute))
	defer cancel()
	st := checkStreamStatus(t, nodes, nodes, "embedded-cluster")
	leader := byName(nodes, st.JetStream.Stream.Leader)
	if leader == nil {
		t.Fatalf("stream leader %q is not one of the pi-nodes", st.JetStream.Stream.Leader)
	}
	var survivors []*piNode
	for _, nd := range nodes {
		if nd != leader {
			survivors = append(survivors, nd)
		}
	}

	// One session per writer, created through the nodes in turn.
	hc := &http.Client{Timeout: writeTimeout, Transport: &http.Transport{
		MaxIdleConnsPerHost: numWriters, // keep connections: 50 writers would otherwise churn ports
		IdleConnTimeout:     time.Minute,
	}}
	defer hc.CloseIdleConnections()
	prog := &progress{}
	writers := make([]*writer, numWriters)
	var wg sync.WaitGroup
	errs := make(chan error, numWriters+1)
	for i := range writers {
		w := &writer{idx: i, sid: testutil.SessionID(t), bases: bases, hc: hc, turn: i, errors: map[string]int{}, prog: prog}
		writers[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := createSession(ctx, hc, bases, i, w.sid, fmt.Sprintf("/w%02d", i), time.Now()); err != nil {
				errs <- err
			}
		}()
	}
	probeSID := testutil.SessionID(t)
	for shard.Of(probeSID, testShards()) != 0 {
		probeSID = testutil.SessionID(t) // on the stream whose leader is killed
	}
	if _, err := createSession(ctx, hc, bases, 0, probeSID, "/probe", time.Now()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatal(<-errs)
	}

	// The probe publishes through a surviving node's embedded server.
	nc, err := nats.Connect(survivors[0].natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	_, probeSubject := streamOf(probeSID)
	probe := &jsProbe{js: js, subject: probeSubject, sid: probeSID, interval: 20 * time.Millisecond}

	// Run the probe and the writers until stop is closed.
	stop := make(chan struct{})
	start := time.Now()
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	var firstErr atomic.Pointer[error]
	var probeDone sync.WaitGroup
	probeDone.Add(1)
	go func() {
		defer probeDone.Done()
		probe.run(stop)
	}()
	for _, w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.run(wctx, stop); err != nil {
				firstErr.CompareAndSwap(nil, &err)
				errs <- err
				wcancel() // one writer hit a final error: stop the run, report it
			}
		}()
	}
	stopWriters := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
		probeDone.Wait()
	}
	defer stopWriters()
	running := func() error {
		if err := firstErr.Load(); err != nil {
			return fmt.Errorf("a writer failed: %w", *err)
		}
		return nil
	}

	// A few seconds in, with writes flowing, kill the stream leader.
	testutil.WaitFor(t, readyTimeout, testutil.Awaiting("writes flowing", func() error {
		if err := running(); err != nil {
			return err
		}
		if n := prog.acks.Load(); n < 200 || time.Since(start) < 3*time.Second {
			return fmt.Errorf("%d acks after %v", n, time.Since(start).Round(time.Millisecond))
		}
		return nil
	}))
	placement := fmtCounts(consumerHosts(t, survivors[0].natsURL))
	acksAtKill := prog.acks.Load()
	killAt := time.Now()
	leader.Kill()
	t.Logf("SIGKILL %s (stream leader) %v into the run, after %d acks; the Stores' consumers were on %s",
		leader.name, killAt.Sub(start).Round(time.Millisecond), acksAtKill, placement)
	// Watch the survivors while the stream fails over: readiness, and how
	// far their Stores have applied the log.
	stopWatch := make(chan struct{})
	watch := watchNodes(survivors, stopWatch)

	// The writers carry on through the survivors. Keep going until plenty
	// of writes went through after the election, then a bit more.
	var newLeader string
	testutil.WaitFor(t, readyTimeout, testutil.Awaiting("a new stream leader and writes after the kill", func() error {
		if err := running(); err != nil {
			return err
		}
		st, err := status(survivors[0].base)
		if err != nil {
			return err
		}
		if l := st.JetStream.Stream.Leader; l == "" || l == leader.name {
			return fmt.Errorf("stream leader %q", l)
		}
		newLeader = st.JetStream.Stream.Leader
		if n := prog.acks.Load() - acksAtKill; n < 500 {
			return fmt.Errorf("%d acks since the kill", n)
		}
		return nil
	}))
	resumedAt := time.Now()
	testutil.WaitFor(t, readyTimeout, testutil.Awaiting("three more seconds of writes", func() error {
		if err := running(); err != nil {
			return err
		}
		if d := time.Since(resumedAt); d < 3*time.Second {
			return fmt.Errorf("%v of writes", d.Round(time.Millisecond))
		}
		return nil
	}))
	// Keep watching until both survivors' Stores have applied what was
	// acknowledged by now: one whose ordered consumer lived on the dead
	// node lags ~10 s (TestStoresFollowThroughNodeLoss).
	upTo := prog.ends()
	testutil.WaitFor(t, readyTimeout, testutil.Awaiting("the survivors' Stores follow the new leader", func() error {
		for _, nd := range survivors {
			if testShards() > 1 {
				// Each shard's Store: the catalog's header is a sum.
				st, err := status(nd.base)
				if err != nil {
					return fmt.Errorf("%s: %w", nd.name, err)
				}
				if err := st.lacks(upTo); err != nil {
					return fmt.Errorf("%s %w", nd.name, err)
				}
				continue
			}
			st, hdr, _, err := proctest.Do(ctx, proctest.ProbeClient, http.MethodGet, nd.base+"/v1/sessions?limit=1", nil)
			if err != nil || st != http.StatusOK {
				return fmt.Errorf("%s: %d %v", nd.name, st, err)
			}
			if applied, _ := strconv.ParseUint(hdr.Get("Pi-Applied-Seq"), 10, 64); applied < upTo[0] {
				return fmt.Errorf("%s applied %d of %d", nd.name, applied, upTo[0])
			}
		}
		return nil
	}))
	close(stopWatch)
	reportedOffline(t, survivors[0], leader.name)

	// Restart the killed node on its data dir, with the same flags.
	ref, err := status(survivors[0].base)
	if err != nil {
		t.Fatal(err)
	}
	var rs restartStats
	rs.logEnd = slices.Max(ref.logEnds())
	restartAt := time.Now()
	viaRestarted := prog.perNode[indexOf(nodes, leader)].Load()
	leader.Start(t)
	rs.ready = leader.waitReady(t)
	testutil.WaitFor(t, readyTimeout, testutil.Awaiting("the restarted node's Store applies what it missed", func() error {
		st, err := status(leader.base)
		if err != nil {
			return err
		}
		if err := st.lacks(ref.logEnds()); err != nil {
			return err
		}
		return nil
	}))
	rs.store = time.Since(restartAt)
	testutil.WaitFor(t, readyTimeout, testutil.Awaiting("the restarted node's replica is current", func() error {
		st, err := status(survivors[0].base)
		if err != nil {
			return err
		}
		if st.JetStream.Stream.Leader == leader.name {
			return nil // leading again (the nodes spread shards' leaders): current by definition
		}
		for _, f := range st.JetStream.Stream.Followers {
			if f.Name == leader.name && f.Current && !f.Offline {
				return nil
			}
		}
		return fmt.Errorf("followers %+v", st.JetStream.Stream.Followers)
	}))
	rs.replica = time.Since(restartAt)
	testutil.WaitFor(t, readyTimeout, testutil.Awaiting("writes through the restarted node", func() error {
		if err := running(); err != nil {
			return err
		}
		if n := prog.perNode[indexOf(nodes, leader)].Load() - viaRestarted; n < 100 {
			return fmt.Errorf("%d acks through %s", n, leader.name)
		}
		return nil
	}))
	stopWriters()
	runTime := time.Since(start)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}

	// Verify: every node applied the whole log; every writer's session is
	// complete, without duplicates, identical on all nodes; the stream
	// itself holds no message id twice.
	last := waitAllApplied(t, nodes)
	dups, lost := verifyWriters(t, nodes, writers, last)
	sameOnAll(t, nodes, "/v1/sessions/"+probeSID+"/export", last)
	sameOnAll(t, nodes, "/v1/sessions?limit=1000", last)
	for _, nd := range nodes {
		if st, err := status(nd.base); err != nil || st.Store.SkippedRecords != 0 {
			t.Errorf("%s: skipped records %d (%v)", nd.name, st.Store.SkippedRecords, err)
		}
	}
	ends, err := status(survivors[0].base)
	if err != nil {
		t.Fatal(err)
	}
	scan := scanStream(t, survivors[0].natsURL, ends.logEnds(), probeSID)
	if len(scan.dupIDs) > 0 {
		t.Errorf("the stream holds %d message ids more than once: %v", len(scan.dupIDs), scan.dupIDs[:min(10, len(scan.dupIDs))])
	}

	f := analyzeFailover(t, killAt, onShard0(writers), probe, scan.shard0(), watch)
	t.Log(f.report(leader.name, newLeader, runTime, writers, dups, lost, scan, rs))
	if f.worstWriter > maxGap || f.longestGap > maxGap {
		t.Errorf("write gap %v (longest between two acks of one writer: %v) over the %v bound", f.worstWriter, f.longestGap, maxGap)
	}
}

// reportedOffline waits until node reports the killed node dead as
// offline, in /v1/status and in pi-ctl status. Its new leader never heard
// from dead, which nats-server reports as active 0: every answer on the
// way must say so ("never"), not that dead was seen just now ("0s"), as
// every answer did for minutes, state "current", until the server's own
// offline flag.
func reportedOffline(t *testing.T, node *piNode, dead string) {
	t.Helper()
	var seen []string // the answers' states and last-seen, in order
	testutil.WaitFor(t, readyTimeout, testutil.Awaiting(dead+" reported offline by "+node.name, func() error {
		st, err := status(node.base)
		if err != nil {
			return err
		}
		for _, f := range st.JetStream.Stream.Followers {
			if f.Name != dead {
				continue
			}
			if s := f.State + " " + f.LastSeen; len(seen) == 0 || seen[len(seen)-1] != s {
				seen = append(seen, s)
			}
			if d, err := time.ParseDuration(f.LastSeen); f.LastSeen != "never" && (err != nil || d < time.Millisecond) {
				t.Fatalf("%s reports %s, killed, as last seen %q (state %s); its answers so far: %q", node.name, dead, f.LastSeen, f.State, seen)
			}
			if f.State != "offline" || !f.Offline {
				return fmt.Errorf("%+v", f)
			}
			return nil
		}
		return fmt.Errorf("no follower %s in %+v", dead, st.JetStream.Stream)
	}))
	t.Logf("%s's reports of %s, killed: %q", node.name, dead, seen)
	// pi-ctl asks again: leadership may have moved in between (the shards'
	// leaders are spread after a kill), and the new leader has not heard
	// from the dead node either — never as "0s".
	var rows []string
	testutil.WaitFor(t, readyTimeout, testutil.Awaiting("pi-ctl status showing "+dead+" offline", func() error {
		row := replicaRow(piCtlStatus(t, node.base), dead)
		if len(rows) == 0 || rows[len(rows)-1] != row {
			rows = append(rows, row)
		}
		if f := strings.Fields(row); len(f) > 0 && f[len(f)-1] == "0s" {
			t.Fatalf("pi-ctl status: %s, killed, is last seen 0s: %q", dead, rows)
		}
		if !strings.Contains(row, "offline") {
			return fmt.Errorf("%s's row is %q", dead, row)
		}
		return nil
	}))
}

func indexOf(nodes []*piNode, nd *piNode) int {
	for i := range nodes {
		if nodes[i] == nd {
			return i
		}
	}
	return -1
}
