package deploytest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"
)

// appender is a client that keeps appending to one session at a steady
// pace, as an agent worker would, failing over to the next node when a
// request fails and retrying the same entry byte for byte (safe: appends
// with the same ids are idempotent). It records when each append was
// acknowledged, so the test can measure how long writes stalled around an
// event.
type appender struct {
	sid     string
	prefix  string
	targets []*node
	pace    time.Duration
	timeout time.Duration
	max     int // bound on the entries one appender writes
	// parent, when set, makes every entry name its parent explicitly: the
	// writer's last acknowledged entry, the first one this entry. One pi
	// worker writes its session so.
	parent string
	// window, when set, bounds the retries of one entry: an entry still
	// failing this long after its first attempt is given up (gaveUp) and
	// the writer goes on with the next. Without it, it retries until halted.
	window time.Duration

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	mu         sync.Mutex
	acked      []string       // ids acknowledged, in order
	ackTimes   []time.Time    // when each was acknowledged
	sentTimes  []time.Time    // when each one's acknowledged attempt was sent
	ackParents []string       // the parentId each was sent with ("": none)
	lastSeq    uint64         // the session's lastSeq after the last acknowledged append
	pending    string         // an id sent but never acknowledged (outcome unknown)
	gaveUp     []string       // ids given up after window (outcome unknown)
	failKinds  map[string]int // failed attempts by proctest.ErrorKind
	lastError  string
}

// newAppender is an appender with the default pace and bounds, not started
// yet: set parent or window, then start it.
func newAppender(sid, prefix string, targets []*node) *appender {
	return &appender{
		sid: sid, prefix: prefix, targets: targets,
		pace: 50 * time.Millisecond, timeout: 15 * time.Second, max: 5000,
		stop: make(chan struct{}), done: make(chan struct{}),
	}
}

func startAppender(sid, prefix string, targets []*node) *appender {
	return newAppender(sid, prefix, targets).start()
}

func (a *appender) start() *appender {
	go a.loop()
	return a
}

func (a *appender) loop() {
	defer close(a.done)
	tick := time.NewTicker(a.pace)
	defer tick.Stop()
	turn := 0
	parent := a.parent
	for i := 0; i < a.max; i++ {
		id := fmt.Sprintf("%s%04d", a.prefix, i)
		// One body for every attempt: a retry must be the same entry to be
		// recognised (its message timestamp included).
		body := chainedEntryBody(id, parent)
		first := time.Now()
	attempts:
		for {
			select {
			case <-a.stop:
				a.mu.Lock()
				a.pending = id
				a.mu.Unlock()
				return
			default:
			}
			timeout := a.timeout
			if a.window > 0 {
				left := a.window - time.Since(first)
				if left <= 0 {
					a.mu.Lock()
					a.gaveUp = append(a.gaveUp, id)
					a.mu.Unlock()
					break attempts
				}
				timeout = min(timeout, left)
			}
			n := a.targets[turn%len(a.targets)]
			turn++
			sent := time.Now()
			r, err := n.do(http.MethodPost, "/v1/sessions/"+a.sid+"/entries", body, timeout)
			if err == nil && r.status == http.StatusOK {
				var rep struct {
					LastSeq uint64 `json:"lastSeq"`
				}
				_ = json.Unmarshal(r.body, &rep)
				a.mu.Lock()
				a.acked = append(a.acked, id)
				a.ackTimes = append(a.ackTimes, time.Now())
				a.sentTimes = append(a.sentTimes, sent)
				a.ackParents = append(a.ackParents, parent)
				a.lastSeq = max(a.lastSeq, rep.LastSeq)
				a.mu.Unlock()
				if a.parent != "" {
					parent = id
				}
				break
			}
			a.mu.Lock()
			if a.failKinds == nil {
				a.failKinds = map[string]int{}
			}
			status := 0
			if r != nil {
				status = r.status
			}
			a.failKinds[proctest.ErrorKind(status, err)]++
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

// failures is the number of failed attempts.
func (a *appender) failures() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.failuresLocked()
}

func (a *appender) failuresLocked() int {
	n := 0
	for _, c := range a.failKinds {
		n += c
	}
	return n
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

// lastAck is when the last ack arrived (zero: none yet).
func (a *appender) lastAck() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.ackTimes) == 0 {
		return time.Time{}
	}
	return a.ackTimes[len(a.ackTimes)-1]
}

// maxGap is the longest time without an acknowledged append around an
// event at t: between the last ack before it (or t) and the next one, and
// between any two acks after it.
func (a *appender) maxGap(t time.Time) time.Duration {
	return a.maxGapBetween(t, time.Time{})
}

// maxGapBetween is maxGap for an event from t to end (zero: no end): acks
// after end count only as the one that closes the last gap.
func (a *appender) maxGapBetween(t, end time.Time) time.Duration {
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
		if !end.IsZero() && at.After(end) {
			break
		}
	}
	return gap
}

func (a *appender) state() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return fmt.Sprintf("%d acked, %d failed attempts, last error: %s", len(a.acked), a.failuresLocked(), a.lastError)
}
