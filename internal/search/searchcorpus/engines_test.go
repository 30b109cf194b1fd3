//go:build searchengines

package searchcorpus

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	regexptok "github.com/blevesearch/bleve/v2/analysis/tokenizer/regexp"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/ext/fts5"

	"github.com/pifleet/sessionlog/internal/search"
)

// engine is one full-text engine of the comparison, on a directory of its
// own.
type engine interface {
	name() string
	build(docs []search.Doc) error // index every doc, then make it durable
	// search returns the keys of the top limit hits by the engine's
	// ranking (every hit for limit 0) and the total number of hits.
	search(q Query, limit int) ([]string, int, error)
	close() error
}

// dirSize is the bytes of the files under dir.
func dirSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// ---- bleve ----

type bleveEngine struct {
	dir string
	idx bleve.Index
}

// bleveMapping: the text analysed by TokenPattern and lowercased, with
// positions for phrases (and highlighting), not stored: the Store holds
// every entry's JSON already, snippets come from there; the filters as
// keywords.
func bleveMapping() (*mapping.IndexMappingImpl, error) {
	m := bleve.NewIndexMapping()
	if err := m.AddCustomTokenizer("piwords", map[string]any{"type": regexptok.Name, "regexp": TokenPattern}); err != nil {
		return nil, err
	}
	if err := m.AddCustomAnalyzer("pitext", map[string]any{"type": custom.Name, "tokenizer": "piwords",
		"token_filters": []string{lowercase.Name}}); err != nil {
		return nil, err
	}
	text := bleve.NewTextFieldMapping()
	text.Analyzer, text.Store, text.IncludeInAll, text.DocValues = "pitext", false, false, false
	kw := bleve.NewKeywordFieldMapping()
	kw.Analyzer, kw.Store, kw.IncludeInAll, kw.IncludeTermVectors, kw.DocValues = keyword.Name, false, false, false, false
	b := bleve.NewBooleanFieldMapping()
	b.Store, b.IncludeInAll, b.DocValues = false, false, false
	dm := bleve.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt("text", text)
	for _, f := range []string{"session", "entry", "type", "role", "tool", "model", "timestamp", "cwd", "name", "label"} {
		dm.AddFieldMappingsAt(f, kw)
	}
	dm.AddFieldMappingsAt("onPath", b)
	m.DefaultMapping = dm
	m.DefaultAnalyzer = "pitext"
	m.StoreDynamic, m.IndexDynamic, m.DocValuesDynamic = false, false, false
	return m, nil
}

func newBleve(dir string) (*bleveEngine, error) {
	m, err := bleveMapping()
	if err != nil {
		return nil, err
	}
	idx, err := bleve.New(dir, m)
	if err != nil {
		return nil, err
	}
	return &bleveEngine{dir: dir, idx: idx}, nil
}

func (e *bleveEngine) name() string { return "bleve v2.6.3 (scorch)" }

func (e *bleveEngine) build(docs []search.Doc) error {
	batch := e.idx.NewBatch()
	for i := range docs {
		d := &docs[i]
		err := batch.Index(Key(d), map[string]any{"text": d.Text, "session": d.Session, "entry": d.Entry, "type": d.Type,
			"role": d.Role, "tool": d.Tools, "model": d.Model, "timestamp": d.Timestamp, "cwd": d.Cwd, "name": d.Name,
			"label": d.Label, "onPath": d.OnPath})
		if err != nil {
			return err
		}
		if batch.Size() >= 2000 {
			if err := e.idx.Batch(batch); err != nil {
				return err
			}
			batch.Reset()
		}
	}
	if err := e.idx.Batch(batch); err != nil {
		return err
	}
	// Not force-merged (scorch.ForceMerge took 20 s on 3,000 entries):
	// the segments are as bleve's own merger leaves them.
	// Closing waits for the persister: the index is on disk, as a
	// restart would find it.
	if err := e.idx.Close(); err != nil {
		return err
	}
	idx, err := bleve.Open(e.dir)
	e.idx = idx
	return err
}

