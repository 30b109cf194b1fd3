package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/loopback"
)

// clusterName is the embedded cluster's --cluster-name.
const clusterName = "pi-bench"

// startCluster starts o.Cluster pi-nodes, each with its embedded server,
// clustered with routes between them and --replicas o.Cluster, all at
// once (a member waits for a meta leader, which needs a majority), and
// returns once waitCluster says the cluster is whole.
func startCluster(ctx context.Context, o ProcOptions, dir string, syncAlways bool) (set procSet, err error) {
	n := o.Cluster
	if n != 3 && n != 5 {
		return procSet{}, fmt.Errorf("a cluster of %d nodes: 3 or 5 (pi-node's --replicas)", n)
	}
	set.clustered = true
	defer func() {
		if err != nil {
			stopAll(set.procs, time.Minute)
			set = procSet{}
		}
	}()
	ports, err := loopback.FreePorts(4 * n)
	if err != nil {
		return set, err
	}
	routes := make([]string, n)
	for i := range n {
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", ports[3*i+1])
	}
	sync := "interval"
	if syncAlways {
		sync = "always"
	}
	for i := range n {
		ndir := filepath.Join(dir, fmt.Sprintf("node%d", i+1))
		if err := os.MkdirAll(ndir, 0o755); err != nil {
			return set, err
		}
		httpAddr, clientAddr := fmt.Sprintf("127.0.0.1:%d", ports[3*i]), fmt.Sprintf("127.0.0.1:%d", ports[3*i+2])
		args := []string{"--node-name", fmt.Sprintf("bench%d", i+1), "--data-dir", ndir,
			"--cluster-name", clusterName, "--cluster-listen", fmt.Sprintf("127.0.0.1:%d", ports[3*i+1]),
			"--routes", strings.Join(routes, ","), "--replicas", strconv.Itoa(n),
			"--client-listen", clientAddr, "--http-listen", httpAddr, "--sync", sync,
			"--shards", strconv.Itoa(max(o.Shards, 1)), "--log-level", "warn",
			// Above net/http's 5 s wait for a connection opened and never
			// used, so that a clean stop exits 0.
			"--shutdown-grace", "10s"}
		if o.Pprof {
			pp := fmt.Sprintf("127.0.0.1:%d", ports[3*n+i])
			args = append(args, "--pprof-listen", pp)
			set.pprof = append(set.pprof, "http://"+pp)
		}
		p, err := startProc(fmt.Sprintf("pi-node %d", i+1), o.PiNode, filepath.Join(dir, fmt.Sprintf("pi-node-%d.log", i+1)), args...)
		if err != nil {
			return set, err
		}
		set.procs = append(set.procs, p)
		set.nats = append(set.nats, "nats://"+clientAddr)
		set.http = append(set.http, "http://"+httpAddr)
	}
	return set, waitCluster(ctx, set, max(o.Shards, 1), 2*time.Minute)
}

// waitCluster polls until the cluster is whole: every node ready
// (/readyz), a JetStream meta leader (the account answers), and every
// stream of the node — each shard's, and the cursor bucket's — at the
// cluster's replicas with a leader and every other replica current.
func waitCluster(ctx context.Context, set procSet, shards int, limit time.Duration) error {
	conn, err := jetstream.Connect(ctx, jetstream.NewConnConfig(set.nats[0]))
	if err != nil {
		return err
	}
	defer conn.Close()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(limit)
	for {
		err := clusterWhole(ctx, conn.JS, set, shards)
		if err == nil {
			return nil
		}
		for _, p := range set.procs {
			select {
			case <-p.exited:
				return fmt.Errorf("%s exited while the cluster formed (%v): see %s", p.name, p.err, p.log)
			default:
			}
		}
		select {
		case <-deadline:
			return fmt.Errorf("the cluster was not whole within %v: %w (logs in %s)", limit, err, filepath.Dir(set.procs[0].log))
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// clusterWhole says why the cluster is not whole yet, or nil.
func clusterWhole(ctx context.Context, js natsjs.JetStream, set procSet, shards int) error {
	for i, base := range set.http {
		if err := ready(ctx, base); err != nil {
			return fmt.Errorf("pi-node %d /readyz: %w", i+1, err)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := js.AccountInfo(cctx); err != nil {
		return fmt.Errorf("JetStream account info (no meta leader yet?): %w", err)
	}
	cfg := jetstream.NewConfig()
	names := []string{"KV_" + cfg.Bucket}
	for k := range shards {
		names = append(names, cfg.Shard(k).Stream)
	}
	for _, name := range names {
		if err := replicated(cctx, js, name, len(set.procs)); err != nil {
			return err
		}
	}
	return nil
}

// replicated says why stream name is not at want replicas, all current.
func replicated(ctx context.Context, js natsjs.JetStream, name string, want int) error {
	s, err := js.Stream(ctx, name)
	if err != nil {
		return fmt.Errorf("stream %s: %w", name, err)
	}
	info := s.CachedInfo()
	c := info.Cluster
	switch {
	case info.Config.Replicas != want:
		return fmt.Errorf("stream %s: %d replicas, want %d", name, info.Config.Replicas, want)
	case c == nil || c.Leader == "":
		return fmt.Errorf("stream %s: no leader", name)
	case len(c.Replicas) != want-1:
		return fmt.Errorf("stream %s: leader %s and %d other replicas, want %d", name, c.Leader, len(c.Replicas), want-1)
	}
	for _, r := range c.Replicas {
		if !r.Current || r.Offline {
			return fmt.Errorf("stream %s: replica %s not current (offline %v, lag %d)", name, r.Name, r.Offline, r.Lag)
		}
	}
	return nil
}

// ready asks a node's /readyz.
func ready(ctx context.Context, base string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}

// stopAll sends every process SIGTERM at once and waits for them all: the
// members of a cluster stop together, none left without a quorum to
// wait on.
func stopAll(procs []*cpuProc, limit time.Duration) error {
	errs := make(chan error, len(procs))
	for _, p := range procs {
		go func() { _, err := p.stop(limit); errs <- err }()
	}
	var all []error
	for range procs {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}
