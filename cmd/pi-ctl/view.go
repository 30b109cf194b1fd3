package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/pifleet/sessionlog/internal/pisync"
	"github.com/pifleet/sessionlog/internal/termtext"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

const treeHelp = `Usage: pi-ctl tree SID [--client C] [--json] [--width N]

Draws the session's tree the way pi's /tree does, as 'pi-ctl file tree'
draws a file: one line per entry with its id and a preview, indented only
where the conversation branches.

  •             the entry is on the path to the leaf
  [label]       the entry's label
  ← leaf        pi's default leaf: the last entry
  ← leaf of C   with --client C: the entry C's cursor is at (without a
                cursor, C is at the default leaf)

--json prints the API's tree: {"tree":[{"id","type","label"?,"children"}],
"leafId"}, with leafId the client's leaf.
`

func runTree(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl tree")
	conn := addConnFlags(fs)
	client := fs.String("client", "", "mark client `C`'s leaf (its cursor)")
	asJSON := fs.Bool("json", false, "print the API's JSON")
	width := widthFlag(fs, e)
	pos, err := parseArgs(e, fs, treeHelp, args, "SID")
	if err != nil {
		return err
	}
	if err := checkWidth(fs, *width); err != nil {
		return err
	}
	b, err := conn.open(ctx, e, fs)
	if err != nil {
		return err
	}
	defer b.close()
	sid := pos[0]
	if *asJSON {
		body, err := b.do(ctx, wire.TreeRequest{SessionID: sid, Client: *client})
		if err != nil {
			return err
		}
		return writeJSON(e.stdout, body)
	}

	// The cursor first: its seq is the session's last sequence when it was
	// set, so the export below (from any node) holds the entry it names.
	var cur wire.CursorView
	haveCursor := false
	export := wire.ExportRequest{SessionID: sid}
	if *client != "" {
		err := call(ctx, b, wire.CursorGetRequest{SessionID: sid, Client: *client}, &cur)
		switch {
		case isStatus(err, http.StatusNotFound): // no cursor: the default leaf
		case err != nil:
			return err
		default:
			haveCursor = true
			export.MinSeq = cur.Seq
		}
	}
	data, err := b.do(ctx, export)
	if err != nil {
		return err
	}
	f, err := tree.Read(data, tree.ReadOptions{})
	if err != nil {
		return fmt.Errorf("export of %s: %v", sid, err)
	}
	leaf, mark := f.Len()-1, "← leaf"
	if haveCursor {
		mark = "← leaf of " + tree.Printable(*client)
		leaf = -1
		if cur.LeafID != nil {
			i, ok := f.Index(*cur.LeafID)
			if !ok {
				return fmt.Errorf("the cursor of %s names entry %q, which session %s does not hold", *client, *cur.LeafID, sid)
			}
			leaf = i
		}
	}
	w := bufio.NewWriter(e.stdout)
	if f.Len() == 0 {
		w.WriteString("(no entries)\n")
	}
	termtext.WriteTree(w, f.Session, f.Tree(), leaf, mark, *width)
	if haveCursor && cur.LeafID == nil {
		fmt.Fprintf(w, "(%s is at the null leaf: before the first entry)\n", tree.Printable(*client))
	}
	return w.Flush()
}

const contextHelp = `Usage: pi-ctl context SID [--leaf ID|null] [--client C] [--llm] [--json] [--full]

Shows what pi would send to the model from a leaf (pi's
buildSessionContext), as 'pi-ctl file context' does for a file: the path
from the root, the thinking level and model in effect, and the messages.
The leaf is --leaf ID ("null": the empty context before the first entry),
else the cursor of --client C, else pi's default leaf, the last entry.

--llm converts the messages as pi's convertToLlm does. --json prints the
API's JSON {"leafId","path","thinkingLevel","model","contextEntryIds","messages"}, the shape
of the conformance vectors. The text transcript cuts long tool output,
thinking and arguments; --full prints everything. It ends with the
session's usage by provider/model (pi 1.1's usage breakdown), when the
session spent any.
`

