package node

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestConsoleFlag: the web console is served only with --console, on the
// API listener, its pages without a token (they hold no data) while the
// API they call still wants one.
func TestConsoleFlag(t *testing.T) {
	for _, on := range []bool{false, true} {
		m, _ := startNode(t, func(c *Config) {
			c.Console = on
			c.HTTPToken = "s3cret-and-long-enough"
		})
		base := "http://" + m.HTTPAddr
		code, body := httpGet(t, base+"/console/")
		switch {
		case on && (code != 200 || !strings.Contains(body, "<html")):
			t.Errorf("--console: /console/ %d %.100s", code, body)
		case !on && code != 404:
			t.Errorf("without --console: /console/ %d, want 404", code)
		}
		if code, _ := httpGet(t, base+"/v1/sessions"); code != http.StatusUnauthorized {
			t.Errorf("console %v: /v1/sessions without a token: %d, want 401", on, code)
		}
		_ = m.Close(context.Background())
	}
}
