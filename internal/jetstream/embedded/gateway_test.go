package embedded

import (
	"net/url"
	"strings"
	"testing"
)

func TestParseGateways(t *testing.T) {
	gws, err := ParseGateways("A=nats://10.0.0.1:7222,10.0.0.2:7222; B=nats://b:7222", "T=nats://t:7222;B=nats://b2:7222")
	if err != nil {
		t.Fatal(err)
	}
	if len(gws) != 3 || len(gws["A"]) != 2 || len(gws["B"]) != 2 || gws["A"][1].String() != "nats://10.0.0.2:7222" {
		t.Fatalf("parsed %v", gws)
	}
	back, err := ParseGateways(FormatGateways(gws))
	if err != nil || FormatGateways(back) != FormatGateways(gws) {
		t.Fatalf("round trip: %v %v", FormatGateways(back), err)
	}
	for _, bad := range []string{"A", "=nats://a:1", "A=", "A=nats://a", "A=http://a:1", "a.b=nats://a:1"} {
		if _, err := ParseGateways(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestGatewayOptions(t *testing.T) {
	gws := map[string][]*url.URL{"A": {{Scheme: "nats", Host: "127.0.0.1:7001"}}, "B": {{Scheme: "nats", Host: "127.0.0.1:7002"}}}
	s := NewServer(t.TempDir())
	s.ClusterName, s.ClusterListen, s.Routes = "A", "127.0.0.1:6001", []*url.URL{{Scheme: "nats-route", Host: "127.0.0.1:6001"}}
	s.GatewayName, s.GatewayListen, s.Gateways = "A", "127.0.0.1:0", gws
	opts, err := s.options()
	if err != nil {
		t.Fatal(err)
	}
	if opts.Gateway.Name != "A" || opts.Gateway.Port != -1 || len(opts.Gateway.Gateways) != 1 || opts.Gateway.Gateways[0].Name != "B" {
		t.Fatalf("gateway options %+v", opts.Gateway)
	}
	s.GatewayName = "B"
	if _, err := s.options(); err == nil || !strings.Contains(err.Error(), "must equal the cluster name") {
		t.Errorf("gateway name other than the cluster's: %v", err)
	}
	s.GatewayName = ""
	if _, err := s.options(); err == nil {
		t.Error("gateways without a gateway name: no error")
	}
	s.GatewayName, s.Gateways = "A", map[string][]*url.URL{"A": gws["A"]}
	if _, err := s.options(); err == nil || !strings.Contains(err.Error(), "no other region") {
		t.Errorf("no remote region: %v", err)
	}
}
