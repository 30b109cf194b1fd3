package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/buildinfo"
	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/region"
	"github.com/pifleet/sessionlog/internal/seal"
	"github.com/pifleet/sessionlog/internal/size"
	"github.com/pifleet/sessionlog/internal/wire"
)

const backupHelp = `Usage: pi-ctl backup DIR [--dated [--keep N]] [--encrypt-key-file FILE] [--json] [--server URL]

Backs up every stream and bucket of the deployment into DIR (made; it must
not exist or be empty), each as a consistent snapshot made by JetStream
itself (the snapshot API nats stream backup uses, every message's checksum
verified by the server first):

  cursors      KV bucket KV_<--bucket>, the clients' leaf cursors
  sessions     <--stream> and, on a sharded store, every shard's stream
               (the shard map is in the first one's configuration)
  archive      <--archive-stream>, the archived sessions (--session-retention)
  erasures     KV bucket KV_<--archive-stream>_ERASED, the ledger of erasures
               (pi-ctl rm): session ids, times and who, no content
  forks        KV bucket KV_<--archive-stream>_FORKS, which session each fork
               by reference reads its path from: session ids only
  region       KV bucket KV_<--region-bucket>, a cross-region deployment's
               record (which region is the home)
  erasures     KV bucket KV_<--region-bucket>_ERASED, a cross-region
               deployment's ledger of erasures

in that order, so that nothing falls between two snapshots: a cursor's
entry was stored before the cursor, and a session archived while the
backup runs is in both the sessions and the archive, never in neither.
Left out, as the nodes make them again: the membership bucket (PI_NODES)
and the archiver's lease (PI_ARCHIVE_LEASE).

With --dated, DIR holds backups: this one goes into DIR/<UTC time>, e.g.
DIR/20261202T031700Z, and --keep N then removes all but the newest N
finished ones (and the unfinished ones older than those): what a
scheduled job (the k8s CronJob of deploy/k8s) needs, with no shell.

DIR gets one <stream>.tar.s2 per stream and manifest.json, written last:
pi-ctl's and the server's versions, the shard map, and each stream's
configuration, state (messages, sequences, sessions) and SHA-256. A DIR
without its manifest is an unfinished backup, and restore refuses it.

With --encrypt-key-file (a key file as pi-node's --encryption-key-file
takes; pi-ctl gen-secrets writes one), each stream's file is encrypted as
it is written, <stream>.tar.s2.sealed (AES-256-GCM in 64 KiB chunks, each
bound to the stream, its place and whether it is the last: a file cut
short, reordered or swapped does not restore). The manifest stays
readable: names, configurations, counts and checksums, no session's
content. restore then needs the same key (--decrypt-key-file).

pi-ctl talks to JetStream directly: --server (or $PI_CTL_SERVER) must be a
NATS server of the deployment, with the admin role of pi-ctl gen-secrets.
In a cross-region deployment, back up the home region.
`

const restoreHelp = `Usage: pi-ctl restore DIR [--force] [--replicas N] [--decrypt-key-file FILE] [--erasures FILE] [--json] [--server URL]

Restores a backup made by pi-ctl backup into a deployment: every file's
SHA-256 is checked against the manifest before anything is touched, then
each stream is created from its snapshot, with the same configuration
(the shard map with it), messages and sequences, and checked against the
manifest's state.

The deployment must not hold data: a stream of the backup that exists
there with messages makes restore refuse, naming it, unless --force is
given (which deletes it). An existing empty one (as pi-node provisions at
its first start) is replaced. Restart every pi-node afterwards, one at a
time, so that each reads the restored streams from their start.

--replicas sets the replica count of every restored stream (a backup of a
3-node deployment restored into one server: --replicas 1).

An encrypted backup (pi-ctl backup --encrypt-key-file) needs its key,
--decrypt-key-file: every file is decrypted whole, and checked, before
anything is touched.

Erasures are applied again (docs/SECURITY.md, "Erasure"): a session
erased after the backup was made is erased from what was restored. The
ledger of erasures is read from the deployment before anything is
touched, and from --erasures FILE (the JSON of pi-ctl erasures --json,
kept from the deployment the backup came from), and merged with the
backup's own; each session it names is erased from the restored streams.
`

// backupManifest is manifest.json: what a backup holds and how to check it.
type backupManifest struct {
	Format     int             `json:"format"`
	Created    time.Time       `json:"created"`
	PiCtl      buildinfo.Info  `json:"piCtl"`
	NATSServer string          `json:"natsServer"`
	ShardMap   string          `json:"shardMap"`
	Streams    []backupStream  `json:"streams"`
	Skipped    []backupSkipped `json:"skipped"`
	Elapsed    int64           `json:"elapsedMs"`
	Bytes      int64           `json:"bytes"`
	// Encrypted backups (format 2) have sealed files (seal.NewWriter, with
	// the key of seal.UseBackup), each named <stream>.tar.s2.sealed.
	Encrypted bool `json:"encrypted,omitempty"`
}

// manifestFormat is a plain backup's; an encrypted one is format 2, so
// that a pi-ctl that cannot decrypt says so instead of failing on a file.
const (
	manifestFormat          = 1
	manifestFormatEncrypted = 2
)

// backupFile is the file name of stream name's snapshot in a backup.
func backupFile(name string, encrypted bool) string {
	if encrypted {
		return name + ".tar.s2.sealed"
	}
	return name + ".tar.s2"
}

// backupRing is the ring of a --encrypt-key-file or --decrypt-key-file
// (nil without one).
func backupRing(flag, path string) (*seal.Ring, error) {
	if path == "" {
		return nil, nil
	}
	secret, err := seal.ReadKeyFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return seal.NewRing(seal.UseBackup, secret)
}

type backupStream struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`            // cursors, sessions, archive, erasures, region
	Shard  *int   `json:"shard,omitempty"` // sessions
	File   string `json:"file"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	// The server's config and state: messages, sequences and subjects
	// are read from the state, not kept twice.
	jetstream.Snapshot
}

// state is the snapshot's state, checked to decode when the stream was
// backed up and when the manifest is read.
func (b backupStream) state() jetstream.SnapshotState {
	st, _ := b.StateOf()
	return st
}

type backupSkipped struct {
	Name string `json:"name"`
	Why  string `json:"why"`
}

// backupNames are the deployment's asset names, from the flags pi-node
// takes for them (the region record's is the admin flags' --region-bucket).
type backupNames struct {
	stream, bucket, archive string
}

func addBackupNames(fs *flag.FlagSet) *backupNames {
	n := &backupNames{}
	fs.StringVar(&n.stream, "stream", jetstream.NewConfig().Stream, "the first shard's stream (pi-node's --stream)")
	fs.StringVar(&n.bucket, "bucket", jetstream.NewConfig().Bucket, "KV bucket of the cursors (pi-node's --bucket)")
	fs.StringVar(&n.archive, "archive-stream", jetstream.NewArchiveConfig(jetstream.NewConfig()).Stream, "the archive's stream (pi-node's --archive-stream)")
	return n
}

