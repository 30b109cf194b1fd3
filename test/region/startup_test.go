//go:build linux

package region

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/testutil"
)

// TestRegionStartupWindow loses the home region 0.5 s after the first
// write of a new deployment, the window in which a mirror used to claim to
// be current before it had copied anything. The failover must inherit what
// B's mirror copied (B is ready only once its mirror receives from A) and
// say what may be missing; a failback while A is down waits only --wait;
// once A is back the failback brings the rest back, each entry once. Every operation is run twice: the second run of a completed one
// exits 0 and says "already done", and with --json reports
// {"changed": false}.
func TestRegionStartupWindow(t *testing.T) {
	t.Parallel()
	ctx, top := oneNodeRegions(t)
	a, b := top.regions["A"], top.regions["B"]
	s, err := status(b[0].base)
	if err != nil {
		t.Fatal(err)
	}
	if m := s.JetStream.Region.Mirror; m == nil || !m.CaughtUp || m.LagFrom != "origin" || m.Lag == nil {
		t.Fatalf("B ready, its mirror block: %+v", m)
	}

	sids := make([]string, 5)
	for i := range sids {
		sids[i] = testutil.SessionID(t)
		createSession(t, a[0].base, sids[i], "root")
	}
	first := time.Now() // the first writes are acknowledged
	writers, stopWriters := startWriters(t, ctx, top, sids)
	// The kill is scheduled, not awaited: the window is a point in time.
	<-time.After(time.Until(first.Add(500 * time.Millisecond)))
	top.kill("A")
	dead := time.Now()
	code, out := piCtl(t, 3*time.Minute, "failover", "--to", "B", "--server", b[0].natsURL)
	if code != 0 {
		t.Fatalf("pi-ctl failover --to B: exit %d\n%s", code, out)
	}
	t.Logf("pi-ctl failover --to B, %v after the first write:\n%s", dead.Sub(first).Round(time.Millisecond), out)
	// One stream's "sequences 1–N", or every shard's "1–N of shard k".
	line := regexp.MustCompile(`inherited +sequences .*`).FindString(out)
	if line == "" {
		t.Fatalf("failover output names no inherited sequences:\n%s", out)
	}
	var inherited uint64
	for _, m := range regexp.MustCompile(`1–(\d+)`).FindAllStringSubmatch(line, -1) {
		n, _ := strconv.ParseUint(m[1], 10, 64)
		inherited += n
	}
	if created := uint64(2 * len(sids)); inherited <= created {
		t.Errorf("the failover inherited sequences 1–%d: no more than the sessions' creation (%d records), B's mirror copied nothing of 0.5 s of writes", inherited, created)
	}
	if !strings.Contains(out, "missing ") {
		t.Errorf("failover output says nothing of what B may lack:\n%s", out)
	}
	twice(t, "failover", "--to", "B", "--server", b[0].natsURL)
	testutil.WaitFor(t, time.Minute, testutil.Awaiting("B's writers acknowledged after the kill", func() error { return everyWriterIn(writers, "b", 10, dead) }))
	rpo, total := missingIn(t, ctx, b[0].natsURL, writers, dead)
	t.Logf("MEASURED startup window: A killed %v after the first write; B inherited sequences 1–%d; %d of %d entries acknowledged before the kill missing in B before failback",
		dead.Sub(first).Round(time.Millisecond), inherited, len(rpo), total)

	// While A is down, a failback waits for it only as long as told.
	began := time.Now()
	code, out = piCtl(t, time.Minute, "failback", "--from", "A", "--wait", "2s", "--server", b[0].natsURL)
	if took := time.Since(began); code != 1 || !strings.Contains(out, "refused") || !strings.Contains(out, "waited 2s") || took > testutil.Scale(15*time.Second) {
		t.Fatalf("pi-ctl failback --from A --wait 2s while A is down: exit %d after %v, want 1 and a refusal saying it waited 2s:\n%s", code, took, out)
	}
	t.Logf("MEASURED failback --wait 2s against the unreachable A: refused after %v", time.Since(began).Round(time.Millisecond))

	restart := time.Now()
	top.restart(t, "A")
	took := top.waitReady(t, a)
	t.Logf("MEASURED region A back: its pi-nodes ready (reading from B) %v after the restart", took.Round(time.Millisecond))
	testutil.WaitFor(t, time.Minute, testutil.Awaiting("A's writers acknowledged after A's return", func() error { return everyWriterIn(writers, "a", 5, restart) }))
	code, out = piCtl(t, 5*time.Minute, "failback", "--from", "A", "--server", b[0].natsURL)
	if code != 0 {
		t.Fatalf("pi-ctl failback --from A: exit %d\n%s", code, out)
	}
	t.Logf("pi-ctl failback --from A:\n%s", out)
	twice(t, "failback", "--from", "A", "--server", b[0].natsURL)
	afterFB := time.Now()
	testutil.WaitFor(t, time.Minute, testutil.Awaiting("writers in both regions after failback", func() error { return everyWriter(writers, 5, afterFB) }))
	stopWriters()
	verify(t, ctx, top, writers, sids, rpo)
}

// oneNodeRegions starts one pi-node per region, for tests of up to 5
// minutes, and returns their context.
func oneNodeRegions(t *testing.T) (context.Context, *topology) {
	skipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx, startTopology(t, 1)
}

// twice runs a region operation that has just completed again, as a
// script retrying it would: it must exit 0 and say it was done already,
// and so must a third run with --json, reporting no change.
func twice(t *testing.T, args ...string) {
	t.Helper()
	code, out := piCtl(t, time.Minute, args...)
	if code != 0 || !strings.HasPrefix(out, "already done: ") {
		t.Fatalf("pi-ctl %s again: exit %d, want 0 and \"already done\":\n%s", strings.Join(args, " "), code, out)
	}
	code, out = piCtl(t, time.Minute, append(args, "--json")...)
	var rep struct {
		Changed *bool `json:"changed"`
	}
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || rep.Changed == nil || *rep.Changed {
		t.Fatalf("pi-ctl %s --json again: exit %d, %v, want {\"changed\": false}:\n%s", strings.Join(args, " "), code, err, out)
	}
}
