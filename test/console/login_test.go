//go:build linux

package console

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConsoleTokenless: a node without tokens (loopback, the default)
// serves every request without one, so the console opens straight to the
// sessions view: no form, no token kept, nothing to forget.
func TestConsoleTokenless(t *testing.T) {
	skipUnlessBrowser(t)
	nd := startNodeAuth(t, false)
	sid, _ := nd.importFile(t, loadVectors(t)[0].file)
	b := startTab(t, nd.specProxy(t)+"/console/", "")
	b.do(t, "load the console", chromedp.Navigate("about:blank"), chromedp.Navigate(b.url))
	b.poll(t, "the sessions view without a token", ready("sessions")+
		` && !!document.querySelector(`+js(`tr[data-session="`+sid+`"]`)+`)`, viewTimeout)
	for _, sel := range []string{"#token-form", "#error", "#token-clear"} {
		if evalJS[bool](t, b, visible(sel)) {
			t.Errorf("%s shown on a node without tokens; page: %s", sel, b.state())
		}
	}
	if got := evalJS[string](t, b, `sessionStorage.getItem(`+js(tokenKey)+`) ?? ''`); got != "" {
		t.Errorf("sessionStorage %s = %q without any token given", tokenKey, got)
	}
	b.checkProblems(t)
}

// tokenLink: a link carrying the token (#token=…) signs in without the
// form, keeps the token where a typed one goes, and leaves no trace of it
// in the address bar.
func (s *suite) tokenLink(t *testing.T) {
	nd, b := s.nd, s.b
	evalJS[chromedp.Void](t, b, `sessionStorage.removeItem(`+js(tokenKey)+`)`)
	b.do(t, "load a link with the token", chromedp.Navigate("about:blank"), chromedp.Navigate(b.url+"#token="+nd.readToken))
	b.poll(t, "the sessions view from the link", ready("sessions"), viewTimeout)
	if evalJS[bool](t, b, visible("#token-form")) {
		t.Errorf("the token form shown after a link with the token")
	}
	if got := evalJS[string](t, b, `sessionStorage.getItem(`+js(tokenKey)+`) ?? ''`); got != nd.readToken {
		t.Errorf("sessionStorage %s = %q, want the link's token", tokenKey, got)
	}
	if href := evalJS[string](t, b, `location.href`); strings.Contains(href, nd.readToken) || strings.Contains(href, "token=") {
		t.Errorf("the address bar still holds the token: %s", href)
	}
	checkCatalog(t, b, nd.list(t), s.sids)
}
