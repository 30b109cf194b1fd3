package api

import (
	"fmt"
	"net"
	"sync"

	"github.com/pifleet/sessionlog/internal/wire"
	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of the caps on what clients may hold open at once
// (docs/SECURITY.md, Limits). Each connection, watch and request costs a
// file descriptor or a goroutine; together they stay well below the file
// descriptors a container gets by default (Go raises the soft limit to
// the hard one, commonly 1,048,576; many hosts have 65,536 or 20,000),
// leaving room for JetStream's files and the embedded server's clients.
const (
	DefaultMaxConnections = 4096
	DefaultMaxWatches     = 1024
	DefaultMaxRequests    = 1024
)

// The limit label of pi_api_limit_current and pi_api_limit_refused_total.
const (
	limitConnections        = "connections"
	limitMetricsConnections = "metrics_connections"
	limitWatches            = "watches"
	limitRequests           = "requests"
)

// limiter is one cap: a semaphore with its gauge and refusal counter.
type limiter struct {
	sem     chan struct{}
	flag    string // the pi-node flag that sets it, for the refusal's message
	what    string // what is counted, for the message
	cur     prometheus.Gauge
	refused prometheus.Counter
}

func newLimiter(m *metrics, name, flag, what string, max int) *limiter {
	return &limiter{sem: make(chan struct{}, max), flag: flag, what: what,
		cur: m.limitCur.WithLabelValues(name), refused: m.limitRefused.WithLabelValues(name)}
}

// acquire takes a slot without waiting; over the cap it counts a refusal
// and returns the 503 to answer with.
func (l *limiter) acquire() error {
	select {
	case l.sem <- struct{}{}:
		l.cur.Inc()
		return nil
	default:
		l.refused.Inc()
		return fmt.Errorf("this node has %d %s open, its limit (pi-node --%s); retry later or on another node: %w",
			cap(l.sem), l.what, l.flag, wire.ErrUnavailable)
	}
}

func (l *limiter) release() {
	l.cur.Dec()
	<-l.sem
}

// LimitListener caps the connections open on ln at Config.MaxConnections
// (metricsListener: the /metrics listener's, a cap of its own). At the cap
// Accept waits: new connections queue in the kernel's listen backlog (and
// past it are refused by the kernel) instead of each taking a file
// descriptor, so a flood of half-sent requests cannot exhaust them; one
// closing lets the next in. Every time Accept finds the cap full counts in
// pi_api_limit_refused_total.
func (s *Server) LimitListener(ln net.Listener, metricsListener bool) net.Listener {
	name := limitConnections
	if metricsListener {
		name = limitMetricsConnections
	}
	return &limitListener{Listener: ln, done: make(chan struct{}),
		lim: newLimiter(s.metrics, name, "max-connections", "connections", s.cfg.MaxConnections)}
}

type limitListener struct {
	net.Listener
	lim       *limiter
	done      chan struct{}
	closeOnce sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.lim.sem <- struct{}{}:
	default:
		l.lim.refused.Inc()
		select {
		case l.lim.sem <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.lim.sem
		return nil, err
	}
	l.lim.cur.Inc()
	return &limitConn{Conn: c, lim: l.lim}, nil
}

// Close also ends an Accept waiting for a slot, so Shutdown completes.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its slot back on the first Close (http.Server may close
// a connection more than once).
type limitConn struct {
	net.Conn
	lim  *limiter
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.lim.release)
	return err
}
