package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/pifleet/sessionlog/internal/tree"
)

// fileCommands work on a local pi session file with no server. Like the top
// level, adding one is a file with its run function and a line here.
var fileCommands = []command{
	{"tree", "draw the session tree (like pi's /tree), or print it as JSON", runFileTree},
	{"info", "summarize the session: id, name, leaf, labels, counts", runFileInfo},
	{"context", "show the context pi would send for a leaf", runFileContext},
	{"check", "validate the file strictly and report every problem", runFileCheck},
	{"migrate", "write the file in the current format (version 3), as pi does", runFileMigrate},
}

const fileIntro = `pi-ctl file works offline on a pi session file (.jsonl); FILE "-" reads stdin.
Files are read leniently, as pi reads them: lines pi skips are reported as
warnings (FILE:LINE: skipped: reason) and do not change the exit code. Only
"check" is strict.`

func runFile(ctx context.Context, e *env, args []string) error {
	return dispatch(ctx, e, "pi-ctl file", fileIntro, fileCommands, args)
}

// displayName is how messages name an input: "-" is stdin.
func displayName(name string) string {
	if name == "-" {
		return "<stdin>"
	}
	return name
}

// readInput reads the whole file name, or stdin for "-".
func readInput(e *env, name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(e.stdin)
	}
	return os.ReadFile(name)
}

// loadSession reads a session file the way pi opens it: leniently, with
// version 1 and 2 files migrated. Skipped lines become warnings on stderr.
// A file pi could not open at all (no header) is an inputError.
func loadSession(e *env, name string, opt tree.ReadOptions) (*tree.File, error) {
	data, err := readInput(e, name)
	if err != nil {
		return nil, err
	}
	f, err := tree.Read(data, opt)
	if err != nil {
		return nil, asInputError(displayName(name), err)
	}
	for _, s := range f.Skipped {
		fmt.Fprintf(e.stderr, "%s:%d: skipped: %s\n", displayName(name), s.Line, s.Reason)
	}
	return f, nil
}

// asInputError turns the tree package's line errors into FILE:LINE errors.
func asInputError(name string, err error) error {
	var le *tree.LineError
	if errors.As(err, &le) {
		return &inputError{File: name, Line: le.Line, Reason: le.Reason}
	}
	return fmt.Errorf("%s: %w", name, err)
}

// widthFlag registers --width: text output is cut to this many terminal
// columns. The default is $COLUMNS when the shell exports it, else 100.
func widthFlag(fs *flag.FlagSet, e *env) *int {
	def := 100
	if n, err := strconv.Atoi(e.getenv("COLUMNS")); err == nil && n > 0 {
		def = n
	}
	return fs.Int("width", def, "cut text lines to `N` terminal columns (0: no limit; default $COLUMNS or 100)")
}

// checkWidth validates --width.
func checkWidth(fs *flag.FlagSet, w int) error {
	if w < 0 {
		return usagef(fs.Name(), "--width must be 0 or more, not %d", w)
	}
	return nil
}

// leafFlag is --leaf: unset (the default leaf), "null", or an entry id.
type leafFlag struct {
	set bool
	id  string
}

func (l *leafFlag) String() string { return l.id }

func (l *leafFlag) Set(s string) error {
	l.set, l.id = true, s
	return nil
}

// resolve returns the entry index the flag names: -1 for "null", the last
// entry when unset (pi's default leaf; -1 too for a session without
// entries). An id the session does not hold is an error that names it.
func (l *leafFlag) resolve(s *tree.Session, file string) (int, error) {
	switch {
	case !l.set:
		return s.Len() - 1, nil
	case l.id == "null":
		return -1, nil
	}
	i, ok := s.Index(l.id)
	if !ok {
		return 0, fmt.Errorf("%s: unknown leaf %q (no entry has that id; 'pi-ctl file tree %s' lists them)", file, l.id, file)
	}
	return i, nil
}
