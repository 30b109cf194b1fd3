package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pifleet/sessionlog/internal/pisync"
	"github.com/pifleet/sessionlog/internal/wire"
)

const checkoutHelp = `Usage: pi-ctl checkout SID [--dir DIR]
       pi-ctl checkout --all [--cwd DIR] [--since T] [--dir DIR]

Writes a session as pi would have written it, at pi's own path:

  DIR/--<encoded cwd>--/<timestamp>_<session id>.jsonl

(DIR defaults to $PI_CODING_AGENT_DIR/sessions, else ~/.pi/agent/sessions)
and prints that path. pi can then resume it on this machine
(pi --session PATH, or /resume in that directory), and "pi-ctl sync"
streams what pi adds back to the cluster.

A file already at that path is replaced only when every entry in it is in
the cluster with the same content; otherwise checkout refuses, names the
first entry the cluster lacks, and leaves the file as it is (run pi-ctl
sync first). The file is written atomically.

--all checks out every session, or those of --cwd and --since; one line
per session, "error SID: reason" for those refused (exit status 1).
`

func runCheckout(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl checkout")
	conn := addConnFlags(fs)
	dir := fs.String("dir", "", "the sessions `DIR` (default $PI_CODING_AGENT_DIR/sessions, else ~/.pi/agent/sessions)")
	all := fs.Bool("all", false, "check out every session (of --cwd, --since)")
	cwd := fs.String("cwd", "", "with --all: only sessions started in `DIR`")
	since := fs.String("since", "", "with --all: only sessions modified at or after `T` (RFC 3339, or a duration like 24h)")
	pos, err := parseArgs(e, fs, checkoutHelp, args, "[SID]")
	if err != nil {
		return err
	}
	switch {
	case *all && len(pos) > 0:
		return usagef(fs.Name(), "give a SID or --all, not both")
	case !*all && len(pos) == 0:
		return usagef(fs.Name(), "missing SID (or --all)")
	case !*all && (*cwd != "" || *since != ""):
		return usagef(fs.Name(), "--cwd and --since go with --all")
	}
	req := wire.ListRequest{Limit: 1000, Cwd: *cwd}
	if *since != "" {
		if req.Since, err = parseSince(*since, time.Now()); err != nil {
			return usagef(fs.Name(), "%v", err)
		}
	}
	if *dir == "" {
		if *dir, err = pisync.DefaultSessionsDir(e.getenv); err != nil {
			return err
		}
	}
	b, err := conn.open(ctx, e, fs)
	if err != nil {
		return err
	}
	defer b.close()
	if !*all {
		path, err := pisync.Checkout(ctx, client{b}, pos[0], *dir)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(e.stdout, path)
		return err
	}
	acc, err := fetchPages(ctx, b, "", func(c string) wire.Request { req.Cursor = c; return req }, true)
	if err != nil {
		return err
	}
	failed := 0
	for _, raw := range acc.Sessions {
		var s wire.Info
		if err := json.Unmarshal(raw, &s); err != nil {
			return fmt.Errorf("list: unexpected reply from pi-node: %v", err)
		}
		path, err := "", pisync.CheckSessionID(s.SessionID)
		bad := err != nil // a listed id that is none: told, the others checked out
		if !bad {
			path, err = pisync.Checkout(ctx, client{b}, s.SessionID, *dir)
		}
		switch {
		case err == nil:
			fmt.Fprintln(e.stdout, path)
		case bad || errors.Is(err, pisync.ErrUnsynced) || isStatus(err, 404):
			failed++
			fmt.Fprintf(e.stdout, "error %s: %v\n", s.SessionID, err)
		default:
			return err
		}
	}
	if failed > 0 {
		return errReported
	}
	return nil
}
