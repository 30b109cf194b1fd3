package api

import "testing"

// A client's reply subject, also wrapped by a gateway, is a request; a
// server's ($JS.ACK, $JS.FC, also wrapped) or none is not.
func TestNotARequest(t *testing.T) {
	for reply, want := range map[string]bool{
		"_INBOX.abc.def":                    true,
		"_GR_.Xy12ab.Qw34cd._INBOX.abc.def": true,
		"custom.inbox.1":                    true,
		"":                                  false,
		"$JS.ACK.PI_SESSIONS.c1.1.9.1.1796427634277809453.0":  false,
		"$JS.ACK.dom.acc.PI_SESSIONS.c1.1.9.1.17964.0.x":      false,
		"$JS.FC.PI_SESSIONS.c1.abcd":                          false,
		"_GR_.Xy12ab.Qw34cd.$JS.ACK.PI_SESSIONS.c1.1.2.3.4.0": false,
	} {
		if got := notARequest(reply) == ""; got != want {
			t.Errorf("reply %q: a request %v, want %v (%s)", reply, got, want, notARequest(reply))
		}
	}
}
