package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/pifleet/sessionlog/internal/bench"
	"github.com/pifleet/sessionlog/internal/cli"
	"github.com/pifleet/sessionlog/internal/size"
)

// defaultServer is where pi-node's embedded NATS server listens by default.
const defaultServer = "nats://127.0.0.1:4222"

// benchFlags are the options every scenario but rebuild shares: where the
// node is, and how to print.
type benchFlags struct {
	embedded     bool
	dataDir      string
	sync         string
	memoryBudget string
	server, http string
	token, creds string
	user, pass   string
	stream       string
	prefix       string
	transports   string
	asJSON       bool
	cpuprofile   string
	piNode       string // with natsServer: run processes
	natsServer   string
	nodes        int
	cluster      int            // with piNode: an embedded cluster of that many nodes
	nodePprof    bool           // with cluster: each node serves its profiles
	shards       int            // the node's --shards (append's --shards runs each in turn)
	progress     *benchProgress // nil unless stderr is a terminal
}

func addBenchFlags(fs *flag.FlagSet) *benchFlags {
	b := &benchFlags{}
	fs.BoolVar(&b.embedded, "embedded", false, "start a node in this process (embedded JetStream in --data-dir or a temporary dir)")
	fs.StringVar(&b.dataDir, "data-dir", "", "with --embedded or --pi-node: the node's data `DIR` (default a temporary dir, removed after)")
	fs.StringVar(&b.sync, "sync", "always", "with --embedded or --pi-node: always (fsync every write, pi-node's default) or interval")
	fs.StringVar(&b.memoryBudget, "memory-budget", "0", "with --embedded: the node's --memory-budget (e.g. 512MiB)")
	fs.StringVar(&b.server, "server", "", "NATS `URL` of the node's server, for its API and the raw baselines (default $PI_CTL_SERVER, else "+defaultServer+")")
	fs.StringVar(&b.http, "http", "", "the node's HTTP API `URL` (default $PI_CTL_HTTP; without it HTTP is not measured)")
	fs.StringVar(&b.token, "token", "", "bearer `TOKEN` for --http (default $PI_CTL_TOKEN)")
	fs.StringVar(&b.creds, "creds", "", "NATS credentials `FILE`")
	fs.StringVar(&b.user, "user", "", "NATS user")
	fs.StringVar(&b.pass, "password", "", "NATS password for --user")
	fs.StringVar(&b.stream, "stream", "PI_SESSIONS", "the node's stream, for the raw baselines")
	fs.StringVar(&b.prefix, "subject-prefix", "pi.sess", "the node's subject prefix, for the raw baselines")
	fs.StringVar(&b.transports, "transports", "", "comma-separated ways to measure among raw, bare, nodedupe and relay (append only), nats, http (default all reachable)")
	fs.BoolVar(&b.asJSON, "json", false, "print the result as JSON")
	fs.StringVar(&b.cpuprofile, "cpuprofile", "", "write a CPU profile of the run (of the node too, with --embedded) to `FILE`")
	fs.StringVar(&b.piNode, "pi-node", "", "with --nats-server: run this pi-node `BINARY` as processes over it (--nodes of them) and report each process's CPU per append from /proc")
	fs.StringVar(&b.natsServer, "nats-server", "", "with --pi-node: run this nats-server `BINARY` as a process (JetStream in --data-dir or a temporary dir, --sync)")
	fs.IntVar(&b.nodes, "nodes", 1, "with --pi-node: pi-node processes; all apply every record, the first serves HTTP, all share the NATS API")
	fs.BoolVar(&b.nodePprof, "node-pprof", false, "with --cluster: each pi-node serves its Go profiles on a loopback port (--pprof-listen), printed to stderr at the start: go tool pprof URL/debug/pprof/profile while a row runs")
	fs.IntVar(&b.cluster, "cluster", 0, "with --pi-node, instead of --nats-server: run `N` (3 or 5) pi-nodes each with its embedded server, clustered, streams at N replicas (the production shape); writers spread over the nodes")
	return b
}

