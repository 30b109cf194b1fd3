//go:build linux

package jepsen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/testutil"

	"github.com/google/uuid"
)

const (
	numNodes    = 3
	numClients  = 10
	numSessions = 6
	// sessionsPerClient, drawn at random: each session is shared by about
	// five clients, on different nodes and transports, so conditional
	// appends race.
	sessionsPerClient = 3
	// maxViolationsShown per check; the count says how many there were.
	maxViolationsShown = 8
	linTimeout         = 20 * time.Second
)

// TestJepsen runs the clients against a three-node cluster under the
// nemesis, heals, reads the final logs and checks the history; see the
// package documentation.
func TestJepsen(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real pi-node processes and injects faults; skipped with -short")
	}
	began := time.Now()
	sd := seed()
	t.Logf("JEPSEN_SEED=%d (duration %v)", sd, *durationFlag)
	rng := rand.New(rand.NewPCG(uint64(sd), 0))

	net := newNetwork(t, numNodes, rng)
	if net.ns {
		mode := "iptables DROP in the node's namespace"
		if !net.iptables {
			mode = "link down (no iptables in the namespaces)"
		}
		t.Logf("network: a namespace per node on %s.0/24 (%s); partition by %s", net.subnet, net.tag, mode)
	} else {
		t.Logf("network namespaces unavailable (%s): nodes on loopback, the partition fault is skipped", net.reason)
	}
	nodes := startCluster(t, net, numNodes)
	clusterUp := time.Since(began)

	rec := newRecorder()
	sids := make([]string, numSessions)
	for i := range sids {
		id, err := uuid.NewV7()
		if err != nil {
			t.Fatal(err)
		}
		sids[i] = id.String()
	}
	setup, cancelSetup := context.WithTimeout(context.Background(), readyTimeout)
	defer cancelSetup()
	if err := createSessions(setup, nodes, rec, sids); err != nil {
		t.Fatal(err)
	}

	if routing, err := natsRouting(nodes, 30); err != nil {
		t.Logf("NATS routing probe: %v", err)
	} else {
		t.Logf("MEASURED nats routing: pi.v1.status sent to each node's server, answered by (connected server: answering pi-node=count): %v", routing)
	}

	// Client i sticks to node i%3 and alternates transports, so every
	// node has clients of both.
	clients := make([]*client, numClients)
	for i := range clients {
		var mine []string
		for _, k := range rng.Perm(numSessions)[:sessionsPerClient] {
			mine = append(mine, sids[k])
		}
		transport := "http"
		if (i/numNodes)%2 == 1 {
			transport = "nats"
		}
		c, err := newClient(i, nodes[i%numNodes], transport, rec, sd, mine)
		if err != nil {
			t.Fatal(err)
		}
		defer c.close()
		clients[i] = c
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	workStart := time.Now()
	for _, c := range clients {
		wg.Go(func() { c.run(ctx) })
	}
	nem := &nemesis{t: t, nodes: nodes, net: net, rng: rand.New(rand.NewPCG(uint64(sd), 1)), rec: rec,
		injected: map[string]int{}, skipped: map[string]string{}}
	if !net.ns {
		nem.skipped[faultPartition] = "no network namespaces: " + net.reason
	}
	nem.run(workStart.Add(*durationFlag))
	sleepUntil(workStart.Add(*durationFlag), workStart.Add(*durationFlag))
	stop()
	wg.Wait() // bounded: an append gives up after appendDeadline
	workload := time.Since(workStart)

	// Heal, let every node catch up, read the final logs.
	healStart := time.Now()
	nem.healAll()
	for _, nd := range nodes {
		if _, err := nd.waitReady(readyTimeout); err != nil {
			t.Fatalf("after healing: %v", err)
		}
	}
	ops := rec.history()
	var maxAcked uint64
	acked := map[int]uint64{} // by shard: a sequence is one shard's (docs/PROTOCOL.md)
	for _, op := range ops {
		if op.Outcome == OK && op.Kind != KindRead {
			maxAcked = max(maxAcked, op.Seq)
			acked[shard.OfSeq(op.Seq)] = max(acked[shard.OfSeq(op.Seq)], op.Seq)
		}
	}
	ends := converge(t, nodes, acked)
	end := slices.Max(ends)
	final := map[string]map[string][]Entry{}
	names := make([]string, len(nodes))
	for i, nd := range nodes {
		names[i] = nd.name
		final[nd.name] = map[string][]Entry{}
		for _, sid := range sids {
			log, err := finalLog(nd, sid, ends[shard.Of(sid, len(ends))])
			if err != nil {
				t.Fatal(err)
			}
			final[nd.name][sid] = log
		}
	}
	healed := time.Since(healStart)

	checkStart := time.Now()
	rep := check(ops, names, final, linTimeout)
	checked := time.Since(checkStart)

	logOps(t, ops, workload)
	t.Logf("MEASURED faults: %s", nem.summary())
	t.Logf("MEASURED final: log last seq %d, highest acknowledged %d; %s", end, maxAcked, finalSizes(final[names[0]], sids))
	for _, c := range rep.Checks {
		tag := ""
		if lenient(c.Name) {
			tag = " (lenient)"
		}
		note := ""
		if c.Note != "" {
			note = "; " + c.Note
		}
		t.Logf("MEASURED check %s: %d examined, %d violations%s%s", c.Name, c.Count, len(c.Violations), tag, note)
	}
	t.Logf("MEASURED honest-lag strict: %d reads reporting Pi-Lag 0 without Pi-Stale miss an entry some node acknowledged before them (within %v, not promised)",
		rep.lagStrict, lagWindow)
	for _, c := range rep.Checks {
		report := t.Errorf
		if lenient(c.Name) {
			report = t.Logf
		}
		for i, v := range c.Violations {
			if i == maxViolationsShown {
				report("violation %s: ... and %d more", c.Name, len(c.Violations)-maxViolationsShown)
				break
			}
			report("violation %s: %s", c.Name, v)
		}
	}
	t.Logf("MEASURED wall: cluster up %v, workload %v, heal and final reads %v, check %v, total %v",
		clusterUp.Round(time.Millisecond), workload.Round(time.Millisecond), healed.Round(time.Millisecond),
		checked.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))

	path := os.Getenv("JEPSEN_HISTORY")
	if path == "" && t.Failed() {
		f, err := os.CreateTemp("", fmt.Sprintf("jepsen-history-%d-*.jsonl.gz", sd))
		if err == nil {
			path = f.Name()
			f.Close()
		}
	}
	if path != "" {
		if err := writeHistory(path, ops, final); err != nil {
			t.Errorf("history: %v", err)
		} else {
			t.Logf("history (%d operations and the final logs) written to %s", len(ops), path)
		}
	}
}

