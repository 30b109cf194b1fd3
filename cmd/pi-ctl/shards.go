package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/region"
)

const shardsHelp = `Usage: pi-ctl shards [show] [--json] [--server URL]
       pi-ctl shards migrate --to N [--in D] [--json] [--server URL]

show (the default) prints the store's shard map: which streams hold
sessions, and how a session id is placed on one (docs/PROTOCOL.md#shards).

migrate changes the number of shards new sessions are spread over, on a
running store, without downtime: it creates the streams the new count
needs (configured as the first one: replicas, limits) and records a new
epoch in the map, starting --in from now (default 1m, at least 30s). Every
pi-node and Go client reads the map every 5 s and follows the new streams
before the epoch starts; from then on, sessions whose UUIDv7 id was made
at or after the start go to their shard among N. Every session made before
stays where it is, for good: readable and writable as before, and moved by
nothing (a move would need a cross-stream handoff JetStream cannot make
atomic; those sessions age out by retention instead). A writer whose clock
runs ahead of the start by more than --in could place a session before its
node knows the map: keep clocks in sync (NTP) and --in well above their
skew.

Running migrate again with the count in force changes nothing.

pi-ctl talks to JetStream directly: --server (or $PI_CTL_SERVER) must be a
NATS server of the deployment, with a user allowed to manage its streams
(the admin role of pi-ctl gen-secrets).
`

func runShards(ctx context.Context, e *env, args []string) error {
	sub := "show"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	fs := newFlags("pi-ctl shards " + sub)
	a := addAdminFlags(fs, time.Minute)
	stream := fs.String("stream", jetstream.NewConfig().Stream, "the first shard's stream (pi-node's --stream)")
	var to *int
	var in *time.Duration
	switch sub {
	case "show":
	case "migrate":
		to = fs.Int("to", 0, "the shard count for new sessions (1 to 256; required)")
		in = fs.Duration("in", time.Minute, "how far from now the new count starts (at least "+jetstream.MigrateLead.String()+")")
	default:
		return usagef("pi-ctl shards", "unknown subcommand %q: show or migrate", sub)
	}
	if _, err := parseArgs(e, fs, shardsHelp, args); err != nil {
		return err
	}
	if to != nil && *to == 0 {
		return usagef(fs.Name(), "--to N is required")
	}
	if in != nil && *in < jetstream.MigrateLead {
		return usagef(fs.Name(), "--in must be at least %v (every pi-node and client must read the new map before it starts), not %v", jetstream.MigrateLead, *in)
	}
	conn, ctx, done, err := a.connectTimed(ctx, e, fs)
	if err != nil {
		return err
	}
	defer done()
	cfg := jetstream.NewConfig()
	cfg.Stream = *stream
	before, err := jetstream.ReadMap(ctx, conn.JS, cfg)
	if err != nil {
		return err
	}
	m, changed := before, false
	if to != nil {
		if _, err := conn.JS.KeyValue(ctx, a.bucket); err == nil {
			return fmt.Errorf("%w: the region record bucket %s exists: a cross-region deployment's shard count is fixed when its region record is made (every region's copy would need its new shards mirrored first)", region.ErrRefused, a.bucket)
		}
		at := time.Now().Add(*in)
		if m, err = jetstream.Migrate(ctx, conn.JS, cfg, *to, at); err != nil {
			return err
		}
		changed = !m.Equal(before)
	}
	rep := shardsReport{Map: m.String(), Function: m.Function(), NewSessionsOn: m.Current(), Changed: changed}
	if changed {
		rep.Was = before.String()
	}
	for _, ep := range m.Epochs {
		re := reportEpoch{Shards: ep.Shards}
		if !ep.From.IsZero() {
			from := ep.From.UTC()
			re.From = &from
		}
		rep.Epochs = append(rep.Epochs, re)
	}
	for k := range m.Streams() {
		rs := reportStream{Shard: k, Stream: cfg.Shard(k).Stream}
		if s, err := conn.JS.Stream(ctx, rs.Stream); err != nil {
			rs.Error = err.Error()
		} else {
			info := s.CachedInfo()
			rs.Messages, rs.Subjects = info.State.Msgs, info.State.NumSubjects
			if ci := info.Cluster; ci != nil {
				rs.Leader = ci.Leader
			}
		}
		rep.Streams = append(rep.Streams, rs)
	}
	if a.json {
		return printJSON(e.stdout, rep)
	}
	return printShards(e, rep, to != nil)
}

type shardsReport struct {
	Map           string         `json:"map"` // shard.Map's encoding
	Was           string         `json:"was,omitempty"`
	Changed       bool           `json:"changed"`
	Function      string         `json:"function"`
	NewSessionsOn int            `json:"newSessionsOn"` // shards
	Epochs        []reportEpoch  `json:"epochs"`
	Streams       []reportStream `json:"streams"`
}

type reportEpoch struct {
	From   *time.Time `json:"from"` // null: the beginning
	Shards int        `json:"shards"`
}

type reportStream struct {
	Shard    int    `json:"shard"`
	Stream   string `json:"stream"`
	Leader   string `json:"leader,omitempty"`
	Messages uint64 `json:"messages"`
	Subjects uint64 `json:"sessions"` // subjects: one per session
	Error    string `json:"error,omitempty"`
}

func printShards(e *env, rep shardsReport, migrate bool) error {
	if migrate && !rep.Changed {
		if _, err := fmt.Fprintf(e.stdout, "already done: new sessions go to %d shard(s); nothing changed\n\n", rep.NewSessionsOn); err != nil {
			return err
		}
	}
	var epochs []string
	for _, ep := range rep.Epochs {
		from := "the beginning"
		if ep.From != nil {
			from = ep.From.Format(time.RFC3339Nano)
			if d := time.Until(*ep.From); d > 0 {
				from += fmt.Sprintf(" (in %v)", d.Round(time.Second))
			}
		}
		epochs = append(epochs, fmt.Sprintf("ids made from %s: %d shard(s)", from, ep.Shards))
	}
	kv := []string{"map", rep.Map, "function", rep.Function, "epochs", strings.Join(epochs, "; ")}
	if rep.Was != "" {
		kv = append(kv, "was", rep.Was)
	}
	if err := keyValues(e.stdout, kv...); err != nil {
		return err
	}
	t := &table{}
	t.row("SHARD", "STREAM", "LEADER", "SESSIONS", "MESSAGES")
	for _, s := range rep.Streams {
		if s.Error != "" {
			t.row(strconv.Itoa(s.Shard), s.Stream, "error: "+s.Error, "", "")
			continue
		}
		t.row(strconv.Itoa(s.Shard), s.Stream, orDash(s.Leader), strconv.FormatUint(s.Subjects, 10), strconv.FormatUint(s.Messages, 10))
	}
	fmt.Fprintln(e.stdout)
	return t.write(e.stdout)
}
