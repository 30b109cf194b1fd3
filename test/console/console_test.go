//go:build linux

package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/pifleet/sessionlog/internal/conformance"
	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/tree"
)

// The case whose tree, labels, cursor and contexts the session checks
// compare with pi's answers: two branches under its first question.
const authCase = "example-auth-salt-debugging"

// compactionCase has compactions on its default leaf's path.
const compactionCase = "p05-compactions"

// forkCase is the parent of pi's forks (p04-forks.fork1 names it by its
// file, as pi does); the Forks check forks it through the API too.
const forkCase = "p04-forks"

// cursorClient is the client whose cursor the test sets.
const cursorClient = "console-test"

// Bounds of the waits, times PI_TEST_SCALE: they only cap how long a
// broken page takes to fail. How fast the page is (a live append's row
// "within a second", frames while scrolling) is measured and logged, never
// judged here: under CI's load a busy core decides a duration, not the page.
var (
	viewTimeout = testutil.Scale(20 * time.Second)
	liveBound   = testutil.Scale(5 * time.Second)
	largeBound  = testutil.Scale(30 * time.Second) // a 5,000-entry tree, its export and cursors
)

// row is one row of the session tree as the page draws it.
type row struct {
	ID       string   `json:"id"`
	Depth    int      `json:"depth"`
	Type     string   `json:"type"`
	Top      float64  `json:"top"`
	Selected bool     `json:"selected"`
	Expanded string   `json:"expanded"`
	Label    *string  `json:"label"`
	Leaf     bool     `json:"leaf"`
	Cursors  []string `json:"cursors"`
}

// rowsJS lists the rows in the DOM, top to bottom as drawn.
const rowsJS = `[...document.querySelectorAll('div.row[role=treeitem][data-id]')].map(r => ({
	id: r.dataset.id, depth: Number(r.dataset.depth), type: r.dataset.type || '',
	top: r.getBoundingClientRect().top, selected: r.getAttribute('aria-selected') === 'true',
	expanded: r.getAttribute('aria-expanded') || '',
	label: r.querySelector('.label') ? r.querySelector('.label').textContent.trim() : null,
	leaf: !!r.querySelector('.leaf-mark'),
	cursors: [...r.querySelectorAll('.cursor[data-client]')].map(c => c.dataset.client)
})).sort((a, b) => a.top - b.top)`

// rowCountJS counts the tree's rows in the DOM.
const rowCountJS = `document.querySelectorAll('div.row[role=treeitem]').length`

// liveJS is the #live badge's state: off, live or reconnecting.
const liveJS = `document.querySelector('#live')?.dataset.state`

// liveIs is an expression: the #live badge says state.
func liveIs(state string) string { return liveJS + ` === ` + js(state) }

// scrollJS scrolls #tree-scroll from top to bottom in steps of a frame
// pair each (the page draws the rows in the frame after the scroll, the
// second shows them), timing every frame, and counts the steps whose view
// showed no row.
const scrollJS = `(async () => {
	const sc = document.querySelector('#tree-scroll');
	const height = sc.scrollHeight, client = sc.clientHeight;
	const step = Math.max(client, Math.ceil((height - client) / 100));
	const frames = []; let blank = 0, last = performance.now();
	const frame = () => new Promise(r => requestAnimationFrame(() => { const now = performance.now(); frames.push(now - last); last = now; r(); }));
	const inView = () => { const v = sc.getBoundingClientRect();
		return [...document.querySelectorAll('div.row[role=treeitem][data-id]')].filter(r => {
			const b = r.getBoundingClientRect(); return b.bottom > v.top && b.top < v.bottom; }); };
	await frame(); frames.length = 0;
	let steps = 0;
	for (let y = step; ; y += step) {
		sc.scrollTop = Math.min(y, height - client);
		await frame(); await frame(); steps++;
		if (inView().length === 0) blank++;
		if (y >= height - client) break;
	}
	return JSON.stringify({height, client, steps, frames, blank,
		rows: document.querySelectorAll('div.row[role=treeitem]').length, bottom: inView().map(r => r.dataset.id)});
})()`

// rows reads the tree's rows in the DOM, top to bottom, and by id.
func rows(t *testing.T, b *tab) (list []row, byID map[string]row) {
	t.Helper()
	list = evalJS[[]row](t, b, rowsJS)
	byID = map[string]row{}
	for _, r := range list {
		byID[r.ID] = r
	}
	return list, byID
}

// suite is what every check of TestConsole shares: the node, the tab,
// and the conformance case the session checks compare with.
type suite struct {
	nd       *node
	b        *tab
	auth     *vector
	compact  *vector         // a session whose default leaf's context starts with a compaction summary
	forked   *vector         // forkCase: a session with forks
	sid      string          // auth's session
	branch   *treeNode       // the first entry of auth with two children
	cursorAt string          // where cursorClient's cursor is set
	picked   string          // the labelled entry the entry checks select
	sids     map[string]bool // every session on the node: imported, and the Forks check's forks
}

// TestConsole drives the console in headless Chromium against a pi-node
// holding the conformance sessions: each subtest is one thing a person
// does with it, checked against what the API and pi's own answers say.
// They share one page, in order; each opens the view it needs.
func TestConsole(t *testing.T) {
	skipUnlessBrowser(t)
	start := time.Now()
	s := &suite{nd: startNode(t), sids: map[string]bool{}}
	vectors := loadVectors(t)
	for _, v := range vectors {
		sid, _ := s.nd.importFile(t, v.file)
		if sid != v.exp.SessionID {
			t.Fatalf("%s: imported as %s, pi's id is %s", v.name, sid, v.exp.SessionID)
		}
		s.sids[sid] = true
		switch v.name {
		case authCase:
			s.auth = v
		case compactionCase:
			s.compact = v
		case forkCase:
			s.forked = v
		}
	}
	if s.auth == nil || s.compact == nil || s.forked == nil {
		t.Fatalf("conformance case %s, %s or %s not found", authCase, compactionCase, forkCase)
	}
	s.sid = s.auth.exp.SessionID
	if s.branch = firstBranch(s.auth.exp.Tree); s.branch == nil {
		t.Fatalf("%s: expected.json's tree has no branch", authCase)
	}
	if len(s.auth.exp.Labels) == 0 {
		t.Fatalf("%s: expected.json has no label", authCase)
	}
	s.picked = slices.Sorted(maps.Keys(s.auth.exp.Labels))[0]
	// The cursor sits on the first branch's first child: not the default
	// leaf, so its mark and the leaf's are on different rows.
	s.cursorAt = s.branch.Children[0].ID
	s.nd.setCursor(t, s.sid, cursorClient, s.cursorAt)
	t.Logf("measured: setup (pi-node ready, %d sessions imported): %v", len(vectors), time.Since(start).Round(time.Millisecond))

	s.b = startTab(t, s.nd.specProxy(t)+"/console/", s.nd.readToken)
	for _, c := range []struct {
		name  string
		check func(*testing.T)
	}{
		{"Token", s.token}, {"TokenLink", s.tokenLink}, {"Catalog", s.catalog}, {"Forks", s.forks}, {"Tree", s.tree}, {"Entry", s.entry}, {"Compaction", s.compaction}, {"Live", s.live}, {"Resume", s.resume},
		{"Large", s.large}, {"Keyboard", s.keyboard}, {"Cluster", s.cluster}, {"Export", s.export}, {"Pi11", s.pi11},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer s.b.checkProblems(t)
			c.check(t)
		})
	}
	s.b.checkProblems(t)
	t.Logf("measured: whole test: %v", time.Since(start).Round(time.Millisecond))
}

