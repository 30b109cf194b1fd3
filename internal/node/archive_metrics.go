package node

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pifleet/sessionlog/internal/archive"
)

// archiveCollector exports the Archiver's counters to Prometheus (added to
// the API's registry). It lives here, not in package archive, so that the
// client, which links archive through the JetStream adapter, links no
// Prometheus.
type archiveCollector struct{ a *archive.Archiver }

var (
	descArchived = prometheus.NewDesc("pi_archive_sessions_archived_total",
		"Sessions this node moved to the archive (purged from the log).", nil, nil)
	descRepaired = prometheus.NewDesc("pi_archive_sessions_repaired_total",
		"Archived sessions that a write raced with; the write was archived with them.", nil, nil)
	descRestored = prometheus.NewDesc("pi_archive_sessions_restored_total",
		"Sessions this node restored from the archive.", nil, nil)
	descErased = prometheus.NewDesc("pi_sessions_erased_total",
		"Sessions this node erased (DELETE /v1/sessions/{id}, pi-ctl rm): from the log, the archive and every node's files.", nil, nil)
	descRetained = prometheus.NewDesc("pi_retention_sessions_total",
		"Sessions retention passes on this node archived or erased (--retention-policy, --session-retention), by tenant and action.", []string{"tenant", "action"}, nil)
	descPasses = prometheus.NewDesc("pi_archive_passes_total",
		"Retention passes this node ran (under the cluster-wide lease).", nil, nil)
	descLastFailed = prometheus.NewDesc("pi_archive_last_pass_failed",
		"Sessions the last pass on this node failed to archive (retried by the next).", nil, nil)
	descLastSeconds = prometheus.NewDesc("pi_archive_last_pass_seconds",
		"Duration of the last pass on this node.", nil, nil)
)

func (c archiveCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descArchived, descRepaired, descRestored, descErased, descRetained, descPasses, descLastFailed, descLastSeconds} {
		ch <- d
	}
}

func (c archiveCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.a.Stats()
	ch <- prometheus.MustNewConstMetric(descArchived, prometheus.CounterValue, float64(s.Archived))
	ch <- prometheus.MustNewConstMetric(descRepaired, prometheus.CounterValue, float64(s.Repaired))
	ch <- prometheus.MustNewConstMetric(descRestored, prometheus.CounterValue, float64(s.Restored))
	ch <- prometheus.MustNewConstMetric(descErased, prometheus.CounterValue, float64(s.Erased))
	for k, n := range s.Retained {
		ch <- prometheus.MustNewConstMetric(descRetained, prometheus.CounterValue, float64(n), k[0], k[1])
	}
	ch <- prometheus.MustNewConstMetric(descPasses, prometheus.CounterValue, float64(s.Passes))
	ch <- prometheus.MustNewConstMetric(descLastFailed, prometheus.GaugeValue, float64(s.LastPass.Failed))
	ch <- prometheus.MustNewConstMetric(descLastSeconds, prometheus.GaugeValue, s.LastPass.Seconds)
}
