package deploytest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/pifleet/sessionlog/internal/proctest"
	"github.com/pifleet/sessionlog/internal/testutil"
)

// alertRules is deploy/prometheus/alerts.yaml: Prometheus' rule file, the
// fields it uses (strict: an unknown field fails).
type alertRules struct {
	Groups []struct {
		Name  string      `json:"name"`
		Rules []alertRule `json:"rules"`
	} `json:"groups"`
}

type alertRule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func loadAlerts(t *testing.T) (string, alertRules) {
	t.Helper()
	path := filepath.Join(repoRoot(t), "deploy", "prometheus", "alerts.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rules alertRules
	strict(t, "alerts.yaml", data, &rules)
	return path, rules
}

// TestPrometheusAlerts: every alert of deploy/prometheus/alerts.yaml has a
// severity, a summary, a description and a runbook anchor that exists in
// docs/OPERATIONS.md; uses only metrics and labels pi-node exports; and,
// with promtool installed, is valid and fires in the cases of alertCases
// (and not in their near misses).
func TestPrometheusAlerts(t *testing.T) {
	path, rules := loadAlerts(t)
	anchors := operationsAnchors(t)
	exported := exportedMetrics(t)
	var names []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			where := g.Name + "/" + r.Alert
			names = append(names, r.Alert)
			if d, err := time.ParseDuration(r.For); err != nil || d < time.Minute {
				t.Errorf("%s: for %q: at least a minute, or an election pages someone", where, r.For)
			}
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("%s: severity %q, want warning or critical", where, s)
			}
			if keys := slices.Sorted(maps.Keys(r.Annotations)); !slices.Equal(keys, []string{"description", "runbook", "summary"}) {
				t.Errorf("%s: annotations %v, want description, runbook and summary", where, keys)
			}
			doc, anchor, _ := strings.Cut(r.Annotations["runbook"], "#")
			if doc != "docs/OPERATIONS.md" || !anchors[anchor] {
				t.Errorf("%s: runbook %q is not an anchor of docs/OPERATIONS.md", where, r.Annotations["runbook"])
			}
			checkPromQL(t, where, r.Expr, exported)
		}
	}
	// alertCases names the conditions an SRE is paged or warned on
	// (docs/OPERATIONS.md, "Runbook"), each with the series that fire it.
	if want := slices.Sorted(maps.Keys(alertCases)); !slices.Equal(slices.Sorted(slices.Values(names)), want) {
		t.Errorf("alerts %v, want one per case of alertCases: %v", names, want)
	}
	t.Run("promtool", func(t *testing.T) {
		promtool, err := exec.LookPath("promtool")
		if err != nil {
			t.Skip("promtool not installed (Debian: apt-get install prometheus): the rules are not run")
		}
		if out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput(); err != nil {
			t.Fatalf("promtool check rules: %v\n%s", err, out)
		}
		runAlertCases(t, promtool, rules)
	})
}

// alertCase is a promtool unit test of one alert: input series (promtool's
// expanding notation) and the alerts expected at a time, by their labels
// besides alertname and the rule's own.
type alertCase struct {
	series map[string]string
	at     string
	fires  []map[string]string
}

