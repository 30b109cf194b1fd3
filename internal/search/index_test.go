package search_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/search"
	"github.com/pifleet/sessionlog/internal/search/searchcorpus"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// corpus is a generated corpus in a MemLog, and what an oracle needs of
// it: every doc with its session's cwd, and the names and labels as the
// lines set them.
type corpus struct {
	log    *session.MemLog
	docs   []search.Doc
	words  [][]string                   // of each doc's text
	texts  map[string]string            // DocID → its doc's text
	names  map[string]string            // session → name now
	labels map[string]map[string]string // session → target → label now
	last   uint64
}

// extraLines are sessions the generator does not write: lone surrogates
// (which encoding/json reads as U+FFFD: they separate words), a label
// moved to another entry, a name changed, a relative cwd.
var extraLines = [][]string{{
	`{"type":"session","version":3,"id":"01a2b3c4-0000-7000-8000-00000000e001","timestamp":"2026-11-01T10:00:00.000Z","cwd":"/home/dev/surrogates/"}`,
	`{"type":"message","id":"s1","parentId":null,"timestamp":"2026-11-01T10:00:01.000Z","message":{"role":"user","content":"broken\ud800pair and \udfffsalt surrogate","timestamp":1}}`,
	`{"type":"message","id":"s2","parentId":"s1","timestamp":"2026-11-01T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"the salt check 🚀 passes\ud83d"}],"provider":"p","model":"Claude-Opus","timestamp":2}}`,
	`{"type":"label","id":"s3","parentId":"s2","timestamp":"2026-11-01T10:00:03.000Z","targetId":"s1","label":"keeper"}`,
	`{"type":"label","id":"s4","parentId":"s3","timestamp":"2026-11-01T10:00:04.000Z","targetId":"s2","label":"keeper"}`,
	`{"type":"label","id":"s5","parentId":"s4","timestamp":"2026-11-01T10:00:05.000Z","targetId":"s1","label":""}`,
	`{"type":"session_info","id":"s6","parentId":"s5","timestamp":"2026-11-01T10:00:06.000Z","name":"Old Salt"}`,
	`{"type":"session_info","id":"s7","parentId":"s6","timestamp":"2026-11-01T10:00:07.000Z","name":"Surrogate Hunt"}`,
}, {
	`{"type":"session","version":3,"id":"01a2b3c4-0000-7000-8000-00000000e004","timestamp":"2026-11-04T10:00:00.000Z","cwd":"/home/dev/pi11"}`,
	`{"type":"message","id":"p1","parentId":null,"timestamp":"2026-11-04T10:00:01.000Z","message":{"role":"system","content":"","sections":{"preamble":"You are an expert coding assistant","cwd":"Current working directory: /home/dev/pi11"},"toolsAdded":[{"name":"read","description":"Read a file from disk"}]}}`,
	`{"type":"message","id":"p2","parentId":"p1","timestamp":"2026-11-04T10:00:02.000Z","message":{"role":"user","content":"salt check again","timestamp":1}}`,
	`{"type":"context_edit","id":"p3","parentId":"p2","timestamp":"2026-11-04T10:00:03.000Z","targetId":"p2","replacement":{"content":[{"type":"text","text":"[elided] the salt question"}]}}`,
	`{"type":"usage","id":"p4","parentId":"p3","timestamp":"2026-11-04T10:00:04.000Z","kind":"cache_warm","provider":"openai","model":"gpt-5.2","usage":{"input":1},"note":"warming the cache"}`,
}, {
	`{"type":"session","version":3,"id":"01a2b3c4-0000-7000-8000-00000000e002","timestamp":"2026-11-02T10:00:00.000Z","cwd":"relative/dir"}`,
	`{"type":"message","id":"r1","parentId":null,"timestamp":"2026-11-02T10:00:01.000Z","message":{"role":"user","content":"salt in a relative cwd","timestamp":1}}`,
}}

func newCorpus(t testing.TB, entries int) *corpus {
	t.Helper()
	c := &corpus{log: session.NewMemLog(100000, 8<<20), names: map[string]string{}, texts: map[string]string{}, labels: map[string]map[string]string{}}
	gen, err := searchcorpus.Generate(t.TempDir(), 3, entries)
	if err != nil {
		t.Fatal(err)
	}
	var files [][]string
	for _, f := range gen.Files {
		var lines []string
		if err := searchcorpus.Lines(f, func(b []byte) error { lines = append(lines, string(b)); return nil }); err != nil {
			t.Fatal(err)
		}
		files = append(files, lines)
	}
	for _, lines := range append(files, extraLines...) {
		c.add(t, lines)
	}
	return c
}

// add appends one session's lines to the log and notes its docs.
func (c *corpus) add(t testing.TB, lines []string) {
	t.Helper()
	var h struct{ ID, Cwd string }
	if err := json.Unmarshal([]byte(lines[0]), &h); err != nil {
		t.Fatal(err)
	}
	recs := []session.Record{{Type: "session", Data: []byte(lines[0])}}
	for _, l := range lines[1:] {
		var e struct {
			Type, ID, TargetID, Label, Name string
			ParentID                        *string
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		r := session.Record{Type: e.Type, ID: e.ID, Data: []byte(l)}
		if e.ParentID != nil {
			r.Parent = *e.ParentID
		}
		recs = append(recs, r)
		switch e.Type {
		case "label":
			if c.labels[h.ID] == nil {
				c.labels[h.ID] = map[string]string{}
			}
			if e.Label == "" {
				delete(c.labels[h.ID], e.TargetID)
			} else {
				c.labels[h.ID][e.TargetID] = e.Label
			}
		case "session_info":
			c.names[h.ID] = strings.TrimSpace(e.Name)
		}
		if d, ok := search.Extract([]byte(l)); ok {
			d.Session, d.Cwd = h.ID, h.Cwd
			c.docs = append(c.docs, d)
			c.texts[search.DocID(d.Session, d.Entry)] = d.Text
			c.words = append(c.words, search.Words(d.Text))
		}
	}
	seqs, err := c.log.Append(context.Background(), h.ID, 0, recs)
	if err != nil {
		t.Fatal(err)
	}
	c.last = seqs[len(seqs)-1]
}

// resolver answers name: and label: from the corpus's own bookkeeping.
func (c *corpus) SessionsNamed(s string) []string {
	var out []string
	for id, n := range c.names {
		if strings.Contains(strings.ToLower(n), strings.ToLower(s)) {
			out = append(out, id)
		}
	}
	return out
}

func (c *corpus) Text(_ context.Context, sid, entry string) (string, bool) {
	text, ok := c.texts[search.DocID(sid, entry)]
	return text, ok
}

func (c *corpus) Labelled(l string) []string {
	var out []string
	for sid, m := range c.labels {
		for target, text := range m {
			if text == l {
				out = append(out, search.DocID(sid, target))
			}
		}
	}
	return out
}

func set(ids []string) map[string]bool {
	m := map[string]bool{}
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// oracle is the brute-force answer: the DocIDs of the docs q matches.
func (c *corpus) oracle(q *search.Query, cwdPrefix string) []string {
	var out []string
	named := func(s string) map[string]bool { return set(c.SessionsNamed(s)) }
	labelled := func(l string) map[string]bool { return set(c.Labelled(l)) }
	var tenant *search.Query
	if cwdPrefix != "" {
		tenant, _ = search.Parse("cwd:" + cwdPrefix)
	}
	for i := range c.docs {
		d := &c.docs[i]
		if q.MatchDoc(d, c.words[i], named, labelled) && (tenant == nil || tenant.MatchDoc(d, nil, named, labelled)) {
			out = append(out, search.DocID(d.Session, d.Entry))
		}
	}
	slices.Sort(out)
	return out
}

// all pages through every hit of q, pageSize at a time (the first page
// firstSize, when given), checking the ranking never goes back and no hit
// comes twice; a page cut short goes on after its cut.
func all(t *testing.T, x *search.Index, r search.Resolver, q *search.Query, cwdPrefix string, pageSize int, firstSize ...int) []string {
	t.Helper()
	var out []string
	var after *search.After
	seen := map[string]bool{}
	for {
		size := pageSize
		if after == nil && len(firstSize) > 0 {
			size = firstSize[0]
		}
		p, err := x.Search(context.Background(), q, r, cwdPrefix, size, after)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range p.Hits {
			k := h.Key()
			if after != nil && !after.Less(k) {
				t.Fatalf("hit %s (score %v) ranks before the page's start %s (%v)", k.ID, k.Score, after.ID, after.Score)
			}
			if seen[k.ID] {
				t.Fatalf("hit %s twice", k.ID)
			}
			seen[k.ID] = true
			out = append(out, k.ID)
			after = &k
		}
		if p.Cut != nil {
			if len(p.Hits) >= size {
				t.Fatalf("a full page (%d hits) cut short", len(p.Hits))
			}
			if after != nil && p.Cut.Less(*after) {
				t.Fatalf("cut %s before the page's last hit %s", p.Cut.ID, after.ID)
			}
			after = p.Cut
			continue
		}
		if len(p.Hits) < size {
			// Exact, but for phrases: then it counts the entries holding
			// their words, those in a row among them.
			if int(p.Total) != len(out) && !(q.Checked() && int(p.Total) > len(out)) {
				t.Fatalf("total %d, %d hits paged through", p.Total, len(out))
			}
			break
		}
	}
	slices.Sort(out)
	return out
}

// queries are every form of the language, alone and combined.
var queries = []string{
	"salt",
	"middleware drops cookie",
	"rate limiter proxy",
	`"salt check"`,
	"auth*",
	"deadlock role:assistant cwd:/home/dev/sessionlog",
	"salt -check",
	`salt -"salt check"`,
	`"salt check" -"check again"`,
	"salt-fix",
	`-"salt check" "in auth" role:user`,
	"SALT Check",
	"role:user",
	"role:toolResult error",
	"type:compaction",
	"type:branch_summary salt",
	"tool:bash",
	"tool:read -role:assistant",
	"model:claude*",
	"model:Claude-Opus",
	"cwd:/home/dev",
	"cwd:/home/dev/surrogates salt",
	"cwd:/",
	`name:"surrogate hunt"`,
	"name:migrate -name:(2)",
	"name:middleware salt",
	"name:csv",
	"label:keeper",
	"session:01a2b3c4-0000-7000-8000-00000000e001",
	"-session:01a2b3c4-0000-7000-8000-00000000e001 salt",
	"since:2026-11-01 until:2026-11-01",
	"until:2026-11-01T10:00:01Z",
	"since:2026-11-01T10:00:02.000Z salt",
	"为什么会失败",
	"这个函数返回错误",
	"broken pair",
	"surrogate",
	"passes",
	"-salt role:user",
	"role:system expert",
	"type:context_edit elided salt",
	"warming model:gpt*",
	"disk -role:user",
}

// TestIndexOracle: for every query form, the index's hits — paged
// through with the cursor — are exactly the docs a brute-force scan of
// the corpus matches (unicode, lone surrogates, lines of megabytes), for
// everyone and for a tenant.
func TestIndexOracle(t *testing.T) {
	c := newCorpus(t, 3000)
	x := follow(t, "", c.log)
	waitFor(t, x, c.last)
	for _, qs := range queries {
		q, err := search.Parse(qs)
		if err != nil {
			t.Fatalf("%s: %v", qs, err)
		}
		for _, tenant := range []string{"", "/home/dev/sessionlog", "/home/dev/surrogates"} {
			want := c.oracle(q, tenant)
			got := all(t, x, c, q, tenant, 97)
			if !slices.Equal(got, want) {
				t.Errorf("%q (tenant %q): %d hits, the oracle %d; only in the index %v, only in the oracle %v",
					qs, tenant, len(got), len(want), diff(got, want), diff(want, got))
			}
		}
	}
	// First pages from a small window: the page's end inside a tie that
	// the window holds, and one it does not (the full ranking decides).
	for _, window := range []int{1024, 16} {
		restore := search.SetFirstWindow(window)
		for _, qs := range queries {
			q, _ := search.Parse(qs)
			if got, want := all(t, x, c, q, "", 97, 5), c.oracle(q, ""); !slices.Equal(got, want) {
				t.Errorf("%q, a first page of 5 from a window of %d: %d hits, the oracle %d", qs, window, len(got), len(want))
			}
		}
		restore()
	}
	// A small budget of entries checked a page: pages cut short, the
	// hits the same.
	budget, window := search.SetCheckBudget(7), search.SetFirstWindow(16)
	cuts := 0
	for _, qs := range queries {
		q, _ := search.Parse(qs)
		if !q.Checked() {
			continue
		}
		if got, want := all(t, x, c, q, "", 5), c.oracle(q, ""); !slices.Equal(got, want) {
			t.Errorf("%q, 7 entries checked a page: %d hits, the oracle %d", qs, len(got), len(want))
		}
		if p, _ := x.Search(context.Background(), q, c, "", 5, nil); p.Cut != nil {
			cuts++
		}
	}
	budget()
	window()
	if cuts == 0 {
		t.Error("no page was cut short by a budget of 7")
	}
	// Phrases are checked against the text: the index alone finds more.
	for _, qs := range []string{`"salt check"`, `"check salt"`} {
		q, _ := search.Parse(qs)
		p, err := x.Search(context.Background(), q, c, "", 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(c.oracle(q, "")); int(p.Total) <= n {
			t.Errorf("%q: the index holds %d entries with its words, %d of them in a row: the check is not tested", qs, p.Total, n)
		}
	}
	// The corpus makes each form mean something: most queries hit.
	var empty []string
	for _, qs := range queries {
		q, _ := search.Parse(qs)
		if len(c.oracle(q, "")) == 0 {
			empty = append(empty, qs)
		}
	}
	if len(empty) > 0 {
		t.Errorf("queries the corpus gives no hit: %q", empty)
	}
}

func diff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if _, ok := slices.BinarySearch(b, x); !ok {
			out = append(out, x)
			if len(out) == 5 {
				break
			}
		}
	}
	return out
}

// follow opens an index in dir ("" in memory) following feed until the
// test ends.
func follow(t testing.TB, dir string, feed session.Feed) *search.Index {
	t.Helper()
	x, err := search.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { x.Run(ctx, feed) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		_ = x.Close()
	})
	return x
}

