package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit prints err, if any, as one line on stderr and returns the exit
// code: 0 for none or help, 1 for ErrReported (printed already), an
// InputError or any other error (prefixed with prog), 2 for a UsageError.
func Exit(stderr io.Writer, prog string, err error) int {
	var ue *UsageError
	var ie *InputError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, ErrReported):
		return 1
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, ue.Error())
		return 2
	case errors.As(err, &ie):
		fmt.Fprintln(stderr, ie.Error())
		return 1
	}
	fmt.Fprintf(stderr, "%s: %v\n", prog, err)
	return 1
}

// Pick returns the row of table that args[0] names, at a level with
// subcommands; path ("pi-ctl", "pi-ctl file") names the level in help and
// errors, and row reads a row's name and summary. -h, --help and help
// print the level's command list on stdout and return flag.ErrHelp.
func Pick[R any](stdout io.Writer, path, intro string, table []R, row func(R) (name, summary string), args []string) (R, error) {
	var none R
	if len(args) == 0 {
		return none, Usagef(path, "missing command")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		return none, commandList(stdout, path, intro, table, row)
	}
	for _, r := range table {
		if name, _ := row(r); name == args[0] {
			return r, nil
		}
	}
	return none, Usagef(path, "unknown command %q", args[0])
}

// commandList is the --help of a level with subcommands.
func commandList[R any](w io.Writer, path, intro string, table []R, row func(R) (string, string)) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nUsage: %s COMMAND [ARGS]\n\nCommands:\n", intro, path)
	for _, r := range table {
		name, summary := row(r)
		fmt.Fprintf(&b, "  %-11s %s\n", name, summary)
	}
	fmt.Fprintf(&b, "\nRun '%s COMMAND --help' for the details of a command.\n", path)
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return err
	}
	return flag.ErrHelp
}

// UsageError is a wrong invocation (exit 2). It names the command and points
// at its help, on one line.
type UsageError struct{ Path, Msg string }

func (e *UsageError) Error() string {
	return fmt.Sprintf("%s: %s (see '%s --help')", e.Path, e.Msg, e.Path)
}

// Usagef returns a UsageError of the command path.
func Usagef(path, format string, args ...any) error {
	return &UsageError{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// InputError is a problem with one line of an input file, printed like a
// compiler's diagnostics: FILE:LINE: reason.
type InputError struct {
	File   string
	Line   int
	Reason string
}

func (e *InputError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason) }

// ErrReported means the command has already printed its findings (one line
// each on stderr); Exit returns 1 and adds nothing.
var ErrReported = errors.New("problems reported")

// NewFlags returns a FlagSet that prints nothing by itself: ParseArgs
// prints help on stdout and Exit reports errors once.
func NewFlags(path string) *flag.FlagSet {
	fs := flag.NewFlagSet(path, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// ParseArgs parses args for a leaf command whose usage text is help. Flags
// may come before or after the positional arguments ("tree FILE --json" and
// "tree --json FILE" both work); "--" ends the flags. It returns one
// positional argument per name in names, or a usage error naming what is
// missing. The last name may be "[NAME]" (optional), "NAME..." (one or
// more) or "[NAME...]" (any number). On -h/--help it prints help
// and the flag defaults to stdout and returns flag.ErrHelp (exit 0).
func ParseArgs(stdout io.Writer, fs *flag.FlagSet, help string, args []string, names ...string) ([]string, error) {
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
			if _, werr := io.WriteString(stdout, b.String()); werr != nil {
				return nil, werr
			}
			return nil, flag.ErrHelp
		}
		if err != nil {
			return nil, Usagef(fs.Name(), "%v", err)
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
		return nil, Usagef(fs.Name(), "missing %s", strings.TrimSuffix(names[len(pos)], "..."))
	case most >= 0 && len(pos) > most:
		return nil, Usagef(fs.Name(), "unexpected argument %q", pos[most])
	}
	return pos, nil
}