func (e *bleveEngine) query(q Query) query.Query {
	var qs []query.Query
	if len(q.Words) > 0 {
		m := bleve.NewMatchQuery(strings.Join(q.Words, " "))
		m.SetField("text")
		m.SetOperator(query.MatchQueryOperatorAnd)
		qs = append(qs, m)
	}
	if len(q.Phrase) > 0 {
		p := bleve.NewMatchPhraseQuery(strings.Join(q.Phrase, " "))
		p.SetField("text")
		qs = append(qs, p)
	}
	if q.Prefix != "" {
		p := bleve.NewPrefixQuery(q.Prefix)
		p.SetField("text")
		qs = append(qs, p)
	}
	for f, v := range map[string]string{"role": q.Role, "cwd": q.Cwd} {
		if v != "" {
			t := bleve.NewTermQuery(v)
			t.SetField(f)
			qs = append(qs, t)
		}
	}
	if len(qs) == 1 {
		return qs[0]
	}
	return bleve.NewConjunctionQuery(qs...)
}

func (e *bleveEngine) search(q Query, limit int) ([]string, int, error) {
	bq := e.query(q)
	size := limit
	if limit == 0 {
		n, err := e.idx.Search(bleve.NewSearchRequestOptions(bq, 0, 0, false))
		if err != nil {
			return nil, 0, err
		}
		size = int(n.Total)
	}
	res, err := e.idx.Search(bleve.NewSearchRequestOptions(bq, size, 0, false))
	if err != nil {
		return nil, 0, err
	}
	keys := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		keys[i] = h.ID
	}
	return keys, int(res.Total), nil
}

func (e *bleveEngine) close() error { return e.idx.Close() }

// ---- SQLite FTS5 ----

type sqliteEngine struct {
	db *sqlite3.Conn
}

// The text in a contentless FTS5 table that still takes deletes (the
// Store holds every entry's JSON already, snippets come from there), cut
// by unicode61 without folding diacritics (bleve's lowercase does not fold
// them either); the filters in a table by the same rowid.
const sqliteSchema = `
PRAGMA journal_mode=WAL;
PRAGMA synchronous=NORMAL;
PRAGMA cache_size=-65536;
CREATE VIRTUAL TABLE e USING fts5(text, content = '', contentless_delete = 1, tokenize = "unicode61 remove_diacritics 0");
CREATE TABLE m(id INTEGER PRIMARY KEY, session TEXT, entry TEXT, type TEXT, role TEXT, tool TEXT, model TEXT,
	timestamp TEXT, cwd TEXT, name TEXT, label TEXT, onPath INTEGER);
`

func newSQLite(dir string) (*sqliteEngine, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	db, err := sqlite3.Open(filepath.Join(dir, "index.db"))
	if err != nil {
		return nil, err
	}
	// FTS5 is a module of its own in this driver (translated from wasm
	// to Go like SQLite itself): registered on each connection.
	if err := fts5.Register(db); err != nil {
		db.Close()
		return nil, err
	}
	if err := db.Exec(sqliteSchema); err != nil {
		db.Close()
		return nil, err
	}
	return &sqliteEngine{db: db}, nil
}

func (e *sqliteEngine) name() string { return "SQLite FTS5 (ncruces/go-sqlite3 v0.37.0)" }

