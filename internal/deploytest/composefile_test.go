package deploytest

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/jetstream/embedded"
	"sigs.k8s.io/yaml"
)

// composeFile is the part of the compose specification docker-compose.yml
// uses. Unknown keys are not an error here (docker-compose config checks
// the schema in the live test); this test checks the values against
// pi-node.
type composeFile struct {
	Services map[string]composeService `json:"services"`
	Volumes  map[string]any            `json:"volumes"`
}

type composeService struct {
	Image           string            `json:"image"`
	Hostname        string            `json:"hostname"`
	Command         []string          `json:"command"`
	Environment     map[string]string `json:"environment"`
	Volumes         []string          `json:"volumes"`
	Ports           []string          `json:"ports"`
	StopGracePeriod string            `json:"stop_grace_period"`
	GroupAdd        []string          `json:"group_add"`
	Healthcheck     struct {
		Test        []string `json:"test"`
		Interval    string   `json:"interval"`
		Timeout     string   `json:"timeout"`
		StartPeriod string   `json:"start_period"`
	} `json:"healthcheck"`
}

// interpolation is ${VAR}, ${VAR:-default} or ${VAR-default}.
var interpolation = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:?-([^}]*))?\}`)

// withDefaults replaces each ${VAR...} by its default, as compose does with
// an empty environment: the file must work as it is.
func withDefaults(s string) string {
	return interpolation.ReplaceAllStringFunc(s, func(m string) string {
		return interpolation.FindStringSubmatch(m)[3]
	})
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	return loadComposeFile(t, "docker-compose.yml")
}

// loadComposeFile reads a compose file, given relative to the repository.
func loadComposeFile(t *testing.T, rel string) composeFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	// YAML (anchors and merge keys included) to JSON, then interpolate the
	// defaults in every string.
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	var raw any
	if err := json.Unmarshal(js, &raw); err != nil {
		t.Fatal(err)
	}
	js, _ = json.Marshal(interpolateAll(raw))
	var f composeFile
	if err := json.Unmarshal(js, &f); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return f
}

func interpolateAll(v any) any {
	switch v := v.(type) {
	case string:
		return withDefaults(v)
	case []any:
		for i := range v {
			v[i] = interpolateAll(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = interpolateAll(v[k])
		}
	}
	return v
}

func TestComposeFileMatchesPiNode(t *testing.T) {
	flags := piNodeFlags(t)
	f := loadCompose(t)
	names := slices.Sorted(maps.Keys(f.Services))
	if len(names) != 3 {
		t.Fatalf("services %v, want 3 pi-nodes", names)
	}
	var routes []string
	var publishing []string
	image := ""
	for _, name := range names {
		svc := f.Services[name]
		where := "service " + name
		if image == "" {
			image = svc.Image
		} else if svc.Image != image {
			t.Errorf("%s runs %s, the others %s", where, svc.Image, image)
		}
		st := newSettings()
		for _, k := range slices.Sorted(maps.Keys(svc.Environment)) {
			if _, ok := envFlag(k); !ok {
				t.Errorf("%s: environment %s is not a PI_NODE_* variable", where, k)
			}
			st.env(t, flags, where+" environment", k, svc.Environment[k])
		}
		st.args(t, flags, where+" command", svc.Command)

		if got := st.values["node-name"]; got != name || svc.Hostname != name {
			t.Errorf("%s: --node-name %q and hostname %q: both should be the service name", where, got, svc.Hostname)
		}
		if st.port(t, "http-listen") != "8080" || st.port(t, "client-listen") != "4222" {
			t.Errorf("%s: HTTP on %q and NATS on %q; the image and the healthcheck expect 8080 and 4222",
				where, st.values["http-listen"], st.values["client-listen"])
		}
		clusterPort := st.port(t, "cluster-listen")
		if st.values["cluster-name"] == "" || st.values["replicas"] != "3" {
			t.Errorf("%s: --cluster-name %q --replicas %q: want a named cluster and 3 replicas", where, st.values["cluster-name"], st.values["replicas"])
		}
		if v := st.values["sync"]; v != "always" {
			t.Errorf("%s: --sync=%q by default; acknowledged writes must survive a crash unless the operator asks otherwise", where, v)
		}
		routes = append(routes, fmt.Sprintf("nats-route://%s:%s", name, clusterPort))

		// The data dir is a named volume of its own.
		dataDir := st.values["data-dir"]
		var vol string
		for _, v := range svc.Volumes {
			src, dst, _ := strings.Cut(v, ":")
			if strings.TrimSuffix(strings.SplitN(dst, ":", 2)[0], "/") == dataDir {
				vol = src
			}
		}
		if _, declared := f.Volumes[vol]; vol == "" || !declared {
			t.Errorf("%s: no named volume is mounted at --data-dir=%q (volumes %v)", where, dataDir, svc.Volumes)
		}

		// Secured: the secrets directory mounted, every security flag a
		// file of it, pi-node's fail-closed check passed.
		checkComposeSecrets(t, where, svc)
		checkSecuredSettings(t, where, st, composeSecrets)
		checkFailClosed(t, where, st, composeSecrets)

		// Health: /readyz through the image's probe, within its timeout.
		hc := svc.Healthcheck
		if len(hc.Test) < 2 || hc.Test[0] != "CMD" || hc.Test[1] != "/healthcheck" || !slices.Contains(hc.Test, "/readyz") {
			t.Errorf("%s: healthcheck %v, want [CMD /healthcheck ... /readyz]", where, hc.Test)
		}
		if i := slices.Index(hc.Test, "-timeout"); i > 0 && i+1 < len(hc.Test) {
			probe, _ := time.ParseDuration(hc.Test[i+1])
			if limit, _ := time.ParseDuration(hc.Timeout); probe >= limit {
				t.Errorf("%s: the probe's -timeout %v is not below the healthcheck timeout %v", where, probe, limit)
			}
		}
		if sp, _ := time.ParseDuration(hc.StartPeriod); sp < 30*time.Second {
			t.Errorf("%s: start_period %q: a node waits for a quorum before it serves", where, hc.StartPeriod)
		}
		grace, err := time.ParseDuration(st.values["shutdown-grace"])
		if err != nil {
			grace = 20 * time.Second // pi-node's default
		}
		lameDuck, _ := time.ParseDuration(st.values["lame-duck"]) // unset: 0
		if stop, _ := time.ParseDuration(svc.StopGracePeriod); stop <= stopBudget(lameDuck, grace) {
			t.Errorf("%s: stop_grace_period %q does not exceed --lame-duck %v + --shutdown-grace %v + the NATS hand-over: Docker would SIGKILL a stopping node", where, svc.StopGracePeriod, lameDuck, grace)
		}
		if len(svc.Ports) > 0 {
			publishing = append(publishing, name)
			var targets []string
			for _, p := range svc.Ports {
				targets = append(targets, p[strings.LastIndex(p, ":")+1:])
			}
			if !slices.Equal(targets, []string{"8080", "4222"}) {
				t.Errorf("%s publishes %v, want the HTTP (8080) and NATS (4222) ports", where, svc.Ports)
			}
		}
	}
	if len(publishing) != 1 {
		t.Errorf("services publishing ports: %v, want one", publishing)
	}
	// Every node lists every node, itself included.
	for _, name := range names {
		st := newSettings()
		svc := f.Services[name]
		for k, v := range svc.Environment {
			st.env(t, flags, "service "+name, k, v)
		}
		st.args(t, flags, "service "+name, svc.Command)
		if got := strings.Split(st.values["routes"], ","); !slices.Equal(got, routes) {
			t.Errorf("service %s: --routes %v, want every node: %v", name, got, routes)
		}
	}
	if img := makeVar(t, "IMAGE") + ":" + makeVar(t, "TAG"); image != img {
		t.Errorf("compose runs %s, make image builds %s", image, img)
	}
}

// composeSecrets is where the compose files mount the secrets directory.
const composeSecrets = "/secrets"

// checkComposeSecrets checks that svc mounts the secrets directory
// read-only, joins the group that may read it, and (when it has one) probes
// its HTTPS port verifying the deployment's CA.
func checkComposeSecrets(t *testing.T, where string, svc composeService) {
	t.Helper()
	if !slices.Contains(svc.Volumes, "./secrets"+":"+composeSecrets+":ro") {
		t.Errorf("%s: volumes %v: want ${PI_SECRETS:-./secrets}:%s:ro", where, svc.Volumes, composeSecrets)
	}
	if !slices.Equal(svc.GroupAdd, []string{"0"}) {
		t.Errorf("%s: group_add %v: want [${PI_SECRETS_GID:-0}], the group that may read the secrets", where, svc.GroupAdd)
	}
	if hc := svc.Healthcheck.Test; slices.Contains(hc, "/readyz") {
		if i := slices.Index(hc, "-tls-ca"); i < 0 || i+1 >= len(hc) || hc[i+1] != composeSecrets+"/ca.pem" {
			t.Errorf("%s: healthcheck %v: want -tls-ca %s/ca.pem (HTTPS, verified)", where, hc, composeSecrets)
		}
	}
}

// TestSecretsIgnored: the secrets directories the compose files mount are
// never committed, and make secrets writes the default one.
func TestSecretsIgnored(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), ".gitignore"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"/secrets/", "/deploy/compose/secrets/"} {
		if !slices.Contains(strings.Split(string(data), "\n"), dir) {
			t.Errorf(".gitignore lacks %s", dir)
		}
	}
	if got := makeVar(t, "SECRETS_DIR"); got != "secrets" {
		t.Errorf("make secrets writes %s, docker-compose.yml mounts ./secrets", got)
	}
	if got := makeVar(t, "SECRETS_NAMES"); got != "pi-node-1,pi-node-2,pi-node-3" {
		t.Errorf("make secrets names %s, not the services of docker-compose.yml", got)
	}
}

// makeVar reads a "NAME ?= value" default from the Makefile.
func makeVar(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + name + `\s*\?=\s*(\S+)\s*$`).FindSubmatch(data)
	if m == nil {
		t.Fatalf("Makefile sets no %s ?= default", name)
	}
	return string(m[1])
}

// TestDockerfile checks the image definition against what the deployments
// expect of it: scratch, the non-root user, pi-node as entrypoint, the
// probe, and only real PI_NODE_* variables.
func TestDockerfile(t *testing.T) {
	flags := piNodeFlags(t)
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	// Join continuation lines, drop comments.
	text := regexp.MustCompile(`\\\n\s*`).ReplaceAllString(string(data), " ")
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	want := map[string]bool{
		"FROM scratch":                false,
		"USER 65532:65532":            false,
		`ENTRYPOINT ["/pi-node"]`:     false,
		`CMD ["/healthcheck"]`:        false, // as the end of HEALTHCHECK
		"--chown=65532:65532":         false, // the data dir belongs to the user
		"PI_NODE_HTTP_LISTEN=0.0.0.0": false,
	}
	// The pi-node image is the last stage, what a plain docker build makes;
	// an earlier one (the cross-region tie-breaker) does not count.
	stage := 0
	for i, l := range lines {
		if strings.HasPrefix(l, "FROM ") {
			stage = i
		}
	}
	for i, l := range lines {
		for w := range want {
			if strings.Contains(l, w) && i >= stage {
				want[w] = true
			}
		}
		if rest, ok := strings.CutPrefix(l, "ENV "); ok {
			for _, kv := range strings.Fields(rest) {
				k, _, _ := strings.Cut(kv, "=")
				if _, isPi := envFlag(k); isPi {
					newSettings().env(t, flags, "Dockerfile ENV", k, "")
				}
			}
		}
		// FROM scratch, or FROM scratch AS name (a stage).
		f := strings.Fields(l)
		named := len(f) == 4 && strings.EqualFold(f[2], "AS")
		if f[0] == "FROM" && (len(f) < 2 || f[1] != "scratch" || len(f) != 2 && !named) {
			t.Errorf("Dockerfile: %q: no base image can be pulled here; the image is FROM scratch", l)
		}
	}
	for w, found := range want {
		if !found {
			t.Errorf("Dockerfile lacks %q", w)
		}
	}
}

// stopBudget is the longest a SIGTERM takes pi-node (docs/OPERATIONS.md
// "Stopping a node"): the lame duck, the drain and last snapshot within
// the grace, and the NATS server's lame-duck mode.
func stopBudget(lameDuck, grace time.Duration) time.Duration {
	return lameDuck + grace + embedded.LameDuckBudget
}
