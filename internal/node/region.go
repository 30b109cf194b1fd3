package node

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/jetstream/embedded"
	"github.com/pifleet/sessionlog/internal/region"
	"github.com/pifleet/sessionlog/internal/session"
)

// RegionConfig is the cross-region part of Config (docs/CROSS-REGION.md):
// the node's region, the gateways that join the regions into a
// supercluster, and where the region record lives.
type RegionConfig struct {
	Region        string
	GatewayListen string
	Gateways      map[string][]*url.URL
	// HomeRegion is the home recorded when the record does not exist yet.
	HomeRegion string
	// Tiebreaker is the cluster holding the region record bucket.
	Tiebreaker     string
	RecordBucket   string
	RecordReplicas int
}

// gatewaysFlag collects --gateways, which may be repeated. A value from
// the environment is replaced, not extended, by the command line's.
type gatewaysFlag struct {
	specs       []string
	replaceNext bool
}

func (g *gatewaysFlag) String() string { return strings.Join(g.specs, ";") }

func (g *gatewaysFlag) Set(v string) error {
	if g.replaceNext {
		g.specs, g.replaceNext = nil, false
	}
	if _, err := embedded.ParseGateways(v); err != nil {
		return err
	}
	g.specs = append(g.specs, v)
	return nil
}

// addRegionFlags registers the region flags on fs.
func (c *Config) addRegionFlags(fs *flag.FlagSet) *gatewaysFlag {
	r := &c.RegionConfig
	fs.StringVar(&r.Region, "region", r.Region, "this node's region: a NATS cluster joined to the others by gateways (enables cross-region mode; see docs/CROSS-REGION.md)")
	fs.StringVar(&r.GatewayListen, "gateway-listen", r.GatewayListen, "host:port of the embedded server's gateway listener (cross-region)")
	gw := &gatewaysFlag{}
	if len(r.Gateways) > 0 {
		gw.specs = []string{embedded.FormatGateways(r.Gateways)}
	}
	fs.Var(gw, "gateways", "gateways of every region, NAME=nats://host:port,…;NAME2=… (may be repeated; this region and the tie-breaker included)")
	fs.StringVar(&r.HomeRegion, "home-region", r.HomeRegion, "the home region to record when the deployment is new (ignored once the region record exists)")
	fs.StringVar(&r.Tiebreaker, "tiebreaker", r.Tiebreaker, "cluster (region or tie-breaker node set) that holds the region record; it must survive the loss of any main region")
	fs.StringVar(&r.RecordBucket, "region-bucket", r.RecordBucket, "KV bucket of the region record")
	fs.IntVar(&r.RecordReplicas, "region-record-replicas", r.RecordReplicas, "replicas of the region record bucket (1, or 3 on a 3-node tie-breaker)")
	return gw
}

// finishRegion applies the parsed region flags: the gateways, and the
// embedded cluster's defaults in a region (its cluster is the region; a
// one-node region routes to itself, since JetStream clusters only with a
// route). It runs before check.
func (c *Config) finishRegion(gw *gatewaysFlag) error {
	r := &c.RegionConfig
	var err error
	if r.Gateways, err = embedded.ParseGateways(gw.specs...); err != nil {
		return fmt.Errorf("--gateways: %w", err)
	}
	if r.Region == "" {
		if r.GatewayListen != "" || len(r.Gateways) > 0 || r.HomeRegion != "" || r.Tiebreaker != "" {
			return errors.New("--gateway-listen, --gateways, --home-region and --tiebreaker need --region")
		}
		return nil
	}
	if err := region.ValidName(r.Region); err != nil {
		return fmt.Errorf("--region: %w", err)
	}
	switch {
	case r.Tiebreaker == "":
		return errors.New("--region needs --tiebreaker: the cluster that holds the region record (see docs/CROSS-REGION.md)")
	case r.RecordReplicas != 1 && r.RecordReplicas != 3:
		return fmt.Errorf("--region-record-replicas must be 1 or 3, not %d", r.RecordReplicas)
	case r.HomeRegion != "" && region.ValidName(r.HomeRegion) != nil:
		return fmt.Errorf("--home-region: %w", region.ValidName(r.HomeRegion))
	case c.NATSURL != "":
		if r.GatewayListen != "" || len(r.Gateways) > 0 {
			return errors.New("--gateway-listen and --gateways configure the embedded server; with --nats-url the external servers have the gateways")
		}
		return nil
	case r.GatewayListen == "" || len(r.Gateways) == 0:
		return errors.New("--region with an embedded server needs --gateway-listen and --gateways")
	case c.ClusterListen == "":
		return errors.New("--region with an embedded server needs --cluster-listen (JetStream clusters over routes, even in a one-node region)")
	case c.ClusterName != "" && c.ClusterName != r.Region:
		return fmt.Errorf("--cluster-name %q must equal --region %q (or be left out)", c.ClusterName, r.Region)
	}
	c.ClusterName = r.Region
	if len(c.Routes) == 0 {
		host, port, err := net.SplitHostPort(c.ClusterListen)
		if err != nil {
			return fmt.Errorf("--cluster-listen: %w", err)
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "127.0.0.1"
		}
		c.Routes = []*url.URL{{Scheme: "nats-route", Host: net.JoinHostPort(host, port)}}
	}
	return nil
}