func runBackup(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl backup")
	a := addAdminFlags(fs, 30*time.Minute)
	names := addBackupNames(fs)
	dated := fs.Bool("dated", false, "back up into DIR/<UTC time> (DIR holds backups)")
	keep := fs.Int("keep", 0, "with --dated: keep the newest `N` finished backups in DIR, remove the older ones (0: keep all)")
	keyFile := fs.String("encrypt-key-file", "", "encrypt every file of the backup with the key in `FILE` (as pi-node's --encryption-key-file takes)")
	pos, err := parseArgs(e, fs, backupHelp, args, "DIR")
	if err != nil {
		return err
	}
	ring, err := backupRing("--encrypt-key-file", *keyFile)
	if err != nil {
		return err
	}
	if *keep < 0 || *keep > 0 && !*dated {
		return usagef(fs.Name(), "--keep N (N ≥ 1) goes with --dated")
	}
	root, dir := pos[0], pos[0]
	if *dated {
		dir = filepath.Join(root, time.Now().UTC().Format(datedLayout))
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return fmt.Errorf("backup: %s is not empty: back up into a new directory", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("backup: %w", err)
	}
	conn, ctx, done, err := a.connectTimed(ctx, e, fs)
	if err != nil {
		return err
	}
	defer done()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("backup: %w", err)
	}

	began := time.Now()
	cfg := jetstream.NewConfig()
	cfg.Stream = names.stream
	m, err := jetstream.ReadMap(ctx, conn.JS, cfg)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	man := backupManifest{Format: manifestFormat, Created: began.UTC(), PiCtl: buildinfo.Get(),
		NATSServer: conn.NC.ConnectedServerVersion(), ShardMap: m.String()}
	if ring != nil {
		man.Format, man.Encrypted = manifestFormatEncrypted, true
	}
	type want struct {
		name, kind string
		shard      *int
		optional   bool
	}
	wants := []want{{name: "KV_" + names.bucket, kind: "cursors"}}
	for k := range m.Streams() {
		wants = append(wants, want{name: cfg.Shard(k).Stream, kind: "sessions", shard: &k})
	}
	wants = append(wants,
		want{name: names.archive, kind: "archive", optional: true},
		want{name: "KV_" + names.archive + "_ERASED", kind: "erasures", optional: true},
		want{name: "KV_" + names.archive + "_FORKS", kind: "forks", optional: true},
		want{name: "KV_" + a.bucket, kind: "region", optional: true},
		want{name: "KV_" + region.LedgerBucket(a.bucket), kind: "erasures", optional: true})
	man.Skipped = []backupSkipped{
		{"KV_" + jetstream.MembersBucket, "membership: every node announces itself again within a second"},
		{"KV_" + jetstream.NewArchiveConfig(jetstream.NewConfig()).LeaseBucket, "the archiver's lease: taken again by a node"},
	}

	var bar *progress
	if !a.json && isTerminal(e.stderr) {
		bar = &progress{w: e.stderr, total: len(wants), unit: "streams"}
	}
	for i, w := range wants {
		bar.draw(i)
		bs, err := backupOneRetry(ctx, conn.JS, dir, w.name, ring)
		if errors.Is(err, wire.ErrNotFound) && w.optional {
			bar.clear()
			man.Skipped = append(man.Skipped, backupSkipped{w.name, "not in this deployment"})
			continue
		}
		if err != nil {
			bar.clear()
			return fmt.Errorf("backup: %w (%s holds what was done; remove it and run again)", err, dir)
		}
		bs.Kind, bs.Shard = w.kind, w.shard
		man.Streams = append(man.Streams, bs)
		man.Bytes += bs.Bytes
		bar.clear()
	}
	man.Elapsed = time.Since(began).Milliseconds()
	b, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, "manifest.json"), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	var pruned []string
	if *keep > 0 {
		if pruned, err = pruneBackups(root, *keep); err != nil {
			return fmt.Errorf("backup: done into %s, but removing old backups: %w", dir, err)
		}
	}
	if a.json {
		return printJSON(e.stdout, struct {
			Dir string `json:"dir"`
			backupManifest
			Removed []string `json:"removed,omitempty"`
		}{dir, man, pruned})
	}
	t := &table{}
	t.row("STREAM", "KIND", "MESSAGES", "SEQ", "SUBJECTS", "SIZE")
	for _, bs := range man.Streams {
		backupRow(t, bs)
	}
	if err := t.write(e.stdout); err != nil {
		return err
	}
	for _, p := range pruned {
		fmt.Fprintf(e.stdout, "removed the older backup %s\n", p)
	}
	_, err = fmt.Fprintf(e.stdout, "backup of %s (%s) in %s, in %v\n", plural(len(man.Streams), "stream"), size.Human(man.Bytes), dir, time.Since(began).Round(time.Millisecond))
	return err
}

// datedLayout names the backups of --dated: sortable, and without a colon.
const datedLayout = "20060102T150405Z"

// pruneBackups removes the dated backups in root beyond the newest keep
// finished ones (with a manifest), and the unfinished ones older than the
// oldest kept. Entries not named like a dated backup are not touched.
func pruneBackups(root string, keep int) ([]string, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if _, err := time.Parse(datedLayout, e.Name()); err == nil && e.IsDir() {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	kept, oldest := 0, ""
	for i := len(names) - 1; i >= 0 && kept < keep; i-- {
		if _, err := os.Stat(filepath.Join(root, names[i], "manifest.json")); err == nil {
			kept++
			oldest = names[i]
		}
	}
	if kept < keep {
		return nil, nil
	}
	var removed []string
	for _, n := range names {
		if n >= oldest {
			break
		}
		p := filepath.Join(root, n)
		if err := os.RemoveAll(p); err != nil {
			return removed, err
		}
		removed = append(removed, p)
	}
	return removed, nil
}

func backupRow(t *table, bs backupStream) {
	st, seqs := bs.state(), "-"
	if st.Messages > 0 {
		seqs = fmt.Sprintf("%d-%d", st.FirstSeq, st.LastSeq)
	}
	t.row(bs.Name, bs.Kind, strconv.FormatUint(st.Messages, 10), seqs, strconv.FormatUint(st.NumSubjects, 10), size.Human(bs.Bytes))
}

// backupOne snapshots one stream into DIR/<name>.tar.s2 (sealed with
// ring when set), written atomically: the file appears only once the whole
// snapshot is on disk. The manifest's size and checksum are the file's.
func backupOne(ctx context.Context, js natsjs.JetStream, dir, name string, ring *seal.Ring) (backupStream, error) {
	file := backupFile(name, ring != nil)
	h := sha256.New()
	var snap jetstream.Snapshot
	cw := &countingWriter{}
	err := writeAtomicFrom(filepath.Join(dir, file), 0o600, func(w io.Writer) (err error) {
		cw.w = io.MultiWriter(w, h)
		if ring == nil {
			snap, err = jetstream.SnapshotStream(ctx, js, name, cw, nil)
			return err
		}
		sw := seal.NewWriter(cw, ring, name)
		if snap, err = jetstream.SnapshotStream(ctx, js, name, sw, nil); err != nil {
			return err
		}
		return sw.Close()
	})
	n := cw.n
	if err != nil {
		return backupStream{}, err
	}
	if _, err := snap.StateOf(); err != nil {
		return backupStream{}, err
	}
	return backupStream{Name: name, File: file, Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil)), Snapshot: snap}, nil
}

// snapshotRetry bounds how long backup asks again for a stream's snapshot
// while JetStream cannot answer: about a few elections (4 to 9 s each),
// as after a node's restart.
const snapshotRetry = time.Minute