func waitFor(t testing.TB, x *search.Index, seq uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := x.WaitFor(ctx, seq); err != nil {
		t.Fatal(err)
	}
}

// froms is a Feed that records where each Follow starts.
type froms struct {
	session.Feed
	mu sync.Mutex
	at []uint64
}

// started is where the Follows began, once there is one: the index
// follows on a goroutine of its own, which may call Follow after it
// already counts as caught up (what it reopened with is the log's end).
func (f *froms) started(t *testing.T) []uint64 {
	t.Helper()
	var at []uint64
	testutil.WaitFor(t, time.Minute, func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if at = slices.Clone(f.at); len(at) == 0 {
			return errors.New("no Follow yet")
		}
		return nil
	})
	return at
}

func (f *froms) Follow(ctx context.Context, from uint64, apply func([]session.Stored) error) error {
	f.mu.Lock()
	f.at = append(f.at, from)
	f.mu.Unlock()
	return f.Feed.Follow(ctx, from, apply)
}

// indexOnDisk builds c's index in a new directory, followed to the log's
// end and stopped, but open.
func indexOnDisk(t *testing.T, c *corpus) (string, *search.Index) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "search")
	x, err := search.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { x.Run(ctx, c.log); close(done) }()
	waitFor(t, x, c.last)
	cancel()
	<-done
	return dir, x
}

