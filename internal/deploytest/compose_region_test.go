package deploytest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/pifleet/sessionlog/internal/testutil"
)

// regionSessions is how many sessions the writers of both regions share.
const regionSessions = 5

// TestComposeRegion runs deploy/compose/region.yml — region A (home, a1),
// region B (mirror, b1), the tie-breaker t1 — and fails it over and back
// as docs/CROSS-REGION.md describes: a failover refused while A is
// healthy; a write in A read in B; writers in both regions on five
// sessions (B's writes go to the home, A); every container of A killed;
// pi-ctl failover --to B, run in b1's container; A started again and
// pi-ctl failback --from A while writers in both regions go on; then every
// acknowledged entry stored exactly once, on both nodes, and every session
// holding both regions' entries. It logs RTO, RPO and the failback with
// the prefix "measured:". Like TestCompose it runs only with
// PI_COMPOSE_TEST=1 (test/compose/run.sh, after make image).
func TestComposeRegion(t *testing.T) {
	if os.Getenv("PI_COMPOSE_TEST") != "1" {
		t.Skip("the docker-compose cross-region test runs with PI_COMPOSE_TEST=1 (test/compose/run.sh)")
	}
	if _, err := docker("info"); err != nil {
		t.Skip("docker engine not answering: compose test skipped")
	}
	compose, err := composeCommand()
	if err != nil {
		t.Skipf("%v: compose test skipped", err)
	}
	images := map[string]string{
		"PI_NODE_IMAGE":       makeVar(t, "IMAGE") + ":" + makeVar(t, "TAG"),
		"PI_TIEBREAKER_IMAGE": makeVar(t, "TIEBREAKER_IMAGE") + ":" + makeVar(t, "TAG"),
	}
	testStart := time.Now()
	c := newProject(t, compose, "piregion", []string{"deploy/compose/region.yml"}, []string{"a1", "b1"}, []string{"t1"})
	for k := range images {
		if v := os.Getenv(k); v != "" {
			images[k] = v
		}
		if _, err := docker("image", "inspect", "-f", "{{.Id}}", images[k]); err != nil {
			t.Fatalf("image %s is not built: run make image first (test/compose/run.sh does)", images[k])
		}
		c.env = append(c.env, k+"="+images[k])
	}
	c.down()
	t.Cleanup(func() {
		c.dumpLogs()
		c.down()
	})

	// Up: both pi-nodes ready, all three containers healthy.
	start := time.Now()
	c.must("up", "-d")
	c.discover()
	a1, b1 := c.node("a1"), c.node("b1")
	tb := strings.TrimSpace(c.must("ps", "-q", "t1"))
	if tb == "" {
		t.Fatal("no container for t1")
	}
	testutil.WaitFor(t, 3*time.Minute, c.allReady) // a1's and b1's /readyz answering 200
	readyIn := time.Since(start)
	cids := []string{a1.cid, b1.cid, tb}
	c.waitHealthy(t, "Docker reporting a1, b1 and t1 healthy", cids...)
	t.Logf("measured: up -d to a1 and b1 /readyz 200: %v; to all three healthy in Docker: %v",
		readyIn.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
	waitForRegion(t, b1, "b1 a mirror of home A", func(r regionInfo) bool {
		return r.Role == "mirror" && r.Home == "A" && r.Reads == "PI_SESSIONS_B" && r.Writes == "PI_SESSIONS_A"
	})

	// While A answers, a failover is refused and changes nothing.
	code, out := c.piCtl(b1, time.Minute, "failover", "--to", "B")
	if code != 1 || !strings.Contains(out, "refused") {
		t.Fatalf("pi-ctl failover --to B while A is healthy: exit %d, want 1 and a refusal:\n%s", code, out)
	}
	waitForRegion(t, b1, "the record unchanged after the refusal", func(r regionInfo) bool {
		return r.Home == "A" && r.Epoch == 1
	})

	sids := make([]string, regionSessions)
	for i := range sids {
		sids[i] = uuid.Must(uuid.NewV7()).String()
		createSession(t, a1, sids[i])
	}
	mirrorReads(t, a1, b1, sids[0])

	// A writer per session in each region, each through its region's node.
	var aw, bw, all []*appender
	for i, sid := range sids {
		aw = append(aw, startAppender(sid, fmt.Sprintf("a%d-", i), []*node{a1}))
		bw = append(bw, startAppender(sid, fmt.Sprintf("b%d-", i), []*node{b1}))
	}
	all = append(append(all, aw...), bw...)
	defer func() { haltAll(all) }() // all grows below
	// Every writer acknowledged 20 times.
	waitAcked(t, "every writer acknowledged 20 times", all, 20, time.Time{})

	// A meta leader in A makes the failover wait for an election.
	t.Logf("JetStream meta leader before the kill: %s", metaLeader(tb))

	// Region A is lost: SIGKILL to every container of A (here a1).
	kill := time.Now()
	c.docker("kill", a1.cid)
	// Attempts sent once the container is gone cannot have reached A.
	testutil.WaitFor(t, 30*time.Second, func() error {
		if s := c.docker("inspect", "-f", "{{.State.Status}}", a1.cid); s != "exited" {
			return errors.New("a1 dead: " + s)
		}
		return nil
	})
	dead := time.Now()
	foStart := time.Now()
	code, out = c.piCtl(b1, 3*time.Minute, "failover", "--to", "B")
	foTook := time.Since(foStart)
	if code != 0 {
		t.Fatalf("pi-ctl failover --to B after the loss of A: exit %d\n%s", code, out)
	}
	t.Logf("pi-ctl failover --to B:\n%s", strings.TrimSpace(out))
	waitAcked(t, "B's writers acknowledged 10 times after the kill", bw, 10, dead)
	rto := firstAck(bw, kill, dead)
	t.Logf("measured: RTO (docker kill of region A -> first write accepted in B, sent after A was dead): %v; of which pi-ctl failover %v (run %v after the kill, in b1 with docker exec), and %v from its end to that write",
		rto.Round(time.Millisecond), foTook.Round(time.Millisecond), foStart.Sub(kill).Round(time.Millisecond), (rto - foStart.Sub(kill) - foTook).Round(time.Millisecond))

	// RPO: what was acknowledged before A was dead and B does not hold.
	rpo, before := missingAfterFailover(t, b1, sids, all, dead)
	t.Logf("measured: RPO: %d of %d entries acknowledged before the kill missing in B after the failover %v", len(rpo), before, rpo)
	haltAll(aw) // they have been failing since the kill

	// A comes back on its data; its node reads and writes through B.
	if s := c.docker("inspect", "-f", "{{.State.Status}}", a1.cid); s != "exited" {
		t.Fatalf("a1 is %s before its restart: the restart policy must leave a killed container down", s)
	}
	restart := time.Now()
	c.docker("start", a1.cid)
	aReady := a1.waitRestarted(t, "a1 ready again")
	waitForRegion(t, a1, "a1 stale, home B", func(r regionInfo) bool {
		return r.Role == "stale" && r.Home == "B" && r.Writes == "PI_SESSIONS_B"
	})
	t.Logf("measured: a1 started again: /readyz 200 after %v (stale: reading and writing through B)", aReady.Round(100*time.Millisecond))
	var rw []*appender
	for i, sid := range sids {
		rw = append(rw, startAppender(sid, fmt.Sprintf("r%d-", i), []*node{a1}))
	}
	all = append(all, rw...)
	waitAcked(t, "A's writers acknowledged 5 times after A's return", rw, 5, restart)

	fbStart := time.Now()
	code, out = c.piCtl(b1, 5*time.Minute, "failback", "--from", "A")
	fbTook := time.Since(fbStart)
	if code != 0 {
		t.Fatalf("pi-ctl failback --from A: exit %d\n%s", code, out)
	}
	t.Logf("pi-ctl failback --from A:\n%s", strings.TrimSpace(out))
	afterFB := time.Now()
	waitAcked(t, "writers of both regions acknowledged 5 times after failback", append(append([]*appender{}, bw...), rw...), 5, afterFB)
	haltAll(all)
	t.Logf("measured: failback (fence, merge, mirror recreated, caught up): %v, writers of both regions going on", fbTook.Round(time.Millisecond))

	waitForRegion(t, a1, "a1 a mirror of home B", func(r regionInfo) bool {
		return r.Role == "mirror" && r.Home == "B" && r.Epoch == 2 && len(r.Stale) == 0 && r.Reads == "PI_SESSIONS_A"
	})
	waitForRegion(t, b1, "b1 the home", func(r regionInfo) bool {
		return r.Role == "home" && r.Home == "B" && len(r.Stale) == 0
	})
	acked := checkRegionLogs(t, c, sids, all, rpo)
	c.waitHealthy(t, "Docker reporting a1, b1 and t1 healthy again", cids...)
	t.Logf("measured: after failback: %d acknowledged entries in %d sessions, each stored exactly once on a1 and b1 (byte-identical exports); the %d missing at failover are back; whole test %v",
		acked, len(sids), len(rpo), time.Since(testStart).Round(time.Second))
}

// piCtl runs the image's pi-ctl inside n's container against its own NATS
// server: the region's NATS port is not published, and the command then
// runs where an operator of that region would run it.
func (c *cluster) piCtl(n *node, timeout time.Duration, args ...string) (int, string) {
	c.t.Helper()
	full := append([]string{"exec", n.cid, "/pi-ctl"}, args...)
	// As the admin (failover and failback are JetStream administration),
	// over TLS verified with the mounted CA.
	full = append(full, "--server", "tls://127.0.0.1:4222", "--tls-ca", composeSecrets+"/ca.pem",
		"--user", "admin", "--password", c.sec.passwords["admin"], "--timeout", timeout.String())
	// A margin over pi-ctl's own bound, for docker exec.
	ctx, cancel := context.WithTimeout(context.Background(), timeout+30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", full...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	case err != nil:
		c.t.Fatalf("docker %s: %v\n%s", strings.Join(full, " "), err, out)
	}
	return 0, string(out)
}

// metaLeader asks the tie-breaker's nats-server (its monitoring port,
// inside the container) which server leads the JetStream meta group.
func metaLeader(tb string) string {
	out, err := exec.Command("docker", "exec", tb, "/healthcheck", "-print", "-timeout", "5s", "http://127.0.0.1:8222/jsz").Output()
	if err != nil {
		return fmt.Sprintf("unknown (%v)", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(out)), nil)
	if err != nil {
		return fmt.Sprintf("unknown (%v)", err)
	}
	defer resp.Body.Close()
	var jsz struct {
		Meta struct {
			Leader string `json:"leader"`
		} `json:"meta_cluster"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&jsz); err != nil {
		return fmt.Sprintf("unknown (%v)", err)
	}
	return jsz.Meta.Leader
}

// regionInfo is the region block of /v1/status.
type regionInfo struct {
	Region string            `json:"region"`
	Role   string            `json:"role"`
	Home   string            `json:"home"`
	Epoch  uint64            `json:"epoch"`
	Stale  map[string]uint64 `json:"stale"`
	Reads  string            `json:"reads"`
	Writes string            `json:"writes"`
}

// waitForRegion polls n's /v1/status until its region block satisfies ok.
func waitForRegion(t *testing.T, n *node, what string, ok func(regionInfo) bool) {
	t.Helper()
	testutil.WaitFor(t, time.Minute, func() error {
		var s struct {
			JetStream struct {
				Region regionInfo `json:"region"`
			} `json:"jetstream"`
		}
		if err := n.getJSON("/v1/status", &s); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if !ok(s.JetStream.Region) {
			return fmt.Errorf("%s: %+v", what, s.JetStream.Region)
		}
		return nil
	})
}

// createSession creates sid with a root entry through n.
func createSession(t *testing.T, n *node, sid string) {
	t.Helper()
	now := time.Now().UTC()
	body := fmt.Appendf(nil, `{"header":{"type":"session","version":3,"id":%q,"cwd":"/work","timestamp":%q},`+
		`"entries":[{"type":"message","id":"root","parentId":null,"timestamp":%q,"message":{"role":"user","content":"root","timestamp":%d}}]}`,
		sid, now.Format(time.RFC3339Nano), now.Format(time.RFC3339Nano), now.UnixMilli())
	r, err := n.do(http.MethodPost, "/v1/sessions", body, 30*time.Second)
	if err != nil || r.status != http.StatusCreated {
		t.Fatalf("create %s through %s: %v %v", sid, n.name, r, err)
	}
}

// mirrorReads writes through the home's node and reads the entry in the
// mirror region: polled without minSeq (the mirror's lag as a reader sees
// it), and with the write's lastSeq as minSeq (read your writes across
// regions: the mirror keeps the home's sequences). What must never happen
// is a read with minSeq answered 200 without the entry; a 504 (the node's
// bounded wait for minSeq ran out, on a loaded machine) is asked again, as
// docs/API.md tells clients, and counted. How long the mirror takes is
// measured and reported, never judged: the plain reads poll within a
// scaled minute.
func mirrorReads(t *testing.T, home, mirror *node, sid string) {
	t.Helper()
	const probes = 20
	var plain, withMinSeq []time.Duration
	retried := 0
	for i := range probes {
		id := fmt.Sprintf("probe-%02d", i)
		r, err := home.do(http.MethodPost, "/v1/sessions/"+sid+"/entries", entryBody(id), 30*time.Second)
		if err != nil || r.status != http.StatusOK {
			t.Fatalf("write %s through %s: %v %v", id, home.name, r, err)
		}
		acked := time.Now()
		var rep struct {
			LastSeq uint64 `json:"lastSeq"`
		}
		if err := json.Unmarshal(r.body, &rep); err != nil {
			t.Fatal(err)
		}
		path := fmt.Sprintf("/v1/sessions/%s/entries?afterSeq=%d", sid, rep.LastSeq-1)
		strong := i%2 == 1
		if strong {
			path += fmt.Sprintf("&minSeq=%d", rep.LastSeq)
		}
		// Polled every 2 ms: the lag is a few of them when idle.
		tick := time.NewTicker(2 * time.Millisecond)
		deadline := acked.Add(testutil.Scale(time.Minute))
		for {
			r, err := mirror.do(http.MethodGet, path, nil, 30*time.Second)
			if err == nil && r.status == http.StatusOK && bytes.Contains(r.body, []byte(`"id":"`+id+`"`)) {
				break
			}
			if strong {
				if err == nil && r.status == http.StatusOK {
					t.Fatalf("%s in %s with minSeq=%d: 200 without the entry: %s", id, mirror.name, rep.LastSeq, r.body)
				}
				if err != nil || r.status != http.StatusGatewayTimeout {
					t.Fatalf("%s in %s with minSeq=%d: %v %v", id, mirror.name, rep.LastSeq, r, err)
				}
				retried++
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s, written in %s, not served by %s within %v: %v %v", id, home.name, mirror.name, testutil.Scale(time.Minute), r, err)
			}
			<-tick.C
		}
		tick.Stop()
		if strong {
			withMinSeq = append(withMinSeq, time.Since(acked))
		} else {
			plain = append(plain, time.Since(acked))
		}
	}
	t.Logf("measured: write acked by %s -> served by %s (through published ports and docker-proxy), %d probes: p50 %s, max %s; with minSeq: p50 %s, max %s (%d reads answered 504 and asked again)",
		home.name, mirror.name, len(plain), pct(plain, 50), pct(plain, 100), pct(withMinSeq, 50), pct(withMinSeq, 100), retried)
}

// waitAcked waits until every appender has k acks after since. It judges
// progress, not speed: it fails as soon as a writer still behind has had
// no ack for a (scaled) minute — stalled — and otherwise waits on, within
// ten, for a machine so loaded that each append takes seconds (CI's, with
// two other lanes of tests beside this one) is slow, not broken.
func waitAcked(t *testing.T, what string, aps []*appender, k int, since time.Time) {
	t.Helper()
	stall := testutil.Scale(time.Minute)
	start := time.Now()
	testutil.WaitFor(t, 10*time.Minute, testutil.Awaiting(what, func() error {
		err := everyAcked(aps, k, since)
		if err == nil {
			return nil
		}
		for _, a := range aps {
			if a.ackedSince(since) >= k {
				continue
			}
			last := a.lastAck()
			if last.Before(start) {
				last = start
			}
			if time.Since(last) > stall {
				t.Fatalf("%s: writer %s has had no ack for %v (since %s): %v", what, a.prefix, time.Since(last).Round(time.Second), last.Format("15:04:05.000"), err)
			}
		}
		return err
	}))
}

// everyAcked returns nil when each appender has k acks received after
// since, else the states of those that have not.
func everyAcked(aps []*appender, k int, since time.Time) error {
	var behind []string
	for _, a := range aps {
		if a.ackedSince(since) < k {
			behind = append(behind, fmt.Sprintf("writer %s: %s", a.prefix, a.state()))
		}
	}
	if len(behind) > 0 {
		// Every writer behind, not the first: which region's are is the clue.
		return fmt.Errorf("%d of %d writers under %d acks: %s", len(behind), len(aps), k, strings.Join(behind, "; "))
	}
	return nil
}

// haltAll stops the appenders that still run.
func haltAll(aps []*appender) {
	for _, a := range aps {
		a.halt()
	}
}

// firstAck returns how long after kill the first ack of an attempt sent
// after dead arrived, among the appenders given: a write the lost region
// cannot have taken.
func firstAck(aps []*appender, kill, dead time.Time) time.Duration {
	var rto time.Duration
	for _, a := range aps {
		a.mu.Lock()
		for i, at := range a.ackTimes {
			if d := at.Sub(kill); a.sentTimes[i].After(dead) && (rto == 0 || d < rto) {
				rto = d
			}
		}
		a.mu.Unlock()
	}
	return rto
}

// export is a session's export as one node serves it.
type export struct {
	raw     []byte
	count   map[string]int    // entries by id
	parents map[string]string // each entry's parentId (roots are absent)
	pos     map[string]int    // each entry's place among the entries (its first)
}

// readExport reads a session's export from n once it has applied minSeq.
func readExport(t *testing.T, n *node, sid string, minSeq uint64) export {
	t.Helper()
	r, err := n.do(http.MethodGet, fmt.Sprintf("/v1/sessions/%s/export?minSeq=%d", sid, minSeq), nil, 30*time.Second)
	if err != nil || r.status != http.StatusOK {
		t.Fatalf("export of %s on %s (minSeq %d): %v %v", sid, n.name, minSeq, r, err)
	}
	ex := export{raw: r.body, count: map[string]int{}, parents: map[string]string{}, pos: map[string]int{}}
	for _, line := range bytes.Split(bytes.TrimSpace(r.body), []byte("\n")) {
		var e struct {
			Type     string  `json:"type"`
			ID       string  `json:"id"`
			ParentID *string `json:"parentId"`
		}
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("export of %s on %s: %v: %s", sid, n.name, err, line)
		}
		if e.Type == "session" {
			continue
		}
		if ex.count[e.ID] == 0 {
			ex.pos[e.ID] = len(ex.pos)
		}
		ex.count[e.ID]++
		if e.ParentID != nil {
			ex.parents[e.ID] = *e.ParentID
		}
	}
	return ex
}

// lastSeqOf is the highest lastSeq the appenders of sid were acknowledged.
func lastSeqOf(aps []*appender, sid string) uint64 {
	var seq uint64
	for _, a := range aps {
		if a.sid == sid {
			seq = max(seq, a.snapshotLastSeq())
		}
	}
	return seq
}

// missingAfterFailover lists the entries acknowledged for attempts sent
// before dead that the new home's node does not serve, and counts those
// entries.
func missingAfterFailover(t *testing.T, home *node, sids []string, aps []*appender, dead time.Time) ([]string, int) {
	t.Helper()
	var missing []string
	total := 0
	for _, sid := range sids {
		// B's writers' last ack came from the new home: with it as minSeq
		// the node has applied everything the failover kept.
		count := readExport(t, home, sid, lastSeqOf(aps, sid)).count
		for _, a := range aps {
			if a.sid != sid {
				continue
			}
			a.mu.Lock()
			for i, id := range a.acked {
				if a.sentTimes[i].Before(dead) {
					total++
					if count[id] == 0 {
						missing = append(missing, sid[len(sid)-4:]+"/"+id)
					}
				}
			}
			a.mu.Unlock()
		}
	}
	return missing, total
}

// checkRegionLogs checks the end state on every node (checkLogs), and
// that every session holds entries of writers of both regions. It returns
// the number of acknowledged entries.
func checkRegionLogs(t *testing.T, c *cluster, sids []string, aps []*appender, rpo []string) int {
	t.Helper()
	acked := checkLogs(t, c, sids, aps)
	for _, sid := range sids {
		regions := map[byte]int{}
		for _, a := range aps {
			if a.sid != sid {
				continue
			}
			a.mu.Lock()
			for _, id := range a.acked {
				regions[id[0]]++
			}
			a.mu.Unlock()
		}
		// a: written in A before the loss, b: in B, r: in A after its return.
		if regions['a'] == 0 || regions['b'] == 0 || regions['r'] == 0 {
			t.Errorf("session %s: acknowledged entries by writer %v, want writers of A before and after the loss and of B", sid, regions)
		}
	}
	for _, key := range rpo {
		t.Logf("entry %s, missing at failover, is back after failback", key)
	}
	return acked
}

// checkLogs checks the end state of the sessions on every node: the same
// export of every session byte for byte; every entry in it once, its
// parent present; every entry its appenders acknowledged exactly once
// (and, for those that name parents, in the order acknowledged, under the
// parent it was sent with); an entry whose outcome was unknown at most
// once. It returns the number of acknowledged entries.
func checkLogs(t *testing.T, c *cluster, sids []string, aps []*appender) int {
	t.Helper()
	acked := 0
	for _, sid := range sids {
		want := lastSeqOf(aps, sid)
		var ref export
		for _, n := range c.nodes {
			ex := readExport(t, n, sid, want)
			if ref.raw == nil {
				ref = ex
			} else if !bytes.Equal(ex.raw, ref.raw) {
				t.Errorf("session %s: the export on %s differs from %s's (%d vs %d bytes)", sid, n.name, c.nodes[0].name, len(ex.raw), len(ref.raw))
			}
		}
		for id, k := range ref.count {
			if k != 1 {
				t.Errorf("session %s: entry %s stored %d times", sid, id, k)
			}
		}
		for id, p := range ref.parents {
			if ref.count[p] == 0 {
				t.Errorf("session %s: entry %s has parent %s, which the session lacks", sid, id, p)
			}
		}
		for _, a := range aps {
			if a.sid != sid {
				continue
			}
			a.mu.Lock()
			prev := -1
			for i, id := range a.acked {
				acked++
				if ref.count[id] != 1 {
					t.Errorf("session %s: acknowledged entry %s stored %d times", sid, id, ref.count[id])
					continue
				}
				if a.parent == "" {
					continue
				}
				if p := ref.parents[id]; p != a.ackParents[i] {
					t.Errorf("session %s: acknowledged entry %s is stored under %q, it was sent with parentId %q", sid, id, p, a.ackParents[i])
				}
				if ref.pos[id] < prev {
					t.Errorf("session %s: acknowledged entry %s is stored before the one acknowledged ahead of it", sid, id)
				}
				prev = ref.pos[id]
			}
			for _, id := range append([]string{a.pending}, a.gaveUp...) {
				if id != "" && ref.count[id] > 1 {
					t.Errorf("session %s: entry %s, whose outcome was unknown, stored %d times", sid, id, ref.count[id])
				}
			}
			a.mu.Unlock()
		}
	}
	return acked
}