var alertCases = map[string]alertCase{
	"PiNodeDown": {series: map[string]string{
		`up{job="pi-node",instance="n1:8080"}`: "1 0x5",
		`up{job="pi-node",instance="n2:8080"}`: "1x5",
		`up{job="other",instance="x:9100"}`:    "0x5",
	}, at: "4m", fires: []map[string]string{{"job": "pi-node", "instance": "n1:8080"}}},
	"PiStreamNoLeader": {series: map[string]string{
		`pi_stream_info{instance="n1",stream="PI_SESSIONS",shard="0",leader=""}`:   "1x5",
		`pi_stream_info{instance="n2",stream="PI_SESSIONS",shard="0",leader="n2"}`: "1x5",
	}, at: "3m", fires: []map[string]string{{"instance": "n1", "stream": "PI_SESSIONS"}}},
	"PiStreamReplicasOffline": {series: map[string]string{
		`pi_stream_replicas{instance="n1",stream="PI_SESSIONS",state="offline"}`:   "1x10",
		`pi_stream_replicas{instance="n2",stream="PI_SESSIONS",state="offline"}`:   "1x10",
		`pi_stream_replicas{instance="n1",stream="PI_SESSIONS_1",state="lagging"}`: "1x10",
	}, at: "8m", fires: []map[string]string{{"stream": "PI_SESSIONS"}}},
	"PiStreamReplicasLagging": {series: map[string]string{
		`pi_stream_replicas{instance="n1",stream="PI_SESSIONS",state="lagging"}`:   "1x15",
		`pi_stream_replicas{instance="n1",stream="PI_SESSIONS_1",state="lagging"}`: "1 1 0 1 0 1 0 1 0 1 0 1 0 1 0 1", // a write burst now and then
	}, at: "12m", fires: []map[string]string{{"stream": "PI_SESSIONS"}}},
	"PiStoreLagHigh": {series: map[string]string{
		`pi_store_consumer_lag{instance="n1"}`: "5000x10",
		`pi_store_consumer_lag{instance="n2"}`: "10x10",
	}, at: "7m", fires: []map[string]string{{"instance": "n1"}}},
	"PiSearchLagHigh": {series: map[string]string{
		`pi_search_lag{instance="n1"}`: "50000x20",
		`pi_search_lag{instance="n2"}`: "20000 0 20000 0 20000 0 20000 0 20000 0 20000 0 20000 0 20000 0 20000 0 20000 0 0", // bursts it catches up on
	}, at: "17m", fires: []map[string]string{{"instance": "n1"}}},
	"PiSnapshotTooOld": {series: map[string]string{
		`pi_store_snapshot_age_seconds{instance="n1",stream="PI_SESSIONS"}`: "2000+60x15",
		`pi_store_snapshot_age_seconds{instance="n2",stream="PI_SESSIONS"}`: "100x15",
	}, at: "12m", fires: []map[string]string{{"instance": "n1", "stream": "PI_SESSIONS"}}},
	"PiAppendErrors": {series: map[string]string{
		`pi_appends_total{instance="n1",result="ok"}`:          "0+600x10", // 10/s
		`pi_appends_total{instance="n1",result="unavailable"}`: "0+120x10", // 2/s: 17%
		`pi_appends_total{instance="n2",result="ok"}`:          "0+60x10",
		`pi_appends_total{instance="n2",result="conflict"}`:    "0+600x10", // the clients'
	}, at: "8m", fires: []map[string]string{{"instance": "n1"}}},
	"PiDiskNearLimit": {series: map[string]string{
		`pi_jetstream_storage_bytes{instance="n1"}`:       "900x10",
		`pi_jetstream_storage_limit_bytes{instance="n1"}`: "1000x10",
		`pi_jetstream_storage_bytes{instance="n2"}`:       "100x10",
		`pi_jetstream_storage_limit_bytes{instance="n2"}`: "1000x10",
	}, at: "7m", fires: []map[string]string{{"instance": "n1"}}},
	"PiRegionMirrorLagging": {series: map[string]string{
		`pi_region_mirror_lag{instance="b1",region="B"}`: "5000x15",
		`pi_region_mirror_lag{instance="c1",region="C"}`: "10x15",
	}, at: "12m", fires: []map[string]string{{"region": "B"}}},
}