func (e *sqliteEngine) build(docs []search.Doc) error {
	ins, _, err := e.db.Prepare(`INSERT INTO e(rowid, text) VALUES (?, ?)`)
	if err != nil {
		return err
	}
	defer ins.Close()
	meta, _, err := e.db.Prepare(`INSERT INTO m VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer meta.Close()
	for start := 0; start < len(docs); start += 2000 {
		if err := e.db.Exec("BEGIN"); err != nil {
			return err
		}
		for i := start; i < min(start+2000, len(docs)); i++ {
			d := &docs[i]
			ins.BindInt64(1, int64(i+1))
			ins.BindText(2, d.Text)
			if err := ins.Exec(); err != nil {
				return err
			}
			meta.BindInt64(1, int64(i+1))
			for j, v := range []string{d.Session, d.Entry, d.Type, d.Role, strings.Join(d.Tools, " "), d.Model, d.Timestamp, d.Cwd, d.Name, d.Label} {
				meta.BindText(j+2, v)
			}
			onPath := int64(0)
			if d.OnPath {
				onPath = 1
			}
			meta.BindInt64(12, onPath)
			if err := meta.Exec(); err != nil {
				return err
			}
		}
		if err := e.db.Exec("COMMIT"); err != nil {
			return err
		}
	}
	// Merge the b-tree segments into one, as bleve's merger does, and move
	// the WAL into the database file.
	return e.db.Exec(`INSERT INTO e(e) VALUES ('optimize'); PRAGMA wal_checkpoint(TRUNCATE);`)
}

// match is q's FTS5 expression; words and the prefix are plain tokens, so
// need no quoting beyond the phrase's.
func (q Query) match() string {
	var parts []string
	parts = append(parts, q.Words...)
	if len(q.Phrase) > 0 {
		parts = append(parts, `"`+strings.Join(q.Phrase, " ")+`"`)
	}
	if q.Prefix != "" {
		parts = append(parts, q.Prefix+"*")
	}
	return strings.Join(parts, " AND ")
}

func (e *sqliteEngine) search(q Query, limit int) ([]string, int, error) {
	where := "e MATCH ?1"
	if q.Role != "" {
		where += " AND m.role = ?2"
	}
	if q.Cwd != "" {
		where += " AND m.cwd = ?3"
	}
	from := "FROM e JOIN m ON m.id = e.rowid WHERE " + where
	count := from
	if q.Role == "" && q.Cwd == "" {
		count = "FROM e WHERE " + where // no row of m to read
	}
	run := func(sql string, row func(*sqlite3.Stmt)) error {
		st, _, err := e.db.Prepare(sql)
		if err != nil {
			return err
		}
		defer st.Close()
		st.BindText(1, q.match())
		if q.Role != "" {
			st.BindText(2, q.Role)
		}
		if q.Cwd != "" {
			st.BindText(3, q.Cwd)
		}
		for st.Step() {
			row(st)
		}
		return st.Err()
	}
	total := 0
	if err := run("SELECT count(*) "+count, func(st *sqlite3.Stmt) { total = int(st.ColumnInt64(0)) }); err != nil {
		return nil, 0, err
	}
	sql := "SELECT m.session, m.entry " + from + " ORDER BY rank"
	if limit > 0 {
		sql += fmt.Sprintf(" LIMIT %d", limit)
	}
	var keys []string
	err := run(sql, func(st *sqlite3.Stmt) { keys = append(keys, st.ColumnText(0)+"/"+st.ColumnText(1)) })
	return keys, total, err
}

func (e *sqliteEngine) close() error { return e.db.Close() }

// ---- both ----

func newEngines(dir string) ([]engine, error) {
	b, err := newBleve(filepath.Join(dir, "bleve"))
	if err != nil {
		return nil, err
	}
	s, err := newSQLite(filepath.Join(dir, "sqlite"))
	if err != nil {
		b.close()
		return nil, err
	}
	return []engine{b, s}, nil
}

// agree checks every engine's full hit set of every query against the
// oracle's, and that the ranked top 20 are hits with the oracle's total.
func agree(docs []search.Doc, engines []engine) error {
	for _, q := range Queries {
		want := Oracle(docs, q)
		for _, e := range engines {
			got, total, err := e.search(q, 0)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", e.name(), q.Label, err)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) || total != len(want) {
				return fmt.Errorf("%s, %s: %d hits (total %d), the oracle %d", e.name(), q.Label, len(got), total, len(want))
			}
			top, total, err := e.search(q, 20)
			if err != nil {
				return err
			}
			if total != len(want) || len(top) != min(20, len(want)) {
				return fmt.Errorf("%s, %s: top 20 of %d, %d hits, the oracle %d", e.name(), q.Label, total, len(top), len(want))
			}
			for _, k := range top {
				if _, ok := slices.BinarySearch(want, k); !ok {
					return fmt.Errorf("%s, %s: hit %s is none of the oracle's", e.name(), q.Label, k)
				}
			}
		}
	}
	return nil
}

// TestEnginesAgree: bleve and SQLite FTS5 answer every query of the
// benchmark with the oracle's hits, on a small corpus.
func TestEnginesAgree(t *testing.T) {
	docs, err := Load(mustGenerate(t, 14, 2500))
	if err != nil {
		t.Fatal(err)
	}
	engines, err := newEngines(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range engines {
		defer e.close()
		if err := e.build(docs); err != nil {
			t.Fatalf("%s: %v", e.name(), err)
		}
	}
	for _, q := range Queries {
		if len(Oracle(docs, q)) == 0 {
			t.Fatalf("%s: no hit in the corpus, nothing to compare", q.Label)
		}
	}
	if err := agree(docs, engines); err != nil {
		t.Fatal(err)
	}
}