// converge waits until every node has applied the log to its end, and
// returns that end, by shard (one without shards; at least the highest
// acknowledged sequence of each, minEnds).
func converge(t *testing.T, nodes []*piNode, minEnds map[int]uint64) []uint64 {
	t.Helper()
	var ends []uint64
	testutil.WaitFor(t, readyTimeout, testutil.Awaiting("every node applied the log to its end", func() error {
		sts := make([]nodeStatus, len(nodes))
		ends = nil
		for i, nd := range nodes {
			st, err := nd.status()
			if err != nil {
				return err
			}
			sts[i] = st
			for k, e := range st.logEnds() {
				for len(ends) <= k {
					ends = append(ends, minEnds[len(ends)])
				}
				ends[k] = max(ends[k], e)
			}
		}
		for i, st := range sts {
			for _, e := range ends {
				if got := st.appliedAt(e); got < e {
					return fmt.Errorf("%s applied %d of %d", nodes[i].name, got, e)
				}
			}
		}
		return nil
	}))
	return ends
}

// finalLog reads a session's entries on nd with minSeq end, retrying for a
// while: a node just healed may still answer 503 or 504.
func finalLog(nd *piNode, sid string, end uint64) ([]Entry, error) {
	var log []Entry
	u := fmt.Sprintf("%s/v1/sessions/%s/entries?limit=%d&minSeq=%d", nd.base, sid, readLimit, end)
	_, err := testutil.Poll(readyTimeout, func() error {
		st, _, body, err := proctest.Do(context.Background(), probe, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		if st != http.StatusOK {
			return fmt.Errorf("%s final read of %s: %d %s", nd.name, short(sid), st, body)
		}
		var last uint64
		log, last, err = parseEntries(body)
		if err != nil {
			return err
		}
		if n := len(log); n == readLimit && log[n-1].Seq < last {
			return fmt.Errorf("%s final read of %s: more than %d entries", nd.name, short(sid), readLimit)
		}
		return nil
	})
	return log, err
}

func finalSizes(final map[string][]Entry, sids []string) string {
	parts := make([]string, len(sids))
	for i, sid := range sids {
		parts[i] = fmt.Sprintf("%s=%d", short(sid), len(final[sid]))
	}
	return "entries per session " + strings.Join(parts, " ")
}

// logOps prints the operations by kind and outcome.
func logOps(t *testing.T, ops []*Op, took time.Duration) {
	t.Helper()
	counts := map[string]int{}
	for _, op := range ops {
		var k string
		switch op.Kind {
		case KindCreate:
			k = "create"
		case KindAppend:
			k = "append plain"
			if op.Expect != nil {
				k = "append cas"
			}
		case KindRead:
			k = "read " + op.Read
			if op.Strong {
				k += " strong"
			}
			if op.MinSeq > 0 {
				k += " minSeq"
			}
		}
		out := string(op.Outcome)
		if op.Outcome == Fail && op.Conflict {
			out = "conflict"
		} else if op.Outcome == Fail && op.Status != 0 {
			out = "fail-" + strconv.Itoa(op.Status)
		}
		counts[k+" "+op.Transport+" "+out]++
		counts["total"]++
		if op.Kind == KindRead && op.Outcome == OK {
			if op.Stale {
				counts["reads flagged Pi-Stale"]++
			}
			if op.Lag != nil && *op.Lag > 0 {
				counts["reads with Pi-Lag > 0"]++
			}
		}
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t.Logf("MEASURED ops: %d in %v (%.0f/s)", counts["total"], took.Round(time.Millisecond), float64(counts["total"])/took.Seconds())
	for _, k := range keys {
		if k != "total" {
			t.Logf("MEASURED ops %s: %d", k, counts[k])
		}
	}
}
