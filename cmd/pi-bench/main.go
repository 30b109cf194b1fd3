package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/pifleet/sessionlog/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// env is all a scenario may touch of the outside world, so tests run
// pi-bench in-process with buffers and a fixed environment.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

// scenarioCommand is one command of pi-bench: its name, its line in --help, and
// the function that parses its arguments and runs it.
type scenarioCommand struct {
	name, summary string
	run           func(ctx context.Context, e *env, args []string) error
}

func (c scenarioCommand) row() (name, summary string) { return c.name, c.summary }

var scenarios = []scenarioCommand{
	{"append", "append entries one by one: node (NATS, HTTP) vs raw JetStream publish with CAS", runBenchAppend},
	{"create", "create sessions with a backlog: node vs one raw atomic batch", runBenchCreate},
	{"context", "read contexts at random leaves: node vs a raw read built client-side", runBenchContext},
	{"rebuild", "start a node over a large log, restart it: rebuild rate, memory, first reads", runBenchRebuild},
	{"search", "import generated pi sessions, index them: build rate, index size, queries vs rg", runBenchSearch},
}

const intro = `pi-bench measures pi-node against the raw JetStream doing the same work,
in the same process and on the same server, and prints both with their ratio.

The node is a running pi-node (--server, the NATS URL of its server, which
the raw side uses too; --http for its HTTP API), or one started in this
process with --embedded. rebuild and search always start their own node.`

// run is pi-bench without the process: it returns the exit code (0 ok,
// 1 failure, 2 usage error) and prints every error once, as one line on
// stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	e := &env{stdout: stdout, stderr: stderr, getenv: getenv}
	c, err := cli.Pick(stdout, "pi-bench", intro, scenarios, scenarioCommand.row, args)
	if err == nil {
		err = c.run(ctx, e, args[1:])
	}
	return cli.Exit(stderr, "pi-bench", err)
}