// feedLog is what a Store follows and reloads from.
type feedLog interface {
	session.Feed
	session.Log
}

// backend provisions the log's assets and returns the Service's log and
// cursors and the Stores' feeds: one stream and bucket; with --shards, a
// stream per shard, the log routing each session to its own; or, in a
// region, the region.Node's switchable ones.
func (m *Node) backend(ctx context.Context, name string, logger *slog.Logger) (session.Log, []feedLog, session.Cursors, error) {
	c := &m.Config
	m.jsCfg = jetstream.NewConfig()
	m.jsCfg.Stream, m.jsCfg.SubjectPrefix, m.jsCfg.Bucket = c.Stream, c.SubjectPrefix, c.Bucket
	m.jsCfg.Replicas = c.Replicas
	if c.MaxBatch > 0 {
		m.jsCfg.MaxBatch = c.MaxBatch
	}
	m.jsCfg.Logger = logger
	if c.Region == "" {
		// The shard count is logged once provisioning has found it: without
		// --shards (c.Shards 0) it is the store's, 1 for a new one.
		logger.Info("provisioning", "stream", c.Stream, "bucket", c.Bucket, "replicas", c.Replicas)
		sm, err := jetstream.ProvisionShards(ctx, m.conn.JS, m.jsCfg, c.Shards)
		if err != nil {
			var me *jetstream.ShardMismatchError
			if errors.As(err, &me) && me.HaveFunc == me.WantFunc {
				return nil, nil, nil, fmt.Errorf("--shards %d: %w; start every node with --shards %d, or without --shards to take the store's", c.Shards, err, me.Have)
			}
			return nil, nil, nil, err
		}
		logger.Info("provisioned", "stream", c.Stream, "shards", sm.Current())
		if sm.Streams() > 1 {
			logger.Info("the store is sharded", "map", sm.String(), "streams", sm.Streams(), "new sessions on", sm.Current())
		}
		cursors, err := jetstream.NewCursors(ctx, m.conn.JS, m.jsCfg)
		shards, all := jetstream.NewShards(m.conn.JS, m.jsCfg, sm)
		m.sharded = all
		feeds := make([]feedLog, len(shards))
		for k, sh := range shards {
			feeds[k] = sh
		}
		return all, feeds, cursors, err
	}
	r := &c.RegionConfig
	logger.Info("joining the regions", "region", r.Region, "tiebreaker", r.Tiebreaker, "replicas", c.Replicas)
	m.region = &region.Node{JS: m.conn.JS, WriteJS: m.writeConn.JS, Base: m.jsCfg, Region: r.Region, HomeRegion: r.HomeRegion,
		RecordBucket: r.RecordBucket, RecordCluster: r.Tiebreaker, RecordReplicas: r.RecordReplicas, Shards: c.Shards, Logger: logger}
	if err := m.region.Open(ctx); err != nil {
		var se *region.ShardsError
		if errors.As(err, &se) {
			return nil, nil, nil, fmt.Errorf("--shards %d: %w", c.Shards, err)
		}
		return nil, nil, nil, fmt.Errorf("region %s (node %s): %w", r.Region, name, err)
	}
	feeds := make([]feedLog, len(m.region.Feeds))
	for k := range feeds {
		feeds[k] = m.region.StoreFeed(k)
	}
	if len(feeds) > 1 {
		logger.Info("every region's copy is sharded", "shards", len(feeds))
	}
	return m.region.WriteLog(), feeds, m.region.Cursors, nil
}

// streamConfig is the stream this node's Store follows now, for status
// and readiness: in a region it changes with the region record.
func (m *Node) streamConfig() jetstream.Config {
	if m.region != nil {
		return m.region.FeedConfig()
	}
	return m.jsCfg
}
