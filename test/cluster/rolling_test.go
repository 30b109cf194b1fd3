//go:build linux

package cluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/jetstream/embedded"
	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// TestStopStreamLeader is one step of a rolling restart under load: ten
// writers append through all three nodes (retrying failures on the next
// node, with the same entry), the node leading the stream is stopped with
// SIGTERM, and started again. Every append must end acknowledged: an
// answer that retrying cannot fix (a 4xx, say 404 for a session that
// exists) fails the test. Afterwards every acknowledged entry is stored
// exactly once, identically on every node. The stop is a lame duck: the
// node says it is not ready and closes its HTTP connections while it still
// serves, then hands its leaderships over, inside the shutdown budget.
func TestStopStreamLeader(t *testing.T) {
	skipShort(t)
	t.Parallel()
	const lameDuck = 2 * time.Second
	nodes := startEmbeddedClusterWith(t, 3, "--lame-duck", lameDuck.String())
	bases := make([]string, len(nodes))
	for i, nd := range nodes {
		bases[i] = nd.base
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st := checkStreamStatus(t, nodes, nodes, "embedded-cluster")
	leader := byName(nodes, st.JetStream.Stream.Leader)

	hc := &http.Client{Timeout: writeTimeout}
	prog := &progress{}
	const n = 10
	writers := make([]*writer, n)
	for i := range writers {
		writers[i] = &writer{idx: i, sid: testutil.SessionID(t), bases: bases, hc: hc, turn: i, errors: map[string]int{}, prog: prog}
		if _, err := createSession(ctx, hc, bases, i, writers[i].sid, "/rolling", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var firstErr atomic.Pointer[error]
	for _, w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.run(ctx, stop); err != nil {
				firstErr.CompareAndSwap(nil, &err)
			}
		}()
	}
	stopped := false
	stopWriters := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopWriters()
	// Progress past n acks, or the first writer's error.
	acksPast := func(n int64, what string) {
		t.Helper()
		testutil.WaitFor(t, readyTimeout, func() error {
			if err := firstErr.Load(); err != nil {
				return fmt.Errorf("%s: a writer failed: %w", what, *err)
			}
			if got := prog.acks.Load(); got < n {
				return fmt.Errorf("%s: %d acks of %d", what, got, n)
			}
			return nil
		})
	}

	acksPast(200, "writes flowing")
	before := prog.acks.Load()
	stoppedAt := time.Now()
	stopDone := make(chan error, 1)
	go func() { stopDone <- leader.Stop(stopTimeout) }()
	checkLameDuck(t, leader)
	if err := <-stopDone; err != nil {
		t.Errorf("%s (stream leader) did not shut down cleanly on SIGTERM: %v", leader.name, err)
	}
	stopTook := time.Since(stoppedAt)
	// The lame duck, --shutdown-grace (10s here) and the server's lame-duck
	// mode.
	if budget := lameDuck + 10*time.Second + embedded.LameDuckBudget; stopTook > budget {
		t.Errorf("SIGTERM under load: %s stopped after %v, beyond its budget of %v", leader.name, stopTook, budget)
	}
	acksPast(before+300, "writes after the leader stopped")
	restartAt := time.Now()
	leader.Start(t)
	readyIn := leader.waitReady(t)
	lagAtReady := replicaLag(t, nodes, leader.name)
	acksPast(prog.acks.Load()+300, "writes after the restart")
	stopWriters()
	if err := firstErr.Load(); err != nil {
		t.Fatalf("a writer failed: %v", *err)
	}

	last := waitAllApplied(t, nodes)
	dups, lost := verifyWriters(t, nodes, writers, last)
	var longest time.Duration
	for _, w := range writers {
		for k := 1; k < len(w.acks); k++ {
			longest = max(longest, w.acks[k].at.Sub(w.acks[k-1].at))
		}
	}
	errKinds := map[string]int{}
	for _, w := range writers {
		for k, c := range w.errors {
			errKinds[k] += c
		}
	}
	t.Logf("MEASURED SIGTERM of the stream leader %s under %d writers: shutdown %v; longest wait of a writer between two acks %v; "+
		"restarted: /readyz after %v (%v after the stop), its replica then %s; %d entries, %d duplicates, %d lost; failed attempts: %s",
		leader.name, n, stopTook.Round(time.Millisecond), longest.Round(time.Millisecond), readyIn.Round(time.Millisecond),
		restartAt.Sub(stoppedAt).Round(time.Millisecond), lagAtReady, prog.acks.Load(), dups, lost, fmtCounts(errKinds))
}

// checkLameDuck: a node told to stop answers /readyz with 503 and closes
// each HTTP connection after its answer, while it still serves.
func checkLameDuck(t *testing.T, nd *piNode) {
	t.Helper()
	hc := &http.Client{Timeout: 5 * time.Second}
	testutil.WaitFor(t, 10*time.Second, func() error {
		resp, err := hc.Get(nd.base + "/readyz")
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "lame duck") {
			return fmt.Errorf("%s /readyz after SIGTERM: %d %s", nd.name, resp.StatusCode, body)
		}
		return nil
	})
	resp, err := hc.Get(nd.base + "/v1/sessions")
	if err != nil {
		t.Errorf("%s in its lame duck: %v", nd.name, err)
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !resp.Close {
		t.Errorf("%s in its lame duck: GET /v1/sessions %d, Connection: close %v; want 200, close", nd.name, resp.StatusCode, resp.Close)
	}
}

// replicaLag is node's replica of the stream as another node's /v1/status
// (the leader's view) reports it.
func replicaLag(t *testing.T, nodes []*piNode, node string) string {
	t.Helper()
	for _, nd := range nodes {
		if nd.name == node {
			continue
		}
		st, err := status(nd.base)
		if err != nil {
			continue
		}
		if st.JetStream.Stream.Leader == node {
			return "the leader"
		}
		for _, f := range st.JetStream.Stream.Followers {
			if f.Name == node {
				if f.Lag == nil {
					return fmt.Sprintf("current %v, lag unknown", f.Current)
				}
				return fmt.Sprintf("current %v, lag %d", f.Current, *f.Lag)
			}
		}
	}
	return "unknown"
}

// TestLameDuckSignals: a second SIGTERM cuts a long lame duck short, and
// SIGINT (Ctrl-C) skips it (docs/OPERATIONS.md, Stopping a node); either
// way the node exits 0.
func TestLameDuckSignals(t *testing.T) {
	skipShort(t)
	t.Parallel()
	const lameDuck = time.Minute
	ports := testutil.FreePorts(t, 2)
	base := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	nd := proctest.New(t, "solo", piNodeBin, "--node-name", "solo", "--data-dir", t.TempDir(),
		"--http-listen", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--client-listen", fmt.Sprintf("127.0.0.1:%d", ports[1]),
		"--lame-duck", lameDuck.String())
	start := func() {
		t.Helper()
		nd.Start(t)
		testutil.WaitFor(t, readyTimeout, func() error { return proctest.Ready(base) })
	}

	start()
	began := time.Now()
	if err := nd.Send(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, func() error {
		if err := proctest.Ready(base); err == nil || !strings.Contains(err.Error(), "lame duck") {
			return fmt.Errorf("/readyz after SIGTERM: %v, want 503 (lame duck)", err)
		}
		return nil
	})
	if err := nd.Signal(syscall.SIGTERM, stopTimeout); err != nil {
		t.Errorf("the second SIGTERM: %v", err)
	}
	took := time.Since(began)
	t.Logf("measured: SIGTERM, the lame duck seen, SIGTERM again → exited after %v", took.Round(time.Millisecond))
	if took >= lameDuck/2 {
		t.Errorf("a second SIGTERM did not cut the %v lame duck short: stopped after %v", lameDuck, took)
	}

	start()
	began = time.Now()
	if err := nd.Signal(syscall.SIGINT, stopTimeout); err != nil {
		t.Errorf("SIGINT: %v", err)
	}
	took = time.Since(began)
	t.Logf("measured: SIGINT → exited after %v", took.Round(time.Millisecond))
	if took >= lameDuck/2 {
		t.Errorf("SIGINT went through the %v lame duck: stopped after %v", lameDuck, took)
	}
}
