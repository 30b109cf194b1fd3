package main

import (
	"context"
	"flag"
	"strconv"

	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// cursorCommands manage cursors: one client's leaf in one session.
var cursorCommands = []command{
	{"get", "show a client's cursor", runCursorGet},
	{"set", "move a client's cursor to an entry (or null)", runCursorSet},
	{"ls", "list a session's cursors", runCursorList},
	{"rm", "remove a client's cursor", runCursorRemove},
}

const cursorIntro = `pi-ctl cursor manages cursors: a cursor is one client's leaf in one session
(pi's "current position"). A client without a cursor is at pi's default
leaf, the session's last entry.`

func runCursor(ctx context.Context, e *env, args []string) error {
	return dispatch(ctx, e, "pi-ctl cursor", cursorIntro, cursorCommands, args)
}

const cursorGetHelp = `Usage: pi-ctl cursor get SID CLIENT [--json]

Shows the cursor of CLIENT in session SID: its leaf (null: before the
first entry), the session's last sequence when it was set, its revision
(for cursor set --expect-revision) and when it was set. Without a cursor:
exit 1, "not found".
`

func runCursorGet(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl cursor get")
	conn := addConnFlags(fs)
	asJSON := fs.Bool("json", false, "print the API's JSON")
	pos, err := parseArgs(e, fs, cursorGetHelp, args, "SID", "CLIENT")
	if err != nil {
		return err
	}
	return cursorOp(ctx, e, fs, conn, wire.CursorGetRequest{SessionID: pos[0], Client: pos[1]}, *asJSON)
}

const cursorSetHelp = `Usage: pi-ctl cursor set SID CLIENT LEAF [--expect-revision N] [--json]

Moves the cursor of CLIENT in session SID to entry LEAF ("null": before the
first entry). With --expect-revision N the move only happens if the cursor
is at revision N (0: only if the client has no cursor yet), else exit 1
with "conflict". Prints the cursor as it is now.
`

func runCursorSet(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl cursor set")
	conn := addConnFlags(fs)
	expect := fs.Int64("expect-revision", -1, "move only if the cursor is at revision `N` (0: has none)")
	asJSON := fs.Bool("json", false, "print the API's JSON")
	pos, err := parseArgs(e, fs, cursorSetHelp, args, "SID", "CLIENT", "LEAF")
	if err != nil {
		return err
	}
	req := wire.CursorSetRequest{SessionID: pos[0], Client: pos[1], LeafID: wire.EntryID(pos[2])}
	if pos[2] == "null" {
		req.LeafID = wire.NullID()
	}
	if *expect >= 0 {
		rev := uint64(*expect)
		req.ExpectRevision = &rev
	}
	return cursorOp(ctx, e, fs, conn, req, *asJSON)
}

// cursorOp runs get or set and prints the cursor.
func cursorOp(ctx context.Context, e *env, fs *flag.FlagSet, conn *connFlags, req wire.Request, asJSON bool) error {
	var c wire.CursorView
	if printed, err := conn.query(ctx, e, fs, req, asJSON, &c); printed || err != nil {
		return err
	}
	return keyValues(e.stdout,
		"client", tree.Printable(c.Client),
		"leaf", nullable(c.LeafID, "null (before the first entry)"),
		"seq", strconv.FormatUint(c.Seq, 10),
		"revision", strconv.FormatUint(c.Revision, 10),
		"updated", c.UpdatedAt)
}

const cursorListHelp = `Usage: pi-ctl cursor ls SID [--json]

Lists the cursors of session SID by client id: client, leaf, the session's
last sequence when the cursor was set, revision, and when.
`

func runCursorList(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl cursor ls")
	conn := addConnFlags(fs)
	asJSON := fs.Bool("json", false, "print the API's JSON")
	pos, err := parseArgs(e, fs, cursorListHelp, args, "SID")
	if err != nil {
		return err
	}
	var r wire.CursorsReply
	if printed, err := conn.query(ctx, e, fs, wire.CursorListRequest{SessionID: pos[0]}, *asJSON, &r); printed || err != nil {
		return err
	}
	t := &table{}
	t.row("CLIENT", "LEAF", "SEQ", "REVISION", "UPDATED")
	for _, c := range r.Cursors {
		t.row(tree.Printable(c.Client), nullable(c.LeafID, "null"), strconv.FormatUint(c.Seq, 10), strconv.FormatUint(c.Revision, 10), c.UpdatedAt)
	}
	return t.write(e.stdout)
}

const cursorRemoveHelp = `Usage: pi-ctl cursor rm SID CLIENT

Removes the cursor of CLIENT in session SID: the client is back at pi's
default leaf. Removing a cursor that does not exist is not an error.
`

func runCursorRemove(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl cursor rm")
	conn := addConnFlags(fs)
	pos, err := parseArgs(e, fs, cursorRemoveHelp, args, "SID", "CLIENT")
	if err != nil {
		return err
	}
	_, err = conn.query(ctx, e, fs, wire.CursorDeleteRequest{SessionID: pos[0], Client: pos[1]}, false, nil)
	return err
}
