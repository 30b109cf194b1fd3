//go:build linux

package console

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/pifleet/sessionlog/internal/testutil"
)

// actionTimeout bounds one browser action (a click, an evaluation), times
// PI_TEST_SCALE: the test's own waits have their own bounds.
var actionTimeout = testutil.Scale(15 * time.Second)

// tokenKey is where the console keeps the token (the contract).
const tokenKey = "pi-console-token"

// cspReporter runs in every document before the page's scripts. Chrome logs
// most violations itself; the event catches the rest (a report-only policy
// would not stop anything, but a violation is still a bug of the page), and
// console.error is the channel the test already reads.
const cspReporter = `window.piTestCSPWatch = true;
addEventListener('securitypolicyviolation', e =>
	console.error('CSP violation: ' + e.violatedDirective + ' blocked ' + (e.blockedURI || '(inline)') + ' at ' + e.sourceFile + ':' + e.lineNumber), true);`

// tab is one headless Chromium with one tab on the console, and what the
// page has reported that the test must fail on.
type tab struct {
	ctx   context.Context
	url   string // the console: http://127.0.0.1:port/console/
	token string // the read token, for checks that start signed in
	shots string // where screenshots go

	mu       sync.Mutex
	problems []string
	allow    func(chromedp.ConsoleMessage) bool // messages a check expects
}

// startTab starts Chromium headless, without the sandbox (the tests run as
// root, where Chromium refuses it) and the GPU. Without a user-data-dir
// option chromedp gives it a temporary profile of its own, and removes it
// once it has killed the browser's children, which may outlive the browser
// and write into it (a t.TempDir could then fail to be removed).
func startTab(t *testing.T, url, token string) *tab {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", chromium, err)
	}
	b := &tab{ctx: ctx, url: url, token: token, shots: os.Getenv("PI_CONSOLE_SCREENSHOTS")}
	if b.shots == "" {
		b.shots = t.TempDir()
	} else if err := os.MkdirAll(b.shots, 0o755); err != nil {
		t.Fatal(err)
	}
	messages := chromedp.Console(ctx) // subscribes now, before any page loads
	go func() {
		for m, err := range messages {
			if err != nil {
				return // the tab is gone
			}
			b.record(m)
		}
	}()
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspReporter}); err != nil {
		t.Fatal(err)
	}
	b.selfCheck(t)
	return b
}

// selfCheck proves the watch works before anything relies on it: markup
// with an inline style, which the console's CSP refuses, must be reported.
func (b *tab) selfCheck(t *testing.T) {
	t.Helper()
	// A first visit asks the node once without a token: a node with
	// tokens refuses it, and the browser logs the 401.
	defer b.expect(network401)()
	b.do(t, "load the console", chromedp.Navigate(b.url))
	b.poll(t, "the console's first view", `!!document.body.dataset.view`, viewTimeout)
	if !evalJS[bool](t, b, `window.piTestCSPWatch === true`) {
		t.Fatal("the CSP watch did not run in the console's page")
	}
	evalJS[chromedp.Void](t, b, `document.createElement('div').innerHTML = '<b style="color: red"></b>'`)
	testutil.WaitFor(t, 10*time.Second, func() error {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, p := range b.problems {
			if strings.Contains(p, "CSP violation") {
				b.problems = nil
				return nil
			}
		}
		return fmt.Errorf("a refused inline style not reported as a problem; reported: %q", b.problems)
	})
}

// record keeps the exceptions and errors the page reports, warnings aside.
func (b *tab) record(m chromedp.ConsoleMessage) {
	if m.Type != chromedp.ConsoleException && m.Type != chromedp.ConsoleError {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.allow != nil && b.allow(m) {
		return
	}
	where := ""
	if m.URL != "" {
		where = fmt.Sprintf(" at %s:%d", m.URL, m.Line+1)
	} else if m.Stack != nil && len(m.Stack.CallFrames) > 0 {
		f := m.Stack.CallFrames[0]
		where = fmt.Sprintf(" at %s:%d (%s)", f.URL, f.LineNumber+1, f.FunctionName)
	}
	if m.Source != "" {
		where += " [" + m.Source + "]"
	}
	b.problems = append(b.problems, m.String()+where)
}

// expect lets messages that allow matches pass until the returned func is
// called: a check that provokes an error reply expects the browser's log
// line about it.
func (b *tab) expect(allow func(chromedp.ConsoleMessage) bool) func() {
	b.mu.Lock()
	b.allow = allow
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		b.allow = nil
		b.mu.Unlock()
	}
}

// checkProblems fails t with every exception, console error and CSP
// violation the page reported since the last call.
func (b *tab) checkProblems(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	problems := b.problems
	b.problems = nil
	b.mu.Unlock()
	for _, p := range problems {
		t.Errorf("the page reported: %s", p)
	}
}

// js quotes s as a JavaScript string literal (JSON's quoting is valid
// JavaScript, U+2028 and U+2029 included).
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// evalJS evaluates expr in the page (awaiting a promise) and decodes its
// value.
func evalJS[T any](t *testing.T, b *tab, expr string) T {
	t.Helper()
	return evalJSWithin[T](t, b, expr, actionTimeout)
}

// evalJSWithin is evalJS for an evaluation that takes many frames, such as
// scrolling the whole tree.
func evalJSWithin[T any](t *testing.T, b *tab, expr string, timeout time.Duration) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluating %.200s: %v", expr, err)
	}
	return v
}

