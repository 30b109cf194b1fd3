//go:build linux

package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/pifleet/sessionlog/internal/proctest"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// jsProbe measures JetStream's own failover, beside pi-node's: every
// interval it publishes one message straight to the session stream with
// nats.go (no pi-node in the path, no retries inside the client), each
// from its own goroutine so that a publish waiting for its ack does not
// delay the next. The time from the SIGKILL to the first ack of a publish
// sent after it is how long JetStream itself could not take writes.
//
// The messages are valid pi lines (custom entries, each a root) on a
// session of their own, so the Stores apply them like any other entry.
type jsProbe struct {
	js       jetstream.JetStream
	subject  string
	sid      string
	interval time.Duration

	mu      sync.Mutex
	results []probeResult
}

type probeResult struct {
	sent, at time.Time
	seq      uint64
	err      error
}

// run publishes until stop is closed, then waits for the publishes in flight.
func (p *jsProbe) run(stop <-chan struct{}) {
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(p.interval)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.publish(n)
		}()
	}
}

func (p *jsProbe) publish(n int) {
	id := fmt.Sprintf("probe-%06d", n)
	sent := time.Now()
	m := nats.NewMsg(p.subject)
	m.Data = fmt.Appendf(nil, `{"type":"custom","customType":"probe","id":%q,"parentId":null,"timestamp":%q,"data":{"n":%d}}`, id, proctest.Stamp(sent), n)
	// The wire contract's headers (docs/PROTOCOL.md), so tools and
	// readers treat it like any entry.
	m.Header.Set(jetstream.MsgIDHeader, p.sid+"/"+id)
	m.Header.Set("Pi-Type", "custom")
	m.Header.Set("Pi-Id", id)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	ack, err := p.js.PublishMsg(ctx, m, jetstream.WithRetryAttempts(0))
	r := probeResult{sent: sent, at: time.Now(), err: err}
	if err == nil {
		r.seq = ack.Sequence
	}
	p.mu.Lock()
	p.results = append(p.results, r)
	p.mu.Unlock()
}
