package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestServesWire: the API serves exactly wire's operations — each over
// HTTP at its route and, unless HTTP only, over NATS at its subject with
// its route in the endpoint's metadata — and no HTTP route outside wire.
func TestServesWire(t *testing.T) {
	e, _, svc := natsEnv(t)
	var want []string
	for _, o := range wire.Ops {
		want = append(want, o.Route())
	}
	want = append(want, wire.Probes...)
	want = append(want, api.OpenAPIRoute) // the contract itself, no operation
	if got := e.api.Routes(); !slices.Equal(sorted(got), sorted(want)) {
		t.Errorf("HTTP routes\n %q\nwant wire's\n %q", sorted(got), sorted(want))
	}
	endpoints := map[string]string{}
	for _, ep := range svc.Info().Endpoints {
		endpoints[ep.Subject] = ep.Metadata["http"]
	}
	for _, o := range wire.Ops {
		route, ok := endpoints[o.Subject]
		switch {
		case o.HTTPOnly() && ok:
			t.Errorf("%s is HTTP only, yet served on NATS", o.Name)
		case !o.HTTPOnly() && !ok:
			t.Errorf("%s: no NATS endpoint on %s", o.Name, o.Subject)
		case ok && route != o.Route():
			t.Errorf("%s: endpoint metadata names %q, want %q", o.Name, route, o.Route())
		}
		delete(endpoints, o.Subject)
	}
	for subj := range endpoints {
		t.Errorf("NATS endpoint %s is not in wire", subj)
	}
	// Each route reaches its operation: whatever the answer, it is not the
	// catch-all's "no route".
	sid := "01a22ba6-0000-7000-8000-000000000001"
	for _, o := range wire.Ops {
		path := strings.NewReplacer("{id}", sid, "{client}", "c1").Replace(o.Path)
		if st, b := e.do(o.Method, path, nil); st == http.StatusNotFound && strings.Contains(string(b), "no route") {
			t.Errorf("%s %s: %s", o.Method, path, b)
		}
	}
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }
