package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pifleet/sessionlog/internal/bench"
	"github.com/pifleet/sessionlog/internal/cli"
)

const benchAppendHelp = `Usage: pi-bench append [flags]

Appends --entries entries, one request each, to each of --sessions
sessions, --concurrency sessions at a time, through the node's append
operation over NATS and HTTP, and the same work as raw JetStream publishes
of the adapter's messages with Nats-Expected-Last-Subject-Sequence (--cas,
on by default; the node's requests then carry expectLastSeq). Prints
entries/s and per-append latency, and the node's ratios to raw.

The bare row publishes the entry's bytes alone (no Pi-* headers, no
Nats-Msg-Id dedupe, only the CAS header) to a stream of its own: the floor
any design on JetStream stands on; every row is also given as a ratio to
it. --concurrency runs 1, 16 and 64 writers in turn by default.

The no-dedupe-id row is the adapter's message without its Nats-Msg-Id:
with it against without it is what the dedupe id costs.

The relay row is raw JetStream behind one NATS request hop with no logic
(a responder in this process that publishes and replies): the floor under
any API, since a write through pi-node makes that hop too. The node over
the relay is the node's own cost; the relay over raw is the hop's.
--baseline jsonl adds pi's own way: one appendFileSync per entry, with and
without fsync. --baseline postgres adds what a platform team would
otherwise do: PostgreSQL, a row per entry with primary key (session, seq)
as the per-session compare-and-swap, every append a durable commit (fsync
and synchronous_commit on). It starts a private server of Debian's
postgresql package in a temporary directory, on a Unix socket only
(--postgres-dsn uses another).

With --pi-node and --nats-server the bench runs both binaries as processes
(pi-node with --nats-url) and reports the CPU time each spent per append,
read from /proc: a figure that holds on a noisy machine where rates drift.
--nodes N runs N pi-nodes; each applies every record, so a node's CPU in
the raw rows (it serves none of them) is what every extra node costs.

--pi-node with --cluster 3 (or 5), instead of --nats-server, runs the
production shape: that many pi-nodes, each with its embedded nats-server,
clustered (routes between them), the stream and the cursor bucket at 3 (or
5) replicas, pi-node's --sync (always by default). The bench waits until
every node is ready, a meta leader elected and every stream's replicas
current. Writer w goes through node w mod N, over NATS (its connection to
that node's server), HTTP (that node's listener) and raw JetStream alike;
each process's CPU per append (node and server together) is read from
/proc, and their sum per row.

--client yes makes every append of the node's rows name a client, one per
writer (w0, w1, ...), as fleet workers do: the append then moves that
client's cursor on the session, a second write. --client both gives each
node row twice, without and "with client", and their ratio.

--shards 1,2,4,8 runs the whole comparison once per shard count, each on
a node and a store of its own (--embedded or --pi-node); the raw rows then
publish each session to its shard's stream, as the node does. Rows are
named by their shard count, and every row at more than one shard is also
given as a ratio to the same row at one shard.

  pi-bench append --embedded --sessions 100 --concurrency 100 --baseline jsonl
  pi-bench append --embedded --cas=false        # explicit parents, no expectLastSeq
  pi-bench append --embedded --cas=false --shards 1,2,4,8 --concurrency 16,64 --baseline postgres
  pi-bench append --pi-node ./pi-node --nats-server ./nats-server --nodes 3 --cas=false
  pi-bench append --pi-node ./pi-node --cluster 3 --cas=false --concurrency 16,64,128,256 \
      --transports raw,nats,http --client both --baseline postgres
`

