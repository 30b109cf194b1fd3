//go:build linux

package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// searchHit is a hit of GET /v1/search, as the page must show it.
type searchHit struct {
	SessionID string  `json:"sessionId"`
	Name      *string `json:"name"`
	Cwd       string  `json:"cwd"`
	EntryID   string  `json:"entryId"`
	Type      string  `json:"type"`
	Role      string  `json:"role"`
	Timestamp string  `json:"timestamp"`
	OnPath    bool    `json:"onPath"`
	Snippet   []struct {
		Text  string `json:"text"`
		Match bool   `json:"match"`
	} `json:"snippet"`
}

// shownHit is a hit as the page draws it (li.hit).
type shownHit struct {
	Session string   `json:"session"`
	Entry   string   `json:"entry"`
	Href    string   `json:"href"`
	Title   string   `json:"title"`
	Cwd     string   `json:"cwd"`
	Kind    string   `json:"kind"`
	Type    string   `json:"type"`
	Time    string   `json:"time"`
	OffPath bool     `json:"offPath"`
	Snippet string   `json:"snippet"`
	Marks   []string `json:"marks"`
	Markup  int      `json:"markup"` // elements in the snippet other than <mark>
}

// hitsJS reads the hits the page shows, in order.
const hitsJS = `[...document.querySelectorAll('#hits li.hit')].map(li => ({
	session: li.dataset.session, entry: li.dataset.entry,
	href: li.querySelector('a.hit-open').getAttribute('href'), title: li.querySelector('a.hit-open').textContent,
	cwd: li.querySelector('.hit-cwd').textContent, kind: li.querySelector('.hit-type').textContent,
	type: li.dataset.type, time: li.querySelector('time').getAttribute('datetime'),
	offPath: !!li.querySelector('.off-path') && li.querySelector('.off-path').getClientRects().length > 0,
	snippet: li.querySelector('.snippet').textContent,
	marks: [...li.querySelectorAll('.snippet mark')].map(m => m.textContent),
	markup: li.querySelectorAll('.snippet *:not(mark)').length,
}))`

// searchFile is a pi v3 file of one session in cwd: the question (with
// markup in its text, which the page must show as text), an answer the
// session then leaves behind, a second answer under the question, and the
// session's name; every message says "quokka" (the name does not).
func searchFile(t *testing.T, cwd string) (sid string, file []byte, ids map[string]string) {
	t.Helper()
	sid = testutil.SessionID(t)
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	line := func(v any) {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(data, '\n'))
	}
	line(map[string]any{"type": "session", "version": 3, "id": sid, "timestamp": proctest.Stamp(at), "cwd": cwd})
	ids = map[string]string{"question": "q0000001", "left": "a0000001", "second": "q0000002", "name": "n0000001"}
	line(proctest.NewEntry(ids["question"], "", "Why does the quokka parser drop <b>tags</b> & <img src=x onerror=alert(1)>?", at.Add(time.Second)))
	line(proctest.NewEntry(ids["left"], ids["question"], "A first quokka answer, on the branch left behind.", at.Add(2*time.Second)))
	line(proctest.NewEntry(ids["second"], ids["question"], "The quokka again, on the default path.", at.Add(3*time.Second)))
	line(map[string]any{"type": "session_info", "id": ids["name"], "parentId": ids["second"], "timestamp": proctest.Stamp(at.Add(4 * time.Second)), "name": "parser hunt"})
	return sid, b.Bytes(), ids
}

// pagesFile is a pi v3 file of one session whose n user messages, one
// chain, all say "wombat".
func pagesFile(t *testing.T, n int) []byte {
	t.Helper()
	sid := testutil.SessionID(t)
	at := time.Date(2026, 12, 2, 11, 0, 0, 0, time.UTC)
	header, _ := json.Marshal(map[string]any{"type": "session", "version": 3, "id": sid, "timestamp": proctest.Stamp(at), "cwd": "/work/search-pages"})
	b := bytes.NewBuffer(append(header, '\n'))
	prev := ""
	for i := range n {
		id := fmt.Sprintf("w%07d", i)
		e, _ := json.Marshal(proctest.NewEntry(id, prev, fmt.Sprintf("wombat burrow number %d", i), at.Add(time.Duration(i+1)*time.Second)))
		b.Write(append(e, '\n'))
		prev = id
	}
	return b.Bytes()
}

// search asks the API (read token) for every hit of q, in one page.
func (nd *node) search(t *testing.T, query string) []searchHit {
	t.Helper()
	var res struct {
		Hits []searchHit `json:"hits"`
		Next string      `json:"next"`
	}
	if err := json.Unmarshal(nd.call(t, nd.readClient, http.MethodGet, "/v1/search?limit=100&"+query, nil, http.StatusOK), &res); err != nil {
		t.Fatal(err)
	}
	if res.Next != "" {
		t.Fatalf("search %s: more than 100 hits, the test stores a few", query)
	}
	return res.Hits
}

