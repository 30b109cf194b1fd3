package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pifleet/sessionlog/internal/session"
)

// The PostgreSQL baseline: what a platform team would otherwise do with
// sessions. One row per entry, primary key (session, seq), so that the
// primary key is the per-session compare-and-swap (two writers of the same
// next seq: one fails), with fsync and synchronous_commit on (PostgreSQL's
// defaults): every append a durable commit, as JetStream's sync: always.

// pgName is the PostgreSQL row.
const pgName = "PostgreSQL, a row per entry"

// pgTable is the baseline's table; the JSON line is kept as text, as the
// log keeps the line's bytes.
const pgTable = `CREATE TABLE IF NOT EXISTS pi_entries (
	session uuid NOT NULL,
	seq bigint NOT NULL,
	data text NOT NULL,
	PRIMARY KEY (session, seq))`

// pgSink writes to PostgreSQL: a creation is one transaction of its
// records, an append one INSERT at the session's next seq.
type pgSink struct {
	pool *pgxpool.Pool
}

func (s *pgSink) create(ctx context.Context, _ int, sid string, recs []session.Record) (uint64, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for i, r := range recs {
			if _, err := tx.Exec(ctx, `INSERT INTO pi_entries (session, seq, data) VALUES ($1, $2, $3)`, sid, i+1, string(r.Data)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: create %s: %w", sid, err)
	}
	return uint64(len(recs)), nil
}

func (s *pgSink) append(ctx context.Context, _ int, sid string, last uint64, rec session.Record) (uint64, error) {
	if _, err := s.pool.Exec(ctx, `INSERT INTO pi_entries (session, seq, data) VALUES ($1, $2, $3)`, sid, last+1, string(rec.Data)); err != nil {
		return 0, fmt.Errorf("postgres: append to %s: %w", sid, err)
	}
	return last + 1, nil
}

// openPG connects a pool of conns connections to dsn and creates the
// baseline's table (emptied, so every run starts alike).
func openPG(ctx context.Context, dsn string, conns int) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: DSN: %w", err)
	}
	cfg.MaxConns = int32(max(conns, 1))
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	for _, q := range []string{pgTable, `TRUNCATE pi_entries`} {
		if _, err := pool.Exec(ctx, q); err != nil {
			pool.Close()
			return nil, fmt.Errorf("postgres: %s: %w", q, err)
		}
	}
	return pool, nil
}

// Postgres is a private PostgreSQL server for the baseline: a data
// directory of its own in a temporary directory, listening on a Unix
// socket there only (no TCP listener at all), with PostgreSQL's durable
// defaults.
type Postgres struct {
	// DSN connects to it.
	DSN string
	dir string
	cmd *exec.Cmd
	log *os.File
}

// pgBinDirs are where Debian's postgresql packages put the server.
const pgBinDirs = "/usr/lib/postgresql/*/bin"

// PostgresBin returns the directory of Debian's PostgreSQL server binaries
// (the newest version installed), or an error saying how to install them.
func PostgresBin() (string, error) {
	dirs, _ := filepath.Glob(pgBinDirs)
	slices.SortFunc(dirs, func(a, b string) int { return pgVersion(b) - pgVersion(a) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL server in " + pgBinDirs + ": install Debian's package (apt-get install postgresql), or give --postgres-dsn")
}

func pgVersion(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// StartPostgres initialises and starts a private server. As root it runs
// the server as the postgres user (PostgreSQL refuses to run as root).
func StartPostgres(ctx context.Context) (*Postgres, error) {
	bin, err := PostgresBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pi-bench-pg-")
	if err != nil {
		return nil, err
	}
	p := &Postgres{dir: dir}
	if err := p.start(ctx, bin); err != nil {
		_ = p.Close()
		return nil, err
	}
	return p, nil
}

func (p *Postgres) start(ctx context.Context, bin string) error {
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return fmt.Errorf("postgres: running as root needs the postgres user (Debian's package makes it): %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(p.dir, uid, gid); err != nil {
			return err
		}
	}
	data := filepath.Join(p.dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "bench", "-A", "trust", "-E", "UTF8", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("postgres: initdb: %w: %s", err, out)
	}
	var err error
	if p.log, err = os.Create(filepath.Join(p.dir, "server.log")); err != nil {
		return err
	}
	// A port only names the socket file; listen_addresses empty: no TCP.
	const port = "5432"
	p.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-k", p.dir, "-p", port,
		"-c", "listen_addresses=", "-c", "fsync=on", "-c", "synchronous_commit=on", "-c", "max_connections=200")
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL} // gone with the bench
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("postgres: start: %w", err)
	}
	p.DSN = fmt.Sprintf("host=%s port=%s user=bench dbname=postgres sslmode=disable", p.dir, port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := pgx.Connect(ctx, p.DSN)
		if err == nil {
			return conn.Close(ctx)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			out, _ := os.ReadFile(p.log.Name())
			return fmt.Errorf("postgres: not accepting connections after 30 s: %w\n%s", err, out)
		}
		time.Sleep(50 * time.Millisecond) // polling the server's start: nothing to wait on
	}
}

// Close stops the server (a fast shutdown) and removes its directory.
func (p *Postgres) Close() error {
	var err error
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
			err = errors.New("postgres: did not stop within 30 s; killed")
		}
	}
	if p.log != nil {
		_ = p.log.Close()
	}
	return errors.Join(err, os.RemoveAll(p.dir))
}