// backupOneRetry is backupOne, asked again with backoff while the stream
// is unavailable (no leader yet: "no reply from JetStream in time"), within
// snapshotRetry and ctx. A failed attempt leaves no file.
func backupOneRetry(ctx context.Context, js natsjs.JetStream, dir, name string, ring *seal.Ring) (backupStream, error) {
	deadline := time.Now().Add(snapshotRetry)
	backoff := 250 * time.Millisecond
	for {
		bs, err := backupOne(ctx, js, dir, name, ring)
		if err == nil || !errors.Is(err, wire.ErrUnavailable) || time.Now().After(deadline) {
			return bs, err
		}
		wait := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			wait.Stop()
			return bs, err
		case <-wait.C:
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// countingWriter counts what goes through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func runRestore(ctx context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl restore")
	a := addAdminFlags(fs, 30*time.Minute)
	force := fs.Bool("force", false, "delete the streams of the backup that hold data in the deployment, and restore them")
	replicas := fs.Int("replicas", 0, "the replica count of every restored stream (default: as backed up)")
	keyFile := fs.String("decrypt-key-file", "", "the key `FILE` an encrypted backup was made with (pi-ctl backup --encrypt-key-file)")
	erasuresFile := fs.String("erasures", "", "a ledger of erasures, `FILE` (pi-ctl erasures --json), to apply again after the restore")
	pos, err := parseArgs(e, fs, restoreHelp, args, "DIR")
	if err != nil {
		return err
	}
	ring, err := backupRing("--decrypt-key-file", *keyFile)
	if err != nil {
		return err
	}
	if *replicas < 0 || *replicas > 5 {
		return usagef(fs.Name(), "--replicas must be 1 to 5, not %d", *replicas)
	}
	dir := pos[0]
	man, err := readManifest(dir)
	if err != nil {
		return err
	}
	switch {
	case man.Encrypted && ring == nil:
		return fmt.Errorf("restore: %s is an encrypted backup: give --decrypt-key-file (the key pi-ctl backup --encrypt-key-file was given)", dir)
	case !man.Encrypted && ring != nil:
		return fmt.Errorf("restore: %s is not encrypted: drop --decrypt-key-file", dir)
	}
	// Every file is checked before anything is touched.
	for _, s := range man.Streams {
		if err := checkBackupFile(dir, s, ring); err != nil {
			return err
		}
	}
	var erasures []wire.Erasure
	if *erasuresFile != "" {
		if erasures, err = readErasuresFile(*erasuresFile); err != nil {
			return err
		}
	}
	era := man.erasing()
	conn, ctx, done, err := a.connectTimed(ctx, e, fs)
	if err != nil {
		return err
	}
	defer done()
	// The deployment's own ledger, before --force deletes it.
	held, err := jetstream.ReadErasures(ctx, conn.JS, era.Archive)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	erasures = append(erasures, held...)

	var holding []string
	for _, s := range man.Streams {
		st, err := conn.JS.Stream(ctx, s.Name)
		if errors.Is(err, natsjs.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("restore: stream %s: %w", s.Name, jetstream.Classify(err))
		}
		if n := st.CachedInfo().State.Msgs; n > 0 {
			holding = append(holding, fmt.Sprintf("%s has %s", s.Name, plural(int(n), "message")))
		}
	}
	if len(holding) > 0 && !*force {
		return fmt.Errorf("restore: %w: the deployment holds data (%s); restore into an empty one, or give --force to delete those streams first",
			wire.ErrExists, strings.Join(holding, ", "))
	}
	began := time.Now()
	var bar *progress
	if !a.json && isTerminal(e.stderr) {
		bar = &progress{w: e.stderr, total: len(man.Streams), unit: "streams"}
	}
	var out []backupStream
	for i, s := range man.Streams {
		bar.draw(i)
		snap := s.Snapshot
		if *replicas > 0 {
			if snap, err = snap.WithReplicas(*replicas); err != nil {
				return err
			}
		}
		got, err := jetstream.ReplaceStream(ctx, conn.JS, s.Name, snap, func() (io.ReadCloser, error) { return openBackupFile(dir, s, ring) })
		bar.clear()
		if err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		// An empty stream's first sequence is a convention (0 or last+1),
		// not data: compared only when there are messages.
		if want := s.state(); got.Messages != want.Messages || got.LastSeq != want.LastSeq || want.Messages > 0 && got.FirstSeq != want.FirstSeq {
			return fmt.Errorf("restore: stream %s came back with %d messages, seq %d-%d; the backup has %d, seq %d-%d",
				s.Name, got.Messages, got.FirstSeq, got.LastSeq, want.Messages, want.FirstSeq, want.LastSeq)
		}
		out = append(out, s)
	}
	restored, err := jetstream.ReadErasures(ctx, conn.JS, era.Archive)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	erasures = append(erasures, restored...)
	erased, err := jetstream.ReapplyErasures(ctx, conn.JS, era, dedupeErasures(erasures))
	if err != nil {
		return fmt.Errorf("restore: the streams are restored, but applying the ledger of erasures again failed (run the restore's erasures with pi-ctl rm once the nodes run): %w", err)
	}
	if a.json {
		return printJSON(e.stdout, struct {
			Restored []backupStream `json:"restored"`
			Erased   int            `json:"erasedAgain"`
			Forks    int            `json:"forksGivenTheirPath"`
			Elapsed  int64          `json:"elapsedMs"`
		}{out, erased.Erased, erased.Forks, time.Since(began).Milliseconds()})
	}
	t := &table{}
	t.row("STREAM", "KIND", "MESSAGES", "SEQ", "SUBJECTS", "SIZE")
	for _, bs := range out {
		backupRow(t, bs)
	}
	if err := t.write(e.stdout); err != nil {
		return err
	}
	if erased.Erased > 0 {
		fmt.Fprintf(e.stdout, "erased %s again, as the ledger of erasures says\n", plural(erased.Erased, "session"))
	}
	if erased.Forks > 0 {
		fmt.Fprintf(e.stdout, "gave %s of them their path first\n", plural(erased.Forks, "fork"))
	}
	_, err = fmt.Fprintf(e.stdout, "restored %s from %s in %v; restart every pi-node, one at a time\n",
		plural(len(out), "stream"), dir, time.Since(began).Round(time.Millisecond))
	return err
}

// erasing names the deployment's assets the ledger of erasures is
// applied to, from the backup's streams (pi-node's defaults for those it
// lacks).
func (m backupManifest) erasing() jetstream.Erasing {
	cfg := jetstream.NewConfig()
	d := jetstream.Erasing{Stream: cfg.Stream, Bucket: cfg.Bucket, Archive: jetstream.NewArchiveConfig(cfg).Stream}
	for _, s := range m.Streams {
		switch {
		case s.Kind == "sessions" && s.Shard != nil && *s.Shard == 0:
			d.Stream = s.Name
		case s.Kind == "cursors":
			d.Bucket = strings.TrimPrefix(s.Name, "KV_")
		case s.Kind == "archive":
			d.Archive = s.Name
		}
	}
	return d
}

// readErasuresFile reads a ledger as pi-ctl erasures --json prints it.
func readErasuresFile(path string) ([]wire.Erasure, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("restore: --erasures: %w", err)
	}
	var lines []wire.Erasure
	if err := json.Unmarshal(b, &lines); err != nil {
		return nil, fmt.Errorf("restore: --erasures %s: not a ledger of erasures (pi-ctl erasures --json): %w", path, err)
	}
	for i, l := range lines {
		if l.Session == "" {
			return nil, fmt.Errorf("restore: --erasures %s: line %d names no session", path, i+1)
		}
	}
	return lines, nil
}

