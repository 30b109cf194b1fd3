//go:build linux

package cluster

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// TestEmbeddedCluster covers issue item 1: three pi-nodes form their own
// JetStream cluster with --replicas 3; a write through one node is read on
// the others with minSeq; with one node stopped the other two keep taking
// writes; restarted on the same data dir it rejoins and catches up.
func TestEmbeddedCluster(t *testing.T) {
	skipShort(t)
	t.Parallel()
	nodes := startEmbeddedCluster(t, 3)
	n1, n2, n3 := nodes[0], nodes[1], nodes[2]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	checkStreamStatus(t, nodes, nodes, "embedded-cluster")

	// Write through node 1 only.
	type sess struct {
		id   string
		leaf string
		n    int
		last uint64 // its lastSeq: with shards, a sequence of its own shard
	}
	var sessions []*sess
	var lastSeq uint64
	add := func(s *sess, via []string, first int) {
		t.Helper()
		for range 3 {
			s.n++
			e := proctest.NewEntry(fmt.Sprintf("e%03d", s.n), s.leaf, fmt.Sprintf("%s #%d", s.id[:8], s.n), time.Now())
			wr, err := appendRetry(ctx, proctest.ProbeClient, via, first, s.id, e)
			if err != nil {
				t.Fatal(err)
			}
			if len(wr.Entries) != 1 || wr.Entries[0].ID != e.ID || wr.LastSeq != wr.Entries[0].Seq {
				t.Fatalf("append %s: reply %+v", e.ID, wr)
			}
			s.leaf, lastSeq, s.last = e.ID, max(lastSeq, wr.LastSeq), wr.LastSeq
		}
	}
	create := func(via []string) *sess {
		t.Helper()
		s := &sess{id: testutil.SessionID(t)}
		seq, err := createSession(ctx, proctest.ProbeClient, via, 0, s.id, "/work/"+s.id[:8], time.Now())
		if err != nil {
			t.Fatal(err)
		}
		lastSeq = max(lastSeq, seq)
		sessions = append(sessions, s)
		return s
	}
	for range 5 {
		add(create([]string{n1.base}), []string{n1.base}, 0)
	}

	// Read through nodes 2 and 3 with minSeq: every read names the last
	// write, so it must see it, and say it is fresh.
	for _, s := range sessions {
		for _, path := range []string{"/export", "/tree", "/entries", ""} {
			sameOnAll(t, nodes, "/v1/sessions/"+s.id+path, floor(s.last, lastSeq))
		}
	}
	sameOnAll(t, nodes, catalogPath, lastSeq)

	// Stop node 3 gracefully. Whether or not it led the stream, nodes 1 and
	// 2 must keep taking writes (after an election if it did).
	before, err := status(n1.base)
	if err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()
	if err := n3.Stop(stopTimeout); err != nil {
		t.Errorf("n3 did not shut down cleanly on SIGTERM: %v", err)
	}
	stopTook := time.Since(stoppedAt)
	live := []string{n1.base, n2.base}
	firstWrite := time.Now()
	add(sessions[0], live, 0)
	t.Logf("MEASURED embedded: SIGTERM of n3 (stream leader was %s) took %v; first 3 writes afterwards took %v",
		before.JetStream.Stream.Leader, stopTook.Round(time.Millisecond), time.Since(firstWrite).Round(time.Millisecond))
	for i, s := range sessions[1:] {
		add(s, live, i)
	}
	for range 2 {
		add(create([]string{n2.base, n1.base}), live, 1)
	}
	// Reads on the two survivors. Their Stores may first have to notice
	// that the ordered consumer feeding them lived on n3 (see
	// TestStoresFollowThroughNodeLoss, which asserts on that delay); this
	// test is about the cluster carrying on, so it waits for them.
	survivorsIn := testutil.WaitFor(t, readyTimeout, testutil.Awaiting("n1 and n2 applied the writes made without n3", func() error {
		for _, nd := range nodes[:2] {
			st, err := status(nd.base)
			if err != nil {
				return err
			}
			if got := st.appliedAt(lastSeq); got < lastSeq {
				return fmt.Errorf("%s applied %d of %d", nd.name, got, lastSeq)
			}
		}
		return nil
	}))
	t.Logf("MEASURED embedded: n1 and n2 applied the writes made without n3 %v after the last one", survivorsIn.Round(time.Millisecond))
	for _, s := range sessions {
		sameOnAll(t, nodes[:2], "/v1/sessions/"+s.id+"/export", floor(s.last, lastSeq))
	}
	// The leader now reports node 3's replica as behind or offline, and so
	// does pi-ctl status.
	testutil.WaitFor(t, readyTimeout, testutil.Awaiting("the stream leader's view of n3", func() error {
		st, err := status(n1.base)
		if err != nil {
			return err
		}
		for _, f := range st.JetStream.Stream.Followers {
			if f.Name == n3.name && f.Current && !f.Offline {
				return fmt.Errorf("n3 still current: %+v", st.JetStream.Stream)
			}
		}
		return nil
	}))
	out := piCtlStatus(t, n1.base)
	if row := replicaRow(out, n3.name); !strings.Contains(row, "offline") && !strings.Contains(row, "catching up") {
		t.Errorf("pi-ctl status with n3 stopped: n3's row is %q, want offline or catching up:\n%s", row, out)
	}

	// Restart node 3 on the same data dir: it rejoins the cluster, JetStream
	// catches its replica up, and its Store applies what it missed.
	restartedAt := time.Now()
	n3.Start(t)
	readyIn := n3.waitReady(t)
	testutil.WaitFor(t, readyTimeout, testutil.Awaiting("n3 applied the log's last sequence", func() error {
		st, err := status(n3.base)
		if err != nil {
			return err
		}
		if end := slices.Max(st.logEnds()); end != lastSeq || st.appliedAt(lastSeq) != lastSeq {
			return fmt.Errorf("stream last seq %d, applied %d, want both %d", end, st.appliedAt(lastSeq), lastSeq)
		}
		return nil
	}))
	t.Logf("MEASURED embedded: n3 restarted: /readyz after %v, Store at the log's last seq %d after %v",
		readyIn.Round(time.Millisecond), lastSeq, time.Since(restartedAt).Round(time.Millisecond))
	checkStreamStatus(t, nodes, nodes, "embedded-cluster")
	// pi-ctl status shows every node: the leader and both followers, each
	// current, with its lag. Polled: right after a restart the node's
	// stream info requests can time out (the status then says so, with no
	// table), as they did once in CI over 4 shards. The leader is the one
	// this same status names: the restarted node spreads the shards'
	// leaders over the servers, so the leader may move after any earlier
	// look (a .ci/run saw n2's row say follower, n3 having taken over).
	testutil.WaitFor(t, readyTimeout, testutil.Awaiting("pi-ctl status with every replica current", func() error {
		out = piCtlStatus(t, n2.base)
		if !strings.Contains(out, "LAG") {
			return fmt.Errorf("pi-ctl status has no LAG column:\n%s", out)
		}
		m := regexp.MustCompile(`(?m)^replicas +\d+, leader (\S+)`).FindStringSubmatch(out)
		if m == nil {
			return fmt.Errorf("pi-ctl status names no stream leader:\n%s", out)
		}
		for _, nd := range nodes {
			row, role := replicaRow(out, nd.name), "follower"
			if nd.name == m[1] {
				role = "leader"
			}
			if !strings.Contains(row, role) || !strings.Contains(row, "current") {
				return fmt.Errorf("pi-ctl status: %s's row is %q, want %s and current:\n%s", nd.name, row, role, out)
			}
		}
		return nil
	}))
	for _, s := range sessions {
		for _, path := range []string{"/export", "/tree"} {
			sameOnAll(t, nodes, "/v1/sessions/"+s.id+path, floor(s.last, lastSeq))
		}
	}
	sameOnAll(t, nodes, catalogPath, lastSeq)
	for _, nd := range nodes {
		st, err := status(nd.base)
		held := 0
		for _, s := range sessions {
			if st.holds(s.id) {
				held++
			}
		}
		if err != nil || st.Store.SkippedRecords != 0 || st.Store.Sessions != held {
			t.Errorf("%s: %+v %v; want %d sessions (those of the shards it holds), no skipped records", nd.name, st.Store, err, held)
		}
	}
}

