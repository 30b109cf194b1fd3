package node

import (
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// TestNATSAuditThrottled: the embedded server's failed logins are audited
// within api.AuditBurst lines per client address and interval, then one
// summary; pi_nats_auth_total counts every one.
func TestNATSAuditThrottled(t *testing.T) {
	logs := &testutil.SyncBuffer{}
	l := slog.New(slog.NewTextHandler(logs, nil))
	var at atomic.Int64 // the throttle's clock (its timer reads it too)
	at.Store(time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC).UnixNano())
	now := func() time.Time { return time.Unix(0, at.Load()) }
	audit := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pi_nats_auth_total"}, []string{"outcome"})
	n := natsLogger{l: l, audit: audit, throttle: api.NewAuditThrottle(l, 0, 0, now)}
	login := func(port int) {
		n.Errorf("%s - cid:%d - %s", fmt.Sprintf("192.0.2.7:%d", port), port, `authentication error - User "guess"`)
	}
	for i := range 1000 {
		login(10000 + i)
	}
	if got := strings.Count(logs.String(), "audit: nats unauthorized"); got != api.AuditBurst {
		t.Errorf("%d audit lines for 1000 failed logins, want %d", got, api.AuditBurst)
	}
	at.Add(int64(api.AuditInterval))
	login(20000)
	if want := "audit: 1000 refusals from 192.0.2.7 in the last 10s, 990 of them suppressed"; !strings.Contains(logs.String(), want) {
		t.Errorf("no %q in:\n%s", want, logs.String())
	}
	if !strings.Contains(logs.String(), "remote=192.0.2.7:20000") {
		t.Errorf("the login of the next interval was not logged:\n%s", logs.String())
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(audit)
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || len(mfs[0].GetMetric()) != 1 {
		t.Fatalf("gather: %v %v", mfs, err)
	}
	if got := mfs[0].GetMetric()[0].GetCounter().GetValue(); got != 1001 {
		t.Errorf("pi_nats_auth_total{outcome=unauthorized} = %v, want 1001", got)
	}
}
