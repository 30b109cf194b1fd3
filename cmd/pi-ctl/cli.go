package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
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
	{"show", "show one session: name, cwd, counts, leaf, labels", runShow},
	{"tree", "draw a session's tree (like pi's /tree), or print it as JSON", runTree},
	{"context", "show the context pi would send for a leaf or a client's cursor", runContext},
	{"log", "print a session's entries in log order; -f follows new ones", runLog},
	{"cursor", "get, set, list and remove the clients' cursors of a session", runCursor},
	{"label", "label an entry of a session (or clear its label)", runLabel},
	{"rename", "set a session's name", runRename},
	{"fork", "copy the path to an entry into a new session", runFork},
	{"import", "import pi session files or directories of them", runImport},
	{"export", "write a session as a pi JSONL file", runExport},
	{"sync", "stream local pi session files into the cluster, live, as pi writes them", runSync},
	{"checkout", "write a session at pi's own path, for pi --session PATH on this machine", runCheckout},
	{"status", "show the node, the stream and its replicas", runStatus},
	{"bench", "measure the node against raw JetStream (append, create, context, rebuild)", runBench},
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
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
	err := dispatch(ctx, e, "pi-ctl", topIntro, commands, args)
	var ue *usageError
	var ie *inputError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errReported):
		return 1
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, ue.Error())
		return 2
	case errors.As(err, &ie):
		fmt.Fprintln(stderr, ie.Error())
		return 1
	}
	fmt.Fprintf(stderr, "pi-ctl: %v\n", err)
	return 1
}

// dispatch runs the command of table named by args[0]; path ("pi-ctl",
// "pi-ctl file") names the level in help and errors.
func dispatch(ctx context.Context, e *env, path, intro string, table []command, args []string) error {
	if len(args) == 0 {
		return usagef(path, "missing command")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		return commandList(e.stdout, path, intro, table)
	}
	for _, c := range table {
		if c.name == args[0] {
			return c.run(ctx, e, args[1:])
		}
	}
	return usagef(path, "unknown command %q", args[0])
}

// commandList is the --help of a level with subcommands.
func commandList(w io.Writer, path, intro string, table []command) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nUsage: %s COMMAND [ARGS]\n\nCommands:\n", intro, path)
	for _, c := range table {
		fmt.Fprintf(&b, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(&b, "\nRun '%s COMMAND --help' for the details of a command.\n", path)
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return err
	}
	return flag.ErrHelp
}

// usageError is a wrong invocation (exit 2). It names the command and points
// at its help, on one line.
type usageError struct{ path, msg string }

func (e *usageError) Error() string {
	return fmt.Sprintf("%s: %s (see '%s --help')", e.path, e.msg, e.path)
}

func usagef(path, format string, args ...any) error {
	return &usageError{path: path, msg: fmt.Sprintf(format, args...)}
}

// inputError is a problem with one line of an input file, printed like a
// compiler's diagnostics: FILE:LINE: reason.
type inputError struct {
	file   string
	line   int
	reason string
}

func (e *inputError) Error() string { return fmt.Sprintf("%s:%d: %s", e.file, e.line, e.reason) }

// errReported means the command has already printed its findings (one line
// each on stderr); run exits 1 and adds nothing.
var errReported = errors.New("problems reported")

// newFlags returns a FlagSet that prints nothing by itself: parseArgs prints
// help on stdout and reports errors once, through run.
func newFlags(path string) *flag.FlagSet {
	fs := flag.NewFlagSet(path, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseArgs parses args for a leaf command whose usage text is help. Flags
// may come before or after the positional arguments ("tree FILE --json" and
// "tree --json FILE" both work); "--" ends the flags. It returns one
// positional argument per name in names, or a usage error naming what is
// missing. The last name may be "[NAME]" (optional), "NAME..." (one or
// more) or "[NAME...]" (any number). On -h/--help it prints help
// and the flag defaults to stdout and returns flag.ErrHelp (exit 0).
func parseArgs(e *env, fs *flag.FlagSet, help string, args []string, names ...string) ([]string, error) {
	var pos []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			var b strings.Builder
			b.WriteString(help)
			b.WriteString("\nFlags:\n")
			fs.SetOutput(&b)
			fs.PrintDefaults()
			fs.SetOutput(io.Discard)
			if _, werr := io.WriteString(e.stdout, b.String()); werr != nil {
				return nil, werr
			}
			return nil, flag.ErrHelp
		}
		if err != nil {
			return nil, usagef(fs.Name(), "%v", err)
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	least, most := len(names), len(names)
	if n := len(names); n > 0 {
		switch last := names[n-1]; {
		case strings.HasPrefix(last, "[") && strings.HasSuffix(last, "...]"):
			least, most = least-1, -1
		case strings.HasPrefix(last, "["):
			least--
		case strings.HasSuffix(last, "..."):
			most = -1
		}
	}
	switch {
	case len(pos) < least:
		return nil, usagef(fs.Name(), "missing %s", strings.TrimSuffix(names[len(pos)], "..."))
	case most >= 0 && len(pos) > most:
		return nil, usagef(fs.Name(), "unexpected argument %q", pos[most])
	}
	return pos, nil
}