// sameOnAll reads path (with minSeq) on every node and requires identical
// bodies, an applied sequence at or past minSeq and no staleness flag.
func sameOnAll(t *testing.T, nodes []*piNode, path string, minSeq uint64) []byte {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	var want []byte
	for i, nd := range nodes {
		var body []byte
		var hdr http.Header
		// A read is flagged stale while the node has not confirmed the log's
		// end within a second, honestly so just after a leader change (its
		// poll went to the old leader); the flag must clear. A strong read
		// during an election is refused (503: a stream without a leader, as
		// docs/API.md says), as when a restarted node spreads the leaders
		// and one steps down; it must succeed once there is one.
		testutil.WaitFor(t, 10*time.Second, func() error {
			url := nd.base + path + sep + "minSeq=" + strconv.FormatUint(minSeq, 10)
			st, h, data, err := proctest.Do(context.Background(), proctest.ProbeClient, http.MethodGet, url, nil)
			switch {
			case err != nil:
				t.Fatalf("GET %s: %v", url, err)
			case st == http.StatusServiceUnavailable:
				return fmt.Errorf("GET %s: 503: %s", url, data)
			case st != http.StatusOK:
				t.Fatalf("GET %s: %d, want 200: %s", url, st, data)
			}
			body, hdr = data, h
			if hdr.Get("Pi-Stale") != "" {
				return fmt.Errorf("%s %s: Pi-Stale %q after a write it has applied", nd.name, path, hdr.Get("Pi-Stale"))
			}
			return nil
		})
		applied, err := strconv.ParseUint(hdr.Get("Pi-Applied-Seq"), 10, 64)
		if err != nil || !covers(applied, minSeq) {
			t.Errorf("%s %s: Pi-Applied-Seq %q, want >= %d", nd.name, path, hdr.Get("Pi-Applied-Seq"), minSeq)
		}
		if i == 0 {
			want = body
		} else if string(body) != string(want) {
			t.Errorf("%s %s differs from %s:\n%s\nvs\n%s", nd.name, path, nodes[0].name, body, want)
		}
	}
	return want
}