// token: a first visit asks for a token; a wrong one is refused with a
// message about the token; the read token opens the catalog, which lists
// every session as the API does.
func (s *suite) token(t *testing.T) {
	nd, b := s.nd, s.b
	// The wrong token's 401 is logged by the browser itself.
	defer b.expect(network401)()
	b.do(t, "load the console", chromedp.Navigate(b.url))
	b.poll(t, "the token form on a first visit", visible("#token-form"), viewTimeout)
	if v := evalJS[string](t, b, `document.body.dataset.view ?? ''`); v != "token" {
		t.Errorf("body[data-view] = %q with the token form shown, want token", v)
	}
	b.do(t, "enter a wrong token", chromedp.SendKeys(chromedp.CSS("#token"), nd.wrongToken), chromedp.Click(chromedp.CSS("#token-submit")))
	b.poll(t, "#error naming the token after a wrong one", visible("#error")+` && /token/i.test(document.querySelector('#error').textContent)`, viewTimeout)
	msg := evalJS[string](t, b, `document.querySelector('#error').textContent.trim()`)
	t.Logf("#error after the wrong token: %q", msg)
	if !strings.Contains(strings.ToLower(msg), "refused") {
		t.Errorf("#error after a wrong token does not say the token was refused, as the contract's example message does: %q", msg)
	}
	b.poll(t, "the token form again after the 401", visible("#token-form"), viewTimeout)
	evalJS[chromedp.Void](t, b, `document.querySelector('#token').value = ''`)
	b.do(t, "enter the read token", chromedp.SendKeys(chromedp.CSS("#token"), nd.readToken), chromedp.Click(chromedp.CSS("#token-submit")))
	d := b.poll(t, "the sessions view after the read token", ready("sessions"), viewTimeout)
	t.Logf("measured: read token submitted → sessions view ready: %v", d.Round(time.Millisecond))
	if evalJS[bool](t, b, visible("#error")) {
		t.Errorf("#error still shown after the read token: %q", evalJS[string](t, b, `document.querySelector('#error').textContent`))
	}
	if got := evalJS[string](t, b, `sessionStorage.getItem(`+js(tokenKey)+`) ?? ''`); got != nd.readToken {
		t.Errorf("sessionStorage %s = %q, want the read token", tokenKey, got)
	}
	checkCatalog(t, b, nd.list(t), s.sids)
	b.screenshot(t, "sessions")
}

// catalog: the filters ask the API what it filters (name, cwd) and the
// page shows exactly those sessions; small pages (a link's limit) are
// completed by "Load more" until every session is listed.
func (s *suite) catalog(t *testing.T) {
	nd, b := s.nd, s.b
	shownIDs := func() []string {
		return evalJS[[]string](t, b, `[...document.querySelectorAll('table#sessions tbody tr[data-session]')].map(r => r.dataset.session)`)
	}
	for _, f := range []struct{ hash, query string }{
		{"#/sessions?q=salt", "name=salt"},
		{"#/sessions?cwd=" + url.QueryEscape("/home/dev/project"), "cwd=" + url.QueryEscape("/home/dev/project")},
	} {
		want := nd.listWhere(t, f.query)
		if len(want) == 0 || len(want) == len(s.sids) {
			t.Fatalf("%s: the API lists %d of %d sessions: not a filter the test can tell", f.query, len(want), len(s.sids))
		}
		b.open(t, f.hash)
		b.poll(t, f.hash, ready("sessions")+fmt.Sprintf(` && document.querySelectorAll('table#sessions tbody tr[data-session]').length === %d`, len(want)), viewTimeout)
		got := shownIDs()
		for _, l := range want {
			if !slices.Contains(got, l.SessionID) {
				t.Errorf("%s: %s not shown (shown: %v)", f.hash, l.SessionID, got)
			}
		}
	}
	all := nd.list(t)
	b.open(t, "#/sessions?limit=5")
	b.poll(t, "a first page of 5", ready("sessions")+` && document.querySelectorAll('table#sessions tbody tr[data-session]').length === 5 && !document.querySelector('#more').hidden`, viewTimeout)
	for pages := 1; len(shownIDs()) < len(all); pages++ {
		if pages > len(all) {
			t.Fatalf("Load more never listed all %d sessions: %d shown", len(all), len(shownIDs()))
		}
		n := len(shownIDs())
		evalJS[chromedp.Void](t, b, `document.querySelector('#more').click()`)
		b.poll(t, "the next page", fmt.Sprintf(`document.querySelectorAll('table#sessions tbody tr[data-session]').length > %d`, n), viewTimeout)
	}
	if got := shownIDs(); len(got) != len(all) || !evalJS[bool](t, b, `document.querySelector('#more').hidden`) {
		t.Errorf("after the last page: %d rows of %d, Load more still offered: %v", len(got), len(all), !evalJS[bool](t, b, `document.querySelector('#more').hidden`))
	}
}