// do runs browser actions (clicks, keys) within actionTimeout.
func (b *tab) do(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, actionTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v; page: %s", what, err, b.state())
	}
}

// poll waits, in the page, until expr is true (an expression that throws
// counts as false), and returns how long that took; after timeout it
// fails the test with what and the page's state.
func (b *tab) poll(t *testing.T, what, expr string, timeout time.Duration) time.Duration {
	t.Helper()
	d, err := b.tryPoll(expr, timeout)
	if err != nil {
		t.Fatalf("%s: not within %v: %v; page: %s", what, timeout, err, b.state())
	}
	return d
}

func (b *tab) tryPoll(expr string, timeout time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(b.ctx, timeout+actionTimeout)
	defer cancel()
	start := time.Now()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](
		`(() => { try { return !!(`+expr+`); } catch (e) { return false; } })()`,
		chromedp.WithPollingInterval(10*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
	return time.Since(start), err
}

// state sums the page up for a failure message.
func (b *tab) state() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { try { return JSON.stringify({
		url: location.href, view: document.body.dataset.view, ready: document.body.dataset.ready,
		error: document.querySelector('#error')?.hidden === false ? document.querySelector('#error').textContent : null,
		rows: `+rowCountJS+`,
		body: document.body.innerText.slice(0, 300) }); } catch (e) { return String(e); } })()`))
	if err != nil {
		return err.Error()
	}
	return s
}

// visible is an expression: the element sel selects is shown.
func visible(sel string) string {
	return fmt.Sprintf(`(e => !!e && !e.closest('[hidden]') && e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden')(document.querySelector(%s))`, js(sel))
}

// ready is an expression: the view has rendered and its data is drawn.
func ready(view string) string {
	return fmt.Sprintf(`document.body.dataset.view === %s && document.body.dataset.ready === 'true'`, js(view))
}

// rowSel selects the tree's row of an entry.
func rowSel(id string) string { return fmt.Sprintf(`div.row[role=treeitem][data-id=%q]`, id) }

// sessionReady is an expression: the session view shows the tree holding
// entry id (data-ready alone may still be the previous view's).
func sessionReady(id string) string {
	return ready("session") + ` && !!document.querySelector(` + js(rowSel(id)) + `)`
}

// open shows the console at hash (#/...), signed in with the read token.
// A page already signed in follows the hash as a click on a link would;
// otherwise (first visit, token form, the same hash) the page is loaded
// anew, as a shared URL is.
func (b *tab) open(t *testing.T, hash string) {
	t.Helper()
	state := evalJS[string](t, b, fmt.Sprintf(`(() => {
		if (location.origin + location.pathname !== %s) return 'elsewhere';
		if (sessionStorage.getItem(%s) !== %s || document.body.dataset.view === 'token' || !document.body.dataset.view) return 'signed out';
		if (location.hash === %s) return 'same';
		location.hash = %s;
		return 'followed';
	})()`, js(b.url), js(tokenKey), js(b.token), js(hash), js(hash)))
	if state == "followed" {
		return
	}
	if state == "elsewhere" {
		b.do(t, "load the console", chromedp.Navigate(b.url))
	}
	evalJS[chromedp.Void](t, b, fmt.Sprintf(`sessionStorage.setItem(%s, %s)`, js(tokenKey), js(b.token)))
	b.do(t, "load "+hash, chromedp.Navigate("about:blank"), chromedp.Navigate(b.url+hash))
}

// screenshot saves the whole page as name.png.
func (b *tab) screenshot(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, actionTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		// Chromium refuses a page taller than its largest surface:
		// the viewport then.
		t.Logf("screenshot %s: whole page: %v; taking the viewport", name, err)
		if png, err = chromedp.Run(ctx, chromedp.CaptureScreenshot()); err != nil {
			t.Errorf("screenshot %s: %v", name, err)
			return
		}
	}
	path := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// colorScheme emulates prefers-color-scheme ("" ends the emulation).
func (b *tab) colorScheme(t *testing.T, scheme string) {
	t.Helper()
	_, err := chromedp.Call(b.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
	if err != nil {
		t.Fatal(err)
	}
}

// download clicks the link sel as a person would and returns the file the
// browser saved, and its name. (Reading a blob: URL in the page is not an
// option: the console's CSP, connect-src 'self', forbids fetching it.)
func (b *tab) download(t *testing.T, sel string) ([]byte, string) {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(b.ctx, actionTimeout)
	defer cancel()
	yes := true
	if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir, EventsEnabled: &yes}); err != nil {
		t.Fatal(err)
	}
	progress := chromedp.BrowserEvents(ctx, browser.DownloadProgress)
	b.do(t, "click "+sel, chromedp.Click(chromedp.CSS(sel)))
	for ev, err := range progress {
		if err != nil {
			t.Fatalf("download from %s: %v", sel, err)
		}
		if ev.State == browser.DownloadProgressStateCanceled {
			t.Fatalf("download from %s canceled", sel)
		}
		if ev.State == browser.DownloadProgressStateCompleted {
			break
		}
	}
	files, err := os.ReadDir(dir)
	if err != nil || len(files) != 1 {
		t.Fatalf("download from %s: want one file in %s, got %v (%v)", sel, dir, files, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, files[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	return data, files[0].Name()
}

// network401 matches the browser's own log line for a request refused with
// 401, which a wrong token must cause.
func network401(m chromedp.ConsoleMessage) bool {
	return m.Source == "network" && strings.Contains(m.Text, "status of 401")
}