// positiveList parses "1,16,64" into positive integers.
func positiveList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func runBenchAppend(ctx context.Context, e *env, args []string) error {
	fs := cli.NewFlags("pi-bench append")
	bf := addBenchFlags(fs)
	var o bench.AppendOptions
	fs.IntVar(&o.Sessions, "sessions", 100, "sessions to write")
	fs.IntVar(&o.Entries, "entries", 100, "entries appended to each session, one at a time")
	writers := fs.String("concurrency", "1,16,64", "sessions written at once (writers); a comma-separated list runs each in turn")
	fs.IntVar(&o.Size, "size", 1024, "bytes of JSON per entry")
	fs.BoolVar(&o.CAS, "cas", true, "expect the session's last sequence (expectLastSeq; the raw header)")
	fs.IntVar(&o.Rounds, "rounds", 3, "turns the ways take, each round a share of the work (so drift favours none)")
	base := fs.String("baseline", "", "jsonl: add pi's local file (appendFileSync per entry, with and without fsync); postgres: add PostgreSQL (a row per entry, a durable commit per append); both: jsonl,postgres")
	shards := fs.String("shards", "1", "with --embedded or --pi-node: the node's --shards; a comma-separated list (1,2,4,8) runs each in turn, on a node and store of its own, and reports each as a ratio to 1 shard")
	fs.StringVar(&o.Client, "client", bench.ClientNo, "whether the node's appends name a client (one per writer), moving its cursor: no, yes, or both (a row of each)")
	dsn := fs.String("postgres-dsn", "", "with --baseline postgres: the PostgreSQL server to use (a pgx DSN; default: a private server of Debian's postgresql package, started in a temporary directory on a Unix socket)")
	if _, err := cli.ParseArgs(e.stdout, fs, benchAppendHelp, args); err != nil {
		return err
	}
	var err error
	var postgres bool
	if o.JSONL, postgres, err = baselines(fs, *base, true); err != nil {
		return err
	}
	if *dsn != "" && !postgres {
		return cli.Usagef(fs.Name(), "--postgres-dsn goes with --baseline postgres")
	}
	if postgres {
		o.PostgresDSN = *dsn
		if o.PostgresDSN == "" {
			pg, err := bench.StartPostgres(ctx)
			if err != nil {
				return err
			}
			defer func() { _ = pg.Close() }()
			o.PostgresDSN = pg.DSN
		}
	}
	if o.Client != bench.ClientNo && o.Client != bench.ClientYes && o.Client != bench.ClientBoth {
		return cli.Usagef(fs.Name(), "--client must be no, yes or both, not %q", o.Client)
	}
	ws, err := positiveList(*writers)
	if err != nil {
		return cli.Usagef(fs.Name(), "--concurrency %q: %v", *writers, err)
	}
	ss, err := positiveList(*shards)
	if err != nil {
		return cli.Usagef(fs.Name(), "--shards %q: %v", *shards, err)
	}
	o.Transports = bf.list()
	run := func(env *bench.Env) (*bench.Result, error) { return bench.RunAppendSweep(ctx, env, o, ws) }
	if len(ss) == 1 && ss[0] == 1 {
		return runScenario(ctx, e, fs, bf, run)
	}
	if !bf.embedded && bf.piNode == "" {
		return cli.Usagef(fs.Name(), "--shards configures the node of --embedded or --pi-node")
	}
	// A node and a store of their own per shard count: the counts are
	// fixed at provisioning.
	var results []*bench.Result
	dir := bf.dataDir
	for _, s := range ss {
		bf.shards = s
		if dir != "" {
			bf.dataDir = filepath.Join(dir, fmt.Sprintf("shards-%d", s))
		}
		res, err := scenario(ctx, e, fs, bf, run)
		if err != nil {
			return fmt.Errorf("%d shards: %w", s, err)
		}
		results = append(results, res)
	}
	return printResult(e, bench.MergeShards(results, ss), bf.asJSON)
}

const benchCreateHelp = `Usage: pi-bench create [flags]

Creates --sessions sessions, each with a backlog of --backlog entries in
the same write (pi's delayed flush: everything before the first assistant
reply is stored at once), through the node's create operation over NATS
and HTTP, and as one raw atomic batch (the adapter's messages, the first
expecting an empty subject). Latency is per creation.
--baseline jsonl adds pi's file: one appendFileSync per line (and one fsync
at the end).

  pi-bench create --embedded --backlog 100 --baseline jsonl
`

func runBenchCreate(ctx context.Context, e *env, args []string) error {
	fs := cli.NewFlags("pi-bench create")
	bf := addBenchFlags(fs)
	var o bench.CreateOptions
	fs.IntVar(&o.Sessions, "sessions", 200, "sessions to create")
	fs.IntVar(&o.Backlog, "backlog", 100, "entries each session is created with (at most 999)")
	fs.IntVar(&o.Rounds, "rounds", 3, "turns the ways take, each round a share of the work (so drift favours none)")
	fs.IntVar(&o.Concurrency, "concurrency", 4, "creations at once")
	fs.IntVar(&o.Size, "size", 1024, "bytes of JSON per entry")
	base := fs.String("baseline", "", "jsonl: add pi's local file")
	if _, err := cli.ParseArgs(e.stdout, fs, benchCreateHelp, args); err != nil {
		return err
	}
	var err error
	if o.JSONL, err = baseline(fs, *base); err != nil {
		return err
	}
	o.Transports = bf.list()
	return runScenario(ctx, e, fs, bf, func(env *bench.Env) (*bench.Result, error) { return bench.RunCreate(ctx, env, o) })
}

const benchContextHelp = `Usage: pi-bench context [flags]

Loads --sessions sessions of --entries realistic entries (not timed), then
reads pi's context at --requests random leaves of random sessions: the
node's context operation over NATS and HTTP (and, with --embedded, the
engine's own call, without a transport). The raw equivalent is what a
client with only JetStream must do for the same answer: read the session
from the stream leader and build the context itself.

  pi-bench context --embedded --sessions 100 --entries 1000
`

func runBenchContext(ctx context.Context, e *env, args []string) error {
	fs := cli.NewFlags("pi-bench context")
	bf := addBenchFlags(fs)
	var o bench.ContextOptions
	fs.IntVar(&o.Sessions, "sessions", 100, "sessions to load")
	fs.IntVar(&o.Entries, "entries", 200, "entries per session")
	fs.IntVar(&o.Requests, "requests", 5000, "context reads")
	fs.IntVar(&o.Rounds, "rounds", 3, "turns the ways take, each round a share of the work (so drift favours none)")
	fs.IntVar(&o.Concurrency, "concurrency", 1, "reads at once")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the sessions and of the leaves read")
	if _, err := cli.ParseArgs(e.stdout, fs, benchContextHelp, args); err != nil {
		return err
	}
	o.Transports = bf.list()
	return runScenario(ctx, e, fs, bf, func(env *bench.Env) (*bench.Result, error) { return bench.RunContext(ctx, env, o) })
}

