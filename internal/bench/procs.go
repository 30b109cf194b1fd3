package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/loopback"
	"github.com/pifleet/sessionlog/internal/wire"
)

// ProcOptions run the scenario against real processes: a nats-server
// binary and Nodes pi-node binaries connected to it with --nats-url, so
// that the CPU each spends per append can be read from /proc apart — a
// figure that holds on a noisy machine, where rates do not. The first
// pi-node serves the HTTP rows; all of them answer the NATS API (one
// queue group) and all apply every record, as the nodes of a deployment
// do.
//
// With Cluster instead, there is no nats-server process: Cluster pi-node
// processes each run their embedded server, clustered with routes between
// them, the stream and the cursor bucket at Cluster replicas — the shape
// production runs. Each process's CPU is then its node and its server.
// The bench's clients spread over the nodes (writer w on node w mod
// Cluster), as clients behind a load balancer would.
type ProcOptions struct {
	PiNode, NATSServer string // binaries
	Nodes              int    // pi-node processes (default 1)
	Shards             int    // pi-node's --shards (0: 1)
	Cluster            int    // 3 or 5: an embedded cluster of that many pi-nodes, at that many replicas
	// Pprof (with Cluster): each pi-node serves its Go profiles on a
	// loopback port (--pprof-listen), at Env.PprofURLs.
	Pprof bool
}

// procSet is what startProcs started: the processes (the server first,
// when there is one) and where each node serves.
type procSet struct {
	procs     []*cpuProc
	nats      []string // client URLs: the server's, or each node's embedded one
	http      []string // each node's HTTP API (the first node's only, over one server)
	pprof     []string // each node's profiles (ProcOptions.Pprof)
	clustered bool
}

// cpuProc is a process whose CPU time the scenario reads.
type cpuProc struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{} // closed when it has exited, err then set
	err    error
	log    string
}

// startProc starts bin with args, its output to logPath.
func startProc(name, bin, logPath string, args ...string) (*cpuProc, error) {
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own descriptor
	p := &cpuProc{name: name, cmd: exec.Command(bin, args...), exited: make(chan struct{}), log: logPath}
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	// A bench that dies (panic, SIGKILL) takes its servers with it, as
	// proctest's processes do, instead of leaving them on their ports.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	return p, nil
}

// cpu returns the process's CPU time so far, user and system, all its
// threads: fields 14 and 15 of /proc/PID/stat, in clock ticks. The /proc
// ABI fixes a tick at 1/100 s (USER_HZ) on Linux; a run long enough to
// be worth a figure spends thousands of ticks.
func (p *cpuProc) cpu() (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", p.cmd.Process.Pid)
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", p.cmd.Process.Pid, len(f)+2)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", p.cmd.Process.Pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// selfCPU is this process's CPU time: the bench's clients.
func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// stop sends SIGTERM and waits up to limit before it kills. It returns
// how long the process took to exit, and its exit status if not 0.
func (p *cpuProc) stop(limit time.Duration) (time.Duration, error) {
	t := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return 0, err
	}
	select {
	case <-p.exited:
		return time.Since(t), p.err
	case <-time.After(limit):
		p.cmd.Process.Kill()
		<-p.exited
		return 0, fmt.Errorf("%s did not stop within %v of SIGTERM; killed (log %s)", p.name, limit, p.log)
	}
}

// startProcs starts the nats-server and the pi-nodes over dir, and
// returns them (server first), the server's URL and the first node's
// HTTP URL once every node answers its status.
func startProcs(ctx context.Context, o ProcOptions, dir string, syncAlways bool) (procSet, error) {
	if o.Cluster > 0 {
		return startCluster(ctx, o, dir, syncAlways)
	}
	procs, natsURL, httpURL, err := startServerProcs(ctx, o, dir, syncAlways)
	return procSet{procs: procs, nats: []string{natsURL}, http: []string{httpURL}}, err
}