// checkStreamStatus asks every node in ask for /v1/status and checks that
// they agree on the stream leader, and that the leader's own status lists
// it and every other member of cluster as a follower with its lag.
func checkStreamStatus(t *testing.T, ask, cluster []*piNode, mode string) nodeStatus {
	t.Helper()
	var leader string
	var leaderStatus nodeStatus
	testutil.WaitFor(t, readyTimeout, testutil.Awaiting("every node agrees on the stream leader and its followers", func() error {
		leader = ""
		for _, nd := range ask {
			st, err := status(nd.base)
			if err != nil {
				return fmt.Errorf("%s: %w", nd.name, err)
			}
			ss := st.JetStream.Stream
			switch {
			case st.JetStream.Mode != mode:
				return fmt.Errorf("%s: mode %q, want %q", nd.name, st.JetStream.Mode, mode)
			case ss.Replicas != 3:
				return fmt.Errorf("%s: stream replicas %d, want 3", nd.name, ss.Replicas)
			case ss.Leader == "":
				return fmt.Errorf("%s: no stream leader", nd.name)
			case leader != "" && ss.Leader != leader:
				return fmt.Errorf("%s says the leader is %s, another node says %s", nd.name, ss.Leader, leader)
			}
			leader = ss.Leader
			if len(ss.Followers) != 2 {
				return fmt.Errorf("%s: followers %+v, want 2", nd.name, ss.Followers)
			}
			names := []string{ss.Leader}
			for _, f := range ss.Followers {
				if f.Lag == nil {
					return fmt.Errorf("%s: follower %s without lag", nd.name, f.Name)
				}
				if !f.Current || f.Offline || *f.Lag != 0 {
					return fmt.Errorf("%s: follower %s not caught up: current %v offline %v lag %d", nd.name, f.Name, f.Current, f.Offline, *f.Lag)
				}
				names = append(names, f.Name)
			}
			slices.Sort(names)
			var want []string
			for _, c := range cluster {
				want = append(want, c.name)
			}
			slices.Sort(want)
			if !slices.Equal(names, want) {
				return fmt.Errorf("%s: leader and followers %v, want %v", nd.name, names, want)
			}
			if st.Node == leader || st.JetStream.Server == leader {
				leaderStatus = st
			}
		}
		return nil
	}))
	return leaderStatus
}
