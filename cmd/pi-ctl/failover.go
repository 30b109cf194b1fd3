package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/region"
)

const failoverHelp = `Usage: pi-ctl failover --to REGION [--force] [--json] [--server URL]

Makes REGION the home region of a cross-region deployment (see
docs/CROSS-REGION.md): REGION's mirror of the session stream and of the
cursor bucket is promoted to a primary, and the region record names REGION
as the home. Every pi-node follows the record and switches within a moment,
without a restart. Every other region is then stale until
'pi-ctl failback --from' it.

Refused while the home region answers, since both regions would then take
writes. With --force a healthy home is fenced first (its stream and bucket
are sealed) and the failover waits until REGION holds everything the home
acknowledged: a planned switchover that loses nothing. A home that does not
answer is replaced as it is; what it acknowledged and never mirrored stays
on its disks, and 'pi-ctl failback --from HOME' merges it once it is back.

Whether the home answers is decided by two probes of --probe-timeout
each (default 2 s), a quarter of a second apart.

Safe to retry: when REGION is the home already (this failover completed,
its reply lost, or someone else's did) it changes nothing, says "already
done" and exits 0; with --json the report's "changed" is false (true when
this run changed the record). A failover that stopped before recording
REGION completes when run again. Refusals exit 1.

pi-ctl talks to JetStream directly: --server (or $PI_CTL_SERVER) must be a
NATS server of a surviving region.
`

// adminFlags are the connection options of the region commands, which talk
// to JetStream itself rather than to a pi-node's API: they must work when
// the nodes of the lost region are gone and the others are switching.
type adminFlags struct {
	server, creds, user, password string
	passwordFile                  string
	tlsCert, tlsKey, tlsCA        string
	bucket                        string
	timeout                       time.Duration
	json                          bool
}

func addAdminFlags(fs *flag.FlagSet, timeout time.Duration) *adminFlags {
	a := &adminFlags{}
	fs.StringVar(&a.server, "server", "", "NATS `URL` of a server of a surviving region (default $PI_CTL_SERVER, else "+defaultServer+")")
	fs.StringVar(&a.creds, "creds", "", "NATS credentials `FILE` (JWT and nkey)")
	fs.StringVar(&a.user, "user", "", "NATS user")
	fs.StringVar(&a.password, "password", "", "NATS password for --user (seen by every user of the host in ps: prefer --password-file or $PI_CTL_PASSWORD)")
	fs.StringVar(&a.passwordFile, "password-file", "", "read the NATS password for --user from `FILE` (e.g. the Secret's nats-admin.password), so that it is not in the command line; default $PI_CTL_PASSWORD")
	fs.StringVar(&a.tlsCert, "tls-cert", "", "client certificate `FILE`")
	fs.StringVar(&a.tlsKey, "tls-key", "", "client key `FILE` for --tls-cert")
	fs.StringVar(&a.tlsCA, "tls-ca", "", "CA `FILE` that signed the server's certificate (default $PI_CTL_TLS_CA)")
	fs.StringVar(&a.bucket, "region-bucket", region.DefaultRecordBucket, "KV bucket of the region record (pi-node's --region-bucket)")
	fs.DurationVar(&a.timeout, "timeout", timeout, "give up after `D` (every step can be run again)")
	fs.BoolVar(&a.json, "json", false, "print the report as JSON")
	return a
}

// admin connects and returns the region operations, and the function that
// closes the connection.
func (a *adminFlags) admin(ctx context.Context, e *env, fs *flag.FlagSet) (*region.Admin, func(), error) {
	conn, err := a.connect(ctx, e, fs)
	if err != nil {
		return nil, nil, err
	}
	return &region.Admin{JS: conn.JS, RecordBucket: a.bucket, Progress: a.progress(e)}, conn.Close, nil
}

