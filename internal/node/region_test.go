package node

import (
	"io"
	"net/url"
	"slices"
	"strings"
	"testing"
)

func TestParseRegionFlags(t *testing.T) {
	env := map[string]string{
		"PI_NODE_REGION":     "eu",
		"PI_NODE_TIEBREAKER": "tb",
		"PI_NODE_GATEWAYS":   "eu=nats://e:7222;us=nats://u:7222",
	}
	c := DefaultConfig()
	err := c.ParseFlags([]string{"--gateway-listen", "0.0.0.0:7222", "--cluster-listen", "0.0.0.0:6222",
		"--gateways", "eu=nats://e1:7222,nats://e2:7222", "--gateways", "us=nats://u:7222;tb=nats://t:7222",
		"--home-region", "eu", "--insecure"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	r := c.RegionConfig
	// The command line's --gateways replace the environment's, and repeat.
	if r.Region != "eu" || r.Tiebreaker != "tb" || r.HomeRegion != "eu" || len(r.Gateways) != 3 || len(r.Gateways["eu"]) != 2 {
		t.Fatalf("region config %+v", r)
	}
	// The region is the cluster; a one-node region routes to itself.
	if c.ClusterName != "eu" || len(c.Routes) != 1 || c.Routes[0].Host != "127.0.0.1:6222" {
		t.Fatalf("cluster %q, routes %v", c.ClusterName, c.Routes)
	}
	if r.RecordBucket != "PI_REGION" || r.RecordReplicas != 1 {
		t.Fatalf("record defaults %+v", r)
	}
}

func TestParseRegionFlagsErrors(t *testing.T) {
	gw := "a=nats://a:1;b=nats://b:1"
	cases := map[string][]string{
		"need --region":          {"--gateways", gw},
		"needs --tiebreaker":     {"--region", "a"},
		"region name":            {"--region", "a.b", "--tiebreaker", "t"},
		"needs --gateway-listen": {"--region", "a", "--tiebreaker", "t"},
		"needs --cluster-listen": {"--region", "a", "--tiebreaker", "t", "--gateway-listen", ":7222", "--gateways", gw},
		"must equal --region":    {"--region", "a", "--tiebreaker", "t", "--gateway-listen", ":7222", "--gateways", gw, "--cluster-listen", ":6222", "--cluster-name", "x"},
		"configure the embedded": {"--region", "a", "--tiebreaker", "t", "--nats-url", "nats://x:4222", "--gateways", gw},
		"flag -gateways":         {"--gateways", "nonsense"},
		"record-replicas":        {"--region", "a", "--tiebreaker", "t", "--region-record-replicas", "2"},
		"--hold is not for":      {"--region", "a", "--tiebreaker", "t", "--nats-url", "nats://x:4222", "--shards", "3", "--hold", "2"},
	}
	for want, args := range cases {
		c := DefaultConfig()
		err := c.ParseFlags(args, func(string) string { return "" }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: want error containing %q, got %v", args, want, err)
		}
	}
	// With an external cluster only the region and the tie-breaker are needed.
	c := DefaultConfig()
	if err := c.ParseFlags([]string{"--region", "a", "--tiebreaker", "t", "--nats-url", "nats://x:4222"}, func(string) string { return "" }, io.Discard); err != nil {
		t.Errorf("external region: %v", err)
	}
	// Shards in every region's copy.
	c = DefaultConfig()
	if err := c.ParseFlags([]string{"--region", "a", "--tiebreaker", "t", "--nats-url", "nats://x:4222", "--shards", "4"}, func(string) string { return "" }, io.Discard); err != nil || c.Shards != 4 {
		t.Errorf("a region with --shards 4: %v (shards %d)", err, c.Shards)
	}
}

// TestLogNamesOfShardedRegions: the users file's roles reach every shard
// of every region's copy the node knows of.
func TestLogNamesOfShardedRegions(t *testing.T) {
	c := DefaultConfig()
	c.Region, c.Shards = "A", 2
	c.Gateways = map[string][]*url.URL{"A": nil, "B": nil, "T": nil}
	m := &Node{Config: c}
	var got []string
	for _, n := range m.logNames() {
		got = append(got, n.Stream+" "+n.SubjectPrefix+" "+n.Bucket)
	}
	slices.Sort(got)
	want := []string{
		"PI_SESSIONS_A pi.sess.A PI_CURSORS_A", "PI_SESSIONS_A_1 pi.sess.A.1 PI_CURSORS_A",
		"PI_SESSIONS_B pi.sess.B PI_CURSORS_B", "PI_SESSIONS_B_1 pi.sess.B.1 PI_CURSORS_B",
		"PI_SESSIONS_T pi.sess.T PI_CURSORS_T", "PI_SESSIONS_T_1 pi.sess.T.1 PI_CURSORS_T",
	}
	if !slices.Equal(got, want) {
		t.Errorf("log names %v, want %v", got, want)
	}
}