// dedupeErasures keeps one line per session, the earliest.
func dedupeErasures(lines []wire.Erasure) []wire.Erasure {
	first := map[string]wire.Erasure{}
	for _, l := range lines {
		if f, ok := first[l.Session]; !ok || l.At.Before(f.At) {
			first[l.Session] = l
		}
	}
	out := make([]wire.Erasure, 0, len(first))
	for _, l := range first {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b wire.Erasure) int { return strings.Compare(a.Session, b.Session) })
	return out
}

func readManifest(dir string) (backupManifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if errors.Is(err, os.ErrNotExist) {
		return backupManifest{}, fmt.Errorf("restore: %s has no manifest.json: not a backup, or an unfinished one", dir)
	}
	if err != nil {
		return backupManifest{}, fmt.Errorf("restore: %w", err)
	}
	var man backupManifest
	if err := json.Unmarshal(b, &man); err != nil {
		return backupManifest{}, fmt.Errorf("restore: %s: %w", filepath.Join(dir, "manifest.json"), err)
	}
	if man.Format != manifestFormat && man.Format != manifestFormatEncrypted || man.Encrypted != (man.Format == manifestFormatEncrypted) {
		return backupManifest{}, fmt.Errorf("restore: %s: format %d (encrypted: %v); this pi-ctl reads formats %d (plain) and %d (encrypted)",
			filepath.Join(dir, "manifest.json"), man.Format, man.Encrypted, manifestFormat, manifestFormatEncrypted)
	}
	for i, s := range man.Streams {
		if _, err := s.StateOf(); s.Name == "" || s.File != backupFile(s.Name, man.Encrypted) || len(s.Config) == 0 || err != nil {
			return backupManifest{}, fmt.Errorf("restore: %s: streams[%d]: name, file, config and state are required", filepath.Join(dir, "manifest.json"), i)
		}
	}
	return man, nil
}

// openBackupFile is the plain snapshot of s: its file, decrypted with ring
// when set.
func openBackupFile(dir string, s backupStream, ring *seal.Ring) (io.ReadCloser, error) {
	f, err := os.Open(filepath.Join(dir, s.File))
	if err != nil || ring == nil {
		return f, err
	}
	return struct {
		io.Reader
		io.Closer
	}{seal.NewReader(f, ring, s.Name), f}, nil
}

// checkBackupFile checks s's file against the manifest's size and
// checksum and, encrypted, that the key opens all of it.
func checkBackupFile(dir string, s backupStream, ring *seal.Ring) error {
	if err := checkBackupSum(dir, s); err != nil {
		return err
	}
	if ring == nil {
		return nil
	}
	r, err := openBackupFile(dir, s, ring)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer r.Close()
	if _, err := io.Copy(io.Discard, r); err != nil {
		return fmt.Errorf("restore: %s: %w (the key is not the one the backup was made with, or the file was changed); nothing was restored", filepath.Join(dir, s.File), err)
	}
	return nil
}

func checkBackupSum(dir string, s backupStream) error {
	path := filepath.Join(dir, s.File)
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return fmt.Errorf("restore: %s: %w", path, err)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); n != s.Bytes || sum != s.SHA256 {
		return fmt.Errorf("restore: %s: %d bytes with SHA-256 %s; the manifest says %d bytes, %s: the backup is damaged, nothing was restored",
			path, n, sum, s.Bytes, s.SHA256)
	}
	return nil
}