// tree: a shared URL of a session draws pi's tree: every entry, under its
// parent, of its type; both branches under the first question; the label,
// the default leaf's mark and the cursor's.
func (s *suite) tree(t *testing.T) {
	b, auth, sid := s.b, s.auth, s.sid
	root := auth.exp.Tree[0].ID
	b.open(t, "#/s/"+sid) // a fresh load of a shared URL
	b.poll(t, "the session view of "+authCase, sessionReady(root), viewTimeout)
	title := sid
	if auth.exp.Name != nil {
		title = *auth.exp.Name
	}
	if got := evalJS[string](t, b, `document.querySelector('h1#session-title')?.textContent.trim() ?? ''`); got != title {
		t.Errorf("h1#session-title = %q, want %q", got, title)
	}
	list, byID := rows(t, b)
	up := parents(auth.exp.Tree, "", map[string]string{})
	for id, parent := range up {
		r, ok := byID[id]
		if !ok {
			t.Errorf("no row for entry %s (of %d entries, %d rows drawn)", id, len(up), len(list))
			continue
		}
		if r.Type != auth.kinds[id] {
			t.Errorf("row %s: data-type %q, want %q", id, r.Type, auth.kinds[id])
		}
		if p, ok := byID[parent]; ok && p.Top >= r.Top {
			t.Errorf("row %s is drawn above its parent %s (top %.0f, parent's %.0f)", id, parent, r.Top, p.Top)
		}
		want, labelled := auth.exp.Labels[id]
		switch {
		case labelled && (r.Label == nil || *r.Label != want):
			t.Errorf("row %s: .label %v, want %q", id, r.Label, want)
		case !labelled && r.Label != nil:
			t.Errorf("row %s: .label %q, but the entry has no label", id, *r.Label)
		}
		if r.Leaf != (id == auth.exp.LeafID) {
			t.Errorf("row %s: .leaf-mark %v, the default leaf is %s", id, r.Leaf, auth.exp.LeafID)
		}
		if want := id == s.cursorAt; slices.Contains(r.Cursors, cursorClient) != want {
			t.Errorf("row %s: .cursor[data-client=%s] %v, the cursor is on %s", id, cursorClient, !want, s.cursorAt)
		}
	}
	// Both branches under the first question: pi's tree gives the
	// node two children, drawn side by side one level further in.
	p := byID[s.branch.ID]
	if p.Expanded != "true" {
		t.Errorf("row %s has children: aria-expanded %q, want true", s.branch.ID, p.Expanded)
	}
	for _, c := range s.branch.Children {
		if r := byID[c.ID]; r.Depth <= p.Depth || r.Depth != byID[s.branch.Children[0].ID].Depth {
			t.Errorf("branch %s under %s: data-depth %d (parent %d, first sibling %d): the branches are not drawn as siblings",
				c.ID, s.branch.ID, r.Depth, p.Depth, byID[s.branch.Children[0].ID].Depth)
		}
	}
	t.Logf("%d rows; branch %s (depth %d) → %v", len(list), s.branch.ID, p.Depth, ids(s.branch.Children))
}

// entry: clicking a row selects the entry (in the URL too) and shows its
// JSON, its path and pi's context at it; the dark theme follows the
// system's preference.
func (s *suite) entry(t *testing.T) {
	b, auth, sid := s.b, s.auth, s.sid
	b.open(t, "#/s/"+sid)
	b.poll(t, "the session view", sessionReady(s.picked), viewTimeout)
	b.do(t, "click the row of "+s.picked, chromedp.Click(chromedp.CSS(rowSel(s.picked))))
	want := "#/s/" + sid + "/e/" + s.picked
	b.poll(t, "the URL of the selected entry", `location.hash === `+js(want), viewTimeout)
	b.poll(t, "aria-selected on the clicked row", `document.querySelector(`+js(rowSel(s.picked))+`).getAttribute('aria-selected') === 'true'`, viewTimeout)
	b.poll(t, "pre#entry-json of the entry", `JSON.parse(document.querySelector('pre#entry-json').textContent).id === `+js(s.picked), viewTimeout)
	got := evalJS[string](t, b, `document.querySelector('pre#entry-json').textContent`)
	if d := conformance.Diff("entry-json", conformance.MustValue(t, []byte(got)), conformance.MustValue(t, auth.lines[s.picked])); d != "" {
		t.Errorf("pre#entry-json is not the stored entry: %s", d)
	}
	path := auth.pathTo(t, s.picked)
	if gotPath := evalJS[[]string](t, b, `[...document.querySelectorAll('ol#entry-path li[data-id]')].map(li => li.dataset.id)`); !slices.Equal(gotPath, path) {
		t.Errorf("ol#entry-path = %v, want pi's path %v", gotPath, path)
	}
	checkContext(t, b, auth, s.picked)
	b.screenshot(t, "session-entry-context")

	// The dark theme is CSS alone: emulating the preference must
	// change the colours without a reload.
	colours := `['html', 'body'].map(s => getComputedStyle(document.querySelector(s))).map(c => c.backgroundColor + '/' + c.color).join(' ')`
	light := evalJS[string](t, b, colours)
	b.colorScheme(t, "dark")
	defer b.colorScheme(t, "")
	if _, err := b.tryPoll(colours+` !== `+js(light), testutil.Scale(5*time.Second)); err != nil {
		t.Errorf("prefers-color-scheme: dark changes no colour of html or body (%s)", light)
	}
	t.Logf("colours light %s, dark %s", light, evalJS[string](t, b, colours))
	b.screenshot(t, "session-entry-context-dark")
}

