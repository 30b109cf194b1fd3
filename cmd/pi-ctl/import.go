package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/tree/jsjson"
	"github.com/pifleet/sessionlog/internal/wire"
)

const importHelp = `Usage: pi-ctl import PATH... [-j N] [--strict] [--json]

Imports pi session files. Each PATH is a file, or a directory searched
recursively for *.jsonl files (e.g. ~/.pi/agent/sessions). Files of every
version are accepted (versions 1 and 2 are migrated as pi migrates them)
and each session keeps the id of its header.

One line per file, in the order found:

  ok      SID  N entries  FILE
  exists  SID  FILE          the session is stored already (not an error)
  error   FILE: reason       nothing of the file was stored

then a count when there were several. Each file is imported atomically: a
bad file is reported and skipped, never half-imported. Exit status 1 when
some file failed. On a terminal a progress bar runs on stderr.

Like pi, an import skips the lines it cannot use: malformed JSON, and
entries that are not of pi's shape for their type (a message without a
role, a model_change without modelId, ...). The ok line counts them and
the lines below it say which and why. --strict refuses such a file
instead: an error naming the first bad line and field, nothing stored.

--json prints one object per file instead: {"file","result" (ok, exists
or error),"sessionId","entryCount","lastSeq","sourceVersion","skipped"
(the lines skipped: {"line","field"?,"reason"}),"error"}.

Over NATS a file may be at most the NATS server's max_payload (8 MiB with
pi-node's embedded server); import bigger ones with --http URL (16 MiB).
`

// importResult is the outcome of one file, also its --json line.
type importResult struct {
	File          string       `json:"file"`
	Result        string       `json:"result"` // ok, exists, error
	SessionID     string       `json:"sessionId,omitempty"`
	EntryCount    *int         `json:"entryCount,omitempty"`
	LastSeq       uint64       `json:"lastSeq,omitempty"`
	SourceVersion int          `json:"sourceVersion,omitempty"`
	Skipped       []lineReport `json:"skipped,omitempty"`
	Error         string       `json:"error,omitempty"`
}

// lineReport is a line of the file the import skipped: malformed, or an
// entry not of pi's shape (Field names the member).
type lineReport struct {
	Line   int    `json:"line"`
	Field  string `json:"field,omitempty"`
	Reason string `json:"reason"`
}

func runImport(ctx context.Context, e *env, args []string) error {
	flags := newFlags("pi-ctl import")
	conn := addConnFlags(flags)
	jobs := flags.Int("j", 4, "import `N` files at once")
	asJSON := flags.Bool("json", false, "print one JSON object per file")
	strict := flags.Bool("strict", false, "refuse a file with a bad line instead of skipping the line")
	paths, err := parseArgs(e, flags, importHelp, args, "PATH...")
	if err != nil {
		return err
	}
	if *jobs < 1 {
		return usagef(flags.Name(), "-j must be at least 1, not %d", *jobs)
	}
	files, failed := findSessionFiles(paths)
	b, err := conn.open(ctx, e, flags)
	if err != nil {
		return err
	}
	defer b.close()

	out := &importOutput{e: e, json: *asJSON, results: make([]*importResult, len(files))}
	if isTerminal(e.stderr) {
		out.bar = &progress{w: e.stderr, total: len(files)}
	}
	for i := range files {
		if failed[i] != nil {
			out.done(i, failed[i])
		}
	}
	err = importAll(ctx, b, files, failed, *jobs, *strict, out)
	out.finish()
	switch {
	case err != nil:
		return err
	case out.failed > 0:
		return errReported
	}
	return nil
}

// importAll imports files (but those already failed) with jobs workers,
// which take the files in order. A node that cannot be reached at all
// stops them, rather than failing every remaining file the same way: that
// error is returned, as is an interrupt.
func importAll(ctx context.Context, b backend, files []string, failed map[int]*importResult, jobs int, strict bool, out *importOutput) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var unreachable error
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(jobs, max(len(files), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r, err := importFile(ctx, b, files[i], strict)
				if ctx.Err() != nil {
					return // interrupted: the file may be in or not; report nothing false
				}
				if err != nil { // the node is unreachable
					mu.Lock()
					unreachable = err
					mu.Unlock()
					cancel()
					return
				}
				out.done(i, r)
			}
		}()
	}
feed:
	for i := range files {
		if failed[i] != nil {
			continue
		}
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	switch {
	case unreachable != nil:
		return unreachable
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted after %d of %d files", out.count(), len(files))
	}
	return nil
}

// findSessionFiles expands the PATHs: files as they are, directories into
// their *.jsonl files (recursively, in lexical order). A PATH that cannot be
// read gets a failed result at its place.
func findSessionFiles(paths []string) ([]string, map[int]*importResult) {
	var files []string
	failed := map[int]*importResult{}
	fail := func(name string, err error) {
		failed[len(files)] = &importResult{File: name, Result: "error", Error: err.Error()}
		files = append(files, name)
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			fail(p, err)
			continue
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		// WalkDir does not follow a root that is a symbolic link (say,
		// ~/sessions -> /mnt/pi/sessions); a trailing separator makes the
		// kernel resolve it, and the files keep the name given.
		root := strings.TrimSuffix(p, string(os.PathSeparator)) + string(os.PathSeparator)
		err = filepath.WalkDir(root, func(name string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				fail(name, err)
				if d != nil && d.IsDir() {
					return fs.SkipDir
				}
			case !d.IsDir() && strings.HasSuffix(name, ".jsonl"):
				files = append(files, name)
			}
			return nil
		})
		if err != nil {
			fail(p, err)
		}
	}
	return files, failed
}

// importFile sends one file to the import operation and classifies the
// outcome. Only an unreachable node is returned as an error.
func importFile(ctx context.Context, b backend, name string, strict bool) (*importResult, error) {
	r := &importResult{File: name}
	data, err := os.ReadFile(name)
	if err != nil {
		r.Result, r.Error = "error", err.Error()
		return r, nil
	}
	body, err := b.do(ctx, wire.ImportRequest{File: data, Strict: strict})
	var ue *apiclient.UnreachableError
	switch {
	case errors.As(err, &ue):
		return nil, err
	case isStatus(err, http.StatusConflict):
		r.Result, r.SessionID = "exists", headerID(data)
		return r, nil
	case err != nil:
		r.Result, r.Error = "error", err.Error()
		return r, nil
	}
	if err := json.Unmarshal(body, r); err != nil || r.EntryCount == nil {
		r.Result, r.Error = "error", fmt.Sprintf("unexpected reply from pi-node: %.200s", body)
		return r, nil
	}
	r.Result = "ok"
	return r, nil
}

// headerID is the session id in the file's first line, for the "exists"
// line (the node only says that the id is taken).
func headerID(data []byte) string {
	for line := range bytes.Lines(data) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if v, err := jsjson.ParseValue(line); err == nil {
			if id, ok := v.Get("id"); ok && id.Kind == tree.KindString {
				return tree.Printable(id.Str)
			}
		}
		break
	}
	return "-"
}
