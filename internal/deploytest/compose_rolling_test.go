package deploytest

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// rollingWriters is how many writers append during the rolling restart,
// each to a session of its own.
const rollingWriters = 4

// rollingRetryWindow is how long a writer of TestComposeRollingRestart
// retries one append (the same entry, byte for byte, on the next node every
// 50 ms; each attempt bounded by 15 s) before it counts it failed. The API
// documents that a retry with the same ids is safe, not for how long to
// retry; pi-node itself answers 503 after 10 s without a quorum, and a
// leader election takes 4–9 s (docs/OPERATIONS.md), so 30 s is a margin
// over both. docs/OPERATIONS.md "Rolling upgrade" states it.
const rollingRetryWindow = 30 * time.Second

// restartFigures is what TestComposeRollingRestart measures of one node's
// restart.
type restartFigures struct {
	node     string
	leader   bool           // it led the session stream when stopped
	stop     time.Duration  // docker-compose stop, SIGTERM to exited
	exit     string         // the container's exit code after the stop
	ready    time.Duration  // start to /readyz 200
	current  time.Duration  // start to every replica current, lag 0
	gap      time.Duration  // longest wait of a writer for an ack, stop to current
	gapOf    string         // the writer that waited so
	anyGap   time.Duration  // longest time without an ack of any writer
	failed   int            // appends given up after rollingRetryWindow
	attempts map[string]int // failed attempts (each retried), by failKind
}

// TestComposeRollingRestart restarts the nodes of docker-compose.yml one
// at a time under write load, as docs/OPERATIONS.md "Rolling upgrade" says:
// docker-compose stop (SIGTERM, within the service's stop_grace_period),
// start, and on to the next node only once it answers /readyz with 200 and
// /v1/status shows every replica of every stream current with lag 0. The
// containers are stopped and started, never recreated: docker-compose v1
// cannot recreate them (KeyError 'ContainerConfig', docs/OPERATIONS.md).
// Meanwhile rollingWriters writers each append a chain of single entries
// to their own session, with their own ids and explicit parents, through
// all three nodes in turn, retrying a failed append with the same entry on
// the next node for up to rollingRetryWindow. No append may fail beyond
// it, no acknowledged entry may be lost, stored twice or out of order, and
// every node must end with the same log. It logs its figures with the
// prefix "measured:".
func TestComposeRollingRestart(t *testing.T) {
	c := upCluster(t)
	svc := loadCompose(t).Services["pi-node-1"]
	grace, err := time.ParseDuration(svc.StopGracePeriod)
	if err != nil || grace < time.Second {
		t.Fatalf("docker-compose.yml: stop_grace_period %q: %v", svc.StopGracePeriod, err)
	}
	t.Logf("stop_grace_period %v; pi-node's PI_NODE_SHUTDOWN_GRACE %q, PI_NODE_LAME_DUCK %q (empty: its default)",
		grace, svc.Environment["PI_NODE_SHUTDOWN_GRACE"], svc.Environment["PI_NODE_LAME_DUCK"])

	var writers []*appender
	defer func() { haltAll(writers) }()
	sids := make([]string, rollingWriters)
	for i := range sids {
		sids[i] = uuid.Must(uuid.NewV7()).String()
		createSession(t, c.nodes[i%len(c.nodes)], sids[i])
		w := newAppender(sids[i], fmt.Sprintf("w%d-", i), c.nodes)
		w.parent, w.window = "root", rollingRetryWindow // createSession's entry
		writers = append(writers, w.start())
	}
	waitAcked(t, "every writer acknowledged 20 times", writers, 20, time.Time{})

	// As Kubernetes' StatefulSet does: the highest ordinal first.
	var figures []restartFigures
	for _, n := range slices.Backward(c.nodes) {
		figures = append(figures, c.rollingRestart(t, n, grace, writers))
	}
	last := time.Now()
	waitAcked(t, "every writer acknowledged 20 times after the last restart", writers, 20, last)
	haltAll(writers)

	for _, w := range writers {
		c.converge(t, w.sid, w, last)
	}
	acked := checkLogs(t, c, sids, writers)
	c.waitHealthy(t, "Docker reporting every node healthy after the rolling restart", c.cids()...)

	var gaps, stops []string
	failed := 0
	for _, f := range figures {
		gaps = append(gaps, fmt.Sprintf("%s %v", f.node, f.gap.Round(time.Millisecond)))
		stops = append(stops, fmt.Sprintf("%s %v", f.node, f.stop.Round(100*time.Millisecond)))
		failed += f.failed
	}
	_, attempts := failedOf(writers)
	t.Logf("measured: rolling restart of 3 nodes under %d writers: write gap %s; stop %s; %d appends failed after retries (failed attempts, retried: %s); %d acknowledged entries, each stored exactly once and in order on every node (byte-identical exports)",
		len(writers), strings.Join(gaps, ", "), strings.Join(stops, ", "), failed, kinds(attempts), acked)
}