// TestIndexResumes: an index on disk, closed and opened again, goes on
// from the sequence it had indexed — not from the start — and then
// answers as one built in one go; a purged session leaves it.
func TestIndexResumes(t *testing.T) {
	c := newCorpus(t, 800)
	dir, x := indexOnDisk(t, c)
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	first := c.last
	// More sessions, and one purged: its documents must go.
	c.add(t, []string{
		`{"type":"session","version":3,"id":"01a2b3c4-0000-7000-8000-00000000e003","timestamp":"2026-11-03T10:00:00.000Z","cwd":"/home/dev/later"}`,
		`{"type":"message","id":"l1","parentId":null,"timestamp":"2026-11-03T10:00:01.000Z","message":{"role":"user","content":"a later salt question","timestamp":1}}`,
	})
	gone := "01a2b3c4-0000-7000-8000-00000000e001"
	if err := c.log.Purge(context.Background(), gone); err != nil {
		t.Fatal(err)
	}
	for i := len(c.docs) - 1; i >= 0; i-- {
		if c.docs[i].Session == gone {
			delete(c.texts, search.DocID(gone, c.docs[i].Entry))
			c.docs = slices.Delete(c.docs, i, i+1)
			c.words = slices.Delete(c.words, i, i+1)
		}
	}
	delete(c.names, gone)
	delete(c.labels, gone)
	last, _ := c.log.LastSeq(context.Background())

	f := &froms{Feed: c.log}
	y := follow(t, dir, f)
	if got := y.Applied(); got != first {
		t.Fatalf("reopened at %d, want %d", got, first)
	}
	waitFor(t, y, last)
	at := f.started(t)
	if len(at) != 1 || at[0] != first+1 {
		t.Fatalf("the reopened index followed from %v, want [%d]", at, first+1)
	}
	for _, qs := range []string{"salt", "surrogate", "later", `"salt check"`, "role:user"} {
		q, _ := search.Parse(qs)
		want, got := c.oracle(q, ""), all(t, y, c, q, "", 50)
		if !slices.Equal(got, want) {
			t.Errorf("%q after reopening: %d hits, the oracle %d; only in the index %v, only in the oracle %v", qs, len(got), len(want), diff(got, want), diff(want, got))
		}
	}
	q, _ := search.Parse("session:" + gone)
	if p, _ := y.Search(context.Background(), q, c, "", 10, nil); len(p.Hits) != 0 || p.Total != 0 {
		t.Fatalf("the purged session still has %d hits", p.Total)
	}
}