// runAlertCases runs alertCases with promtool test rules, over a copy of
// the rules without their annotations (promtool compares those too, and
// check rules has parsed their templates already).
func runAlertCases(t *testing.T, promtool string, rules alertRules) {
	dir := t.TempDir()
	type promAlert struct {
		ExpLabels map[string]string `json:"exp_labels"`
	}
	type promRuleTest struct {
		EvalTime  string      `json:"eval_time"`
		AlertName string      `json:"alertname"`
		ExpAlerts []promAlert `json:"exp_alerts"`
	}
	type promSeries struct {
		Series string `json:"series"`
		Values string `json:"values"`
	}
	type promTest struct {
		Interval    string         `json:"interval"`
		InputSeries []promSeries   `json:"input_series"`
		Alerts      []promRuleTest `json:"alert_rule_test"`
	}
	var tests []promTest
	for _, g := range rules.Groups {
		for i := range g.Rules {
			r := &g.Rules[i]
			r.Annotations = nil
			c, ok := alertCases[r.Alert]
			if !ok {
				t.Errorf("%s: no case in alertCases: every alert is run", r.Alert)
				continue
			}
			pt := promTest{Interval: "1m"}
			for _, s := range slices.Sorted(maps.Keys(c.series)) {
				pt.InputSeries = append(pt.InputSeries, promSeries{Series: s, Values: c.series[s]})
			}
			rt := promRuleTest{EvalTime: c.at, AlertName: r.Alert, ExpAlerts: []promAlert{}}
			for _, labels := range c.fires {
				rt.ExpAlerts = append(rt.ExpAlerts, promAlert{ExpLabels: mergeLabels(labels, r.Labels)})
			}
			pt.Alerts = append(pt.Alerts, rt)
			tests = append(tests, pt)
		}
	}
	// JSON is YAML: promtool reads both files as they are.
	write := func(name string, v any) string {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("rules.yaml", rules)
	cases := write("cases.yaml", map[string]any{"rule_files": []string{"rules.yaml"}, "evaluation_interval": "1m", "tests": tests})
	out, err := exec.Command(promtool, "test", "rules", cases).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	t.Logf("promtool test rules: %d alerts fired as expected", len(tests))
}

func mergeLabels(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

// dashboard is the part of a Grafana dashboard the test reads.
type dashboard struct {
	Title         string `json:"title"`
	UID           string `json:"uid"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Datasource *dsRef          `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []dashPanel `json:"panels"`
}

type dsRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type dashPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *dsRef `json:"datasource"`
	GridPos    struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID      string `json:"refId"`
		Expr       string `json:"expr"`
		Datasource *dsRef `json:"datasource"`
	} `json:"targets"`
	Panels []dashPanel `json:"panels"` // a collapsed row's
}

// wantPanelMetrics: the dashboard shows each of these (docs/OPERATIONS.md,
// "Monitoring").
var wantPanelMetrics = []string{"pi_appends_total", "pi_append_duration_seconds_bucket", "pi_api_requests_total",
	"pi_store_consumer_lag", "pi_stream_info", "pi_stream_replicas", "pi_jetstream_storage_bytes",
	"pi_jetstream_storage_limit_bytes", "pi_stream_leader_changes_total", "pi_store_snapshot_age_seconds",
	"pi_region_mirror_lag", "pi_build_info", "pi_archive_passes_total", "pi_search_lag", "pi_search_applied_seq"}