// live: an entry appended while the session is open appears without a
// reload, and a cursor moved moves its mark.
func (s *suite) live(t *testing.T) {
	nd, b, sid := s.nd, s.b, s.sid
	b.open(t, "#/s/"+sid+"/e/"+s.picked)
	b.poll(t, "the session view", sessionReady(s.picked), viewTimeout)
	if _, err := b.tryPoll(liveIs("live"), viewTimeout); err != nil {
		t.Errorf("#live never says live: %v; %s", err, b.state())
	}
	parent := nd.leaf(t, sid)
	id := "live0001"
	sent := time.Now()
	nd.append(t, sid, id, parent, "appended while the console watches")
	if _, err := b.tryPoll(`!!document.querySelector(`+js(rowSel(id))+`)`, liveBound); err != nil {
		t.Fatalf("the appended entry %s has no row %v after the append: %v; %s", id, liveBound, err, b.state())
	}
	d := time.Since(sent)
	t.Logf("measured: live append (POST sent) → its row in the tree: %v (the issue asks for within 1 s)", d.Round(time.Millisecond))
	_, byID := rows(t, b)
	if r, p := byID[id], byID[parent]; r.Top <= p.Top {
		t.Errorf("the new row is not drawn below its parent %s", parent)
	}
	// Cursors are polled: moving one moves its mark.
	sent = time.Now()
	nd.setCursor(t, sid, cursorClient, id)
	b.poll(t, "the cursor's mark on the new row", `!!document.querySelector(`+js(rowSel(id)+` .cursor[data-client=`+cursorClient+`]`)+`)`, testutil.Scale(10*time.Second))
	t.Logf("measured: cursor moved → its mark moved: %v (the page polls cursors every 2 s)", time.Since(sent).Round(time.Millisecond))
	if n := evalJS[int](t, b, `document.querySelectorAll('.cursor[data-client=`+cursorClient+`]').length`); n != 1 {
		t.Errorf("%d marks of cursor %s after it moved, want 1", n, cursorClient)
	}
}

// compaction: at a leaf past a compaction the context starts with pi's
// compaction summary, and the page marks the cut after it in both
// columns; the compaction entries are drawn as what they are.
func (s *suite) compaction(t *testing.T) {
	b, v := s.b, s.compact
	b.open(t, "#/s/"+v.exp.SessionID+"/e/"+v.exp.LeafID)
	b.poll(t, "the compacted session with its leaf's context", sessionReady(v.exp.LeafID)+
		` && document.querySelectorAll('#context-agent .message').length > 0`, viewTimeout)
	for _, col := range []string{"#context-agent", "#context-llm"} {
		first := evalJS[string](t, b, `document.querySelector(`+js(col+` .message`)+`)?.dataset.role ?? ''`)
		cut := evalJS[bool](t, b, `(m => !!m && m.nextElementSibling?.classList.contains('cut'))(document.querySelector(`+js(col+` .message`)+`))`)
		if col == "#context-agent" && first != "compactionSummary" {
			t.Errorf("%s starts with a %q message, want pi's compactionSummary", col, first)
		}
		if !cut {
			t.Errorf("%s: no .cut right after the first message (the compaction summary)", col)
		}
	}
	want := strings.Count(string(v.file), `"type":"compaction"`)
	// The rows are drawn in the frame after the scroll: wait for the top's.
	evalJS[chromedp.Void](t, b, `document.querySelector('#tree-scroll').scrollTop = 0`)
	b.poll(t, "the tree at its top", `!!document.querySelector(`+js(rowSel(v.exp.Tree[0].ID))+`)`, viewTimeout)
	if got := evalJS[int](t, b, `document.querySelectorAll('div.row[data-type=compaction]').length`); got == 0 || got > want {
		t.Errorf("%d rows drawn as compactions, want between 1 and the file's %d", got, want)
	}
	list, _ := rows(t, b)
	compactions := 0
	for _, r := range list {
		if v.kinds[r.ID] != "compaction" {
			continue
		}
		compactions++
		if r.Type != "compaction" {
			t.Errorf("row %s is a compaction in the session file: data-type %q, want compaction", r.ID, r.Type)
		}
	}
	if compactions == 0 {
		t.Errorf("no row of a compaction drawn at the top of the tree (%d rows)", len(list))
	}
}

// resume: the node restarts while the page watches the session; the page
// says it is reconnecting, resumes the watch after the last entry it had
// (Last-Event-ID), and the next entry appears once, with none twice.
// TreeModel drops an entry it has, so the rows alone would not show a
// resume from too early: the watch requests through the proxy do.
func (s *suite) resume(t *testing.T) {
	nd, b, sid := s.nd, s.b, s.sid
	b.open(t, "#/s/"+sid+"/e/"+s.picked)
	b.poll(t, "the session view, live", sessionReady(s.picked)+` && `+liveIs("live"), viewTimeout)
	// An entry that comes through the stream: the event the page must
	// resume after.
	first := "resume00"
	nd.append(t, sid, first, nd.leaf(t, sid), "appended while the console watches, before the node stops")
	b.poll(t, "the entry appended before the stop", `!!document.querySelector(`+js(rowSel(first))+`)`, liveBound)
	lastSeq := strconv.FormatUint(nd.detail(t, sid).LastSeq, 10)
	rowsBefore := evalJS[int](t, b, rowCountJS)
	watched := len(nd.watchRequests())
	// While the node is down every request of the page fails: the
	// browser logs each, which is what a drop looks like.
	done := b.expect(func(m chromedp.ConsoleMessage) bool {
		return m.Source == "network" && (strings.Contains(m.Text, "ERR_CONNECTION_REFUSED") || strings.Contains(m.Text, "ERR_EMPTY_RESPONSE") ||
			strings.Contains(m.Text, "ERR_CONNECTION_RESET") || strings.Contains(m.Text, "status of 503"))
	})
	stopped := time.Now()
	if err := nd.Stop(30 * time.Second); err != nil {
		t.Fatalf("pi-node did not stop cleanly: %v", err)
	}
	b.poll(t, "#live saying it reconnects", liveIs("reconnecting"), viewTimeout)
	restarted := len(nd.watchRequests())
	nd.Start(t)
	testutil.WaitFor(t, time.Minute, testutil.Awaiting("pi-node /readyz after the restart", func() error { return proctest.Ready(nd.base) }))
	b.poll(t, "#live live again", liveIs("live"), testutil.Scale(30*time.Second))
	t.Logf("measured: node stopped → the page watching again: %v", time.Since(stopped).Round(time.Millisecond))
	done()
	watches := nd.watchRequests()
	t.Logf("watch requests after the stop: %d (%d after the restart); Last-Event-ID must be %s, the session's lastSeq before the stop",
		len(watches)-watched, len(watches)-restarted, lastSeq)
	switch {
	case len(watches) <= restarted:
		t.Errorf("no watch request after the restart, yet #live says live")
	case watches[restarted].lastEventID != lastSeq: // never "": lastSeq is a number
		t.Errorf("the first watch request after the restart: Last-Event-ID %q (afterSeq %q), want %s: the page does not resume after the last event it had",
			watches[restarted].lastEventID, watches[restarted].afterSeq, lastSeq)
	}
	for i, w := range watches[watched:] {
		if w.lastEventID != lastSeq {
			t.Errorf("watch request %d after the stop: Last-Event-ID %q (afterSeq %q), want %s", i+1, w.lastEventID, w.afterSeq, lastSeq)
		}
	}
	id := "resume01"
	nd.append(t, sid, id, nd.leaf(t, sid), "appended after the node came back")
	b.poll(t, "the entry appended after the restart", `!!document.querySelector(`+js(rowSel(id))+`)`, liveBound)
	if n := evalJS[int](t, b, rowCountJS); n != rowsBefore+1 {
		t.Errorf("%d rows after the restart and one append, want %d: an entry was drawn twice or lost", n, rowsBefore+1)
	}
}

