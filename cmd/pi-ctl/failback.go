package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/pifleet/sessionlog/internal/region"
)

const failbackHelp = `Usage: pi-ctl failback --from REGION [--wait D] [--json] [--server URL]

Brings a stale region back into the home's history (see
docs/CROSS-REGION.md). REGION is the old home once it is reachable again
after a failover, or any other region the failover left stale:

  1. its stream and cursor bucket are fenced (sealed);
  2. every entry they hold that the home lacks — acknowledged by the old
     home but never mirrored, or written there while it was cut off — is
     republished into the home unchanged (same id, same parentId), so it
     appears where it was, as a branch. Ids are immutable: the merge is a
     set union per session and stores nothing twice. Cursors the home lacks,
     or holds older, are copied too;
  3. the merge is verified, and REGION's stream and bucket are recreated as
     mirrors of the home's;
  4. once the mirror has caught up, the region record stops calling REGION
     stale and its pi-nodes read from their own region again, without a
     restart.

Refused while REGION is unreachable: a stream deleted while its servers are
down is deleted from their disks when they return. A returning region's
stream may answer a moment after its pi-nodes do, so pi-ctl waits up to
--wait (default 30s) for it, then refuses (exit 1), saying how long it
waited.

Safe to retry: every step can be run again, and a failback that stopped
half-way finishes when run again. When REGION is not stale (this failback
completed, its reply lost) it changes nothing, says "already done" and
exits 0; with --json the report's "changed" is false (true when this run
changed something).

pi-ctl talks to JetStream directly: --server (or $PI_CTL_SERVER) is a NATS
server of any region that reaches both REGION and the home.
`

func runFailback(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl failback")
	a := addAdminFlags(fs, 10*time.Minute)
	from := fs.String("from", "", "the stale region to bring back (required)")
	wait := fs.Duration("wait", region.DefaultReturnWait, "how long to wait for REGION's stream to answer before refusing")
	if _, err := parseArgs(e, fs, failbackHelp, args); err != nil {
		return err
	}
	if *from == "" {
		return usagef(fs.Name(), "--from REGION is required")
	}
	if *wait <= 0 {
		return usagef(fs.Name(), "--wait must be positive, not %v", *wait)
	}
	adm, closeConn, err := a.admin(ctx, e, fs)
	if err != nil {
		return err
	}
	defer closeConn()
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	adm.ReturnWait = *wait
	rep, err := adm.Failback(ctx, *from)
	if err != nil {
		return err
	}
	if a.json {
		return printJSON(e.stdout, rep)
	}
	if !rep.Changed {
		_, err := fmt.Fprintf(e.stdout, "already done: region %s is not stale, it mirrors the home region %s; nothing changed\n", rep.From, rep.Home)
		return err
	}
	st := rep.Stats
	merged := "nothing to merge (already replaced)"
	if rep.Merged {
		merged = fmt.Sprintf("%d entries republished (%d sessions, %d of them new), %d already in %s, %d id conflicts kept as the home has them; %d records read after sequence %s",
			st.Entries, st.Sessions, st.Created, st.Present, rep.Home, st.Conflicts, st.Scanned, byShard(rep.Shared, rep.SharedShards))
		if st.Erased > 0 {
			merged += fmt.Sprintf("; %d records of erased sessions left out", st.Erased)
		}
	}
	return keyValues(e.stdout,
		"region", fmt.Sprintf("%s: a mirror of %s again", rep.From, rep.Home),
		"entries", merged,
		"cursors", fmt.Sprintf("%d copied or moved forward, %d newer in %s kept", st.Cursors, st.CursorsKept, rep.Home),
		"mirror", fmt.Sprintf("caught up with %s at sequence %s", rep.Home, byShard(rep.MirrorAt, rep.MirrorAtShards)),
		"took", rep.Took.Round(time.Millisecond).String())
}

func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
