package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/loopback"
	"github.com/pifleet/sessionlog/internal/wire"
)

// proc is the pi-node binary run as a process over the data dir: what an
// operator runs, with its memory read from /proc (resident set) and from
// its /metrics (Go heap). Its log goes to <dir>/pi-node.log.
type proc struct {
	bin    string
	opts   NodeOptions
	p      *cpuProc // nil until started
	nats   string   // nats://127.0.0.1:PORT
	http   string   // http://127.0.0.1:PORT
	client apiclient.Client
}

func (p *proc) start(ctx context.Context) (startup, error) {
	ports, err := loopback.FreePorts(2)
	if err != nil {
		return startup{}, err
	}
	np, hp := ports[0], ports[1]
	p.nats, p.http = fmt.Sprintf("nats://127.0.0.1:%d", np), fmt.Sprintf("http://127.0.0.1:%d", hp)
	sync := "interval"
	if p.opts.SyncAlways {
		sync = "always"
	}
	t := time.Now()
	if p.p, err = startProc("pi-node", p.bin, filepath.Join(p.opts.Dir, "pi-node.log"),
		"--data-dir", p.opts.Dir, "--node-name", "bench",
		"--client-listen", fmt.Sprintf("127.0.0.1:%d", np), "--http-listen", fmt.Sprintf("127.0.0.1:%d", hp),
		"--sync", sync, "--memory-budget", strconv.FormatInt(p.opts.MemoryBudget, 10),
		"--snapshot-interval", p.opts.SnapshotEvery.String(), "--log-level", "warn"); err != nil {
		return startup{}, err
	}
	// Serving means the API answers over NATS: the server is up first,
	// then the micro service. Poll both every 2 ms.
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		if p.client == nil {
			if c, err := apiclient.DialNATS(apiclient.NATSOptions{URL: p.nats, Name: "pi-bench", Timeout: 10 * time.Second}); err == nil {
				p.client = c
			}
		}
		if p.client != nil {
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err := p.client.Do(sctx, wire.StatusRequest{})
			cancel()
			if err == nil {
				return startup{service: time.Since(t)}, nil
			}
		}
		select {
		case <-p.p.exited:
			return startup{}, fmt.Errorf("pi-node exited while starting (%v): see %s", p.p.err, p.p.log)
		case <-ctx.Done():
			p.stop(nil, "", 0)
			return startup{}, ctx.Err()
		case <-tick.C:
		}
	}
}

func (p *proc) api() apiclient.Client { return p.client }
func (p *proc) natsURL() string       { return p.nats }
func (p *proc) httpURL() string       { return p.http }
func (p *proc) pid() int              { return p.p.cmd.Process.Pid }

func (p *proc) waitApplied(ctx context.Context, seq uint64) error {
	return waitAPI(ctx, p.client, seq)
}

// stop reports the process's memory — its resident set (the whole node:
// server, Store, runtime) and its Go heap — then sends SIGTERM and waits.
func (p *proc) stop(res *Result, when string, held int64) (time.Duration, error) {
	if res != nil {
		p.memory(res, when, held)
	}
	if p.client != nil {
		p.client.Close()
		p.client = nil
	}
	if p.p == nil {
		return 0, nil
	}
	return p.p.stop(2 * time.Minute)
}

func (p *proc) memory(res *Result, when string, held int64) {
	rss, hwm, err := procMemory(p.p.cmd.Process.Pid)
	if err != nil {
		res.note("pi-node's memory %s: %v", when, err)
		return
	}
	res.figure("pi-node RSS "+when, float64(rss)/(1<<20), "MiB")
	res.figure("pi-node peak RSS "+when, float64(hwm)/(1<<20), "MiB")
	if held > 0 {
		res.target("pi-node RSS / JSON held "+when, float64(rss)/float64(held), "×", 1.3, false)
	}
	if heap, err := metric(p.http+"/metrics", "go_memstats_heap_alloc_bytes"); err == nil {
		res.figure("pi-node Go heap (live and not yet collected) "+when, heap/(1<<20), "MiB")
	}
}

// metric reads one unlabelled value from a Prometheus text endpoint.
func metric(url, name string) (float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, errors.New(name + " not found")
}
