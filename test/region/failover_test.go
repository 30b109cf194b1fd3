//go:build linux

package region

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/testutil"

	"github.com/google/uuid"
)

const sessions = 20

// TestRegionFailover is the scenario of docs/CROSS-REGION.md, measured:
// see the package documentation for its steps.
func TestRegionFailover(t *testing.T) {
	skipShort(t)
	t.Parallel()
	n := nodesPerRegion(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	start := time.Now()
	top := startTopology(t, n)
	t.Logf("MEASURED start: %d+%d pi-nodes and the tie-breaker ready in %v", n, n, time.Since(start).Round(time.Millisecond))
	a, b := top.regions["A"], top.regions["B"]
	testutil.WaitFor(t, 30*time.Second, testutil.Awaiting("B mirrors A", func() error {
		s, err := status(b[0].base)
		if err != nil {
			return err
		}
		if r := s.JetStream.Region; r.Role != "mirror" || r.Home != "A" || r.Reads != "PI_SESSIONS_B" || r.Writes != "PI_SESSIONS_A" {
			return fmt.Errorf("region status %+v", r)
		}
		return nil
	}))

	// With shards on R3, each region's nodes spread their copy's leaders.
	if k := shardsPerRegion(t); n == 3 && k > 1 {
		for _, r := range []string{"A", "B"} {
			pileAndSpread(t, ctx, top, r, k)
		}
	}

	// While A is healthy, a failover is refused and changes nothing.
	code, out := piCtl(t, time.Minute, "failover", "--to", "B", "--server", b[0].natsURL)
	if code != 1 || !strings.Contains(out, "refused") || !strings.Contains(out, "healthy") {
		t.Fatalf("failover while A is healthy: exit %d, want 1 and a refusal:\n%s", code, out)
	}
	if s, err := status(b[0].base); err != nil || s.JetStream.Region.Home != "A" || s.JetStream.Region.Epoch != 1 {
		t.Fatalf("after a refused failover: %+v %v", s.JetStream.Region, err)
	}

	measureMirrorLag(t, ctx, a[0].base, b[0].base)

	// A delete through the mirror region erases the session from both
	// regions' copies; archiving is refused there. del2 waits for B.
	del1, del2 := uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String()
	createSession(t, a[0].base, del1, "root")
	createSession(t, a[0].base, del2, "root")
	deleteSession(t, b[0].base, del1)
	goneIn(t, ctx, del1, a[0], b[0])
	archiveRefused(t, b[0].base)
	testutil.WaitFor(t, time.Minute, testutil.Awaiting(del2+" mirrored to B", func() error {
		_, err := entries(ctx, b[0].base, del2, 0)
		return err
	}))

	// Twenty sessions, each with a writer in A and a writer in B.
	sids := make([]string, sessions)
	for i := range sids {
		sids[i] = uuid.Must(uuid.NewV7()).String()
		createSession(t, a[0].base, sids[i], "root")
	}
	// Every node searches, a mirror region's too: its index follows the
	// region's stream as its Store does.
	testutil.WaitFor(t, time.Minute, testutil.Awaiting("a session created in A found by a search in B", func() error { return searchFinds(b[0].base, sids[0]) }))
	writers, stopWriters := startWriters(t, ctx, top, sids)
	testutil.WaitFor(t, time.Minute, testutil.Awaiting("writers under way", func() error { return everyWriter(writers, 10, time.Time{}) }))

	// Region A is lost.
	kill := time.Now()
	top.kill("A")
	// Attempts sent from now on cannot have reached A: its processes are
	// reaped. Those sent between kill and dead may have, and count as A's.
	dead := time.Now()
	t.Logf("killed region A (%d pi-nodes, SIGKILL) at %s, all reaped %v later", n, kill.Format("15:04:05.000"), dead.Sub(kill).Round(time.Microsecond))
	foStart := time.Now()
	code, out = piCtl(t, 3*time.Minute, "failover", "--to", "B", "--server", b[0].natsURL)
	if code != 0 {
		t.Fatalf("pi-ctl failover --to B: exit %d\n%s", code, out)
	}
	foTook := time.Since(foStart)
	t.Logf("pi-ctl failover --to B:\n%s", out)
	testutil.WaitFor(t, time.Minute, testutil.Awaiting("B's writers acknowledged after the kill", func() error { return everyWriterIn(writers, "b", 20, dead) }))
	rto, first := firstAckAfter(writers, "b", kill, dead)
	rpo, total := missingIn(t, ctx, b[0].natsURL, writers, dead)
	t.Logf("MEASURED RTO: kill of region A -> first write accepted in B: %v (pi-ctl failover took %v, started %v after the kill; first ack %s)",
		rto.Round(time.Millisecond), foTook.Round(time.Millisecond), foStart.Sub(kill).Round(time.Millisecond), first)
	t.Logf("MEASURED RPO: %d of %d entries acknowledged before the kill are missing in B before failback", len(rpo), total)

	// A delete in the new home; A's old copy still holds the session.
	deleteSession(t, b[0].base, del2)
	goneIn(t, ctx, del2, b[0])

	// Region A comes back: its nodes read from B until failback.
	restart := time.Now()
	top.restart(t, "A")
	took := top.waitReady(t, a)
	t.Logf("MEASURED region A back: its pi-nodes ready (reading from B) %v after the restart", took.Round(time.Millisecond))
	testutil.WaitFor(t, time.Minute, testutil.Awaiting("A's writers acknowledged after A's return", func() error { return everyWriterIn(writers, "a", 5, restart) }))
	fbStart := time.Now()
	code, out = piCtl(t, 5*time.Minute, "failback", "--from", "A", "--server", b[0].natsURL)
	if code != 0 {
		t.Fatalf("pi-ctl failback --from A: exit %d\n%s", code, out)
	}
	t.Logf("pi-ctl failback --from A:\n%s", out)
	t.Logf("MEASURED failback: %v", time.Since(fbStart).Round(time.Millisecond))
	afterFB := time.Now()
	testutil.WaitFor(t, time.Minute, testutil.Awaiting("writers in both regions after failback", func() error { return everyWriter(writers, 5, afterFB) }))
	stopWriters()

	verify(t, ctx, top, writers, sids, rpo)
	// Neither delete undone by the failback: A's copy is B's again.
	for _, sid := range []string{del1, del2} {
		goneIn(t, ctx, sid, a[0], b[0])
	}
	// The indexes went through the failover and the failback (A's,
	// restarted on its old data dirs, read B's history): each session
	// found once, in both regions.
	for _, base := range []string{a[0].base, b[0].base} {
		testutil.WaitFor(t, time.Minute, testutil.Awaiting("every session found by a search at "+base, func() error {
			for _, sid := range sids {
				if err := searchFinds(base, sid); err != nil {
					return err
				}
			}
			return nil
		}))
	}
}

// startWriters starts a writer in A and one in B on each session, one
// entry every 20 ms; the function it returns stops them and fails the test
// on a writer's error.
func startWriters(t *testing.T, ctx context.Context, top *topology, sids []string) ([]*writer, func()) {
	hc := &http.Client{Timeout: 3 * time.Second}
	var writers []*writer
	for i, sid := range sids {
		for _, r := range []string{"A", "B"} {
			writers = append(writers, &writer{name: fmt.Sprintf("%s%02d", strings.ToLower(r), i), sid: sid,
				bases: top.bases(r), hc: hc, pause: 20 * time.Millisecond, errors: map[string]int{}})
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, len(writers))
	for i, w := range writers {
		wg.Go(func() {
			errs[i] = w.run(ctx, stop, "root")
			w.mu.Lock()
			w.ended = errs[i]
			w.mu.Unlock()
		})
	}
	return writers, func() {
		t.Helper()
		close(stop)
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// everyWriter checks that every writer has at least k acks received after since.
func everyWriter(ws []*writer, k int, since time.Time) error {
	return everyWriterIn(ws, "", k, since)
}

// everyWriterIn is everyWriter for the writers of one region ("a" or "b").
func everyWriterIn(ws []*writer, region string, k int, since time.Time) error {
	for _, w := range ws {
		if strings.HasPrefix(w.name, region) {
			if err := atLeast(w, k, since); err != nil {
				return err
			}
		}
	}
	return nil
}

func atLeast(w *writer, k int, since time.Time) error {
	acks, _ := w.snapshot()
	got := 0
	for _, a := range acks {
		if a.at.After(since) {
			got++
		}
	}
	if got < k {
		w.mu.Lock() // the writer counts its errors under it
		defer w.mu.Unlock()
		return fmt.Errorf("writer %s: %d acks since %s, want %d (errors %v; ended: %v)", w.name, got, since.Format("15:04:05.000"), k, w.errors, w.ended)
	}
	return nil
}

// firstAckAfter returns how long after kill a writer of region first got an
// ack for an attempt sent after dead, when the lost region's processes were
// gone (one it cannot have handled).
func firstAckAfter(ws []*writer, region string, kill, dead time.Time) (time.Duration, string) {
	var first *ack
	for _, w := range ws {
		if !strings.HasPrefix(w.name, region) {
			continue
		}
		acks, _ := w.snapshot()
		for i := range acks {
			if acks[i].sent.After(dead) && (first == nil || acks[i].at.Before(first.at)) {
				first = &acks[i]
			}
		}
	}
	if first == nil {
		return 0, "none"
	}
	return first.at.Sub(kill), fmt.Sprintf("%s at seq %d", first.id, first.seq)
}
