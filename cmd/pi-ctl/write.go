package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// labelEntry and infoEntry are pi's label and session_info entries without
// what the node fills in (id, parentId, timestamp); the field order is
// pi's, so the stored line reads like one pi wrote.
type labelEntry struct {
	Type     string  `json:"type"`
	TargetID string  `json:"targetId"`
	Label    *string `json:"label,omitempty"` // absent: cleared, as pi writes it
}

type infoEntry struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

const labelHelp = `Usage: pi-ctl label SID ENTRY TEXT [--client C] [--json]
       pi-ctl label SID ENTRY --clear

Labels entry ENTRY of session SID with TEXT, as pi's /label does: a label
entry is appended (the last one for an entry wins, on any branch). --clear
removes the entry's label. The new entry's parent is the leaf of --client C
(whose cursor then moves to it), else pi's default leaf, the last entry.

Prints the new entry's id and the session's lastSeq, which --min-seq takes
to read the label back through any node; --json prints the API's reply.
`

func runLabel(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl label")
	conn := addConnFlags(fs)
	clear := fs.Bool("clear", false, "remove the entry's label instead")
	client := fs.String("client", "", "append at client `C`'s leaf and move its cursor")
	asJSON := fs.Bool("json", false, "print the API's JSON")
	pos, err := parseArgs(e, fs, labelHelp, args, "SID", "ENTRY", "[TEXT]")
	if err != nil {
		return err
	}
	sid, target := pos[0], pos[1]
	entry := labelEntry{Type: "label", TargetID: target}
	switch {
	case *clear && len(pos) == 3:
		return usagef(fs.Name(), "--clear takes no TEXT")
	case !*clear && len(pos) < 3:
		return usagef(fs.Name(), "missing TEXT (or --clear)")
	case !*clear:
		entry.Label = &pos[2]
	}
	if target == "null" {
		return usagef(fs.Name(), "ENTRY must be an entry id")
	}
	b, err := conn.open(ctx, e, fs)
	if err != nil {
		return err
	}
	defer b.close()
	// pi refuses to label an entry it does not have; the append would
	// store such a label anyway, so check first.
	if _, err := b.do(ctx, wire.TreeRequest{SessionID: sid, Leaf: wire.EntryID(target)}); isStatus(err, http.StatusNotFound) {
		if gerr := call(ctx, b, wire.GetRequest{SessionID: sid}, nil); gerr != nil {
			return gerr
		}
		return fmt.Errorf("session %s has no entry %q ('pi-ctl tree %s' lists them)", sid, target, sid)
	} else if err != nil {
		return err
	}
	what := "labeled " + tree.Printable(target) + " " + strconv.Quote(pos[len(pos)-1])
	if *clear {
		what = "cleared the label of " + tree.Printable(target)
	}
	return appendOne(ctx, e, b, sid, *client, entry, *asJSON, what)
}

const renameHelp = `Usage: pi-ctl rename SID NAME [--client C] [--json]

Names session SID, as pi's /name does: a session_info entry is appended
(the last one in the session wins; a name that is blank after trimming
means no name). Its parent is the leaf of --client C, else pi's default
leaf.

Prints the new entry's id and the session's lastSeq; --json prints the
API's reply.
`

func runRename(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl rename")
	conn := addConnFlags(fs)
	client := fs.String("client", "", "append at client `C`'s leaf and move its cursor")
	asJSON := fs.Bool("json", false, "print the API's JSON")
	pos, err := parseArgs(e, fs, renameHelp, args, "SID", "NAME")
	if err != nil {
		return err
	}
	b, err := conn.open(ctx, e, fs)
	if err != nil {
		return err
	}
	defer b.close()
	return appendOne(ctx, e, b, pos[0], *client, infoEntry{Type: "session_info", Name: pos[1]}, *asJSON, "renamed to "+strconv.Quote(pos[1]))
}

// appendOne appends one entry through the append operation and reports it.
func appendOne(ctx context.Context, e *env, b backend, sid, client string, entry any, asJSON bool, what string) error {
	raw, err := wire.EncodeJSON(entry)
	if err != nil {
		return err
	}
	body, err := b.do(ctx, wire.AppendRequest{SessionID: sid, Client: client, Entries: []json.RawMessage{raw}})
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(e.stdout, body)
	}
	var r wire.WriteResult
	if err := json.Unmarshal(body, &r); err != nil || len(r.Entries) != 1 {
		return fmt.Errorf("append: unexpected reply from pi-node: %.200s", body)
	}
	_, err = fmt.Fprintf(e.stdout, "%s: entry %s, lastSeq %d\n", what, r.Entries[0].ID, r.LastSeq)
	return err
}

const forkHelp = `Usage: pi-ctl fork SID ENTRY [--pi11] [--json]

Starts a new session holding the path from the root to entry ENTRY of
session SID, its parentSession SID (pi's createBranchedSession; labels on
the path come along). The node stores no copy of the path: the new session
reads it from SID, and gets it written into it should SID be erased or
archived; every read and export shows the whole fork. As pi 0.73.1, a label entry dropped from the path
leaves its child an orphan root; --pi11 forks as pi 1.1 does, re-chaining
the path over the dropped labels. Prints the new session's id; --json
prints the API's reply {"sessionId","lastSeq"}.
`

func runFork(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl fork")
	conn := addConnFlags(fs)
	asJSON := fs.Bool("json", false, "print the API's JSON")
	pi11 := fs.Bool("pi11", false, "fork as pi 1.1: re-chain the path over the labels it drops")
	pos, err := parseArgs(e, fs, forkHelp, args, "SID", "ENTRY")
	if err != nil {
		return err
	}
	var r wire.ForkReply
	if printed, err := conn.query(ctx, e, fs, wire.ForkRequest{SessionID: pos[0], EntryID: pos[1], Pi11: *pi11}, *asJSON, &r); printed || err != nil {
		return err
	}
	_, err = fmt.Fprintln(e.stdout, r.SessionID)
	return err
}