// open starts or reaches the node. Option problems are usage errors.
func (b *benchFlags) open(ctx context.Context, e *env, fs *flag.FlagSet) (*bench.Env, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	syncAlways, budget, err := nodeSettings(fs, b.sync, b.memoryBudget)
	if err != nil {
		return nil, err
	}
	o := bench.EnvOptions{Embedded: b.embedded, Dir: b.dataDir, SyncAlways: syncAlways, MemoryBudget: budget,
		SnapshotEvery: 5 * time.Minute, Stream: b.stream, SubjectPrefix: b.prefix, Shards: b.shards}
	procs := b.piNode != "" || b.natsServer != "" || set["cluster"]
	switch {
	case set["cluster"] && (b.piNode == "" || b.natsServer != "" || set["nodes"] || (b.cluster != 3 && b.cluster != 5)):
		return nil, cli.Usagef(fs.Name(), "--cluster is 3 or 5, with --pi-node and without --nats-server or --nodes")
	case procs && !set["cluster"] && (b.piNode == "" || b.natsServer == ""):
		return nil, cli.Usagef(fs.Name(), "--pi-node and --nats-server go together (or --pi-node and --cluster)")
	case procs && b.embedded:
		return nil, cli.Usagef(fs.Name(), "--embedded starts a node in this process, --pi-node runs processes: one of them")
	case b.nodePprof && !set["cluster"]:
		return nil, cli.Usagef(fs.Name(), "--node-pprof is for the nodes of --cluster")
	case set["nodes"] && (!procs || b.nodes < 1):
		return nil, cli.Usagef(fs.Name(), "--nodes is a positive number of --pi-node processes")
	case procs && set["memory-budget"]:
		return nil, cli.Usagef(fs.Name(), "--memory-budget configures the node of --embedded")
	}
	if procs {
		o.Procs = &bench.ProcOptions{PiNode: b.piNode, NATSServer: b.natsServer, Nodes: b.nodes, Cluster: b.cluster, Pprof: b.nodePprof}
	}
	if b.embedded || procs {
		for _, f := range []string{"server", "http", "token", "creds", "user", "password", "stream", "subject-prefix"} {
			if set[f] {
				return nil, cli.Usagef(fs.Name(), "--%s is for a running node; --embedded and --pi-node start their own", f)
			}
		}
	} else {
		for _, f := range []string{"data-dir", "sync", "memory-budget"} {
			if set[f] {
				return nil, cli.Usagef(fs.Name(), "--%s configures the node of --embedded or --pi-node", f)
			}
		}
		o.Server, o.HTTP, o.Token = cmp.Or(b.server, e.getenv("PI_CTL_SERVER"), defaultServer), cmp.Or(b.http, e.getenv("PI_CTL_HTTP")), cmp.Or(b.token, e.getenv("PI_CTL_TOKEN"))
		o.Creds, o.User, o.Password = b.creds, b.user, b.pass
	}
	env, err := bench.Open(ctx, o)
	if err != nil {
		return nil, err
	}
	for i, u := range env.PprofURLs {
		fmt.Fprintf(e.stderr, "pi-node %d profiles: %s/debug/pprof/\n", i+1, u)
	}
	if b.progress = newBenchProgress(e, b.asJSON); b.progress != nil {
		env.Progress = b.progress.report
	}
	return env, nil
}

// list returns the --transports values.
func (b *benchFlags) list() []string {
	if b.transports == "" {
		return nil
	}
	return strings.Split(b.transports, ",")
}

// nodeSettings checks and reads --sync and --memory-budget, the settings
// of a node the bench starts.
func nodeSettings(fs *flag.FlagSet, sync, budget string) (syncAlways bool, bytes int64, err error) {
	if sync != "always" && sync != "interval" {
		return false, 0, cli.Usagef(fs.Name(), "--sync must be always or interval, not %q", sync)
	}
	if bytes, err = size.Parse(budget); err != nil {
		return false, 0, cli.Usagef(fs.Name(), "--memory-budget: %v", err)
	}
	return sync == "always", bytes, nil
}

// baseline checks --baseline: "" or jsonl.
func baseline(fs *flag.FlagSet, v string) (bool, error) {
	jsonl, _, err := baselines(fs, v, false)
	return jsonl, err
}

// baselines reads --baseline: a comma-separated list of jsonl and, where
// the scenario has it (withPostgres), postgres.
func baselines(fs *flag.FlagSet, v string, withPostgres bool) (jsonl, postgres bool, err error) {
	want := "jsonl"
	if withPostgres {
		want = "jsonl or postgres (comma-separated)"
	}
	for _, b := range strings.Split(v, ",") {
		switch b = strings.TrimSpace(b); {
		case b == "":
		case b == "jsonl":
			jsonl = true
		case b == "postgres" && withPostgres:
			postgres = true
		default:
			return false, false, cli.Usagef(fs.Name(), "--baseline must be %s, not %q", want, b)
		}
	}
	return jsonl, postgres, nil
}
