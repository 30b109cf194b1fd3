package archive

import (
	"sync"
	"sync/atomic"

	"github.com/pifleet/sessionlog/internal/wire"
	"github.com/prometheus/client_golang/prometheus"
)

// stats are the Archiver's counters since the process started.
type stats struct {
	archivedN atomic.Uint64 // sessions archived (Repaired included)
	repairedN atomic.Uint64
	restores  atomic.Uint64
	passes    atomic.Uint64

	mu   sync.Mutex
	last wire.ArchivePass // the last pass this node ran
}

func (s *stats) archived(out Outcome) {
	s.archivedN.Add(1)
	if out == Repaired {
		s.repairedN.Add(1)
	}
}

func (s *stats) pass(r wire.ArchivePass) {
	s.passes.Add(1)
	s.mu.Lock()
	s.last = r
	s.mu.Unlock()
}

// Stats are the Archiver's counters, for metrics.
type Stats struct {
	Archived, Repaired, Restored, Passes uint64
	LastPass                             wire.ArchivePass
}

// Stats returns the counters.
func (a *Archiver) Stats() Stats {
	a.stats.mu.Lock()
	last := a.stats.last
	a.stats.mu.Unlock()
	return Stats{
		Archived: a.stats.archivedN.Load(), Repaired: a.stats.repairedN.Load(),
		Restored: a.stats.restores.Load(), Passes: a.stats.passes.Load(), LastPass: last,
	}
}

// Collector exports the counters to Prometheus (pi-node adds it to the
// API's registry).
func (a *Archiver) Collector() prometheus.Collector { return collector{a} }

type collector struct{ a *Archiver }

var (
	descArchived = prometheus.NewDesc("pi_archive_sessions_archived_total",
		"Sessions this node moved to the archive (purged from the log).", nil, nil)
	descRepaired = prometheus.NewDesc("pi_archive_sessions_repaired_total",
		"Archived sessions that a write raced with; the write was archived with them.", nil, nil)
	descRestored = prometheus.NewDesc("pi_archive_sessions_restored_total",
		"Sessions this node restored from the archive.", nil, nil)
	descPasses = prometheus.NewDesc("pi_archive_passes_total",
		"Retention passes this node ran (under the cluster-wide lease).", nil, nil)
	descLastFailed = prometheus.NewDesc("pi_archive_last_pass_failed",
		"Sessions the last pass on this node failed to archive (retried by the next).", nil, nil)
	descLastSeconds = prometheus.NewDesc("pi_archive_last_pass_seconds",
		"Duration of the last pass on this node.", nil, nil)
)

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descArchived, descRepaired, descRestored, descPasses, descLastFailed, descLastSeconds} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	s := c.a.Stats()
	ch <- prometheus.MustNewConstMetric(descArchived, prometheus.CounterValue, float64(s.Archived))
	ch <- prometheus.MustNewConstMetric(descRepaired, prometheus.CounterValue, float64(s.Repaired))
	ch <- prometheus.MustNewConstMetric(descRestored, prometheus.CounterValue, float64(s.Restored))
	ch <- prometheus.MustNewConstMetric(descPasses, prometheus.CounterValue, float64(s.Passes))
	ch <- prometheus.MustNewConstMetric(descLastFailed, prometheus.GaugeValue, float64(s.LastPass.Failed))
	ch <- prometheus.MustNewConstMetric(descLastSeconds, prometheus.GaugeValue, s.LastPass.Seconds)
}