// runScenario opens the node, runs the scenario and prints its result.
func runScenario(ctx context.Context, e *env, fs *flag.FlagSet, bf *benchFlags, run func(*bench.Env) (*bench.Result, error)) error {
	res, err := scenario(ctx, e, fs, bf, run)
	if err != nil {
		return err
	}
	return printResult(e, res, bf.asJSON)
}

// scenario opens the node, runs the scenario and closes the node.
func scenario(ctx context.Context, e *env, fs *flag.FlagSet, bf *benchFlags, run func(*bench.Env) (*bench.Result, error)) (*bench.Result, error) {
	env, err := bf.open(ctx, e, fs)
	if err != nil {
		return nil, err
	}
	// A profile of the whole process: the node's too, with --embedded.
	stopProf, err := bench.StartCPUProfile(bf.cpuprofile)
	if err != nil {
		env.Close()
		return nil, err
	}
	res, err := run(env)
	stopProf()
	bf.progress.clear()
	if cerr := env.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if bf.embedded || bf.piNode != "" {
		res.Params = append(res.Params, bench.Param{Name: "sync", Value: bf.sync})
	}
	return res, nil
}

const benchRebuildHelp = `Usage: pi-bench rebuild [flags]

Loads --entries realistic entries in --sessions interleaved sessions into
--data-dir (reused as it is when it holds this very load), then starts a
node over it — in this process, or the --pi-node binary as a process — and
measures: the time until its Store has applied the whole log, as a rate
against a raw ordered consumer over the same stream on the same server;
its memory against the JSON it holds; context reads; then a restart from
the snapshot written at shutdown: time to serve, the first read of a
session against a raw filtered read of that session, and the time until
caught up. After a fresh load it first waits out JetStream's 2-minute
duplicate window (--settle), as a production restart would find it.

  pi-bench rebuild --data-dir /var/tmp/pi-bench   # a million entries
  pi-bench rebuild --pi-node ./pi-node --memory-budget 512MiB
`

func runBenchRebuild(ctx context.Context, e *env, args []string) error {
	fs := cli.NewFlags("pi-bench rebuild")
	var o bench.RebuildOptions
	fs.IntVar(&o.Sessions, "sessions", 50000, "sessions to load")
	fs.IntVar(&o.Entries, "entries", 1000000, "entries to load, in all")
	fs.StringVar(&o.Dir, "data-dir", "", "the node's data `DIR`, reused when it holds this load (default a temporary dir)")
	fs.StringVar(&o.NodeBin, "pi-node", "", "run this pi-node `BINARY` as a process instead of a node in this process")
	sync := fs.String("sync", "always", "the node's --sync: always or interval")
	budget := fs.String("memory-budget", "0", "the node's --memory-budget (e.g. 512MiB)")
	fs.DurationVar(&o.SnapshotEvery, "snapshot-interval", 5*time.Minute, "the node's --snapshot-interval (0 disables snapshots)")
	fs.IntVar(&o.Reads, "reads", 10000, "context reads timed when caught up, and first reads after the restart")
	fs.IntVar(&o.Samples, "samples", 5, "sessions read raw, filtered")
	fs.BoolVar(&o.Settle, "settle", true, "after a fresh load, wait until JetStream's 2-minute duplicate window has passed")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the load and of the sessions read")
	fs.DurationVar(&o.Idle, "idle", 11*time.Second, "leave the node idle this long before reading its memory (JetStream caches blocks it read for 10 s; negative: not at all)")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the first start's rebuild to `FILE` (node in this process only)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if _, err := cli.ParseArgs(e.stdout, fs, benchRebuildHelp, args); err != nil {
		return err
	}
	var err error
	if o.SyncAlways, o.MemoryBudget, err = nodeSettings(fs, *sync, *budget); err != nil {
		return err
	}
	return runOwnNode(e, *asJSON, *sync, func(p bench.Progress) (*bench.Result, error) {
		o.Progress = p
		return bench.RunRebuild(ctx, o)
	})
}

// runOwnNode runs a scenario that starts its own node (rebuild, search)
// with a progress line on a terminal, and prints its result with the
// node's --sync.
func runOwnNode(e *env, asJSON bool, sync string, run func(bench.Progress) (*bench.Result, error)) error {
	prog := newBenchProgress(e, asJSON)
	var p bench.Progress
	if prog != nil {
		p = prog.report
	}
	res, err := run(p)
	prog.clear()
	if err != nil {
		return err
	}
	res.Params = append(res.Params, bench.Param{Name: "sync", Value: sync})
	return printResult(e, res, asJSON)
}