// rollingRestart restarts one node as docs/OPERATIONS.md "Rolling upgrade"
// says, while the writers go on, and returns what it measured. A failed
// append is an error; so is a stop that does not end inside grace.
func (c *cluster) rollingRestart(t *testing.T, n *node, grace time.Duration, writers []*appender) restartFigures {
	t.Helper()
	f := restartFigures{node: n.name}
	// Step 1: the node is not the only current replica.
	testutil.WaitFor(t, 3*time.Minute, testutil.Awaiting("every replica current before stopping "+n.name, n.replicasCurrent))
	f.leader = leaderAmong([]*node{n}) == n.name
	failedBefore, attemptsBefore := failedOf(writers)

	// Step 2: SIGTERM, SIGKILL after grace (what Docker does with
	// stop_grace_period; -t says it again for docker-compose v1).
	stopped := time.Now()
	c.must("stop", "-t", strconv.Itoa(int(grace/time.Second)), n.name)
	f.stop = time.Since(stopped)
	f.exit = c.docker("inspect", "-f", "{{.State.ExitCode}}", n.cid)
	if f.stop >= grace || f.exit == "137" {
		t.Errorf("stopping %s took %v (exit code %s): not within the stop grace of %v, Docker killed it", n.name, f.stop.Round(100*time.Millisecond), f.exit, grace)
	}

	// Steps 3 and 4: the same container again (same volume and name), then
	// ready, then every replica current.
	started := time.Now()
	c.must("start", n.name)
	n.waitRestarted(t, n.name+" ready after its restart")
	f.ready = time.Since(started)
	testutil.WaitFor(t, 3*time.Minute, testutil.Awaiting("every replica current after restarting "+n.name, n.replicasCurrent))
	f.current = time.Since(started)
	end := time.Now()

	for _, w := range writers {
		if g := w.maxGapBetween(stopped, end); g > f.gap {
			f.gap, f.gapOf = g, w.prefix
		}
	}
	f.anyGap = anyAckGap(writers, stopped, end)
	f.failed, f.attempts = failedOf(writers)
	f.failed -= failedBefore
	for k, v := range attemptsBefore {
		f.attempts[k] -= v
	}
	t.Logf("measured: %s restarted (stream leader: %v): stop %v (exit code %s; grace %v), /readyz 200 %v and every replica current %v after the start; longest write gap %v (writer %s; no writer acknowledged for %v); %d appends failed after retries; failed attempts, retried: %s",
		n.name, f.leader, f.stop.Round(100*time.Millisecond), f.exit, grace, f.ready.Round(100*time.Millisecond), f.current.Round(100*time.Millisecond),
		f.gap.Round(time.Millisecond), f.gapOf, f.anyGap.Round(time.Millisecond), f.failed, kinds(f.attempts))
	if f.failed > 0 {
		t.Errorf("%d appends failed for longer than the retry window of %v while %s restarted (last error: %s)", f.failed, rollingRetryWindow, n.name, lastErrorOf(writers))
	}
	return f
}

// replicasCurrent returns nil when the node's /v1/status shows every
// session stream (each shard's) with a leader, and every other replica of
// it current, online, with lag 0, all three nodes among them. (The cursor
// bucket's replicas are not in /v1/status.)
func (n *node) replicasCurrent() error {
	var st status
	if err := n.getJSON("/v1/status", &st); err != nil {
		return err
	}
	if st.JetStream.Error != "" {
		return fmt.Errorf("%s: jetstream: %s", n.name, st.JetStream.Error)
	}
	streams := st.JetStream.Shards
	if len(streams) == 0 {
		streams = []wire.StreamStatus{st.JetStream.Stream}
	}
	for _, ss := range streams {
		if ss.Leader == "" {
			return fmt.Errorf("%s: stream %s has no leader", n.name, ss.Name)
		}
		names := []string{ss.Leader}
		for _, p := range ss.Followers {
			if !p.Current || p.Offline || p.Lag != 0 {
				return fmt.Errorf("%s: stream %s: replica %s current %v, offline %v, lag %d", n.name, ss.Name, p.Name, p.Current, p.Offline, p.Lag)
			}
			names = append(names, p.Name)
		}
		slices.Sort(names)
		var want []string
		for _, o := range n.c.nodes {
			want = append(want, o.name)
		}
		if ss.Replicas != len(want) || !slices.Equal(names, want) {
			return fmt.Errorf("%s: stream %s: %d replicas, leader and followers %v, want %v", n.name, ss.Name, ss.Replicas, names, want)
		}
	}
	return nil
}

// failedOf sums the writers' appends given up and their failed attempts
// by failKind.
func failedOf(writers []*appender) (gaveUp int, attempts map[string]int) {
	attempts = map[string]int{}
	for _, w := range writers {
		w.mu.Lock()
		gaveUp += len(w.gaveUp)
		for k, v := range w.failKinds {
			attempts[k] += v
		}
		w.mu.Unlock()
	}
	return gaveUp, attempts
}

// kinds renders counts by kind as "refused=100 503=2" ("none" if none).
func kinds(m map[string]int) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] != 0 {
			out = append(out, fmt.Sprintf("%s=%d", k, m[k]))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, " ")
}

// lastErrorOf is the last error of the first writer that has one.
func lastErrorOf(writers []*appender) string {
	for _, w := range writers {
		w.mu.Lock()
		e := w.lastError
		w.mu.Unlock()
		if e != "" {
			return e
		}
	}
	return "none recorded"
}

// anyAckGap is the longest time around an event from t to end in which no
// writer had an append acknowledged (maxGapBetween over all their acks).
func anyAckGap(writers []*appender, t, end time.Time) time.Duration {
	all := &appender{}
	for _, w := range writers {
		w.mu.Lock()
		all.ackTimes = append(all.ackTimes, w.ackTimes...)
		w.mu.Unlock()
	}
	slices.SortFunc(all.ackTimes, time.Time.Compare)
	return all.maxGapBetween(t, end)
}
