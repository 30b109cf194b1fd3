package bench

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/wire"
)

// subject is the node the rebuild and search scenarios start (rebuild
// stops it and starts it again): in this process (inproc), or the pi-node
// binary (proc).
type subject interface {
	// start starts the node over its data dir and returns once it
	// serves, with how long that took.
	start(ctx context.Context) (startup, error)
	// api is a client of the node's API over NATS (valid after start).
	api() apiclient.Client
	natsURL() string
	httpURL() string
	// pid is the process the node runs in (this one, or pi-node's).
	pid() int
	// waitApplied returns once the node's Store has applied seq.
	waitApplied(ctx context.Context, seq uint64) error
	// stop stops the node as SIGTERM stops pi-node (the Store writes its
	// snapshot) and returns how long that took. With res, it first adds
	// what the node held to it (held is the JSON its Store held); without,
	// it only cleans up.
	stop(res *Result, when string, held int64) (time.Duration, error)
}

// newSubject is the node over opts: the pi-node binary bin as a process,
// or without one the node in this process; name is what the result calls
// it.
func newSubject(bin string, opts NodeOptions) (sub subject, name string) {
	if bin != "" {
		return &proc{bin: bin, opts: opts}, bin
	}
	return &inproc{opts: opts}, "in-process"
}

// startSubject starts the node a scenario measures (newSubject) once stale,
// what of an earlier run's node state the run must not find, is removed and
// opts.Dir exists, and names the node in res's "node" parameter. The
// caller stops it.
func startSubject(ctx context.Context, res *Result, bin string, opts NodeOptions, stale string) (subject, startup, error) {
	if err := os.RemoveAll(stale); err != nil {
		return nil, startup{}, err
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, startup{}, err
	}
	sub, name := newSubject(bin, opts)
	res.param("node", name)
	st, err := sub.start(ctx)
	return sub, st, err
}

// startup is how long a start took: the JetStream server (recovering the
// stream), then the Store and the API up to serving. A process reports
// only the total, as service.
type startup struct{ server, service time.Duration }

// inproc is the node in this process: its Store's memory is read from
// the Go heap, before and after, with a collection each time.
type inproc struct {
	opts      NodeOptions
	n         *Node
	client    apiclient.Client
	heapStart uint64 // before the server started
}

func heapAfterGC() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func (p *inproc) start(ctx context.Context) (startup, error) {
	var s startup
	p.heapStart = heapAfterGC()
	p.n = &Node{Opts: p.opts}
	t := time.Now()
	if err := p.n.StartServer(ctx); err != nil {
		return s, err
	}
	s.server = time.Since(t)
	t = time.Now()
	if err := p.n.StartService(ctx); err != nil {
		p.n.Close()
		return s, err
	}
	s.service = time.Since(t)
	var err error
	p.client, err = apiclient.DialNATS(apiclient.NATSOptions{URL: p.n.NATSURL, Name: "pi-bench"})
	return s, err
}

func (p *inproc) api() apiclient.Client { return p.client }
func (p *inproc) natsURL() string       { return p.n.NATSURL }
func (p *inproc) httpURL() string       { return p.n.HTTPURL }
func (p *inproc) pid() int              { return os.Getpid() }

func (p *inproc) waitApplied(ctx context.Context, seq uint64) error {
	return p.n.Store.WaitFor(ctx, seq)
}

// stop measures the Store's memory as the heap it leaves behind when it
// closes: the heap with the node up, then with the server alone, each
// after a collection, back to back. (Measuring it against the heap before
// the Store opened would count the server's block caches, filled by the
// stream's recovery and emptied on a timer, as the Store's.)
func (p *inproc) stop(res *Result, when string, held int64) (time.Duration, error) {
	if p.client != nil {
		p.client.Close()
		p.client = nil
	}
	if res == nil {
		return 0, p.n.Close()
	}
	select { // the Store holds what it read compacted once it has caught up
	case <-p.n.Store.Rebuilt():
	case <-time.After(time.Minute):
		res.note("the Store had not compacted what it read a minute after the rebuild")
	}
	withStore := heapAfterGC()
	t := time.Now()
	// The micro service's Stop only starts draining its subscriptions,
	// whose handlers reach the Store; StopService closes the node's
	// connection too, which drops them at once, so the collection below
	// can free the Store.
	err := p.n.StopService()
	d := time.Since(t)
	serverOnly := heapAfterGC()
	t = time.Now()
	err = errors.Join(err, p.n.Close())
	d += time.Since(t)
	store := int64(withStore) - int64(serverOnly)
	node := int64(withStore) - int64(p.heapStart)
	res.figure("Store heap "+when, float64(store)/(1<<20), "MiB")
	res.figure("node heap (server + Store) "+when, float64(node)/(1<<20), "MiB")
	if held > 0 {
		res.target("Store heap / JSON held "+when, float64(store)/float64(held), "×", 1.3, false)
		res.target("node heap (server + Store) / JSON held "+when, float64(node)/float64(held), "×", 1.3, false)
	}
	return d, err
}

// procMemory reads a process's resident set and its peak from
// /proc/PID/status (Linux), in bytes.
func procMemory(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v) // "123456 kB"
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			rss = n << 10
		case "VmHWM":
			hwm = n << 10
		}
	}
	if rss == 0 {
		return 0, 0, errors.New("no VmRSS in /proc/PID/status")
	}
	return rss, hwm, nil
}

// waitAPI waits until c answers status with seq applied, using the API's
// own minSeq wait (bounded by the node's --min-seq-timeout, so it loops).
func waitAPI(ctx context.Context, c apiclient.Client, seq uint64) error {
	for {
		_, err := c.Do(ctx, wire.StatusRequest{MinSeq: seq})
		if !errors.Is(err, wire.ErrTimeout) {
			return err
		}
	}
}
