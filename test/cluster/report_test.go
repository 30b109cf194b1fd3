//go:build linux

package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// failover is what the kill did to writers, to JetStream and to the
// surviving nodes, all measured from the SIGKILL.
//
// The new leader's first message (newSeq) is found in the log itself: it
// ends the longest pause in the stream's stored timestamps after the kill.
// An ack is "through the new leader" when its sequence is at or past it.
// Acks that arrive during the election are not: they are retries of
// entries the old leader had stored, answered by pi-node from its Store
// (the idempotent retry) — which is also why "time between two acks of
// any writer" would understate the outage.
type failover struct {
	newSeq          uint64
	logGap          time.Duration // the pause in the stream's timestamps
	jetStream       time.Duration // kill -> first raw publish acked by the new leader
	firstWriter     time.Duration // kill -> first writer acked through the new leader
	worstWriter     time.Duration // kill -> the last writer's first ack through the new leader
	worstID         int
	worstSentBy     time.Duration // when that writer sent the request that got the ack, after the kill
	longestGap      time.Duration // longest time between two acks of one writer
	longestID       int
	medianGap       time.Duration            // median of the writers' longest gaps
	electionAcks    int                      // acks during the election (idempotent retries)
	stores          map[string]time.Duration // new leader stored its first message -> a survivor's Store applied it
	notReady        map[string]time.Duration // /readyz not 200, in total
	notReadyLongest map[string]time.Duration
	probeFailed     int
	probeErrors     map[string]int // failed probe publishes by error
	probeAcked      int
}

// restartStats is how long the restarted node took, from its start.
type restartStats struct {
	logEnd                uint64 // the log's last seq when it was restarted
	ready, store, replica time.Duration
}

func analyzeFailover(t *testing.T, killAt time.Time, writers []*writer, probe *jsProbe, scan logScan, watch *nodeWatches) failover {
	t.Helper()
	var f failover
	var newAt time.Time // when the new leader stored its first message
	for k := 1; k < len(scan.recs); k++ {
		prev, r := scan.recs[k-1], scan.recs[k]
		if r.at.Before(killAt) {
			continue
		}
		if d := r.at.Sub(prev.at); d > f.logGap {
			f.logGap, f.newSeq, newAt = d, r.seq, r.at
		}
	}
	if f.newSeq == 0 {
		t.Fatalf("no message stored after the kill")
	}

	probe.mu.Lock()
	f.probeErrors = map[string]int{}
	var probeAt time.Time
	for _, r := range probe.results {
		if r.err != nil {
			f.probeFailed++
			f.probeErrors[probeErrorKind(r.err)]++
			continue
		}
		f.probeAcked++
		if r.seq >= f.newSeq && (probeAt.IsZero() || r.at.Before(probeAt)) {
			probeAt = r.at
		}
	}
	probe.mu.Unlock()
	if probeAt.IsZero() {
		t.Errorf("no probe publish was acknowledged by the new leader")
	}
	f.jetStream = probeAt.Sub(killAt)

	var gaps []time.Duration
	f.firstWriter = -1
	for _, w := range writers {
		var longest time.Duration
		resumed := false
		for k, a := range w.acks {
			if k > 0 {
				longest = max(longest, a.at.Sub(w.acks[k-1].at))
			}
			if a.at.After(killAt) && a.seq < f.newSeq {
				f.electionAcks++
			}
			if !resumed && a.seq >= f.newSeq {
				resumed = true
				d := a.at.Sub(killAt)
				if f.firstWriter < 0 || d < f.firstWriter {
					f.firstWriter = d
				}
				if d > f.worstWriter {
					f.worstWriter, f.worstID, f.worstSentBy = d, w.idx, a.sent.Sub(killAt)
				}
			}
		}
		gaps = append(gaps, longest)
		if longest > f.longestGap {
			f.longestGap, f.longestID = longest, w.idx
		}
	}
	f.medianGap = median(gaps)

	f.stores, f.notReady, f.notReadyLongest = map[string]time.Duration{}, map[string]time.Duration{}, map[string]time.Duration{}
	for _, w := range watch.done() {
		f.notReady[w.name], f.notReadyLongest[w.name] = w.notReady()
		f.stores[w.name] = -1
		if at, ok := w.appliedAt(f.newSeq); ok {
			f.stores[w.name] = at.Sub(newAt)
		}
	}
	return f
}

// report renders the figures for the test log (go test -v) and the docs.
func (f failover) report(killed, newLeader string, run time.Duration, writers []*writer, dups, lost int, scan logScan, rs restartStats) string {
	total, attempts := 0, 0
	errKinds := map[string]int{}
	for _, w := range writers {
		total += len(w.acks)
		for _, a := range w.acks {
			attempts += a.attempts
		}
		for k, n := range w.errors {
			errKinds[k] += n
		}
	}
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	var b strings.Builder
	fmt.Fprintf(&b, "MEASURED kill -9 of the stream leader (%s; new leader %s), %d writers, client timeout %v, run %s:\n",
		killed, newLeader, len(writers), writeTimeout, ms(run))
	fmt.Fprintf(&b, "  entries acknowledged %d (%.0f/s), attempts %d, duplicates %d, lost %d; stream messages %d, message ids stored twice %d\n",
		total, float64(total)/run.Seconds(), attempts, dups, lost, scan.msgs, len(scan.dupIDs))
	fmt.Fprintf(&b, "  failed attempts: %s; acks during the election (idempotent retries answered from a Store): %d\n",
		fmtCounts(errKinds), f.electionAcks)
	fmt.Fprintf(&b, "  JetStream's own failover (raw publish to the stream, first ack by the new leader): %s after the kill; log pause %s\n",
		ms(f.jetStream), ms(f.logGap))
	fmt.Fprintf(&b, "  writers through pi-node: first ack by the new leader %s, last writer to get one %s (writer %d, request sent %s after the kill)\n",
		ms(f.firstWriter), ms(f.worstWriter), f.worstID, ms(f.worstSentBy))
	fmt.Fprintf(&b, "  => pi-node's write gap minus JetStream's failover: %s (first writer), %s (last writer)\n",
		ms(f.firstWriter-f.jetStream), ms(f.worstWriter-f.jetStream))
	fmt.Fprintf(&b, "  longest time between two acks of one writer: %s (writer %d); median over writers %s\n",
		ms(f.longestGap), f.longestID, ms(f.medianGap))
	fmt.Fprintf(&b, "  probe publishes: %d acked, %d failed (%s)\n", f.probeAcked, f.probeFailed, fmtCounts(f.probeErrors))
	for _, name := range slices.Sorted(maps.Keys(f.stores)) {
		applied := "not seen while watched"
		if d := f.stores[name]; d >= 0 {
			applied = ms(d) + " after the new leader stored it"
		}
		fmt.Fprintf(&b, "  survivor %s: Store applied the new leader's first message %s; /readyz not 200 for %s (longest stretch %s)\n",
			name, applied, ms(f.notReady[name]), ms(f.notReadyLongest[name]))
	}
	fmt.Fprintf(&b, "  restart of %s: /readyz after %s, Store at the log's end at the restart (seq %d) after %s, replica current after %s",
		killed, ms(rs.ready), rs.logEnd, ms(rs.store), ms(rs.replica))
	return b.String()
}

// probeErrorKind tells a publish refused at once (no stream leader
// listening) from one that got no answer at all within its 3 s.
func probeErrorKind(err error) string {
	switch {
	case errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders):
		return "no responders"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return "no answer in 3s"
	}
	return err.Error()
}
