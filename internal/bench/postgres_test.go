package bench

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/session"
)

// TestPostgresBaseline runs the append scenario with the PostgreSQL row on
// a private server of Debian's package (skipped without one), and checks
// that the rows landed as the table's schema says: one per entry, seqs
// 1..n per session, and that a second writer of the same seq is refused
// (the primary key is the per-session compare-and-swap).
func TestPostgresBaseline(t *testing.T) {
	if _, err := PostgresBin(); err != nil {
		t.Skip(err)
	}
	ctx := context.Background()
	pg, err := StartPostgres(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := pg.dir
	t.Cleanup(func() {
		if err := pg.Close(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("the server's directory %s is still there: %v", dir, err)
		}
	})
	e := openEmbedded(t)
	res, err := RunAppend(ctx, e, AppendOptions{Sessions: 3, Entries: 4, Concurrency: 2, Size: 300, Transports: []string{"raw"}, PostgresDSN: pg.DSN})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, res, 12, rawName, pgName)
	if !slices.ContainsFunc(res.Figures, func(f Figure) bool { return f.Name == "throughput vs PostgreSQL, "+rawName && f.Value > 0 }) {
		t.Errorf("no figure of raw JetStream vs PostgreSQL: %+v", res.Figures)
	}

	pool, err := openPG(ctx, pg.DSN, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s := &pgSink{pool: pool}
	const sid = "01a22ba6-0000-7000-8000-0000000000aa"
	fill := NewFiller(100)
	if last, err := s.create(ctx, 0, sid, []session.Record{fill.Entry(0, "", time.Now())}); err != nil || last != 1 {
		t.Fatalf("create: %d %v", last, err)
	}
	if last, err := s.append(ctx, 0, sid, 1, fill.Entry(1, "", time.Now())); err != nil || last != 2 {
		t.Fatalf("append: %d %v", last, err)
	}
	if _, err := s.append(ctx, 0, sid, 1, fill.Entry(2, "", time.Now())); err == nil {
		t.Fatal("a second append at seq 2 was taken: the primary key is not the compare-and-swap")
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pi_entries WHERE session = $1`, sid).Scan(&n); err != nil || n != 2 {
		t.Fatalf("rows of %s: %d %v", sid, n, err)
	}
}