// TestGrafanaDashboard: deploy/grafana/sessionlog.json takes its Prometheus
// from a ${datasource} variable and its nodes from an instance variable,
// which every query filters by; its panels do not overlap; and they show
// wantPanelMetrics, using only metrics and labels pi-node exports.
func TestGrafanaDashboard(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "grafana", "sessionlog.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("sessionlog.json: %v", err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("uid %q, title %q, schemaVersion %d: want a uid, a title and schema 36 or later", d.UID, d.Title, d.SchemaVersion)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		switch v.Name {
		case "datasource":
			if v.Type != "datasource" || string(v.Query) != `"prometheus"` {
				t.Errorf("variable datasource: type %q, query %s; want a datasource variable of Prometheus", v.Type, v.Query)
			}
		case "instance":
			if v.Type != "query" || v.Datasource == nil || v.Datasource.UID != "${datasource}" || !strings.Contains(string(v.Query), "label_values(pi_build_info, instance)") {
				t.Errorf("variable instance: type %q, datasource %+v, query %s", v.Type, v.Datasource, v.Query)
			}
		}
	}
	if vars["datasource"] == "" || vars["instance"] == "" {
		t.Fatalf("variables %v: want datasource and instance", vars)
	}
	exported := exportedMetrics(t)
	shown := map[string]bool{}
	ids := map[int]bool{}
	var placed []dashPanel
	var walk func([]dashPanel)
	walk = func(ps []dashPanel) {
		for _, p := range ps {
			where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
			if ids[p.ID] {
				t.Errorf("%s: id used twice", where)
			}
			ids[p.ID] = true
			g := p.GridPos
			if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 || g.Y < 0 {
				t.Errorf("%s: gridPos %+v outside the 24 columns", where, g)
			}
			for _, o := range placed {
				og := o.GridPos
				if g.X < og.X+og.W && og.X < g.X+g.W && g.Y < og.Y+og.H && og.Y < g.Y+g.H {
					t.Errorf("%s overlaps panel %d %q", where, o.ID, o.Title)
				}
			}
			placed = append(placed, p)
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
				t.Errorf("%s: datasource %+v, %d targets; want ${datasource} and a query", where, p.Datasource, len(p.Targets))
			}
			for _, tg := range p.Targets {
				if tg.Datasource != nil && tg.Datasource.UID != "${datasource}" {
					t.Errorf("%s: target %s on datasource %+v", where, tg.RefID, tg.Datasource)
				}
				if !strings.Contains(tg.Expr, `instance=~"$instance"`) {
					t.Errorf("%s: target %s does not filter by $instance: %s", where, tg.RefID, tg.Expr)
				}
				for _, m := range checkPromQL(t, where, tg.Expr, exported) {
					shown[m] = true
				}
			}
		}
	}
	walk(d.Panels)
	for _, m := range wantPanelMetrics {
		if !shown[m] {
			t.Errorf("no panel shows %s", m)
		}
	}
}

// PromQL, as far as the checks need it: the label matchers of a
// selector, what is left to find metric names in once strings, selectors,
// ranges and groupings are gone, and names that are no metrics.
var (
	promSelector = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)?\{((?:[^}"]|"(?:[^"\\]|\\.)*")*)\}`)
	promString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promMatcher  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	promDrop     = regexp.MustCompile(`\[[^\]]*\]|\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)|\$\{?\w+\}?`)
	promToken    = regexp.MustCompile(`[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true}
)

// checkPromQL fails the test for each metric expr uses that pi-node does
// not export, or a label it matches that the metric does not have; it
// returns the metrics.
func checkPromQL(t *testing.T, where, expr string, exported map[string]map[string]bool) []string {
	t.Helper()
	var metrics []string
	use := func(name string) map[string]bool {
		labels, ok := exported[name]
		if !slices.Contains(metrics, name) {
			if !ok {
				t.Errorf("%s: %s is not a metric pi-node exports: %s", where, name, expr)
			}
			metrics = append(metrics, name)
		}
		return labels
	}
	for _, sel := range promSelector.FindAllStringSubmatch(expr, -1) {
		if sel[1] == "" {
			t.Errorf("%s: a selector without a metric name: %s", where, sel[0])
			continue
		}
		labels := use(sel[1])
		for _, lm := range promMatcher.FindAllStringSubmatch(promString.ReplaceAllString(sel[2], `""`), -1) {
			if labels != nil && !labels[lm[1]] && lm[1] != "instance" && lm[1] != "job" {
				t.Errorf("%s: %s has no label %s: %s", where, sel[1], lm[1], expr)
			}
		}
	}
	rest := promDrop.ReplaceAllString(promSelector.ReplaceAllString(promString.ReplaceAllString(expr, `""`), " "), " ")
	for _, at := range promToken.FindAllStringIndex(rest, -1) {
		tok, after := rest[at[0]:at[1]], strings.TrimSpace(rest[at[1]:])
		if tok[0] >= '0' && tok[0] <= '9' || strings.HasPrefix(after, "(") || promKeywords[strings.ToLower(tok)] {
			continue // a number, a function or aggregation, an operator
		}
		use(tok)
	}
	return metrics
}