// progress prints a timestamped step, unless the report is JSON.
func (a *adminFlags) progress(e *env) func(msg string, args ...any) {
	return func(msg string, args ...any) {
		if !a.json {
			fmt.Fprintf(e.stdout, "%s  "+msg+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
		}
	}
}

// connectTimed connects and bounds the work that follows by --timeout:
// the returned done cancels that and closes the connection.
func (a *adminFlags) connectTimed(ctx context.Context, e *env, fs *flag.FlagSet) (*jetstream.Conn, context.Context, func(), error) {
	conn, err := a.connect(ctx, e, fs)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	return conn, ctx, func() { cancel(); conn.Close() }, nil
}

// connect connects to JetStream itself with the flags.
func (a *adminFlags) connect(ctx context.Context, e *env, fs *flag.FlagSet) (*jetstream.Conn, error) {
	switch {
	case a.timeout <= 0:
		return nil, usagef(fs.Name(), "--timeout must be positive, not %v", a.timeout)
	case (a.tlsCert == "") != (a.tlsKey == ""):
		return nil, usagef(fs.Name(), "--tls-cert and --tls-key go together")
	case a.password != "" && a.passwordFile != "":
		return nil, usagef(fs.Name(), "--password and --password-file: give one")
	case (a.password != "" || a.passwordFile != "") && a.user == "":
		return nil, usagef(fs.Name(), "--password needs --user")
	}
	password, err := natsPassword(e, a.user, a.password, a.passwordFile)
	if err != nil {
		return nil, err
	}
	cc := jetstream.NewConnConfig(natsServer(e, a.server))
	cc.Name, cc.CredsFile, cc.User, cc.Password = "pi-ctl", a.creds, a.user, password
	cc.CertFile, cc.KeyFile, cc.CAFile = a.tlsCert, a.tlsKey, cmp.Or(a.tlsCA, e.getenv("PI_CTL_TLS_CA"))
	cc.APITimeout = 5 * time.Second
	dctx, cancel := context.WithTimeout(ctx, min(a.timeout, 10*time.Second))
	defer cancel()
	conn, err := jetstream.Connect(dctx, cc)
	if err != nil {
		return nil, fmt.Errorf("%w (point --server or $PI_CTL_SERVER at a NATS server of the deployment; in a cross-region one, of a surviving region)", err)
	}
	return conn, nil
}

func runFailover(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl failover")
	a := addAdminFlags(fs, 2*time.Minute)
	to := fs.String("to", "", "the region to make the home (required)")
	force := fs.Bool("force", false, "fail over from a home that still answers: fence it first, lose nothing")
	probe := fs.Duration("probe-timeout", 2*time.Second, "how long each of the two probes of the home waits for an answer")
	if _, err := parseArgs(e, fs, failoverHelp, args); err != nil {
		return err
	}
	if *to == "" {
		return usagef(fs.Name(), "--to REGION is required")
	}
	adm, closeConn, err := a.admin(ctx, e, fs)
	if err != nil {
		return err
	}
	defer closeConn()
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	adm.ProbeTimeout = *probe
	rep, err := adm.Failover(ctx, *to, *force)
	if err != nil {
		// A refusal says why and what would make it safe; run prints it
		// once, as "pi-ctl: refused: …", and exits 1.
		return err
	}
	if a.json {
		return printJSON(e.stdout, rep)
	}
	if !rep.Changed {
		_, err := fmt.Fprintf(e.stdout, "already done: %s is the home region (epoch %d, inherited %s); nothing changed\n", rep.To, rep.Epoch, inherited(rep.ForkSeq, rep.ForkSeqs))
		return err
	}
	var stale []string
	for _, name := range slices.Sorted(maps.Keys(rep.Stale)) {
		stale = append(stale, fmt.Sprintf("%s (shares sequences up to %s)", name, byShard(rep.Stale[name], rep.StaleShards[name])))
	}
	kv := []string{
		"home", fmt.Sprintf("%s (was %s), epoch %d", rep.To, rep.From, rep.Epoch),
		"old home", rep.HomeState,
		"inherited", inherited(rep.ForkSeq, rep.ForkSeqs),
	}
	if rep.Lost != "" {
		kv = append(kv, "missing", rep.Lost)
	}
	return keyValues(e.stdout, append(kv,
		"stale", orDash(strings.Join(stale, ", "))+"; run 'pi-ctl failback --from REGION' for each once it is reachable",
		"took", rep.Took.Round(time.Millisecond).String())...)
}

// inherited names the sequences a new home inherited: of its one stream,
// or of each shard's.
func inherited(forkSeq uint64, byShard []uint64) string {
	if len(byShard) == 0 {
		return "sequences 1–" + strconv.FormatUint(forkSeq, 10)
	}
	parts := make([]string, len(byShard))
	for k, seq := range byShard {
		parts[k] = fmt.Sprintf("1–%d of shard %d", seq, k)
	}
	return "sequences " + strings.Join(parts, ", ")
}

// byShard is a sequence of one stream, or one per shard ("5, 3 and 9 by
// shard").
func byShard(seq uint64, shards []uint64) string {
	if len(shards) == 0 {
		return strconv.FormatUint(seq, 10)
	}
	parts := make([]string, len(shards))
	for k, s := range shards {
		parts[k] = strconv.FormatUint(s, 10)
	}
	return strings.Join(parts, ", ") + " by shard"
}
