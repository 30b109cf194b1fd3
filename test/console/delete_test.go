//go:build linux

package console

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// networkStatus matches the browser's own log line for a request answered
// with status: a check that provokes that answer expects it.
func networkStatus(status int) func(chromedp.ConsoleMessage) bool {
	return func(m chromedp.ConsoleMessage) bool {
		return m.Source == "network" && strings.Contains(m.Text, fmt.Sprintf("status of %d", status))
	}
}

// dialogOpen is an expression: the delete dialog is open.
const dialogOpen = `!!document.querySelector('#delete-dialog')?.open`

// TestConsoleDelete (its own node): Delete asks in a dialog that names the
// session and says the erasure cannot be undone. A read token's 403 is
// explained there, without the token form, and erases nothing. With a
// read and write token, a session written after the dialog opened is refused (409,
// its new last sequence named, nothing erased) and Reload shows what
// changed; confirming then erases it: the page goes back to the catalog
// with a notice, the session is gone from it and from the API, and a
// session beside it stays.
func TestConsoleDelete(t *testing.T) {
	skipUnlessBrowser(t)
	nd := startNode(t)
	var auth, other *vector
	for _, v := range loadVectors(t) {
		switch {
		case v.name == authCase:
			auth = v
		case other == nil:
			other = v
		}
	}
	if auth == nil || other == nil || auth.exp.Name == nil {
		t.Fatalf("conformance case %s (with a name) or a second case not found", authCase)
	}
	for _, v := range []*vector{auth, other} {
		if sid, _ := nd.importFile(t, v.file); sid != v.exp.SessionID {
			t.Fatalf("%s: imported as %s, pi's id is %s", v.name, sid, v.exp.SessionID)
		}
	}
	sid, name, root := auth.exp.SessionID, *auth.exp.Name, auth.exp.Tree[0].ID
	b := startTab(t, nd.specProxy(t)+"/console/", nd.readToken)
	b.open(t, "#/s/"+sid)
	b.poll(t, "the session view", sessionReady(root)+` && !document.querySelector('#delete').disabled`, viewTimeout)

	// The dialog: the session's name and id, and no way back.
	b.do(t, "click Delete", chromedp.Click(chromedp.CSS("#delete")))
	b.poll(t, "the delete dialog", dialogOpen+` && `+visible("#delete-confirm"), viewTimeout)
	text := evalJS[string](t, b, `document.querySelector('#delete-dialog').textContent`)
	for _, want := range []string{name, sid, "cannot be undone"} {
		if !strings.Contains(text, want) {
			t.Errorf("the delete dialog does not say %q: %q", want, text)
		}
	}
	if id := evalJS[string](t, b, `document.activeElement?.id ?? ''`); id != "delete-cancel" {
		t.Errorf("the dialog opened with the focus on #%s, want #delete-cancel (the safe default)", id)
	}
	b.screenshot(t, "session-delete")

	// The read token may not delete: said in the dialog, the view stays.
	done := b.expect(networkStatus(http.StatusForbidden))
	b.do(t, "confirm with the read token", chromedp.Click(chromedp.CSS("#delete-confirm")))
	b.poll(t, "#delete-status naming the write scope", visible("#delete-status")+` && /write scope/.test(document.querySelector('#delete-status').textContent)`, viewTimeout)
	done()
	if evalJS[bool](t, b, visible("#token-form")) || !evalJS[bool](t, b, dialogOpen) {
		t.Errorf("a 403 on delete left the session view: %s", b.state())
	}
	nd.detail(t, sid) // still there
	b.do(t, "Cancel", chromedp.Click(chromedp.CSS("#delete-cancel")))
	b.poll(t, "the dialog closed", `!`+dialogOpen, viewTimeout)

	// A token that reads and writes; the session written while the
	// dialog is open.
	b.token = nd.editToken
	b.open(t, "#/s/"+sid)
	b.poll(t, "the session view with a read and write token", sessionReady(root)+` && !document.querySelector('#delete').disabled && `+liveIs("live"), viewTimeout)
	b.do(t, "click Delete", chromedp.Click(chromedp.CSS("#delete")))
	b.poll(t, "the delete dialog", dialogOpen, viewTimeout)
	nd.append(t, sid, "delete01", nd.leaf(t, sid), "written while the delete dialog is open")
	now := nd.detail(t, sid).LastSeq
	done = b.expect(networkStatus(http.StatusConflict))
	b.do(t, "confirm", chromedp.Click(chromedp.CSS("#delete-confirm")))
	b.poll(t, "#delete-status saying the session changed, and Reload offered",
		visible("#delete-status")+` && document.querySelector('#delete-status').textContent.includes(`+js(strconv.FormatUint(now, 10))+`) && `+
			visible("#delete-reload")+` && !`+visible("#delete-confirm"), viewTimeout)
	done()
	t.Logf("#delete-status on a conflict: %q", evalJS[string](t, b, `document.querySelector('#delete-status').textContent`))
	if d := nd.detail(t, sid); d.LastSeq != now {
		t.Errorf("after the refused delete the session is at %d, want %d", d.LastSeq, now)
	}
	b.do(t, "Reload", chromedp.Click(chromedp.CSS("#delete-reload")))
	b.poll(t, "the session reloaded with the new entry", `!`+dialogOpen+` && `+sessionReady("delete01"), viewTimeout)

	// Confirmed: erased, back to the catalog with a notice. A watch that
	// asks again before the page leaves may meet the 404 of the erasure.
	b.do(t, "click Delete", chromedp.Click(chromedp.CSS("#delete")))
	b.poll(t, "the delete dialog", dialogOpen, viewTimeout)
	done = b.expect(networkStatus(http.StatusNotFound))
	b.do(t, "confirm", chromedp.Click(chromedp.CSS("#delete-confirm")))
	b.poll(t, "the catalog with a notice naming the session", ready("sessions")+` && location.hash === '#/sessions' && `+
		visible("#notice")+` && document.querySelector('#notice').textContent.includes(`+js(sid)+`)`, viewTimeout)
	b.poll(t, "the session beside it listed", `!!document.querySelector(`+js(`tr[data-session="`+other.exp.SessionID+`"]`)+`)`, viewTimeout)
	done()
	t.Logf("#notice: %q", evalJS[string](t, b, `document.querySelector('#notice').textContent`))
	if evalJS[bool](t, b, `!!document.querySelector(`+js(`tr[data-session="`+sid+`"]`)+`)`) {
		t.Errorf("the deleted session is still in the catalog")
	}
	if evalJS[bool](t, b, visible("#error")) {
		t.Errorf("#error after the delete: %q", evalJS[string](t, b, `document.querySelector('#error').textContent`))
	}
	b.screenshot(t, "sessions-deleted")
	nd.call(t, nd.readClient, http.MethodGet, "/v1/sessions/"+sid, nil, http.StatusNotFound)
	nd.detail(t, other.exp.SessionID)

	// The notice lasts one view.
	b.open(t, "#/cluster")
	b.poll(t, "the cluster view without the notice", ready("cluster")+` && !`+visible("#notice"), viewTimeout)
	b.checkProblems(t)
}