// large: a 5,000-entry session opens, is virtualised, and scrolls top
// to bottom without a long frame.
func (s *suite) large(t *testing.T) {
	nd, b := s.nd, s.b
	largeID, file, root, leaves := largeSession(t)
	began := time.Now()
	if _, n := nd.importFile(t, file); n != chainLen+wide {
		t.Fatalf("large session: %d entries imported, want %d", n, chainLen+wide)
	}
	t.Logf("measured: import of %d entries (%d bytes): %v", chainLen+wide, len(file), time.Since(began).Round(time.Millisecond))
	b.open(t, "#/sessions") // from another view, as a person would come to it
	b.poll(t, "the sessions view", ready("sessions"), viewTimeout)
	began = time.Now()
	b.open(t, "#/s/"+largeID)
	b.poll(t, "the large session's view", sessionReady(root), largeBound)
	t.Logf("measured: large session (%d entries) opened → body[data-ready=true] with its rows: %v", chainLen+wide, time.Since(began).Round(time.Millisecond))
	n := evalJS[int](t, b, rowCountJS)
	t.Logf("measured: rows in the DOM at the top of %d entries: %d", chainLen+wide, n)
	if n > (chainLen+wide)/10 {
		t.Errorf("%d rows in the DOM for %d entries: the tree is not virtualised", n, chainLen+wide)
	}
	// A context of thousands of messages is drawn as its start and its
	// end (150 a side), the middle on request: the page stays small.
	msgs := evalJS[int](t, b, `document.querySelectorAll('.message').length`)
	t.Logf("measured: large session: %d elements in the page, document %d px tall, %d .message elements",
		evalJS[int](t, b, `document.getElementsByTagName('*').length`), evalJS[int](t, b, `document.documentElement.scrollHeight`), msgs)
	if msgs > 2*150 || !evalJS[bool](t, b, `!!document.querySelector('#context-agent button.more-messages')`) {
		t.Errorf("the large session's context: %d .message elements, or no button for the ones in between", msgs)
	}
	b.screenshot(t, "large-tree")
	var scroll struct {
		Height, Client, Steps int
		Frames                []float64
		Blank                 int // steps that showed no row
		Rows                  int // in the DOM at the bottom
		Bottom                []string
	}
	// About 200 frames: a few seconds on an idle machine, far more when a
	// busy CPU stretches each frame.
	raw := evalJSWithin[string](t, b, scrollJS, testutil.Scale(time.Minute))
	if err := json.Unmarshal([]byte(raw), &scroll); err != nil {
		t.Fatalf("scroll measurement: %v: %s", err, raw)
	}
	sorted := slices.Clone(scroll.Frames)
	sort.Float64s(sorted)
	var sum float64
	for _, f := range scroll.Frames {
		sum += f
	}
	if len(sorted) == 0 {
		t.Fatalf("no frame measured: %s", raw)
	}
	longest := sorted[len(sorted)-1]
	t.Logf("measured: #tree-scroll scrollHeight %d px, viewport %d px, %d steps, %d frames in %.0f ms",
		scroll.Height, scroll.Client, scroll.Steps, len(scroll.Frames), sum)
	t.Logf("measured: frame time median %.1f ms, p95 %.1f ms, longest %.1f ms; steps with no row in view: %d; rows in the DOM at the bottom: %d",
		sorted[len(sorted)/2], sorted[len(sorted)*95/100], longest, scroll.Blank, scroll.Rows)
	if scroll.Blank > 0 {
		t.Errorf("%d scroll steps showed no row in the viewport", scroll.Blank)
	}
	if scroll.Rows > (chainLen+wide)/10 {
		t.Errorf("%d rows in the DOM at the bottom: the tree is not virtualised", scroll.Rows)
	}
	var onLeaf int
	for _, id := range scroll.Bottom {
		if leaves[id] {
			onLeaf++
		}
	}
	if len(scroll.Bottom) == 0 || onLeaf == 0 {
		t.Errorf("at the bottom of the tree the rows in view are %v, want leaves of the wide entry", scroll.Bottom)
	}
	if evalJS[bool](t, b, `!!document.querySelector(`+js(rowSel(root))+`)`) {
		t.Errorf("the root's row is still in the DOM at the bottom of %d rows", chainLen+wide)
	}
	b.screenshot(t, "large-tree-bottom")

	// Scrolled away from the newest rows, an append is announced, not
	// jumped to: "1 new", which takes the user there.
	evalJS[chromedp.Void](t, b, `document.querySelector('#tree-scroll').scrollTop = 0`)
	b.poll(t, "the tree at its top", `!!document.querySelector(`+js(rowSel(root))+`)`, viewTimeout)
	parent := scroll.Bottom[len(scroll.Bottom)-1]
	nd.append(t, largeID, "newrow01", parent, "appended while the user reads the top")
	b.poll(t, "button#new-marker saying 1 new", `(m => m && !m.hidden && /\b1 new\b/.test(m.textContent))(document.querySelector('#new-marker'))`, liveBound)
	if evalJS[bool](t, b, `!!document.querySelector(`+js(rowSel(root))+`)`) == false {
		t.Error("the append moved the tree away from where the user was reading")
	}
	evalJS[chromedp.Void](t, b, `document.querySelector("#new-marker").click()`)
	b.poll(t, "the new row in view, the marker gone", `!!document.querySelector(`+js(rowSel("newrow01"))+`) && document.querySelector('#new-marker').hidden`, viewTimeout)
}

