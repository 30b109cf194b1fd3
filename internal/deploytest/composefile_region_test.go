package deploytest

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/jetstream/embedded"
)

// TestComposeRegionFileMatchesPiNode checks deploy/compose/region.yml and
// its tiebreaker.conf without Docker: every pi-node setting is a real flag;
// each pi-node names its region and the tie-breaker; every region's
// gateways name its services, on both sides; the main regions are of equal
// size, so the meta group keeps a majority when either is lost; data on
// named volumes, /readyz probes, HTTP published on loopback only.
func TestComposeRegionFileMatchesPiNode(t *testing.T) {
	flags := piNodeFlags(t)
	f := loadComposeFile(t, filepath.Join("deploy", "compose", "region.yml"))
	piImage := makeVar(t, "IMAGE") + ":" + makeVar(t, "TAG")
	tbImage := makeVar(t, "TIEBREAKER_IMAGE") + ":" + makeVar(t, "TAG")

	members := map[string][]string{} // region -> services
	var tiebreaker, gateways string
	for _, name := range slices.Sorted(maps.Keys(f.Services)) {
		svc := f.Services[name]
		where := "service " + name
		if svc.Hostname != name {
			t.Errorf("%s: hostname %q: the gateways and routes name it by its service name", where, svc.Hostname)
		}
		checkComposeSecrets(t, where, svc)
		if svc.Image == tbImage {
			members["tiebreaker"] = append(members["tiebreaker"], name)
			continue
		}
		if svc.Image != piImage {
			t.Errorf("%s runs %s: want %s (pi-node) or %s (the tie-breaker), what make image builds", where, svc.Image, piImage, tbImage)
			continue
		}
		st := newSettings()
		for _, k := range slices.Sorted(maps.Keys(svc.Environment)) {
			st.env(t, flags, where+" environment", k, svc.Environment[k])
		}
		st.args(t, flags, where+" command", svc.Command)
		if st.values["node-name"] != name {
			t.Errorf("%s: --node-name %q, want the service name", where, st.values["node-name"])
		}
		region := st.values["region"]
		members[region] = append(members[region], name)
		if tiebreaker == "" {
			tiebreaker, gateways = st.values["tiebreaker"], st.values["gateways"]
		} else if st.values["tiebreaker"] != tiebreaker || st.values["gateways"] != gateways {
			t.Errorf("%s: --tiebreaker %q --gateways %q; the other nodes have %q %q", where, st.values["tiebreaker"], st.values["gateways"], tiebreaker, gateways)
		}
		if st.port(t, "http-listen") != "8080" || st.port(t, "client-listen") != "4222" || st.port(t, "gateway-listen") != "7222" || st.port(t, "cluster-listen") == "" {
			t.Errorf("%s: HTTP %q, NATS %q, gateway %q: the image, the probe and the gateways expect 8080, 4222 and 7222",
				where, st.values["http-listen"], st.values["client-listen"], st.values["gateway-listen"])
		}
		if st.values["home-region"] == "" || st.values["sync"] != "always" {
			t.Errorf("%s: --home-region %q --sync %q: want a home for a new deployment and --sync always", where, st.values["home-region"], st.values["sync"])
		}
		checkSecuredSettings(t, where, st, composeSecrets)
		checkFailClosed(t, where, st, composeSecrets)
		dataDir := st.values["data-dir"]
		mounted := false
		for _, v := range svc.Volumes {
			src, dst, _ := strings.Cut(v, ":")
			if _, declared := f.Volumes[src]; declared && strings.TrimSuffix(strings.SplitN(dst, ":", 2)[0], "/") == dataDir {
				mounted = true
			}
		}
		if !mounted {
			t.Errorf("%s: no named volume is mounted at --data-dir=%q (volumes %v)", where, dataDir, svc.Volumes)
		}
		if hc := svc.Healthcheck.Test; len(hc) < 2 || hc[1] != "/healthcheck" || !slices.Contains(hc, "/readyz") {
			t.Errorf("%s: healthcheck %v, want [CMD /healthcheck ... /readyz]", where, hc)
		}
		if !slices.Equal(svc.Ports, []string{"127.0.0.1::8080"}) {
			t.Errorf("%s publishes %v, want HTTP only, on loopback at a free port: [127.0.0.1::8080]", where, svc.Ports)
		}
	}

	// The gateways: every region, with exactly its services.
	gw, err := embedded.ParseGateways(gateways)
	if err != nil {
		t.Fatalf("--gateways %q: %v", gateways, err)
	}
	members[tiebreaker] = members["tiebreaker"]
	delete(members, "tiebreaker")
	if len(members) != 3 || len(members[tiebreaker]) != 1 {
		t.Fatalf("regions %v with tie-breaker %q: want two main regions and a one-server tie-breaker", members, tiebreaker)
	}
	var sizes []int
	for region, svcs := range members {
		var hosts []string
		for _, u := range gw[region] {
			hosts = append(hosts, u.Host)
		}
		var want []string
		for _, s := range svcs {
			want = append(want, s+":7222")
		}
		if slices.Sort(hosts); !slices.Equal(hosts, want) {
			t.Errorf("--gateways lists %v for region %s, which has %v", hosts, region, want)
		}
		if region != tiebreaker {
			sizes = append(sizes, len(svcs))
		}
	}
	if sizes[0] != sizes[1] {
		t.Errorf("main regions of %v nodes: with the tie-breaker, losing the larger leaves no majority of the meta group", sizes)
	}

	// The tie-breaker's own configuration names the same cluster and peers.
	conf, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "compose", "tiebreaker.conf"))
	if err != nil {
		t.Fatal(err)
	}
	tb := f.Services[members[tiebreaker][0]]
	if !slices.Contains(tb.Command, "/etc/nats/tiebreaker.conf") || !slices.Contains(tb.Volumes, "./tiebreaker.conf:/etc/nats/tiebreaker.conf:ro") {
		t.Errorf("the tie-breaker runs %v with volumes %v: want tiebreaker.conf mounted and passed with -c", tb.Command, tb.Volumes)
	}
	for _, want := range []string{
		"server_name: " + members[tiebreaker][0],
		"name: " + tiebreaker,
		"store_dir: /data",
		"listen: 0.0.0.0:7222",
		// Secured: the peers' credentials, mutual TLS, no open client port.
		`include "../../secrets/nats-peers.conf"`, // relative to /etc/nats
		"authorization: $PI_ROUTES",
		"authorization: $PI_GATEWAYS",
		`ca_file: "/secrets/ca.pem"`,
		"verify: true",
		"listen: 127.0.0.1:4222",
	} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("tiebreaker.conf lacks %q", want)
		}
	}
	remote := regexp.MustCompile(`\{name: (\w+), urls: \[([^\]]*)\]\}`)
	peers := map[string]string{}
	for _, m := range remote.FindAllStringSubmatch(string(conf), -1) {
		peers[m[1]] = m[2]
	}
	for region, svcs := range members {
		if region == tiebreaker {
			continue
		}
		var urls []string
		for _, s := range svcs {
			urls = append(urls, `"nats://`+s+`:7222"`)
		}
		if got := peers[region]; got != strings.Join(urls, ", ") {
			t.Errorf("tiebreaker.conf: gateway %s has urls [%s], want [%s]", region, got, strings.Join(urls, ", "))
		}
	}
}