func runContext(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl context")
	conn := addConnFlags(fs)
	var leaf leafFlag
	fs.Var(&leaf, "leaf", "build the context for entry `ID` (or null)")
	client := fs.String("client", "", "build it for client `C`'s cursor")
	llm := fs.Bool("llm", false, "show the messages converted for the LLM")
	asJSON := fs.Bool("json", false, "print the API's JSON")
	full := fs.Bool("full", false, "do not cut long text in the transcript")
	pos, err := parseArgs(e, fs, contextHelp, args, "SID")
	if err != nil {
		return err
	}
	req := wire.ContextRequest{SessionID: pos[0], Client: *client}
	switch {
	case leaf.set && leaf.id == "null":
		req.Leaf = wire.NullID()
	case leaf.set:
		req.Leaf = wire.EntryID(leaf.id)
	}
	if *llm {
		req.Format = "llm"
	}
	if *asJSON {
		_, err := conn.query(ctx, e, fs, req, true, nil)
		return err
	}
	b, err := conn.open(ctx, e, fs)
	if err != nil {
		return err
	}
	defer b.close()
	var r contextReply
	if err := call(ctx, b, req, &r); err != nil {
		return err
	}
	// pi 1.1's usage breakdown of the whole session, as "file context"
	// ends with it.
	var d wire.Detail
	if err := call(ctx, b, wire.GetRequest{SessionID: req.SessionID, Include: wire.GetIncludeUsage}, &d); err != nil {
		return err
	}
	c, msgs := r.treeContext()
	w := bufio.NewWriter(e.stdout)
	w.WriteString(contextHeading(&c, len(msgs), *llm))
	t := transcript{w: w, full: *full}
	for k, m := range msgs {
		t.message(k+1, m)
	}
	if d.UsageBreakdown != nil && len(*d.UsageBreakdown) > 0 {
		w.WriteString("\nusage of the session:\n")
		for _, u := range *d.UsageBreakdown {
			w.WriteString("  " + usageText(tree.UsageTotal{Key: u.Key, Cost: u.Cost, Tokens: u.Tokens}) + "\n")
		}
	}
	return w.Flush()
}

// contextReply is the API's context JSON.
type contextReply struct {
	LeafID        *string           `json:"leafId"`
	Path          []string          `json:"path"`
	ThinkingLevel json.RawMessage   `json:"thinkingLevel"`
	Model         json.RawMessage   `json:"model"`
	Messages      []json.RawMessage `json:"messages"`
}

// treeContext is what the transcript of 'file context' renders: a
// tree.Context for the heading, and the messages.
func (r *contextReply) treeContext() (tree.Context, []json.RawMessage) {
	c := tree.Context{Null: r.LeafID == nil, Path: r.Path, Thinking: r.ThinkingLevel}
	if r.LeafID != nil {
		c.LeafID = *r.LeafID
	}
	if len(r.Model) > 0 && string(r.Model) != "null" {
		c.Model = r.Model
	}
	return c, r.Messages
}

const exportHelp = `Usage: pi-ctl export SID [-o FILE]
       pi-ctl export --all -o DIR

Writes session SID as a pi session file (JSONL, version 3): the lines pi
wrote, byte for byte, header first. pi opens the file as it is, e.g. under
~/.pi/agent/sessions.

Without -o the file goes to stdout. With -o it is written to FILE
atomically: to a temporary file beside it first, then renamed, so FILE is
either the old file or the whole new one.

--all writes every session to DIR/<session id>.jsonl (a backup: "pi-ctl
import DIR" restores it), one line per session on stdout, and exits 1 if any
failed.

Exported files are readable by their owner only (mode 0600, whatever the
umask; a FILE replaced gets 0600 too), and DIR, when --all creates it, 0700:
sessions hold whole conversations.

Over NATS a reply is limited by the NATS server's max_payload; export big
sessions with --http URL.
`

func runExport(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl export")
	conn := addConnFlags(fs)
	out := fs.String("o", "", "write to `FILE` (atomically) instead of stdout; with --all, the directory")
	all := fs.Bool("all", false, "export every session into the directory given with -o")
	pos, err := parseArgs(e, fs, exportHelp, args, "[SID]")
	if err != nil {
		return err
	}
	if *all != (len(pos) == 0) || *all && (*out == "" || *out == "-") {
		return usagef("pi-ctl export", "give a session id, or --all with -o DIR")
	}
	b, err := conn.open(ctx, e, fs)
	if err != nil {
		return err
	}
	defer b.close()
	if *all {
		return exportAll(ctx, e, b, *out)
	}
	data, err := b.do(ctx, wire.ExportRequest{SessionID: pos[0]})
	if err != nil {
		return err
	}
	if *out == "" || *out == "-" {
		_, err := e.stdout.Write(data)
		return err
	}
	// Atomic, like "file migrate": pi never opens half a session file.
	return writeAtomic(*out, data, 0o600)
}

// exportAll pages through the catalog and writes each session to dir.
func exportAll(ctx context.Context, e *env, b backend, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	failed, done := 0, 0
	cursor := ""
	for {
		var page wire.ListReply
		if err := call(ctx, b, wire.ListRequest{Limit: 1000, Cursor: cursor}, &page); err != nil {
			return err
		}
		for _, s := range page.Sessions {
			// The id becomes a file name: a server's word is not enough.
			err := pisync.CheckSessionID(s.SessionID)
			var data []byte
			if err == nil {
				data, err = b.do(ctx, wire.ExportRequest{SessionID: s.SessionID})
			}
			if err == nil {
				err = writeAtomic(filepath.Join(dir, s.SessionID+".jsonl"), data, 0o600)
			}
			if err != nil {
				failed++
				fmt.Fprintf(e.stdout, "error  %s: %v\n", s.SessionID, err)
				continue
			}
			done++
			fmt.Fprintf(e.stdout, "ok     %s  %d bytes\n", s.SessionID, len(data))
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if failed > 0 {
		fmt.Fprintf(e.stderr, "exported %d sessions to %s, %d failed\n", done, dir, failed)
		return errReported
	}
	return nil
}