// keyboard: the tree follows the arrows and Enter; / finds the search
// from the catalog.
func (s *suite) keyboard(t *testing.T) {
	b, sid := s.b, s.sid
	b.open(t, "#/s/"+sid+"/e/"+s.branch.ID)
	b.poll(t, "the session view with "+s.branch.ID+" selected", sessionReady(s.branch.ID)+
		` && document.querySelector(`+js(rowSel(s.branch.ID))+`).getAttribute('aria-selected') === 'true'`, viewTimeout)
	list, _ := rows(t, b)
	i := slices.IndexFunc(list, func(r row) bool { return r.ID == s.branch.ID })
	if i < 0 || i+1 >= len(list) {
		t.Fatalf("no row below %s: %v", s.branch.ID, list)
	}
	next := list[i+1].ID
	b.do(t, "focus the tree", chromedp.Focus(chromedp.CSS("#tree")))
	b.do(t, "ArrowDown", chromedp.KeyEvent(kb.ArrowDown))
	b.poll(t, "ArrowDown selecting the next row "+next, `document.querySelector(`+js(rowSel(next))+`)?.getAttribute('aria-selected') === 'true' && document.querySelectorAll('div.row[aria-selected=true]').length === 1`, viewTimeout)
	b.do(t, "Enter", chromedp.KeyEvent(kb.Enter))
	b.poll(t, "Enter opening "+next, `location.hash === `+js("#/s/"+sid+"/e/"+next), viewTimeout)

	b.open(t, "#/sessions")
	b.poll(t, "the sessions view", ready("sessions"), viewTimeout)
	evalJS[chromedp.Void](t, b, `document.activeElement?.blur()`)
	b.do(t, "press /", chromedp.KeyEvent("/"))
	b.poll(t, "/ focusing #search", `document.activeElement?.id === 'search'`, viewTimeout)
	if v := evalJS[string](t, b, `document.querySelector('#search').value`); v != "" {
		t.Errorf("the / that focused #search was typed into it too: %q", v)
	}
}

// forks: a fork's lineage both ways in the session view. Opened from one
// of pi's forks of forkCase, whose head links its parent (a.fork-parent,
// as its catalog row does), the parent's head lists its forks (#forks
// a.fork-child) exactly as the API's list filtered by parentSession has
// them, in its order, each link opening that fork, whose head links back
// and lists its own forks, if it has any (no #forks otherwise). More forks than the 100 the
// head lists are listed up to 100, and said (.forks-more).
func (s *suite) forks(t *testing.T) {
	nd, b := s.nd, s.b
	parent, leaf := s.forked.exp.SessionID, s.forked.exp.LeafID
	// Two forks through the API, a moment apart: UUIDv7 ids of the same
	// minute, which only their last digits tell apart.
	fork := func() string {
		t.Helper()
		var res struct {
			SessionID string `json:"sessionId"`
		}
		body := []byte(fmt.Sprintf(`{"entryId":%q}`, leaf))
		if err := json.Unmarshal(nd.call(t, nd.writeClient, http.MethodPost, "/v1/sessions/"+parent+"/fork", body, http.StatusCreated), &res); err != nil {
			t.Fatal(err)
		}
		s.sids[res.SessionID] = true
		return res.SessionID
	}
	made := []string{fork(), fork()}
	want := nd.listWhere(t, "parentSession="+parent)
	for _, id := range made {
		if !slices.ContainsFunc(want, func(l listed) bool { return l.SessionID == id }) {
			t.Fatalf("GET /v1/sessions?parentSession=%s lists %d sessions, not the fork %s made through the API", parent, len(want), id)
		}
	}
	all := nd.list(t)

	// From pi's fork (its parentSession is the parent's file): its head
	// links the parent.
	var piFork string
	for _, l := range all {
		if l.ParentSession != nil && strings.HasSuffix(*l.ParentSession, parent+".jsonl") {
			piFork = l.SessionID
		}
	}
	if piFork == "" {
		t.Fatalf("no session of the catalog names %s's file as its parentSession: %s has no fork of pi's", parent, forkCase)
	}
	b.open(t, "#/s/"+piFork)
	b.poll(t, "pi's fork "+piFork+" linking its parent", forkPage(piFork, parent), viewTimeout)
	b.do(t, "click the fork's a.fork-parent", chromedp.Click(chromedp.CSS(`.session-head a.fork-parent`)))
	parentPage := func(n int) string {
		return sessionReady(leaf) + ` && location.hash === ` + js("#/s/"+parent) + ` && !document.querySelector('.session-head a.fork-parent')` +
			fmt.Sprintf(` && document.querySelectorAll('#forks a.fork-child').length === %d`, n)
	}
	b.poll(t, fmt.Sprintf("the parent %s listing its %d forks", parent, len(want)), parentPage(len(want)), viewTimeout)
	if !evalJS[bool](t, b, visible("#forks")) || !strings.HasPrefix(evalJS[string](t, b, `document.querySelector('#forks').textContent.trim()`), "forks:") {
		t.Errorf("#forks not shown as \"forks: …\": %q", evalJS[string](t, b, `document.querySelector('#forks').textContent`))
	}
	if evalJS[bool](t, b, `!!document.querySelector('#forks .forks-more')`) {
		t.Errorf("#forks says there are more than the %d forks the API lists", len(want))
	}
	type forkLink struct {
		Href  string `json:"href"`
		Shown string `json:"shown"`
		Title string `json:"title"`
	}
	links := evalJS[[]forkLink](t, b, `[...document.querySelectorAll('#forks a.fork-child')].map(a => ({
		href: a.getAttribute('href'), shown: a.textContent, title: a.title}))`)
	for i, l := range want {
		got := links[i]
		if got.Href != "#/s/"+l.SessionID {
			t.Errorf("#forks link %d: href %q, want #/s/%s (the API's fork %d, in its order)", i, got.Href, l.SessionID, i)
			continue
		}
		if !strings.Contains(got.Title, l.SessionID) || l.Name != nil && !strings.Contains(got.Title, *l.Name) {
			t.Errorf("#forks link to %s: title %q, want its full id and name (%v)", l.SessionID, got.Title, l.Name)
		}
		forkShown(t, "a.fork-child", parent, strings.Trim(got.Shown, "… "), l.SessionID, all)
	}
	b.screenshot(t, "session-forks")

	// Each link opens its fork, which links back and shows its own forks
	// only if it has some (pi's fork of the parent has one of pi's).
	for i, l := range want {
		if i > 0 {
			b.do(t, "back to the parent", chromedp.NavigateBack())
			b.poll(t, "the parent again", parentPage(len(want)), viewTimeout)
		}
		b.do(t, "click the fork link to "+l.SessionID, chromedp.Click(chromedp.CSS(`#forks a.fork-child[href=`+js("#/s/"+l.SessionID)+`]`)))
		b.poll(t, "the fork "+l.SessionID+" linking back to "+parent, forkPage(l.SessionID, parent), viewTimeout)
		own := len(nd.listWhere(t, "parentSession="+l.SessionID))
		if own == 0 && evalJS[bool](t, b, visible("#forks")) {
			t.Errorf("fork %s, which has no forks, shows #forks: %q", l.SessionID, evalJS[string](t, b, `document.querySelector('#forks').textContent`))
		}
		if own > 0 {
			b.poll(t, fmt.Sprintf("the fork %s listing its %d forks", l.SessionID, own), fmt.Sprintf(`document.querySelectorAll('#forks a.fork-child').length === %d`, own), viewTimeout)
		}
	}

	// More forks than the head lists: the first 100, and a note.
	for range 101 - len(want) {
		fork()
	}
	b.open(t, "#/s/"+parent)
	b.poll(t, "the parent listing 100 of its 101 forks", parentPage(100)+` && !!document.querySelector('#forks .forks-more')`, viewTimeout)
	if !evalJS[bool](t, b, visible("#forks .forks-more")) {
		t.Errorf("#forks .forks-more not shown with 101 forks")
	}
}

