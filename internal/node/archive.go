package node

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pifleet/sessionlog/internal/api"
	"github.com/pifleet/sessionlog/internal/archive"
	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/shard"
)

// ArchiveConfig is the retention part of Config (docs/OPERATIONS.md,
// "Bounded growth"): idle sessions move to an archive stream.
type ArchiveConfig struct {
	// SessionRetention: sessions not written to for longer are archived
	// (0: never; the archive operations still work).
	SessionRetention time.Duration
	// ArchiveEvery is the interval of the retention passes.
	ArchiveEvery time.Duration
	// ArchiveStream names the archive stream; its subjects and lease
	// bucket derive from it (PI_ARCHIVE: pi.archive.*.*, PI_ARCHIVE_LEASE).
	ArchiveStream string
	// RetentionPolicy is a file of retention policies per tenant
	// (archive.ParsePolicies), in place of SessionRetention.
	RetentionPolicy string
}

func defaultArchiveConfig() ArchiveConfig {
	return ArchiveConfig{ArchiveEvery: 10 * time.Minute, ArchiveStream: "PI_ARCHIVE"}
}

// addArchiveFlags registers the retention flags on fs.
func (c *ArchiveConfig) addArchiveFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.SessionRetention, "session-retention", c.SessionRetention,
		"archive sessions not written to for this long (e.g. 720h): they move to the archive stream and out of the log and every node's memory; 0: keep every session live")
	fs.DurationVar(&c.ArchiveEvery, "archive-every", c.ArchiveEvery,
		"interval of the retention passes (one node of the cluster runs each, under a lease)")
	fs.StringVar(&c.ArchiveStream, "archive-stream", c.ArchiveStream,
		"JetStream stream of archived sessions (lease bucket <name>_LEASE)")
	fs.StringVar(&c.RetentionPolicy, "retention-policy", c.RetentionPolicy,
		"JSON `FILE` of retention per tenant: a default and, per cwdPrefix, archiveAfter and deleteAfter (e.g. 30d); instead of --session-retention (docs/OPERATIONS.md, Retention per tenant)")
}

func (c *Config) checkArchive() error {
	a := c.ArchiveConfig
	switch {
	case a.SessionRetention < 0:
		return errors.New("--session-retention must not be negative")
	case a.ArchiveEvery <= 0:
		return errors.New("--archive-every must be positive")
	case a.ArchiveStream == "" || strings.ContainsAny(a.ArchiveStream, ". *>"):
		return errors.New("--archive-stream must be a stream name (no dots, spaces or wildcards)")
	case a.RetentionPolicy != "" && a.SessionRetention > 0:
		return errors.New("--retention-policy and --session-retention: give one (the policy file's default is what --session-retention sets)")
	}
	return nil
}

// policies reads --retention-policy; nil without one.
func (c *ArchiveConfig) policies() (*archive.Policies, error) {
	if c.RetentionPolicy == "" {
		return nil, nil
	}
	b, err := os.ReadFile(c.RetentionPolicy)
	if err != nil {
		return nil, fmt.Errorf("--retention-policy: %w", err)
	}
	p, err := archive.ParsePolicies(b)
	if err != nil {
		return nil, fmt.Errorf("--retention-policy %s: %w", c.RetentionPolicy, err)
	}
	return &p, nil
}

// archiverJob is the node's Archiver and its periodic pass.
type archiverJob struct {
	a      *archive.Archiver
	cancel context.CancelFunc
	done   chan struct{}
}

// newArchiver returns the archive the API serves: in cross-region mode
// delete alone (regionArchive).
// With a retention, the archive is provisioned now, so that a
// misconfiguration stops the start instead of every pass.
func (m *Node) newArchiver(ctx context.Context, log session.Log, name string, logger *slog.Logger) (api.Archive, error) {
	c := m.Config.ArchiveConfig
	pol, err := c.policies()
	if err != nil {
		return nil, err
	}
	if m.region != nil {
		if c.SessionRetention > 0 || pol != nil {
			return nil, errors.New("--session-retention and --retention-policy are not supported in cross-region mode yet: the archive stream is not a region's asset")
		}
		a := archive.New(m.stores, log, ledgerOnly{m.region.Ledger()}, archive.Options{Node: name, Logger: logger.With("component", "archiver")})
		// Its metrics (pi_sessions_erased_total); it runs no passes.
		m.archiver = &archiverJob{a: a}
		return regionArchive{a}, nil
	}
	acfg := jetstream.NewArchiveConfig(m.jsCfg)
	acfg.SetStream(c.ArchiveStream)
	acfg.Logger = logger
	m.archiveCfg = acfg
	// One archive; each shard's sessions purged from, and noticed on,
	// their own stream.
	var shards []session.Archive
	for k, l := range m.streams() {
		shards = append(shards, jetstream.NewArchive(l, m.shardArchiveConfig(k)))
	}
	b, err := shard.NewArchive(m.sharded.Map(), shards)
	if err != nil {
		return nil, err
	}
	m.archives = b
	opts := archive.Options{
		Retention: c.SessionRetention, Policies: pol, Every: c.ArchiveEvery, Node: name,
		Logger: logger.With("component", "archiver"),
	}
	if h := m.holder; h != nil {
		opts.Serves = h.Served
	}
	a := archive.New(m.stores, log, b, opts)
	if c.SessionRetention > 0 || pol != nil && pol.Active() {
		logger.Info("provisioning the archive", "stream", acfg.Stream, "retention", c.SessionRetention, "policy", c.RetentionPolicy, "every", c.ArchiveEvery)
		// Through the Archiver, so that its first pass does not provision again.
		if err := a.Provision(ctx); err != nil {
			return nil, err
		}
	}
	m.archiver = &archiverJob{a: a}
	return a, nil
}

// startArchiver adds the archiver's metrics and starts its passes.
func (m *Node) startArchiver() {
	j := m.archiver
	if j == nil {
		return
	}
	m.api.Registry().MustRegister(archiveCollector{j.a})
	var ctx context.Context
	ctx, j.cancel = context.WithCancel(context.Background())
	j.done = make(chan struct{})
	go func() {
		defer close(j.done)
		j.a.Run(ctx)
	}()
}

// stopArchiver ends a pass in flight (each session is left consistent) and
// waits for it.
func (m *Node) stopArchiver() {
	if j := m.archiver; j != nil && j.cancel != nil {
		j.cancel()
		<-j.done
	}
}

// shardArchiveConfig is the archive configuration of shard k's archive:
// the deployment's, and with --hold a lease of the shard's own, so that
// one of its holders archives it (archive.Options.Serves).
func (m *Node) shardArchiveConfig(k int) jetstream.ArchiveConfig {
	c := m.archiveCfg
	if m.holder != nil {
		c.LeaseKey = "archiver-" + strconv.Itoa(k)
	}
	return c
}
