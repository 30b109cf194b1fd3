package deploytest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// cluster is one docker-compose project — docker-compose.yml plus the test
// override, or another compose file — driven through the compose CLI (v1
// or v2) and docker.
type cluster struct {
	t        *testing.T
	compose  []string // "docker-compose" or "docker compose"
	project  string
	root     string
	files    []string // compose files, relative to root
	services []string // the pi-node services, each publishing 8080
	sec      *secrets // the project's secrets directory (pi-ctl gen-secrets)
	token    string   // the worker's HTTP token, on every /v1 request
	http     *http.Client
	env      []string
	nodes    []*node
	network  string
}

// node is one pi-node container. The test reaches it through its published
// loopback port, or with docker exec and the image's /healthcheck when it is
// cut off the network (its published port goes with the network).
type node struct {
	c       *cluster
	name    string // service name == --node-name
	cid     string
	viaExec bool

	// base is https://127.0.0.1:port. A restarted container publishes a
	// new port (refreshPort) while appenders keep sending to it: hence mu.
	mu   sync.Mutex
	base string
}

// url is the node's base URL, https://127.0.0.1:port.
func (n *node) url() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.base
}

// composeCommand picks the compose CLI: $PI_COMPOSE, else docker-compose
// (v1, what CI has), else the docker compose plugin (v2).
func composeCommand() ([]string, error) {
	if v := strings.TrimSpace(os.Getenv("PI_COMPOSE")); v != "" {
		return strings.Fields(v), nil
	}
	if _, err := exec.LookPath("docker-compose"); err == nil {
		return []string{"docker-compose"}, nil
	}
	if exec.Command("docker", "compose", "version").Run() == nil {
		return []string{"docker", "compose"}, nil
	}
	return nil, fmt.Errorf("neither docker-compose nor docker compose is installed")
}

func newCluster(t *testing.T, compose []string) *cluster {
	return newProject(t, compose, "pitest",
		[]string{"docker-compose.yml", filepath.Join("test", "compose", "docker-compose.test.yml")},
		[]string{"pi-node-1", "pi-node-2", "pi-node-3"}, nil)
}

// newProject is a cluster of the given compose files under a fresh project
// name starting with prefix, secured with a secrets directory of its own
// whose certificate names the services and the extra hosts.
func newProject(t *testing.T, compose []string, prefix string, files, services, extraHosts []string) *cluster {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	c := &cluster{
		t: t, compose: compose, root: repoRoot(t), files: files, services: services,
		// A project of its own: nothing of a developer's cluster is touched,
		// and two runs on one machine do not collide.
		project: prefix + hex.EncodeToString(b),
	}
	// Secured as a user runs it: pi-ctl gen-secrets, then the files mounted
	// from PI_SECRETS. The test is a client like any other: HTTPS verified
	// with the CA, the worker's token (write scope) on every /v1 request.
	c.sec = genSecrets(t, c.root, c.project, append(slices.Clone(services), extraHosts...))
	c.token = c.sec.tokens["worker"]
	c.http = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4, TLSClientConfig: c.sec.tlsConfig(false)}}
	c.env = append(os.Environ(),
		"PI_HTTP_PORT=", "PI_NATS_PORT=", // free host ports
		"PI_BIND=127.0.0.1",
		"PI_NODE_LOG_LEVEL=info",
	)
	c.env = append(c.env, c.sec.env()...)
	return c
}