// forkPage is an expression: the session view of sid is ready and its head
// links its parent.
func forkPage(sid, parent string) string {
	return ready("session") + ` && location.hash === ` + js("#/s/"+sid) +
		` && document.querySelector('.session-head a.fork-parent')?.getAttribute('href') === ` + js("#/s/"+parent)
}

// cluster: the cluster view names the node and, with the read token it
// was given, the session stream with its leader (the status reply's
// "cluster", which every token gets), and no note that it is missing.
func (s *suite) cluster(t *testing.T) {
	b := s.b
	b.open(t, "#/cluster")
	b.poll(t, "the cluster view", ready("cluster")+` && !!document.querySelector('table#nodes')`, viewTimeout)
	b.poll(t, "table#nodes naming the node", `document.querySelector('table#nodes').textContent.includes(`+js(nodeName)+`)`, viewTimeout)
	b.poll(t, "table#streams with PI_SESSIONS and its leader, for a read token",
		`document.querySelector('table#streams tr[data-stream="PI_SESSIONS"] td.leader')?.textContent === `+js(nodeName), viewTimeout)
	if evalJS[bool](t, b, `!!document.querySelector('#cluster-note')`) {
		t.Errorf("#cluster-note shown with a cluster in the reply: %q", evalJS[string](t, b, `document.querySelector('#cluster-note').textContent`))
	}
	// Every time shown has the catalog's 24-hour format, the refresh's
	// too (it once had the locale's 12-hour clock).
	b.poll(t, "#cluster-updated after a refresh", `!!document.querySelector('#cluster-updated').dataset.at`, viewTimeout)
	stamp := regexp.MustCompile(`^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$`)
	if got := evalJS[string](t, b, `document.querySelector('#cluster-updated').textContent.trim()`); !stamp.MatchString(strings.TrimPrefix(got, "updated ")) {
		t.Errorf("#cluster-updated = %q, want \"updated YYYY-MM-DD HH:MM:SS\", the console's one format", got)
	}
	b.screenshot(t, "cluster")
}

// export: the export links save the session as the API exports it, and
// the branch as its header and the path's lines.
func (s *suite) export(t *testing.T) {
	nd, b, auth, sid := s.nd, s.b, s.auth, s.sid
	b.open(t, "#/s/"+sid+"/e/"+s.picked)
	b.poll(t, "the session view", sessionReady(s.picked), viewTimeout)
	b.poll(t, "a#export with a blob: URL", `document.querySelector('a#export')?.href.startsWith('blob:')`, viewTimeout)
	if name := evalJS[string](t, b, `document.querySelector('a#export').getAttribute('download') ?? ''`); name != sid+".jsonl" {
		t.Errorf("a#export download=%q, want %q", name, sid+".jsonl")
	}
	want := nd.call(t, nd.readClient, http.MethodGet, "/v1/sessions/"+sid+"/export", nil, http.StatusOK)
	got, name := b.download(t, "a#export")
	t.Logf("a#export saved %s, %d bytes", name, len(got))
	if !bytes.Equal(got, want) {
		t.Errorf("a#export's file differs from GET /v1/sessions/%s/export: %s", sid, firstLineDiff(got, want))
	}
	// The branch: the header, then the path's lines as the export has them.
	lines := bytes.SplitAfter(want, []byte("\n"))
	byID := map[string][]byte{}
	for _, l := range lines[1:] {
		var e struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(l, &e) == nil && e.ID != "" {
			byID[e.ID] = l
		}
	}
	branchWant := slices.Clone(lines[0])
	for _, id := range auth.pathTo(t, s.picked) {
		branchWant = append(branchWant, byID[id]...)
	}
	b.poll(t, "a#export-branch with a blob: URL", `document.querySelector('a#export-branch')?.href.startsWith('blob:')`, viewTimeout)
	got, name = b.download(t, "a#export-branch")
	t.Logf("a#export-branch saved %s, %d bytes", name, len(got))
	if !bytes.Equal(got, branchWant) {
		t.Errorf("a#export-branch's file is not the header and the path to %s: %s", s.picked, firstLineDiff(got, branchWant))
	}
}