// TestIndexBusy: an index on disk that another Index still has open (a
// shard's Store closing while the node takes the shard again) is opened
// by Run once the other lets go, and goes on from its checkpoint.
func TestIndexBusy(t *testing.T) {
	c := newCorpus(t, 200)
	dir, x := indexOnDisk(t, c)
	f := &froms{Feed: c.log}
	y := follow(t, dir, f) // x still has it open
	q, _ := search.Parse("salt")
	if _, err := y.Search(context.Background(), q, c, "", 10, nil); err == nil {
		t.Fatal("searched an index that is not open yet")
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, y, c.last)
	at := f.started(t)
	if len(at) != 1 || at[0] != c.last+1 {
		t.Fatalf("followed from %v, want [%d]", at, c.last+1)
	}
	if got, want := all(t, y, c, q, "", 50), c.oracle(q, ""); !slices.Equal(got, want) {
		t.Fatalf("%d hits, the oracle %d", len(got), len(want))
	}
}

// renamed is a feed under another identity (a stream deleted and made
// again): an index that followed it before starts over.
type renamed struct {
	session.Feed
	id string
}

func (r renamed) Identity(context.Context) (string, error) { return r.id, nil }

// TestIndexBusyReset: an index on disk that another Index holds stays
// closed to the second while the first empties and rebuilds it (its
// directory removed and made again), and opens once the first lets go —
// two nodes given one data dir: a second writer of one index crashes
// scorch.
func TestIndexBusyReset(t *testing.T) {
	c := newCorpus(t, 200)
	dir, x := indexOnDisk(t, c)
	y := follow(t, dir, c.log) // waits: x has it
	q, _ := search.Parse("salt")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	f := &froms{Feed: c.log}
	go func() { x.Run(ctx, renamed{Feed: f, id: "another"}); close(done) }()
	// x starts over (its directory removed and made again) and indexes
	// the log from its start.
	if at := f.started(t); len(at) != 1 || at[0] != 1 {
		t.Fatalf("the renamed log was followed from %v, want [1]: no reset", at)
	}
	waitFor(t, x, c.last)
	cancel()
	<-done
	if _, err := y.Search(context.Background(), q, c, "", 10, nil); err == nil {
		t.Fatal("the second index opened while the first rebuilt it")
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, y, c.last)
	if got, want := all(t, y, c, q, "", 50), c.oracle(q, ""); !slices.Equal(got, want) {
		t.Fatalf("%d hits, the oracle %d", len(got), len(want))
	}
}