// waitForHits polls the API until q has want hits: the index follows the
// log, and the page asks without minSeq.
func (nd *node) waitForHits(t *testing.T, query string, want int) []searchHit {
	t.Helper()
	var hits []searchHit
	testutil.WaitFor(t, viewTimeout, testutil.Awaiting("search "+query, func() error {
		if hits = nd.search(t, query); len(hits) != want {
			return fmt.Errorf("%d hits, want %d", len(hits), want)
		}
		return nil
	}))
	return hits
}

// TestConsoleSearch: the search view asks GET /v1/search, shows each hit
// with its session, entry, time, off-path mark and snippet (the matches
// marked, the server's text as text), opens a hit in its session with
// the entry selected, pages with More, keeps to the default paths when
// asked, and shows the API's message for a query that does not parse.
func TestConsoleSearch(t *testing.T) {
	skipUnlessBrowser(t)
	nd := startNode(t)
	const cwd = "/work/search-console"
	sid, file, ids := searchFile(t, cwd)
	if got, _ := nd.importFile(t, file); got != sid {
		t.Fatalf("imported as %s, want %s", got, sid)
	}
	const pages = 12
	nd.importFile(t, pagesFile(t, pages))
	hits := nd.waitForHits(t, "q=quokka", 3)
	nd.waitForHits(t, "q=wombat", pages)

	b := startTab(t, nd.specProxy(t)+"/console/", nd.readToken)
	defer b.checkProblems(t)

	// The view, from the header's link; a query typed and sent with Enter.
	b.open(t, "#/sessions")
	b.poll(t, "the sessions view", ready("sessions"), viewTimeout)
	b.do(t, "click Search", chromedp.Click(chromedp.CSS("#nav-search")))
	b.poll(t, "the search view, its box focused", ready("search")+` && document.activeElement?.id === 'search-q'`, viewTimeout)
	b.do(t, "type a query", chromedp.SendKeys(chromedp.CSS("#search-q"), "quokka"+kb.Enter))
	b.poll(t, "the hits of quokka", ready("search")+` && document.querySelectorAll('#hits li.hit').length === 3`, viewTimeout)
	if h := evalJS[string](t, b, `location.hash`); h != "#/search?q=quokka" {
		t.Errorf("location.hash = %q, want #/search?q=quokka", h)
	}
	checkHits(t, evalJS[[]shownHit](t, b, hitsJS), hits)
	byEntry := map[string]searchHit{}
	for _, h := range hits {
		byEntry[h.EntryID] = h
	}
	if h, ok := byEntry[ids["left"]]; !ok || h.OnPath {
		t.Fatalf("the API's hit of the branch left behind: %+v (found %v), want onPath false", h, ok)
	}
	if h, ok := byEntry[ids["question"]]; !ok || !strings.Contains(joinSnippet(h), "<b>tags</b>") {
		t.Fatalf("the API's snippet of the question lacks its markup as text: %+v", h)
	}
	b.screenshot(t, "search")

	// A hit opens its session with the entry selected in the tree.
	b.do(t, "open the hit left behind", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#hits li.hit[data-entry=%q] a.hit-open`, ids["left"]))))
	b.poll(t, "the session with the hit's entry selected", sessionReady(ids["left"])+
		` && document.querySelector(`+js(rowSel(ids["left"]))+`).getAttribute('aria-selected') === 'true'`, viewTimeout)
	if h, want := evalJS[string](t, b, `location.hash`), "#/s/"+sid+"/e/"+ids["left"]; h != want {
		t.Errorf("after opening a hit location.hash = %q, want %q", h, want)
	}

	// Back: the hits again; the default paths only.
	b.open(t, "#/search?q=quokka&branch=path")
	b.poll(t, "the hits on the default paths", ready("search")+` && document.querySelectorAll('#hits li.hit').length === 2`, viewTimeout)
	checkHits(t, evalJS[[]shownHit](t, b, hitsJS), nd.search(t, "q=quokka&branch=path"))
	if v := evalJS[string](t, b, `document.querySelector('#search-branch').value`); v != "path" {
		t.Errorf("#search-branch = %q with branch=path", v)
	}

	// Pages of 5: More until every hit is shown, each once.
	b.open(t, "#/search?q=wombat&limit=5")
	b.poll(t, "the first page", ready("search")+` && document.querySelectorAll('#hits li.hit').length === 5`, viewTimeout)
	for n := 5; n < pages; {
		if !evalJS[bool](t, b, visible("#search-more")) {
			t.Fatalf("%d of %d hits shown and no More; page: %s", n, pages, b.state())
		}
		b.do(t, "click More", chromedp.Click(chromedp.CSS("#search-more")))
		n = min(n+5, pages)
		b.poll(t, fmt.Sprintf("%d hits after More", n), ready("search")+fmt.Sprintf(` && document.querySelectorAll('#hits li.hit').length === %d`, n), viewTimeout)
	}
	if evalJS[bool](t, b, visible("#search-more")) {
		t.Errorf("More still shown with every hit on the page")
	}
	shown := evalJS[[]shownHit](t, b, hitsJS)
	all := nd.search(t, "q=wombat")
	var got, want []string
	for _, h := range shown {
		got = append(got, h.Session+"/"+h.Entry)
	}
	for _, h := range all {
		want = append(want, h.SessionID+"/"+h.EntryID)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the pages show %v, the API's one page %v", got, want)
	}

	// / focuses the view's box, not the header's name search.
	b.do(t, "focus the page", chromedp.Click(chromedp.CSS(".search-view h1")))
	b.do(t, "press /", chromedp.KeyEvent("/"))
	b.poll(t, "/ focusing #search-q", `document.activeElement?.id === 'search-q'`, viewTimeout)
	if v := evalJS[string](t, b, `document.querySelector('#search-q').value`); v != "wombat" {
		t.Errorf("#search-q = %q after /, want the query as it was", v)
	}

	// A query that does not parse: the API's message, the box marked.
	const bad = `quokka "unclosed`
	var apiErr struct {
		Error struct {
			Code, Message, Field string
		} `json:"error"`
	}
	if err := json.Unmarshal(nd.call(t, nd.readClient, http.MethodGet, "/v1/search?q="+url.QueryEscape(bad), nil, http.StatusBadRequest), &apiErr); err != nil {
		t.Fatal(err)
	}
	if apiErr.Error.Code != "invalid" || apiErr.Error.Field != "q" || apiErr.Error.Message == "" {
		t.Fatalf("the API's answer to %s: %+v, want invalid, field q", bad, apiErr.Error)
	}
	defer b.expect(network400)()
	b.do(t, "clear the box", chromedp.Clear(chromedp.CSS("#search-q")))
	b.do(t, "type a bad query", chromedp.SendKeys(chromedp.CSS("#search-q"), bad+kb.Enter))
	b.poll(t, "#error with the API's message", visible("#error")+
		` && document.querySelector('#error').textContent.includes(`+js(apiErr.Error.Message)+`)`+
		` && document.querySelector('#search-q').getAttribute('aria-invalid') === 'true'`, viewTimeout)
	if n := evalJS[int](t, b, `document.querySelectorAll('#hits li.hit').length`); n != 0 {
		t.Errorf("%d hits shown for a query that does not parse", n)
	}
	b.screenshot(t, "search-invalid")
}

// checkHits compares the hits the page shows with the API's, in order.
func checkHits(t *testing.T, shown []shownHit, hits []searchHit) {
	t.Helper()
	if len(shown) != len(hits) {
		t.Fatalf("the page shows %d hits, the API has %d", len(shown), len(hits))
	}
	for i, h := range hits {
		s := shown[i]
		title := h.SessionID
		if h.Name != nil {
			title = *h.Name
		}
		kind := h.Type
		if h.Role != "" {
			kind += " · " + h.Role
		}
		var marks []string
		for _, p := range h.Snippet {
			if p.Match {
				marks = append(marks, p.Text)
			}
		}
		want := shownHit{Session: h.SessionID, Entry: h.EntryID, Href: "#/s/" + h.SessionID + "/e/" + h.EntryID, Title: title,
			Cwd: h.Cwd, Kind: kind, Type: h.Type, Time: h.Timestamp, OffPath: !h.OnPath, Snippet: joinSnippet(h), Marks: marks}
		if s.Marks == nil {
			s.Marks = []string{}
		}
		if want.Marks == nil {
			want.Marks = []string{}
		}
		if s.Markup != 0 {
			t.Errorf("hit %d (%s): the snippet holds %d elements besides <mark>: the server's text became markup", i, h.EntryID, s.Markup)
		}
		s.Markup = 0
		if fmt.Sprint(s) != fmt.Sprint(want) {
			t.Errorf("hit %d:\n shown %+v\n want  %+v", i, s, want)
		}
		if len(marks) == 0 {
			t.Errorf("hit %d (%s): the API marks no match in its snippet", i, h.EntryID)
		}
	}
}

func joinSnippet(h searchHit) string {
	var b strings.Builder
	for _, p := range h.Snippet {
		b.WriteString(p.Text)
	}
	return b.String()
}

// network400 matches the browser's own log line for a request answered
// 400, which a query that does not parse must get.
func network400(m chromedp.ConsoleMessage) bool {
	return m.Source == "network" && strings.Contains(m.Text, "status of 400")
}