// notScraped are the metrics the rules and the dashboard may use that
// exportedMetrics' node cannot show, with their labels: Prometheus' own,
// and the region mode's (test/region's checkRegionMetrics checks it).
var notScraped = map[string][]string{
	"up":                   {"job", "instance"},
	"pi_region_mirror_lag": {"region"},
}

var (
	exportedOnce sync.Once
	exported     map[string]map[string]bool
	exportedErr  error
)

// exportedMetrics are the metrics a real pi-node exports, with their
// labels: the binary piNodeFlags built, started with a storage limit on
// loopback, scraped once it has created a session and appended to it
// (the counters of appends and requests have series from then on).
func exportedMetrics(t *testing.T) map[string]map[string]bool {
	t.Helper()
	piNodeFlags(t) // builds piNodeBin
	exportedOnce.Do(func() { exported, exportedErr = scrapePiNode(t) })
	if exportedErr != nil {
		t.Fatal(exportedErr)
	}
	return exported
}

func scrapePiNode(t *testing.T) (map[string]map[string]bool, error) {
	ports := testutil.FreePorts(t, 2)
	base := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	cmd := exec.Command(piNodeBin, "--node-name", "metrics", "--data-dir", t.TempDir(), "--max-file-store", "1GiB",
		"--http-listen", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--client-listen", fmt.Sprintf("127.0.0.1:%d", ports[1]))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")} // no PI_NODE_* from the test's environment
	var log testutil.SyncBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	if _, err := testutil.Poll(time.Minute, func() error { return proctest.Ready(base) }); err != nil {
		return nil, fmt.Errorf("pi-node not ready: %v\n%s", err, log.String())
	}
	entry := []byte(`{"entries":[{"type":"message","message":{"role":"user","content":"hi"}}]}`)
	code, _, reply, err := proctest.Do(t.Context(), proctest.ProbeClient, http.MethodPost, base+"/v1/sessions", entry)
	var created struct {
		SessionID string `json:"sessionId"`
	}
	if err != nil || code != http.StatusCreated || json.Unmarshal(reply, &created) != nil {
		return nil, fmt.Errorf("create a session: %d %v %s", code, err, reply)
	}
	code, _, reply, err = proctest.Do(t.Context(), proctest.ProbeClient, http.MethodPost, base+"/v1/sessions/"+created.SessionID+"/entries", entry)
	if err != nil || code != http.StatusOK {
		return nil, fmt.Errorf("append to a session: %d %v %s", code, err, reply)
	}
	got, err := proctest.Metrics(base)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]bool{}
	for s := range got {
		name, labels, err := proctest.SplitSeries(s)
		if err != nil {
			return nil, err
		}
		if out[name] == nil {
			out[name] = map[string]bool{}
		}
		for l := range labels {
			out[name][l] = true
		}
	}
	for name, labels := range notScraped {
		if _, ok := out[name]; ok {
			return nil, fmt.Errorf("%s is exported by a single node: take it out of notScraped", name)
		}
		out[name] = map[string]bool{}
		for _, l := range labels {
			out[name][l] = true
		}
	}
	return out, nil
}

// operationsAnchors are the anchors GitHub makes of docs/OPERATIONS.md's
// headings: lower case, punctuation dropped, spaces as hyphens, a repeated
// one numbered.
func operationsAnchors(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "OPERATIONS.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		heading, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if fenced || !strings.HasPrefix(line, "#") || !ok {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}
