package main

import (
	"context"
	"flag"
	"io"
	"strings"

	"github.com/pifleet/sessionlog/internal/cli"
)

// env is all a command may touch of the outside world, so tests drive the
// CLI in-process with buffers and a fixed environment.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
}

// command is one row of a dispatch table: a name, the line its parent's
// --help shows, and the function that parses the remaining arguments.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e *env, args []string) error
}

// commands is the top level of pi-ctl. Adding a command is one file holding
// its run function (with its own flag.FlagSet, see newFlags and parseArgs)
// and one line here; a command with subcommands (like "file") dispatches
// through its own table with dispatch.
var commands = []command{
	{"ls", "list sessions (filter by name, cwd, label, time)", runLs},
	{"search", "search the entries of every session: words, phrases, filters", runSearch},
	{"show", "show one session: name, cwd, counts, leaf, labels", runShow},
	{"tree", "draw a session's tree (like pi's /tree), or print it as JSON", runTree},
	{"context", "show the context pi would send for a leaf or a client's cursor", runContext},
	{"log", "print a session's entries in log order; -f follows new ones", runLog},
	{"cursor", "get, set, list and remove the clients' cursors of a session", runCursor},
	{"label", "label an entry of a session (or clear its label)", runLabel},
	{"rename", "set a session's name", runRename},
	{"fork", "copy the path to an entry into a new session", runFork},
	{"rm", "erase sessions: from the log, the archive, every node's memory and files", runRm},
	{"erasures", "print the ledger of erasures: which sessions were erased, when, by whom", runErasures},
	{"import", "import pi session files or directories of them", runImport},
	{"export", "write a session as a pi JSONL file", runExport},
	{"sync", "stream local pi session files into the cluster, live, as pi writes them", runSync},
	{"checkout", "write a session at pi's own path, for pi --session PATH on this machine", runCheckout},
	{"status", "show the node, the stream and its replicas", runStatus},
	{"failover", "make another region the home (cross-region deployments)", runFailover},
	{"failback", "merge a returned region's entries into the home and make it a mirror again", runFailback},
	{"shards", "show the shard map, or spread new sessions over more shards (migrate)", runShards},
	{"archive", "list, restore and archive idle sessions (--session-retention)", runArchive},
	{"backup", "back up every stream and bucket of the deployment into a directory", runBackup},
	{"restore", "restore a backup into an empty deployment", runRestore},
	{"file", "inspect, check and migrate a local pi session file (no server)", runFile},
	{"token", "make scoped bearer tokens for pi-node's --http-tokens file (no server)", runToken},
	{"nats-user", "make NATS users and passwords for pi-node's --nats-auth file (no server)", runNATSUser},
	{"gen-secrets", "write a deployment's CA, certificate, NATS users and tokens (no server)", runGenSecrets},
}

const topIntro = `pi-ctl operates sessionlog, the replicated store for pi session trees.

Every command but "file" talks to a pi-node: over NATS (--server, default
nats://127.0.0.1:4222, or $PI_CTL_SERVER) or over HTTP (--http URL or
$PI_CTL_HTTP, with --token or $PI_CTL_TOKEN when the node requires one);
a private CA's certificate with --tls-ca or $PI_CTL_TLS_CA.`

// run is pi-ctl without the process: it returns the exit code (0 ok,
// 1 invalid input or problems found, 2 usage error) and prints every error
// exactly once, as one line on stderr.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) > 0 && args[0] == "bench" {
		// An operator's habit gets a pointer, not a bare "unknown command":
		// pi-bench takes what followed "bench" as it is.
		run := "pi-bench append|create|context|rebuild"
		if len(args) > 1 {
			run = "pi-bench " + strings.Join(args[1:], " ")
		}
		return cli.Exit(stderr, "pi-ctl", usagef("pi-ctl", "unknown command %q: the benchmarks moved to their own binary: run '%s'", args[0], run))
	}
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
	return cli.Exit(stderr, "pi-ctl", dispatch(ctx, e, "pi-ctl", topIntro, commands, args))
}

// dispatch runs the command of table named by args[0]; path ("pi-ctl",
// "pi-ctl file") names the level in help and errors.
func dispatch(ctx context.Context, e *env, path, intro string, table []command, args []string) error {
	c, err := cli.Pick(e.stdout, path, intro, table, command.row, args)
	if err != nil {
		return err
	}
	return c.run(ctx, e, args[1:])
}

func (c command) row() (name, summary string) { return c.name, c.summary }

// The framework's pieces (internal/cli, shared with pi-bench) under the
// names pi-ctl's commands use.
var (
	usagef      = cli.Usagef
	newFlags    = cli.NewFlags
	errReported = cli.ErrReported
)

// inputError is a problem with one line of an input file (exit 1).
type inputError = cli.InputError

// parseArgs is cli.ParseArgs printing help on e's stdout.
func parseArgs(e *env, fs *flag.FlagSet, help string, args []string, names ...string) ([]string, error) {
	return cli.ParseArgs(e.stdout, fs, help, args, names...)
}
