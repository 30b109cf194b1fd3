package api

import (
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"
)

// An anonymous client can be refused as fast as it can ask; one audit line
// per refusal would let it fill the log at that rate. So each source gets
// AuditBurst lines per AuditInterval, and what it was refused beyond them
// is one summary line when the interval ends. Metrics still count every
// refusal.
const (
	AuditBurst    = 10
	AuditInterval = 10 * time.Second
	// maxAuditSources bounds the sources one interval tracks (many
	// addresses, an IPv6 range); the rest share the source otherSources.
	maxAuditSources = 10000
	otherSources    = "other sources"
)

// AuditThrottle decides which refusals are logged one by one: the first
// AuditBurst of each source in an interval. Safe for concurrent use.
type AuditThrottle struct {
	log      *slog.Logger
	burst    int
	interval time.Duration
	now      func() time.Time

	mu     sync.Mutex
	start  time.Time      // of the interval
	counts map[string]int // refusals per source in it
	timer  *time.Timer    // sums up an interval with suppressed refusals when it ends
}

// NewAuditThrottle returns a throttle that writes its summary lines to log;
// burst and interval are AuditBurst and AuditInterval when not positive,
// now is time.Now when nil.
func NewAuditThrottle(log *slog.Logger, burst int, interval time.Duration, now func() time.Time) *AuditThrottle {
	if burst <= 0 {
		burst = AuditBurst
	}
	if interval <= 0 {
		interval = AuditInterval
	}
	if now == nil {
		now = time.Now
	}
	return &AuditThrottle{log: log, burst: burst, interval: interval, now: now, start: now(), counts: map[string]int{}}
}

// Refused counts a refusal from source and reports whether to log it.
func (a *AuditThrottle) Refused(source string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if a.ended(now) {
		a.flushLocked(now)
	}
	if _, ok := a.counts[source]; !ok && len(a.counts) >= maxAuditSources {
		source = otherSources
	}
	a.counts[source]++
	n := a.counts[source]
	if n == a.burst+1 && a.timer == nil {
		// The summary must come even if the source goes quiet.
		a.timer = time.AfterFunc(a.start.Add(a.interval).Sub(now), a.flush)
	}
	return n <= a.burst
}

func (a *AuditThrottle) ended(now time.Time) bool {
	return now.Sub(a.start) >= a.interval || now.Before(a.start)
}

// flush is the timer's: it sums up the interval if it has ended (a
// Refused after its end may have done it already).
func (a *AuditThrottle) flush() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.timer = nil
	now := a.now()
	if a.ended(now) {
		a.flushLocked(now)
		return
	}
	if len(a.counts) > 0 {
		a.timer = time.AfterFunc(a.start.Add(a.interval).Sub(now), a.flush)
	}
}

// flushLocked writes one line per source refused more than burst times in
// the interval that ended, and starts the next.
func (a *AuditThrottle) flushLocked(now time.Time) {
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	srcs := make([]string, 0, len(a.counts))
	for src, n := range a.counts {
		if n > a.burst {
			srcs = append(srcs, src)
		}
	}
	slices.Sort(srcs)
	for _, src := range srcs {
		n := a.counts[src]
		a.log.Warn(fmt.Sprintf("audit: %d refusals from %s in the last %s, %d of them suppressed", n, src, a.interval, n-a.burst),
			keyRemote, src, "refusals", n, "suppressed", n-a.burst)
	}
	clear(a.counts)
	a.start = now
}

// AuditSource is the source a refusal is counted under: the address
// without its port (every connection has a port of its own).
func AuditSource(remote string) string {
	if host, _, err := net.SplitHostPort(remote); err == nil {
		return host
	}
	return remote
}
