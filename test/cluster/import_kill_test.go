//go:build linux

package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/enginetest"
	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/shard"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// abandonBound is the nodes' --abandoned-import-after: short, so the test
// sees the cleanup soon, and still above the retry's own pauses (a batch of
// 1000 on R3 may take over a second on a loaded machine, and an attempt
// that times out is sent again): a retry slower than the bound races with
// the cleanup (the CAS decides; the session is then complete or absent).
// Half of it is the survivor's time to answer the retry with more than a
// 503: when the killed node led the stream, a new leader takes 4-9 s, and a
// read of the log on a survivor answered 503 after 10 s in CI. It is
// scaled (PI_TEST_SCALE) like every wait: on a slower machine the retry
// gets as much more time as the cleanup waits longer.
var abandonBound = testutil.Scale(40 * time.Second)

// TestKillDuringImport: two 5,000-entry imports (six atomic batches each)
// go over HTTP to one pi-node of three, which is SIGKILLed once both have
// stored their first batch. Throughout, readers on every node find each
// session absent or complete, never partial. One import is sent again to a
// survivor and completes (continuing the prefix); the other is left alone,
// and once its prefix has been idle for the bound a survivor removes it and
// counts it. The killed node, started again, agrees.
func TestKillDuringImport(t *testing.T) {
	skipShort(t)
	t.Parallel()
	nodes := startEmbeddedClusterWith(t, 3, "--abandoned-import-after", abandonBound.String())
	st := checkStreamStatus(t, nodes, nodes, "embedded-cluster")
	var victim *piNode
	var survivors []*piNode
	for _, nd := range nodes {
		if victim == nil && nd.name != st.JetStream.Stream.Leader {
			victim = nd // a follower, as in the measurement
			continue
		}
		survivors = append(survivors, nd)
	}
	const n = 5000
	retried, left := testutil.SessionID(t), testutil.SessionID(t)
	files := map[string][]byte{retried: enginetest.SessionFile(retried, n, 1), left: enginetest.SessionFile(left, n, 2)}

	// Readers on every node, over HTTP, until the end.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var partial atomic.Pointer[string]
	var looks, seenComplete atomic.Int64
	stop := make(chan struct{})
	var readers sync.WaitGroup
	hc := &http.Client{Timeout: 5 * time.Second}
	defer hc.CloseIdleConnections()
	for _, nd := range nodes {
		for sid := range files {
			readers.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if !nd.Running() {
						time.Sleep(50 * time.Millisecond) // not a wait for a condition: pacing while the node is down
						continue
					}
					count, ok := entryCount(ctx, hc, nd.base, sid)
					looks.Add(1)
					if ok && count != n {
						msg := fmt.Sprintf("%s shows %s with %d of %d entries", nd.name, sid, count, n)
						partial.CompareAndSwap(nil, &msg)
					}
					if ok && count == n {
						seenComplete.Add(1)
					}
				}
			})
		}
	}
	defer func() { close(stop); readers.Wait() }()

	// The stream, watched through a survivor's embedded server.
	nc, err := nats.Connect(survivors[0].natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// Every shard's stream, looked up before the kill: after it the
	// JetStream API may not answer for a while.
	byName := map[string]jetstream.Stream{}
	for _, name := range streams() {
		if byName[name], err = js.Stream(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	streamFor := func(sid string) (jetstream.Stream, string) {
		name, subject := streamOf(sid)
		return byName[name], subject
	}
	// records is how many messages the session's subject holds.
	records := func(sid string) (uint64, error) {
		stream, subject := streamFor(sid)
		// Bounded: a request while the stream has no leader (the killed
		// node led it) gets no answer at all.
		ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		info, err := stream.Info(ictx, jetstream.WithSubjectFilter(subject))
		if err != nil {
			return 0, err
		}
		return info.State.Subjects[subject], nil
	}
	// stored is how many of the session's own records the stream holds:
	// records without a survivor's claim of it (the abandonment marker,
	// appended after the prefix's last record, then purged with it). With
	// the marker, a prefix of five batches (5,000 records) and its claim
	// are n+1 messages, as many as the complete session: the test took the
	// abandoned import for complete and expected it on every node after
	// the purge (a CI run under load, the purge late after the claim).
	stored := func(sid string) (uint64, error) {
		c, err := records(sid)
		if err != nil || c == 0 {
			return c, err
		}
		stream, subject := streamFor(sid)
		ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		// From the stream leader (the stream has no AllowDirect), as the
		// count is.
		last, err := stream.GetLastMsgForSubject(ictx, subject)
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			return 0, nil // purged since the count
		case err != nil:
			return 0, err
		case last.Header.Get("Pi-Type") == session.AbandonType:
			return c - 1, nil
		}
		return c, nil
	}

	importHC := &http.Client{Timeout: time.Minute}
	defer importHC.CloseIdleConnections()
	var imports sync.WaitGroup
	for sid, file := range files {
		imports.Go(func() {
			code, _, body, err := proctest.Do(ctx, importHC, http.MethodPost, victim.base+"/v1/import", file)
			t.Logf("import of %s through %s before the kill: %d %v %.200s", sid, victim.name, code, err, body)
		})
	}
	start := time.Now()
	// Counted by records alone: no claim comes before the bound's idle
	// time, and one request per session keeps the poll, and so the kill,
	// as early in the imports as before.
	testutil.WaitFor(t, 30*time.Second, testutil.Awaiting("a first batch of both imports stored", func() error {
		for sid := range files {
			if c, err := records(sid); err != nil || c == 0 {
				return fmt.Errorf("%s: %d records (%v)", sid, c, err)
			}
		}
		return nil
	}))
	victim.Kill()
	killAt := time.Now()
	killedAfter := killAt.Sub(start)
	imports.Wait()
	atKill := map[string]uint64{}
	testutil.WaitFor(t, readyTimeout, testutil.Awaiting("the stream's answer on what the imports stored", func() error {
		for sid := range files {
			c, err := stored(sid)
			if err != nil {
				return err
			}
			atKill[sid] = c
		}
		return nil
	}))
	t.Logf("SIGKILL %s %v after the imports began; records stored: retried %d, left %d (of %d each)",
		victim.name, killedAfter.Round(time.Millisecond), atKill[retried], atKill[left], n+1)

	// The same import again, to a survivor: it completes, or it was
	// complete already (409).
	// A 503 (the log unavailable to this node a while after the kill, as
	// when the killed node led the JetStream meta group) is retried, as a
	// client would.
	var code int
	var body []byte
	retryStart := time.Now()
	for {
		code, _, body, err = proctest.Do(ctx, importHC, http.MethodPost, survivors[0].base+"/v1/import", files[retried])
		if err != nil || code != http.StatusServiceUnavailable || time.Since(retryStart) > abandonBound/2 {
			break
		}
		t.Logf("retried import: 503 after %v, again", time.Since(retryStart).Round(time.Millisecond))
	}
	t.Logf("retried import through %s: %d after %v", survivors[0].name, code, time.Since(retryStart).Round(time.Millisecond))
	if err != nil || code != http.StatusCreated && !(code == http.StatusConflict && atKill[retried] == n+1) {
		t.Fatalf("retried import through %s: %d %v %s", survivors[0].name, code, err, body)
	}
	if code == http.StatusCreated {
		var res struct {
			LastSeq uint64 `json:"lastSeq"`
		}
		if err := json.Unmarshal(body, &res); err != nil {
			t.Fatal(err)
		}
		stream, subject := streamFor(retried)
		last, err := stream.GetLastMsgForSubject(ctx, subject)
		if err != nil || shard.Seq(shard.Of(retried, testShards()), last.Sequence) != res.LastSeq {
			t.Fatalf("import answered lastSeq %d; the session's last record is at %v (%v)", res.LastSeq, last, err)
		}
	}

	// The one left alone: removed once idle for the bound (if it was
	// partial), by exactly one survivor.
	// Both ends (0 and n+1 records of its own) are final: what the wait
	// saw is what every node must serve. (Read again after it, with the
	// error ignored, an unanswered request read as 0.)
	var leftCount uint64
	testutil.WaitFor(t, abandonBound+30*time.Second, testutil.Awaiting("the abandoned import removed or complete", func() error {
		c, err := stored(left)
		if err != nil {
			return err
		}
		if c != 0 && c != n+1 {
			return fmt.Errorf("%d records still stored", c)
		}
		leftCount = c
		return nil
	}))
	removed := time.Since(killAt)
	wantCleanups := 0
	if atKill[left] < n+1 {
		wantCleanups = 1
	}
	testutil.WaitFor(t, 30*time.Second, testutil.Awaiting("the cleanup counted", func() error {
		sum := 0
		for _, nd := range survivors {
			v, err := metric(ctx, hc, nd.base, "pi_store_abandoned_sessions_purged_total")
			if err != nil {
				return err
			}
			sum += int(v)
		}
		if sum != wantCleanups {
			return fmt.Errorf("%d cleanups counted on the survivors; want %d", sum, wantCleanups)
		}
		return nil
	}))
	if wantCleanups == 1 && removed < abandonBound/2 {
		t.Fatalf("removed %v after the kill, before the bound %v", removed, abandonBound)
	}
	if wantCleanups == 1 && !survivors[0].LogContains("removing an abandoned multi-batch session") && !survivors[1].LogContains("removing an abandoned multi-batch session") {
		t.Fatal("no survivor logged the cleanup")
	}

	// The killed node comes back and agrees.
	victim.Start(t)
	victim.waitReady(t)
	want := map[string]int{retried: n, left: -1}
	if leftCount == n+1 {
		want[left] = n
	}
	for _, nd := range nodes {
		for sid, w := range want {
			testutil.WaitFor(t, 30*time.Second, testutil.Awaiting(nd.name+" serving "+sid+" as it is in the log", func() error {
				c, ok := entryCount(ctx, hc, nd.base, sid)
				if !ok {
					c = -1
				}
				if c != w {
					return fmt.Errorf("entries %d, want %d (-1: absent)", c, w)
				}
				return nil
			}))
		}
	}
	exp, _ := mustDo(t, http.MethodGet, survivors[1].base+"/v1/sessions/"+retried+"/export", nil, http.StatusOK)
	if !bytes.Equal(exp, files[retried]) {
		t.Fatal("the retried import's export differs from the file")
	}
	if p := partial.Load(); p != nil {
		t.Fatal(*p)
	}
	t.Logf("abandoned prefix gone %v after the kill (bound %v); %d reader looks, %d of them complete, none partial",
		removed.Round(time.Millisecond), abandonBound, looks.Load(), seenComplete.Load())
}

// entryCount reads a session's entry count from a node; ok false when the
// node answers 404 (or not at all: the node may be down).
func entryCount(ctx context.Context, hc *http.Client, base, sid string) (int, bool) {
	code, _, body, err := proctest.Do(ctx, hc, http.MethodGet, base+"/v1/sessions/"+sid, nil)
	if err != nil || code != http.StatusOK {
		return 0, false
	}
	var in struct {
		EntryCount int `json:"entryCount"`
	}
	if json.Unmarshal(body, &in) != nil {
		return 0, false
	}
	return in.EntryCount, true
}

// metric reads one unlabelled metric from a node's /metrics.
func metric(ctx context.Context, hc *http.Client, base, name string) (float64, error) {
	code, _, body, err := proctest.Do(ctx, hc, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	if code != http.StatusOK {
		return 0, fmt.Errorf("%s/metrics: %d", base, code)
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, errors.New(name + " not in " + base + "/metrics")
}
