package api

import (
	"strconv"
	"time"

	"github.com/pifleet/sessionlog/internal/buildinfo"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/wire"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics live in a registry of their own per Server, so tests (and a
// process with several Servers) never collide in the global one.
type metrics struct {
	reg        *prometheus.Registry
	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	appends    *prometheus.CounterVec
	appendTime prometheus.Histogram
	auth       *prometheus.CounterVec
	adminOps   *prometheus.CounterVec
	// limitCur and limitRefused are the caps of limits.go, by limit.
	limitCur     *prometheus.GaugeVec
	limitRefused *prometheus.CounterVec
}

func newMetrics(st store.Shards) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pi_api_requests_total",
			Help: "API requests by transport (http, nats), endpoint (operation) and status code.",
		}, []string{"transport", "endpoint", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "pi_api_request_duration_seconds",
			Help:    "API request latency by transport and endpoint (watch streams excluded).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"transport", "endpoint"}),
		appends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pi_appends_total",
			Help: `Appends by result: "ok" or the error code (conflict, invalid, not_found, too_large, unavailable, timeout, internal).`,
		}, []string{"result"}),
		appendTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "pi_append_duration_seconds",
			Help:    "Latency of appends through the service, CAS retries included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		auth: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pi_api_auth_total",
			Help: `HTTP /v1 token checks by outcome: "ok", "unauthorized" (no or unknown token), "forbidden" (the token lacks the operation's scope), only with --http-token or --http-tokens; and "not_a_request": a message on an operation's NATS subject that no client sent as a request (a JetStream delivery), dropped.`,
		}, []string{"outcome"}),
		adminOps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pi_api_admin_ops_total",
			Help: `Admin operations (archive.*) and deletes let through, by operation and outcome ("ok" or the error code), on both transports.`,
		}, []string{"op", "outcome"}),
		limitCur: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pi_api_limit_current",
			Help: `What clients hold open against each cap (docs/SECURITY.md, Limits): "connections" (--max-connections, HTTP API listener), "metrics_connections" (the same cap, the --metrics-listen listener), "watches" (--max-watches), "requests" in flight (--max-requests, HTTP and NATS).`,
		}, []string{"limit"}),
		limitRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pi_api_limit_refused_total",
			Help: `Refusals at each cap: a watch or request answered 503 unavailable; for connections, each time the listener found the cap full and stopped accepting (new connections wait in the kernel's backlog).`,
		}, []string{"limit"}),
	}
	b := buildinfo.Get()
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "pi_build_info",
		Help: "Always 1; the labels name this pi-node's build: version, revision (the commit) and the Go release.",
	}, []string{"version", "revision", "go"})
	build.WithLabelValues(b.Version, b.Revision, b.Go).Set(1)
	m.reg.MustRegister(m.requests, m.duration, m.appends, m.appendTime, m.auth, m.adminOps, m.limitCur, m.limitRefused, build,
		storeCollector{st},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observeRequest counts a request; watch streams are counted but their
// duration (as long as the client stays) would only blur the histogram.
func (m *metrics) observeRequest(transport, endpoint string, status int, d time.Duration) {
	m.requests.WithLabelValues(transport, endpoint, strconv.Itoa(status)).Inc()
	if endpoint != "watch" {
		m.duration.WithLabelValues(transport, endpoint).Observe(d.Seconds())
	}
}

// observeAppend records one append's latency and result.
func (m *metrics) observeAppend(d time.Duration, err error) {
	result := "ok"
	if err != nil {
		_, det, _ := wire.StatusOf(err)
		result = det.Code
	}
	m.appends.WithLabelValues(result).Inc()
	m.appendTime.Observe(d.Seconds())
}

// storeCollector exports the Store's counters, reading Stats once per
// scrape (it walks the sessions under the Store's lock).
type storeCollector struct{ st store.Shards }

var (
	descApplied   = prometheus.NewDesc("pi_store_applied_seq", "Last log sequence applied by this node's Store (with --shards above 1, the sum of the shards' positions in their streams).", nil, nil)
	descLogLast   = prometheus.NewDesc("pi_store_log_last_seq", "The log's last sequence when the Store last polled it.", nil, nil)
	descLag       = prometheus.NewDesc("pi_store_consumer_lag", "Records the Store is behind the log (consumer lag).", nil, nil)
	descRecords   = prometheus.NewDesc("pi_store_records_applied_total", "Log records (headers and entries) applied by the Store.", nil, nil)
	descSkipped   = prometheus.NewDesc("pi_store_records_skipped_total", "Log records skipped as not valid session lines.", nil, nil)
	descSessions  = prometheus.NewDesc("pi_store_sessions", "Sessions known to the Store.", nil, nil)
	descLoaded    = prometheus.NewDesc("pi_store_sessions_loaded", "Sessions whose trees are in memory.", nil, nil)
	descBytes     = prometheus.NewDesc("pi_store_bytes", "JSON bytes of the session trees in memory.", nil, nil)
	descEvictions = prometheus.NewDesc("pi_store_evictions_total", "Sessions evicted from memory under the memory budget.", nil, nil)
	descReloads   = prometheus.NewDesc("pi_store_reloads_total", "Evicted sessions reloaded from the log.", nil, nil)

	descSearchApplied = prometheus.NewDesc("pi_search_applied_seq", "Last log sequence indexed by this node's full-text index (with --shards above 1, the sum of the held shards' positions); absent where search is not served.", nil, nil)
	descSearchLag     = prometheus.NewDesc("pi_search_lag", "Records the full-text index is behind the log's end as the Store knows it.", nil, nil)

	descPending   = prometheus.NewDesc("pi_store_sessions_pending", "Sessions being written in several atomic batches (imports, forks), hidden until whole.", nil, nil)
	descAbandoned = prometheus.NewDesc("pi_store_abandoned_sessions_purged_total",
		"Multi-batch sessions whose writer stopped before the last batch, claimed and purged by this node.", nil, nil)
)

// Describe sends the descriptors of the Store's metrics.
func (c storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descApplied, descLogLast, descLag, descRecords, descSkipped, descSessions, descLoaded, descBytes, descEvictions, descReloads, descPending, descAbandoned, descSearchApplied, descSearchLag} {
		ch <- d
	}
}

// Collect reads the Store's Stats once and sends every metric.
func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	s := store.StatsOf(c.st)
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(descApplied, float64(s.Applied))
	gauge(descLogLast, float64(s.LogLastSeq))
	gauge(descLag, float64(s.Lag))
	counter(descRecords, float64(s.Records))
	counter(descSkipped, float64(s.SkippedRecs))
	gauge(descSessions, float64(s.Sessions))
	gauge(descLoaded, float64(s.Loaded))
	gauge(descBytes, float64(s.BytesHeld))
	counter(descEvictions, float64(s.Evictions))
	counter(descReloads, float64(s.Reloads))
	gauge(descPending, float64(s.Pending))
	counter(descAbandoned, float64(s.AbandonedPurged))
	if ss := store.SearchStatsOf(c.st); ss.Indexes > 0 {
		gauge(descSearchApplied, float64(ss.Applied))
		gauge(descSearchLag, float64(ss.Lag))
	}
}