// run runs the compose CLI on the project.
func (c *cluster) run(args ...string) (string, error) {
	full := append([]string{}, c.compose[1:]...)
	full = append(full, "-p", c.project)
	for _, f := range c.files {
		full = append(full, "-f", filepath.Join(c.root, f))
	}
	full = append(full, args...)
	cmd := exec.Command(c.compose[0], full...)
	cmd.Dir = c.root
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", strings.Join(c.compose, " "), strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (c *cluster) must(args ...string) string {
	c.t.Helper()
	out, err := c.run(args...)
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

// docker runs the docker CLI.
func docker(args ...string) (string, error) {
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("docker %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

func (c *cluster) docker(args ...string) string {
	c.t.Helper()
	out, err := docker(args...)
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

// down removes the project with its volumes; it is the cleanup of every
// run, passed or failed, and it runs first too in case a name was reused.
func (c *cluster) down() {
	if _, err := c.run("down", "-v", "--remove-orphans", "-t", "5"); err != nil {
		c.t.Logf("cleanup: %v", err)
	}
}

// dumpLogs shows the nodes' last log lines when the test failed.
func (c *cluster) dumpLogs() {
	if !c.t.Failed() {
		return
	}
	if out, err := c.run("ps"); err == nil {
		c.t.Logf("compose ps:\n%s", out)
	}
	// Few lines inline: CI shows the end of a failed test's output, and 60
	// lines per container pushed the failure itself out of it (stop 46's
	// TestComposeRegion). Every line goes to $PI_TEST_LOG_DIR when set.
	out, _ := c.run("logs", "--no-color", "--tail=15")
	c.t.Logf("compose logs (last lines per node):\n%s", out)
	if dir := os.Getenv("PI_TEST_LOG_DIR"); dir != "" {
		all, _ := c.run("logs", "--no-color")
		name := filepath.Join(dir, strings.ReplaceAll(c.t.Name(), "/", "_")+"-compose.log")
		if err := os.MkdirAll(dir, 0o755); err == nil {
			err = os.WriteFile(name, []byte(all), 0o644)
			c.t.Logf("compose logs, whole: %s (%v)", name, err)
		}
	}
}

// discover finds the containers, their published HTTP ports and the
// project's network, once all of them run.
func (c *cluster) discover() {
	c.t.Helper()
	c.nodes = nil
	for _, svc := range c.services {
		cid := strings.TrimSpace(c.must("ps", "-q", svc))
		if cid == "" {
			c.t.Fatalf("no container for %s", svc)
		}
		hostPort := strings.TrimSpace(c.must("port", svc, "8080"))
		if !strings.HasPrefix(hostPort, "127.0.0.1:") {
			c.t.Fatalf("%s publishes 8080 on %q, want loopback", svc, hostPort)
		}
		c.nodes = append(c.nodes, &node{c: c, name: svc, cid: cid, base: "https://" + hostPort})
	}
	c.network = c.docker("inspect", "-f", "{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}", c.nodes[0].cid)
	if strings.Contains(c.network, " ") {
		c.t.Fatalf("containers on several networks (%q): the partition test expects one", c.network)
	}
}

func (c *cluster) node(name string) *node {
	for _, n := range c.nodes {
		if n.name == name {
			return n
		}
	}
	c.t.Fatalf("no node %q", name)
	return nil
}

func (c *cluster) others(n *node) []*node {
	var out []*node
	for _, o := range c.nodes {
		if o != n {
			out = append(out, o)
		}
	}
	return out
}

// cids are the nodes' container ids, in order.
func (c *cluster) cids() []string {
	var out []string
	for _, n := range c.nodes {
		out = append(out, n.cid)
	}
	return out
}

// waitHealthy waits until Docker calls every one of the containers healthy.
func (c *cluster) waitHealthy(t *testing.T, what string, cids ...string) {
	t.Helper()
	testutil.WaitFor(t, 2*time.Minute, func() error {
		h := strings.Fields(c.docker(append([]string{"inspect", "-f", "{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}"}, cids...)...))
		ok := len(h) == len(cids)
		for _, s := range h {
			ok = ok && s == "healthy"
		}
		if !ok {
			return fmt.Errorf("%s: %s", what, strings.Join(h, " "))
		}
		return nil
	})
}

// response is what the test needs of an HTTP answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r *response) String() string {
	return fmt.Sprintf("%d %s", r.status, bytes.TrimSpace(r.body))
}

// do sends one request to the node with a bound on the whole exchange,
// with the worker's token, or the admin's for /v1/status (its JetStream
// and region parts are shown to admin tokens only).
func (n *node) do(method, path string, body []byte, timeout time.Duration) (*response, error) {
	token := n.c.token
	if strings.HasPrefix(path, "/v1/status") {
		token = n.c.sec.tokens["admin"]
	}
	return n.doAs(token, method, path, body, timeout)
}

// doAs is do with the given bearer token on /v1 requests.
func (n *node) doAs(token, method, path string, body []byte, timeout time.Duration) (*response, error) {
	if n.viaExec {
		return n.exec(token, method, path, body, timeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, n.url()+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(path, "/v1/") {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := n.c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// exec sends the request from inside the container with the image's
// /healthcheck, which prints the response in wire format; it speaks HTTPS
// to its pi-node, verified with the mounted CA.
func (n *node) exec(token, method, path string, body []byte, timeout time.Duration) (*response, error) {
	args := []string{"exec", "-i", n.cid, "/healthcheck", "-print", "-expect", "any", "-timeout", timeout.String(), "-X", method,
		"-tls-ca", composeSecrets + "/ca.pem"}
	if strings.HasPrefix(path, "/v1/") {
		args = append(args, "-H", "Authorization: Bearer "+token)
	}
	if body != nil {
		args = append(args, "-d", "@-")
	}
	args = append(args, path)
	cmd := exec.Command("docker", args...)
	cmd.Stdin = bytes.NewReader(body)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("docker exec %s /healthcheck %s %s: %w: %s", n.name, method, path, err, strings.TrimSpace(stderr.String()))
	}
	resp, err := http.ReadResponse(bufio.NewReader(&stdout), nil)
	if err != nil {
		return nil, fmt.Errorf("parsing /healthcheck's output: %w\n%s", err, stdout.String())
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// getJSON GETs path and decodes a 200 answer into v.
func (n *node) getJSON(path string, v any) error {
	r, err := n.do(http.MethodGet, path, nil, 10*time.Second)
	if err != nil {
		return err
	}
	if r.status != http.StatusOK {
		return fmt.Errorf("%s GET %s: %s", n.name, path, r)
	}
	return json.Unmarshal(r.body, v)
}

// status is the part of /v1/status the test reads.
type status struct {
	Node  string `json:"node"`
	Build struct {
		Version  string `json:"version"`
		Revision string `json:"revision"`
	} `json:"build"`
	Store struct {
		Applied    uint64     `json:"applied"`
		LogLastSeq uint64     `json:"logLastSeq"`
		Lag        uint64     `json:"lag"`
		CaughtUpAt *time.Time `json:"caughtUpAt"`
	} `json:"store"`
	JetStream struct {
		Error  string              `json:"error"`
		Stream wire.StreamStatus   `json:"stream"`
		Shards []wire.StreamStatus `json:"shards"` // with --shards above 1, Stream among them
	} `json:"jetstream"`
}

// sessionInfo is the part of GET /v1/sessions/{id} the test reads.
type sessionInfo struct {
	SessionID  string `json:"sessionId"`
	EntryCount int    `json:"entryCount"`
	LastSeq    uint64 `json:"lastSeq"`
	LeafID     string `json:"leafId"`
}

// entryBody is an append request of one message entry with a client-chosen
// id, so that a retry after a lost answer is recognised, never duplicated.
func entryBody(id string) []byte {
	return chainedEntryBody(id, "")
}

// chainedEntryBody is entryBody with an explicit parentId (none when
// parent is empty: the server puts the entry under the session's leaf).
func chainedEntryBody(id, parent string) []byte {
	var p string
	if parent != "" {
		p = fmt.Sprintf(`"parentId":%q,`, parent)
	}
	return fmt.Appendf(nil, `{"entries":[{"type":"message","id":%q,%s"message":{"role":"user","content":"compose test %s","timestamp":%d}}]}`,
		id, p, id, time.Now().UnixMilli())
}
