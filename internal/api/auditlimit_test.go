package api_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestAuditThrottled: refused tokens were audited one line each, so an
// anonymous client filled the log at its request rate. Now 1000 refusals
// from one address make AuditBurst lines and, once the interval ends, one
// summary with the count; another address is logged on meanwhile, a
// refusal in the next interval is logged again, and the metric counts
// every one.
func TestAuditThrottled(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)}
	e := newEnv(t, func(c *api.Config) { c.Token = "s3cret"; c.Now = clock.now })
	refuse := func(remote string) {
		t.Helper()
		r := httptest.NewRequest(http.MethodGet, "/v1/sessions", nil)
		r.RemoteAddr = remote
		w := httptest.NewRecorder()
		e.api.Handler().ServeHTTP(w, r)
		if w.Code != http.StatusUnauthorized {
			t.Fatalf("without a token: %d", w.Code)
		}
	}
	count := func(s string) int { return strings.Count(e.logs.String(), s) }
	const attacker, other = "192.0.2.7", "198.51.100.1"
	for i := range 1000 {
		refuse(fmt.Sprintf("%s:%d", attacker, 10000+i))
		if i == 500 {
			refuse(other + ":443")
		}
	}
	if n := count("audit: unauthorized"); n != api.AuditBurst+1 {
		t.Errorf("%d audit lines for 1001 refusals, want %d (the burst and the other address):\n%s", n, api.AuditBurst+1, e.logs.String())
	}
	if n := count("remote=" + other + ":443"); n != 1 {
		t.Errorf("the other address's refusal was logged %d times, want 1", n)
	}
	if n := count("refusals from"); n != 0 {
		t.Errorf("a summary before the interval ended:\n%s", e.logs.String())
	}

	clock.add(api.AuditInterval)
	refuse(attacker + ":20000")
	summary := fmt.Sprintf("audit: 1000 refusals from %s in the last %s, %d of them suppressed", attacker, api.AuditInterval, 1000-api.AuditBurst)
	if n := count(summary); n != 1 {
		t.Errorf("%d lines with %q, want 1:\n%s", n, summary, e.logs.String())
	}
	if n := count("refusals from"); n != 1 {
		t.Errorf("%d summary lines, want 1 (the other address stayed within its burst)", n)
	}
	if n := count("remote=" + attacker + ":20000"); n != 1 {
		t.Errorf("the refusal of the next interval was not logged:\n%s", e.logs.String())
	}
	_, metrics := e.do("GET", "/metrics", nil)
	if want := `pi_api_auth_total{outcome="unauthorized"} 1002`; !strings.Contains(string(metrics), want) {
		t.Errorf("metrics lack %s", want)
	}
}

// TestAuditThrottleSumsUpAQuietSource: the summary comes when the interval
// ends even if the source says nothing more.
func TestAuditThrottleSumsUpAQuietSource(t *testing.T) {
	logs := &testutil.SyncBuffer{}
	clock := &fakeClock{t: time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)}
	a := api.NewAuditThrottle(slog.New(slog.NewTextHandler(logs, nil)), 1, time.Millisecond, clock.now)
	for i := range 3 {
		if logged := a.Refused("192.0.2.7"); logged != (i == 0) {
			t.Errorf("refusal %d logged: %v", i, logged)
		}
	}
	// The throttle's timer finds the interval over by the clock it was given.
	clock.add(time.Millisecond)
	testutil.WaitFor(t, 10*time.Second, func() error {
		if !strings.Contains(logs.String(), "audit: 3 refusals from 192.0.2.7") {
			return fmt.Errorf("no summary in %q", logs.String())
		}
		return nil
	})
}