// startServerProcs starts the nats-server and the pi-nodes over it.
func startServerProcs(ctx context.Context, o ProcOptions, dir string, syncAlways bool) (procs []*cpuProc, natsURL, httpURL string, err error) {
	defer func() {
		if err != nil {
			for _, p := range procs {
				p.stop(time.Minute)
			}
			procs = nil
		}
	}()
	nodes := max(1, o.Nodes)
	ports, err := loopback.FreePorts(1 + nodes)
	if err != nil {
		return nil, "", "", err
	}
	sync := "2m" // nats-server's default
	if syncAlways {
		sync = "always"
	}
	conf := filepath.Join(dir, "nats-server.conf")
	text := fmt.Sprintf("listen: 127.0.0.1:%d\njetstream {\n  store_dir: %q\n  sync_interval: %s\n}\n", ports[0], filepath.Join(dir, "nats"), sync)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		return nil, "", "", err
	}
	srv, err := startProc("nats-server", o.NATSServer, filepath.Join(dir, "nats-server.log"), "-c", conf)
	if err != nil {
		return nil, "", "", err
	}
	procs = append(procs, srv)
	natsURL = fmt.Sprintf("nats://127.0.0.1:%d", ports[0])
	for i := range nodes {
		name := fmt.Sprintf("pi-node %d", i+1)
		ndir := filepath.Join(dir, fmt.Sprintf("node%d", i+1))
		if err := os.MkdirAll(ndir, 0o755); err != nil {
			return procs, "", "", err
		}
		url := fmt.Sprintf("http://127.0.0.1:%d", ports[1+i])
		p, err := startProc(name, o.PiNode, filepath.Join(dir, fmt.Sprintf("pi-node-%d.log", i+1)),
			"--nats-url", natsURL, "--data-dir", ndir, "--node-name", fmt.Sprintf("bench%d", i+1),
			"--http-listen", strings.TrimPrefix(url, "http://"), "--log-level", "warn", "--shards", strconv.Itoa(max(o.Shards, 1)))
		if err != nil {
			return procs, "", "", err
		}
		procs = append(procs, p)
		if i == 0 {
			httpURL = url
		}
		// One at a time: the first provisions the stream and bucket the
		// others then find.
		if err := waitHTTP(ctx, p, url); err != nil {
			return procs, "", "", err
		}
	}
	return procs, natsURL, httpURL, nil
}

// waitHTTP polls the node's status over HTTP until it answers.
func waitHTTP(ctx context.Context, p *cpuProc, url string) error {
	c, err := apiclient.NewHTTP(apiclient.HTTPOptions{URL: url})
	if err != nil {
		return err
	}
	defer c.Close()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(time.Minute)
	for {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := c.Do(sctx, wire.StatusRequest{})
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited while starting (%v): see %s", p.name, p.err, p.log)
		case <-deadline:
			return fmt.Errorf("%s did not answer within a minute (%v): see %s", p.name, err, p.log)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// cpuTimes reads the CPU time of every process, and of this one last.
func (e *Env) cpuTimes() ([]time.Duration, error) {
	if len(e.procs) == 0 {
		return nil, nil
	}
	out := make([]time.Duration, 0, len(e.procs)+1)
	for _, p := range e.procs {
		d, err := p.cpu()
		if err != nil {
			return nil, fmt.Errorf("CPU time of %s: %w", p.name, err)
		}
		out = append(out, d)
	}
	d, err := selfCPU()
	if err != nil {
		return nil, err
	}
	return append(out, d), nil
}

// cpuNames names cpuTimes' values.
func (e *Env) cpuNames() []string {
	out := make([]string, 0, len(e.procs)+1)
	for _, p := range e.procs {
		out = append(out, p.name)
	}
	return append(out, "pi-bench (the clients)")
}

// cpuFigures reports the CPU each process spent per operation of w, and
// holds a node's own CPU per append to at most the server's: the API's
// work should cost no more than the durable write it wraps.
func (e *Env) cpuFigures(res *Result, w way, t *tally) {
	if len(t.cpu) == 0 || len(t.lat) == 0 {
		return
	}
	names := e.cpuNames()
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(len(t.lat)) }
	for i, d := range t.cpu {
		res.figure(fmt.Sprintf("CPU per append, %s, %s", names[i], w.name), per(d), "µs")
	}
	// procs[0] is the server, procs[1] the node that serves HTTP, and
	// the NATS API alone when it is the only node (else a share of it).
	if e.clustered {
		// Each process is a node and its server: what the cluster spends
		// per append is their sum.
		var all time.Duration
		for _, d := range t.cpu[:len(e.procs)] {
			all += d
		}
		res.figure("CPU per append, all pi-nodes (servers included), "+w.name, per(all), "µs")
		return
	}
	if w.kind == KindNode && t.cpu[0] > 0 && (len(e.procs) == 2 || w.name == httpName) {
		res.target("pi-node 1 CPU / nats-server CPU per append, "+w.name, float64(t.cpu[1])/float64(t.cpu[0]), "×", 1, false)
	}
}