// checkCatalog holds the sessions view to the API's list: a row for every
// session, its entry count, newest first, fork links.
func checkCatalog(t *testing.T, b *tab, list []listed, imported map[string]bool) {
	t.Helper()
	type catalogRow struct {
		ID      string `json:"id"`
		Entries string `json:"entries"`
		Fork    string `json:"fork"`
		Shown   string `json:"shown"` // the fork link's text
	}
	b.poll(t, "a row for every session", fmt.Sprintf(`document.querySelectorAll('table#sessions tbody tr[data-session]').length >= %d`, len(imported)), viewTimeout)
	got := evalJS[[]catalogRow](t, b, `[...document.querySelectorAll('table#sessions tbody tr[data-session]')].map(r => ({
		id: r.dataset.session, entries: r.querySelector('.entries')?.textContent ?? '',
		fork: r.querySelector('a.fork-parent')?.getAttribute('href') ?? '',
		shown: r.querySelector('a.fork-parent')?.textContent ?? ''}))`)
	shown := map[string]catalogRow{}
	var order []string
	for _, r := range got {
		shown[r.ID] = r
		order = append(order, r.ID)
	}
	digits := regexp.MustCompile(`\D`)
	uuid := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	modified := map[string]time.Time{}
	for _, s := range list {
		modified[s.SessionID] = s.Modified
		r, ok := shown[s.SessionID]
		if !ok {
			t.Errorf("no row tr[data-session=%s] (%d rows)", s.SessionID, len(got))
			continue
		}
		if n, err := strconv.Atoi(digits.ReplaceAllString(r.Entries, "")); err != nil || n != s.EntryCount {
			t.Errorf("session %s: .entries %q, the API's entryCount is %d", s.SessionID, r.Entries, s.EntryCount)
		}
		if s.ParentSession == nil {
			continue
		}
		// pi names the parent by its file, whose name ends in the
		// parent's id.
		ids := uuid.FindAllString(*s.ParentSession, -1)
		switch {
		case r.Fork == "":
			t.Errorf("session %s is a fork of %q: no a.fork-parent", s.SessionID, *s.ParentSession)
		case len(ids) > 0 && r.Fork != "#/s/"+ids[len(ids)-1]:
			t.Errorf("session %s: a.fork-parent href %q, want #/s/%s (the parent's id in %q)", s.SessionID, r.Fork, ids[len(ids)-1], *s.ParentSession)
		case len(ids) > 0:
			forkShown(t, "a.fork-parent", s.SessionID, strings.Trim(r.Shown, "… "), ids[len(ids)-1], list)
		}
	}
	for i := 1; i < len(order); i++ {
		if a, b := modified[order[i-1]], modified[order[i]]; a.Before(b) {
			t.Errorf("rows not newest first: %s (modified %v) above %s (%v)", order[i-1], a, order[i], b)
			break
		}
	}
}

// forkShown: the text of session sid's link to target (a.fork-parent to
// its parent, a.fork-child to a fork; its ellipsis trimmed) is a part of
// target's id that no other listed session's id has, so that forks of
// different parents, and a session's forks, are told apart (UUIDv7 ids of
// the same minute share their first 8 digits).
func forkShown(t *testing.T, link, sid, shown, target string, list []listed) {
	t.Helper()
	if shown == "" || !strings.Contains(target, shown) {
		t.Errorf("session %s: %s shows %q, not a part of the id %s it links to", sid, link, shown, target)
		return
	}
	for _, o := range list {
		if o.SessionID != target && strings.Contains(o.SessionID, shown) {
			t.Errorf("session %s: %s shows %q, which session %s's id has too: it does not tell %s", sid, link, shown, o.SessionID, target)
			return
		}
	}
}

// checkContext holds the context panel of entry id to pi's context for
// that leaf: the raw agent and LLM replies, and the messages drawn.
func checkContext(t *testing.T, b *tab, v *vector, id string) {
	t.Helper()
	var want tree.Value
	contexts, _ := conformance.Field(conformance.MustValue(t, v.expected), "contexts")
	for _, c := range contexts.Arr {
		if l, ok := conformance.Field(c, "leafId"); ok && l.Kind == tree.KindString && l.Str == id {
			want = c
		}
	}
	if want.Kind != tree.KindObject {
		t.Fatalf("expected.json has no context for %s", id)
	}
	b.poll(t, "pre#context-json for "+id, `JSON.parse(document.querySelector('pre#context-json').textContent).leafId === `+js(id), viewTimeout)
	agent := conformance.MustValue(t, []byte(evalJS[string](t, b, `document.querySelector('pre#context-json').textContent`)))
	for _, field := range []string{"leafId", "path", "thinkingLevel", "model", "messages"} {
		g, ok := conformance.Field(agent, field)
		w, _ := conformance.Field(want, field)
		if !ok {
			t.Errorf("pre#context-json has no %s", field)
		} else if d := conformance.Diff("context-json."+field, g, w); d != "" {
			t.Errorf("pre#context-json is not pi's context for %s: %s", id, d)
		}
	}
	b.poll(t, "pre#context-llm-json for "+id, `JSON.parse(document.querySelector('pre#context-llm-json').textContent).leafId === `+js(id), viewTimeout)
	llm := conformance.MustValue(t, []byte(evalJS[string](t, b, `document.querySelector('pre#context-llm-json').textContent`)))
	g, _ := conformance.Field(llm, "messages")
	w, _ := conformance.Field(want, "llmMessages")
	if d := conformance.Diff("context-llm-json.messages", g, w); d != "" {
		t.Errorf("pre#context-llm-json's messages are not pi's llmMessages for %s: %s", id, d)
	}
	// The messages drawn side by side, one .message a message, in order.
	for _, side := range []struct{ sel, field string }{{"#context-agent", "messages"}, {"#context-llm", "llmMessages"}} {
		w, _ := conformance.Field(want, side.field)
		var roles []string
		for _, m := range w.Arr {
			if r, ok := conformance.Field(m, "role"); ok {
				roles = append(roles, r.Str)
			}
		}
		got := evalJS[[]string](t, b, `[...document.querySelectorAll(`+js(side.sel+` .message[data-role]`)+`)].map(m => m.dataset.role)`)
		if !slices.Equal(got, roles) {
			t.Errorf("%s draws roles %v, want %v", side.sel, got, roles)
		}
	}
}

func ids(nodes []treeNode) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.ID)
	}
	return out
}

// firstLineDiff says where two JSONL files first differ.
func firstLineDiff(got, want []byte) string {
	g, w := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := range max(len(g), len(w)) {
		var a, b []byte
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if !bytes.Equal(a, b) {
			return fmt.Sprintf("%d bytes, want %d; line %d: got %.200q, want %.200q", len(got), len(want), i+1, a, b)
		}
	}
	return fmt.Sprintf("%d bytes, want %d", len(got), len(want))
}
