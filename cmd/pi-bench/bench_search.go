package main

import (
	"context"
	"time"

	"github.com/pifleet/sessionlog/internal/bench"
	"github.com/pifleet/sessionlog/internal/cli"
)

const benchSearchHelp = `Usage: pi-bench search [flags]

Generates a corpus of realistic pi session files (one JSONL file a
session, in a folder per cwd, as pi lays them out) of --entries entries
under --dir/sessions, or reuses the one there, and starts a node on
--dir/node (made anew) — in this process, or the --pi-node binary as a
process. Then, in one run:

  - imports every file through POST /v1/import, --jobs at once (as
    pi-ctl import does), and times the full-text index from the import's
    start until it has indexed the last record (store.search in the
    node's status): entries/s and MB/s of JSONL;
  - measures the index on disk against the JSONL, caught up and again
    after --idle (scorch merges its segments in the background);
  - times the queries of issue 35 (one word, three words, a phrase, a
    prefix, a filtered word) through GET /v1/search with limit 20,
    --queries times each, against rg (Debian's ripgrep) doing the same
    over the files, --rg times each;
  - reads the node's resident set from /proc;
  - appends to --append-writers sessions at once, one entry per request,
    for --append-for, and reports the index's rate and lag meanwhile
    and how soon it caught up after.

  nice pi-bench search --dir /var/tmp/pi-search --pi-node ./pi-node   # a million entries, ~1.75 GB
  pi-bench search --entries 20000 --idle 5s
`

func runBenchSearch(ctx context.Context, e *env, args []string) error {
	fs := cli.NewFlags("pi-bench search")
	var o bench.SearchOptions
	fs.IntVar(&o.Entries, "entries", 1000000, "entries of the generated corpus")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the corpus")
	fs.StringVar(&o.Dir, "dir", "", "`DIR` of the corpus (reused when it holds this one) and the node's data (default a temporary dir, removed after)")
	fs.IntVar(&o.Jobs, "jobs", 4, "files imported at once")
	fs.IntVar(&o.Queries, "queries", 200, "times each query is timed")
	fs.IntVar(&o.Rg, "rg", 10, "times each rg command is timed")
	fs.DurationVar(&o.Idle, "idle", time.Minute, "leave the node idle this long once caught up, then measure the index again (negative: not at all)")
	fs.IntVar(&o.AppendWriters, "append-writers", 16, "sessions appended to at once in the append phase")
	fs.DurationVar(&o.AppendFor, "append-for", 30*time.Second, "how long the append phase lasts (negative: no append phase)")
	fs.StringVar(&o.NodeBin, "pi-node", "", "run this pi-node `BINARY` as a process instead of a node in this process")
	sync := fs.String("sync", "always", "the node's --sync: always or interval")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if _, err := cli.ParseArgs(e.stdout, fs, benchSearchHelp, args); err != nil {
		return err
	}
	var err error
	if o.SyncAlways, _, err = nodeSettings(fs, *sync, "0"); err != nil {
		return err
	}
	switch {
	case o.Entries < 1:
		return cli.Usagef(fs.Name(), "--entries must be positive")
	case o.Jobs < 1 || o.Queries < 1 || o.Rg < 1 || o.AppendWriters < 1:
		return cli.Usagef(fs.Name(), "--jobs, --queries, --rg and --append-writers must be positive")
	}
	return runOwnNode(e, *asJSON, *sync, func(p bench.Progress) (*bench.Result, error) {
		o.Progress = p
		return bench.RunSearch(ctx, o)
	})
}
