package main

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/region"
	"github.com/pifleet/sessionlog/internal/wire"
)

const erasuresHelp = `Usage: pi-ctl erasures [--archive-stream NAME] [--region-bucket NAME] [--json] [--server URL]

Prints the ledger of erasures: every session erased (pi-ctl rm, DELETE
/v1/sessions/{id}), when, by whom (the token's or NATS user's name) and how
many of its records went. It holds no content of the sessions. A
cross-region deployment keeps its ledger beside the region record, in the
tie-breaker's cluster (KV bucket <region bucket>_ERASED); both are read.

Keep its --json beside your backups: pi-ctl restore --erasures FILE erases
those sessions again from a backup made before they were erased, when the
deployment the ledger lived in is gone (restore reads the ledger of the
deployment it restores into by itself).

pi-ctl talks to JetStream directly: --server (or $PI_CTL_SERVER) must be a
NATS server of the deployment, with the admin role of pi-ctl gen-secrets.
`

func runErasures(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl erasures")
	a := addAdminFlags(fs, time.Minute)
	archiveStream := fs.String("archive-stream", jetstream.NewArchiveConfig(jetstream.NewConfig()).Stream, "the archive's stream (pi-node's --archive-stream); the ledger is KV bucket <NAME>_ERASED")
	if _, err := parseArgs(e, fs, erasuresHelp, args); err != nil {
		return err
	}
	conn, ctx, done, err := a.connectTimed(ctx, e, fs)
	if err != nil {
		return err
	}
	defer done()
	lines, err := jetstream.ReadErasures(ctx, conn.JS, *archiveStream)
	if err != nil {
		return err
	}
	more, err := jetstream.ReadLedger(ctx, conn.JS, region.LedgerBucket(a.bucket))
	if err != nil {
		return err
	}
	lines = append(lines, more...)
	slices.SortFunc(lines, func(x, y wire.Erasure) int {
		if c := x.At.Compare(y.At); c != 0 {
			return c
		}
		return strings.Compare(x.Session, y.Session)
	})
	if a.json {
		if lines == nil {
			lines = []wire.Erasure{}
		}
		return printJSON(e.stdout, lines)
	}
	t := &table{}
	t.row("SESSION", "ERASED", "BY", "RECORDS")
	for _, l := range lines {
		t.row(l.Session, l.At.UTC().Format(time.RFC3339), orDash(l.By), strconv.Itoa(l.Records))
	}
	return t.write(e.stdout)
}
