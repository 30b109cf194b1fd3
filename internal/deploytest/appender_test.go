package deploytest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// appender is a client that keeps appending to one session at a steady
// pace, as an agent worker would, failing over to the next node when a
// request fails and retrying the same entry id (safe: appends with the same
// ids are idempotent). It records when each append was acknowledged, so the
// test can measure how long writes stalled around an event.
type appender struct {
	sid     string
	prefix  string
	targets []*node
	pace    time.Duration
	timeout time.Duration
	max     int // bound on the entries one appender writes

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	mu        sync.Mutex
	acked     []string    // ids acknowledged, in order
	ackTimes  []time.Time // when each was acknowledged
	sentTimes []time.Time // when each one's acknowledged attempt was sent
	lastSeq   uint64      // the session's lastSeq after the last acknowledged append
	pending   string      // an id sent but never acknowledged (outcome unknown)
	failures  int
	lastError string
}

func startAppender(sid, prefix string, targets []*node) *appender {
	a := &appender{
		sid: sid, prefix: prefix, targets: targets,
		pace: 50 * time.Millisecond, timeout: 15 * time.Second, max: 5000,
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go a.loop()
	return a
}

func (a *appender) loop() {
	defer close(a.done)
	tick := time.NewTicker(a.pace)
	defer tick.Stop()
	turn := 0
	for i := 0; i < a.max; i++ {
		id := fmt.Sprintf("%s%04d", a.prefix, i)
		for {
			select {
			case <-a.stop:
				a.mu.Lock()
				a.pending = id
				a.mu.Unlock()
				return
			default:
			}
			n := a.targets[turn%len(a.targets)]
			turn++
			sent := time.Now()
			r, err := n.do(http.MethodPost, "/v1/sessions/"+a.sid+"/entries", entryBody(id), a.timeout)
			if err == nil && r.status == http.StatusOK {
				var rep struct {
					LastSeq uint64 `json:"lastSeq"`
				}
				_ = json.Unmarshal(r.body, &rep)
				a.mu.Lock()
				a.acked = append(a.acked, id)
				a.ackTimes = append(a.ackTimes, time.Now())
				a.sentTimes = append(a.sentTimes, sent)
				a.lastSeq = max(a.lastSeq, rep.LastSeq)
				a.mu.Unlock()
				break
			}
			a.mu.Lock()
			a.failures++
			if err != nil {
				a.lastError = fmt.Sprintf("%s: %v", n.name, err)
			} else {
				a.lastError = fmt.Sprintf("%s: %s", n.name, r)
			}
			a.mu.Unlock()
			// Next node at the next tick: a failed node answers at once
			// (connection refused), so this bounds the retry rate.
			select {
			case <-a.stop:
				a.mu.Lock()
				a.pending = id
				a.mu.Unlock()
				return
			case <-tick.C:
			}
		}
		select {
		case <-a.stop:
			return
		case <-tick.C:
		}
	}
}

// halt stops the appender and waits for its request in flight; it may be
// called again (a deferred halt after the phase's own).
func (a *appender) halt() {
	a.stopOnce.Do(func() { close(a.stop) })
	<-a.done
}

// ackedSince counts the appends acknowledged after t.
func (a *appender) ackedSince(t time.Time) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, at := range a.ackTimes {
		if at.After(t) {
			n++
		}
	}
	return n
}

// maxGap is the longest time without an acknowledged append around an
// event at t: between the last ack before it (or t) and the next one, and
// between any two acks after it.
func (a *appender) maxGap(t time.Time) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	prev := t
	var gap time.Duration
	for _, at := range a.ackTimes {
		if at.Before(t) {
			prev = at
			continue
		}
		gap = max(gap, at.Sub(prev))
		prev = at
	}
	return gap
}

func (a *appender) state() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return fmt.Sprintf("%d acked, %d failed attempts, last error: %s", len(a.acked), a.failures, a.lastError)
}
