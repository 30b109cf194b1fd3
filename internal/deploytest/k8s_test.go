package deploytest

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// manifests is deploy/k8s decoded: every object strictly into its
// k8s.io/api type, one object per file.
type manifests struct {
	sts        *appsv1.StatefulSet
	services   map[string]*corev1.Service
	configMaps map[string]*corev1.ConfigMap
	pdb        *policyv1.PodDisruptionBudget
	netpol     *networkingv1.NetworkPolicy
	backup     *batchv1.CronJob
	pvcs       map[string]*corev1.PersistentVolumeClaim
	files      []string // the manifest files, kustomization.yaml excepted
}

// kustomization is the part of kustomize's Kustomization the directory
// uses; unknown fields fail, like the manifests'.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Labels     []struct {
		Pairs            map[string]string `json:"pairs"`
		IncludeSelectors bool              `json:"includeSelectors,omitempty"`
		IncludeTemplates bool              `json:"includeTemplates,omitempty"`
	} `json:"labels,omitempty"`
}

// strict decodes one YAML document into v as the API server's strict field
// validation does: field names match case-sensitively (encoding/json
// would take "httpget" for "httpGet"), and an unknown or duplicate field
// fails instead of being silently dropped.
func strict(t *testing.T, file string, data []byte, v any) {
	t.Helper()
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	strictErrs, err := kjson.UnmarshalStrict(js, v, kjson.DisallowUnknownFields, kjson.DisallowDuplicateFields)
	if err != nil {
		t.Fatalf("%s: decoding into %T: %v", file, v, err)
	}
	if len(strictErrs) > 0 {
		t.Fatalf("%s: decoding into %T: %v", file, v, errors.Join(strictErrs...))
	}
}

var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

func loadManifests(t *testing.T) *manifests {
	t.Helper()
	dir := filepath.Join(repoRoot(t), "deploy", "k8s")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s (%v)", dir, err)
	}
	m := &manifests{services: map[string]*corev1.Service{}, configMaps: map[string]*corev1.ConfigMap{},
		pvcs: map[string]*corev1.PersistentVolumeClaim{}}
	for _, path := range files {
		name := filepath.Base(path)
		if name == "kustomization.yaml" {
			continue
		}
		m.files = append(m.files, name)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if docs := docSeparator.Split(strings.TrimSpace(string(data)), -1); len(docs) > 1 {
			t.Fatalf("%s: %d documents; keep one object per file", name, len(docs))
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(data, &tm); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		switch tm.APIVersion + " " + tm.Kind {
		case "apps/v1 StatefulSet":
			if m.sts != nil {
				t.Fatalf("%s: a second StatefulSet", name)
			}
			m.sts = &appsv1.StatefulSet{}
			strict(t, name, data, m.sts)
		case "v1 Service":
			s := &corev1.Service{}
			strict(t, name, data, s)
			m.services[s.Name] = s
		case "v1 ConfigMap":
			c := &corev1.ConfigMap{}
			strict(t, name, data, c)
			m.configMaps[c.Name] = c
		case "policy/v1 PodDisruptionBudget":
			m.pdb = &policyv1.PodDisruptionBudget{}
			strict(t, name, data, m.pdb)
		case "networking.k8s.io/v1 NetworkPolicy":
			if m.netpol != nil {
				t.Fatalf("%s: a second NetworkPolicy", name)
			}
			m.netpol = &networkingv1.NetworkPolicy{}
			strict(t, name, data, m.netpol)
		case "batch/v1 CronJob":
			if m.backup != nil {
				t.Fatalf("%s: a second CronJob", name)
			}
			m.backup = &batchv1.CronJob{}
			strict(t, name, data, m.backup)
		case "v1 PersistentVolumeClaim":
			c := &corev1.PersistentVolumeClaim{}
			strict(t, name, data, c)
			m.pvcs[c.Name] = c
		default:
			t.Fatalf("%s: unexpected %s %s (teach this test its type)", name, tm.APIVersion, tm.Kind)
		}
	}
	if m.sts == nil || m.pdb == nil || m.netpol == nil {
		t.Fatal("deploy/k8s needs a StatefulSet, a PodDisruptionBudget and a NetworkPolicy")
	}
	return m
}

func TestK8sKustomizationListsEveryManifest(t *testing.T) {
	m := loadManifests(t)
	path := filepath.Join(repoRoot(t), "deploy", "k8s", "kustomization.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	strict(t, "kustomization.yaml", data, &k)
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Errorf("kustomization.yaml is %s %s", k.APIVersion, k.Kind)
	}
	got := slices.Sorted(slices.Values(k.Resources))
	want := slices.Sorted(slices.Values(m.files))
	if !slices.Equal(got, want) {
		t.Errorf("kustomization resources %v, want every manifest of the directory %v", got, want)
	}
	for _, l := range k.Labels {
		if l.IncludeSelectors {
			// Selectors of a StatefulSet are immutable: a label added to
			// them later would make the next apply fail.
			t.Errorf("kustomization labels %v include selectors", l.Pairs)
		}
	}
}

func TestK8sNamespaceAgnostic(t *testing.T) {
	m := loadManifests(t)
	objs := []metav1.Object{m.sts, m.pdb, m.netpol}
	if m.backup != nil {
		objs = append(objs, m.backup)
	}
	for _, c := range m.pvcs {
		objs = append(objs, c)
	}
	for _, s := range m.services {
		objs = append(objs, s)
	}
	for _, c := range m.configMaps {
		objs = append(objs, c)
	}
	for _, o := range objs {
		if o.GetNamespace() != "" {
			t.Errorf("%s names namespace %q: leave it to kubectl -n or kustomize", o.GetName(), o.GetNamespace())
		}
	}
}

// TestK8sStatefulSet cross-checks the StatefulSet with pi-node (flags, env,
// ports, probe paths, data dir) and with the Services, the ConfigMap and
// the PodDisruptionBudget.
func TestK8sStatefulSet(t *testing.T) {
	flags := piNodeFlags(t)
	m := loadManifests(t)
	sts := m.sts
	spec := &sts.Spec
	pod := &spec.Template.Spec

	// Selector, labels, replicas.
	sel, err := metav1.LabelSelectorAsSelector(spec.Selector)
	if err != nil || sel.Empty() {
		t.Fatalf("selector %v: %v", spec.Selector, err)
	}
	podLabels := labels.Set(spec.Template.Labels)
	if !sel.Matches(podLabels) {
		t.Fatalf("selector %v does not match the pod labels %v", sel, podLabels)
	}
	if spec.Replicas == nil || *spec.Replicas != 3 {
		t.Errorf("replicas %v, want 3", spec.Replicas)
	}
	if spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("podManagementPolicy %q: pods become ready only once a quorum runs, so they must start in parallel", spec.PodManagementPolicy)
	}

	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := &pod.Containers[0]
	if len(c.Command) > 0 && !slices.Equal(c.Command, []string{"/pi-node"}) {
		t.Errorf("command %v: the image's entrypoint is /pi-node", c.Command)
	}

	// What pi-node is told, merged as pi-node merges it: ConfigMap, then
	// env (which wins over envFrom in Kubernetes), then flags.
	st := newSettings()
	defined := map[string]bool{} // env names available to $(VAR) expansion
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef == nil {
			t.Errorf("envFrom %+v: only ConfigMaps are expected", ef)
			continue
		}
		cm := m.configMaps[ef.ConfigMapRef.Name]
		if cm == nil {
			t.Errorf("envFrom names ConfigMap %q, which deploy/k8s does not define", ef.ConfigMapRef.Name)
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
			if _, ok := envFlag(k); !ok {
				t.Errorf("ConfigMap %s: key %s is not a PI_NODE_* variable", cm.Name, k)
			}
			st.env(t, flags, "ConfigMap "+cm.Name, k, cm.Data[k])
			defined[k] = true
		}
	}
	fieldRefs := map[string]string{}
	for _, e := range c.Env {
		defined[e.Name] = true
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
			fieldRefs[e.Name] = e.ValueFrom.FieldRef.FieldPath
		case e.ValueFrom != nil && (e.ValueFrom.SecretKeyRef != nil || e.ValueFrom.ConfigMapKeyRef != nil):
			t.Errorf("env %s from a key reference: the secrets are files of the mounted Secret (%s), the settings the ConfigMap's", e.Name, secretsMount)
		default:
			st.env(t, flags, "env", e.Name, e.Value)
		}
		if _, ok := envFlag(e.Name); !ok && e.ValueFrom == nil {
			t.Errorf("env %s=%q: not a PI_NODE_* variable and not from the downward API; pi-node reads nothing else", e.Name, e.Value)
		}
	}
	// $(VAR) that Kubernetes cannot expand stays in the argument literally:
	// a silent misconfiguration, so every reference must be defined.
	for _, a := range c.Args {
		for _, ref := range varRef.FindAllStringSubmatch(a, -1) {
			if !defined[ref[1]] {
				t.Errorf("argument %q refers to $(%s), which the container's env does not define", a, ref[1])
			}
		}
	}
	if fieldRefs["POD_NAMESPACE"] != "metadata.namespace" || fieldRefs["POD_NAME"] != "metadata.name" {
		t.Errorf("POD_NAME and POD_NAMESPACE must come from the downward API (metadata.name, metadata.namespace), got %v", fieldRefs)
	}
	const ns = "some-namespace"
	expand := func(s string) string {
		return strings.NewReplacer("$(POD_NAMESPACE)", ns, "$(POD_NAME)", "POD").Replace(s)
	}
	expanded := make([]string, len(c.Args))
	for i, a := range c.Args {
		expanded[i] = expand(a)
	}
	st.args(t, flags, "args", expanded)

	// Secured: every security flag names a file of the mounted Secret, and
	// pi-node accepts the whole configuration (its fail-closed check).
	checkSecuredSettings(t, "StatefulSet", st, secretsMount)
	checkFailClosed(t, "StatefulSet", st, secretsMount)

	// Ports: each listener pi-node is told to open is a named container
	// port with the same number.
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for flag, portName := range map[string]string{"http-listen": "http", "client-listen": "nats", "cluster-listen": "cluster"} {
		want := st.port(t, flag)
		if got, ok := ports[portName]; !ok || strconv.Itoa(int(got)) != want {
			t.Errorf("container port %q is %d, but pi-node listens on --%s=%s", portName, got, flag, st.values[flag])
		}
	}

	// Probes: the paths pi-node serves, on its HTTP port.
	probePath := func(name string, p *corev1.Probe, want string) {
		t.Helper()
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s: want an httpGet probe of %s", name, want)
			return
		}
		if p.HTTPGet.Scheme != corev1.URISchemeHTTPS {
			t.Errorf("%s: scheme %q, want HTTPS: pi-node serves its API over TLS (--http-tls-cert)", name, p.HTTPGet.Scheme)
		}
		if p.HTTPGet.Path != want {
			t.Errorf("%s probes %q, want %q", name, p.HTTPGet.Path, want)
		}
		if resolvePort(p.HTTPGet.Port, ports) != ports["http"] {
			t.Errorf("%s probes port %v, not the HTTP port %d", name, p.HTTPGet.Port.String(), ports["http"])
		}
	}
	probePath("readinessProbe", c.ReadinessProbe, "/readyz")
	probePath("livenessProbe", c.LivenessProbe, "/healthz")
	probePath("startupProbe", c.StartupProbe, "/healthz")
	if p := c.StartupProbe; p != nil && time.Duration(p.PeriodSeconds*p.FailureThreshold)*time.Second < 2*time.Minute {
		t.Errorf("startupProbe gives %ds: a pod waits for a quorum before it serves HTTP, give it minutes",
			p.PeriodSeconds*p.FailureThreshold)
	}

	// Data: the volume claim is mounted where --data-dir points.
	dataDir, ok := st.values["data-dir"]
	if !ok {
		t.Error("--data-dir is not set (pi-node's default ./pi-data is on the read-only root filesystem)")
	}
	var mounted string
	for _, vm := range c.VolumeMounts {
		if vm.MountPath == dataDir {
			mounted = vm.Name
		}
	}
	var claims []string
	for _, vct := range spec.VolumeClaimTemplates {
		claims = append(claims, vct.Name)
		if !slices.Contains(vct.Spec.AccessModes, corev1.ReadWriteOnce) {
			t.Errorf("volume claim %s: access modes %v, want ReadWriteOnce", vct.Name, vct.Spec.AccessModes)
		}
		if q, ok := vct.Spec.Resources.Requests[corev1.ResourceStorage]; !ok || q.IsZero() {
			t.Errorf("volume claim %s requests no storage", vct.Name)
		}
	}
	if mounted == "" || !slices.Contains(claims, mounted) {
		t.Errorf("no volume claim template (%v) is mounted at --data-dir=%q (mounts %+v)", claims, dataDir, c.VolumeMounts)
	}

	// The cluster: name, replicas, routes naming every pod through the
	// headless Service, this one included.
	if st.values["cluster-name"] == "" {
		t.Error("--cluster-name is not set: the pods would not cluster")
	}
	if got := st.values["replicas"]; got != strconv.Itoa(int(*spec.Replicas)) {
		t.Errorf("--replicas=%q, want the StatefulSet's %d", got, *spec.Replicas)
	}
	if got := st.values["node-name"]; got != "POD" {
		t.Errorf("--node-name=%q, want $(POD_NAME): JetStream's raft identity must be stable across restarts", got)
	}
	headless := m.services[spec.ServiceName]
	if headless == nil {
		t.Fatalf("serviceName %q is no Service of deploy/k8s", spec.ServiceName)
	}
	var want []string
	for i := range int(*spec.Replicas) {
		want = append(want, fmt.Sprintf("%s-%d.%s.%s.svc.cluster.local:%d", sts.Name, i, headless.Name, ns, ports["cluster"]))
	}
	var got []string
	for _, r := range strings.Split(st.values["routes"], ",") {
		u, err := url.Parse(strings.TrimSpace(r))
		if err != nil || u.Scheme != "nats-route" {
			t.Errorf("route %q is not nats-route://host:port", r)
			continue
		}
		got = append(got, u.Host)
	}
	if !slices.Equal(got, want) {
		t.Errorf("--routes name %v, want every pod through the headless Service: %v", got, want)
	}
	if v := st.values["sync"]; v != "always" && v != "interval" {
		t.Errorf("--sync=%q", v)
	}
	g, err := time.ParseDuration(st.values["shutdown-grace"])
	if err != nil {
		t.Errorf("--shutdown-grace=%q: %v", st.values["shutdown-grace"], err)
	}
	lameDuck, err := time.ParseDuration(st.values["lame-duck"])
	if err != nil || lameDuck < 3*time.Second {
		// Endpoints and kube-proxy take a few seconds to stop sending.
		t.Errorf("--lame-duck=%q: want a few seconds for the endpoints to move away", st.values["lame-duck"])
	}
	if tg := pod.TerminationGracePeriodSeconds; tg == nil || time.Duration(*tg)*time.Second < stopBudget(lameDuck, g)+10*time.Second {
		t.Errorf("terminationGracePeriodSeconds %v leaves no margin over --lame-duck=%v + --shutdown-grace=%v + the NATS hand-over", tg, lameDuck, g)
	}
	if sts.Spec.MinReadySeconds < 5 {
		t.Errorf("minReadySeconds %d: a rollout would take the next pod as soon as this one answers once", sts.Spec.MinReadySeconds)
	}

	// Scheduling: one pod per machine.
	aa := pod.Affinity
	if aa == nil || aa.PodAntiAffinity == nil || len(aa.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
		t.Error("no required pod anti-affinity: two replicas could share a machine and be lost together")
	} else {
		term := aa.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
		s, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
		if err != nil || !s.Matches(podLabels) || term.TopologyKey != corev1.LabelHostname {
			t.Errorf("anti-affinity %+v must select the pods (%v) per %s", term, podLabels, corev1.LabelHostname)
		}
	}

	// Security: non-root (the image's uid), read-only root, no escalation.
	psc, csc := pod.SecurityContext, c.SecurityContext
	if psc == nil || csc == nil {
		t.Fatal("pod and container securityContext are required")
	}
	if psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 {
		t.Errorf("pod securityContext %+v: want runAsNonRoot and runAsUser 65532 (the image's user)", psc)
	}
	if psc.FSGroup == nil || *psc.FSGroup != 65532 {
		t.Errorf("fsGroup %v: the data volume must be writable by 65532", psc.FSGroup)
	}
	if csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem {
		t.Error("readOnlyRootFilesystem is not set")
	}
	if csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation is not false")
	}
	if csc.Capabilities == nil || !slices.Contains(csc.Capabilities.Drop, "ALL") {
		t.Error("capabilities do not drop ALL")
	}

	// Resources: requests for scheduling, a memory limit larger than them.
	req, lim := c.Resources.Requests, c.Resources.Limits
	if req.Cpu().IsZero() || req.Memory().IsZero() || lim.Memory().IsZero() {
		t.Errorf("resources %+v: want cpu and memory requests and a memory limit", c.Resources)
	} else if lim.Memory().Cmp(*req.Memory()) < 0 {
		t.Errorf("memory limit %v below the request %v", lim.Memory(), req.Memory())
	}
}

func TestK8sServices(t *testing.T) {
	m := loadManifests(t)
	podLabels := labels.Set(m.sts.Spec.Template.Labels)
	ports := map[string]int32{}
	for _, p := range m.sts.Spec.Template.Spec.Containers[0].Ports {
		ports[p.Name] = p.ContainerPort
	}
	headless := m.services[m.sts.Spec.ServiceName]
	if headless == nil {
		t.Fatalf("no Service %q", m.sts.Spec.ServiceName)
	}
	if headless.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("%s: clusterIP %q, want None (headless: per-pod DNS names)", headless.Name, headless.Spec.ClusterIP)
	}
	if !headless.Spec.PublishNotReadyAddresses {
		t.Errorf("%s: publishNotReadyAddresses is false: pods would not find one another before they are ready, and they are ready only once they have", headless.Name)
	}
	var clients int
	for _, name := range slices.Sorted(maps.Keys(m.services)) {
		s := m.services[name]
		if !labels.SelectorFromSet(s.Spec.Selector).Matches(podLabels) || len(s.Spec.Selector) == 0 {
			t.Errorf("Service %s selects %v, not the pods %v", name, s.Spec.Selector, podLabels)
		}
		for _, p := range s.Spec.Ports {
			if resolvePort(p.TargetPort, ports) == 0 {
				t.Errorf("Service %s port %s targets %s, which the container does not declare (%v)", name, p.Name, p.TargetPort.String(), ports)
			}
		}
		if s != headless {
			clients++
			if s.Spec.ClusterIP == corev1.ClusterIPNone {
				t.Errorf("client Service %s is headless", name)
			}
			if !slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return resolvePort(p.TargetPort, ports) == ports["http"] }) {
				t.Errorf("client Service %s does not expose the HTTP API", name)
			}
		}
	}
	if clients != 1 {
		t.Errorf("%d client Services, want 1", clients)
	}
	if !slices.ContainsFunc(headless.Spec.Ports, func(p corev1.ServicePort) bool { return resolvePort(p.TargetPort, ports) == ports["cluster"] }) {
		t.Errorf("headless Service %s does not carry the route port %d", headless.Name, ports["cluster"])
	}
}

func TestK8sPodDisruptionBudget(t *testing.T) {
	m := loadManifests(t)
	pdb := m.pdb
	if pdb.Spec.MinAvailable == nil || *pdb.Spec.MinAvailable != intstr.FromInt32(2) {
		t.Errorf("minAvailable %v, want 2 (the quorum of 3 replicas)", pdb.Spec.MinAvailable)
	}
	if pdb.Spec.MaxUnavailable != nil {
		t.Error("maxUnavailable and minAvailable are exclusive")
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(m.sts.Spec.Template.Labels)) {
		t.Errorf("PDB selector %v does not select the pods %v (%v)", pdb.Spec.Selector, m.sts.Spec.Template.Labels, err)
	}
}

// varRef is a Kubernetes $(VAR) reference.
var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// resolvePort returns the number a named or numeric port refers to, 0 when
// the name is unknown.
func resolvePort(p intstr.IntOrString, named map[string]int32) int32 {
	if p.Type == intstr.Int {
		if slices.Contains(slices.Collect(maps.Values(named)), p.IntVal) {
			return p.IntVal
		}
		return 0
	}
	return named[p.StrVal]
}

// secretsMount is where the StatefulSet mounts the Secret pi-node-secrets.
const secretsMount = "/etc/pi-node/secrets"

// TestK8sSecrets: the Secret pi-node-secrets is required (no "optional"
// anywhere), mounted read-only where the ConfigMap's security settings
// point, readable by the pod's user only; no secret is in the manifests.
func TestK8sSecrets(t *testing.T) {
	m := loadManifests(t)
	dir := filepath.Join(repoRoot(t), "deploy", "k8s")
	for _, f := range append(m.files, "kustomization.yaml") {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if regexp.MustCompile(`(?m)^\s*optional:`).Match(data) {
			t.Errorf("%s: an optional reference: pi-node must not start without its secrets", f)
		}
		if regexp.MustCompile(`(?m)^kind:\s*Secret\s*$|BEGIN [A-Z ]*PRIVATE KEY|\$2[aby]\$`).Match(data) {
			t.Errorf("%s holds a Secret or key material: create it with pi-ctl gen-secrets and kubectl create secret", f)
		}
	}
	pod := &m.sts.Spec.Template.Spec
	c := &pod.Containers[0]
	var vol *corev1.Volume
	for i := range pod.Volumes {
		if s := pod.Volumes[i].Secret; s != nil {
			if vol != nil {
				t.Errorf("volumes %s and %s both from Secrets: want the one pi-node-secrets", vol.Name, pod.Volumes[i].Name)
			}
			vol = &pod.Volumes[i]
		}
	}
	if vol == nil {
		t.Fatal("no Secret volume: pi-node-secrets must be mounted")
	}
	sv := vol.Secret
	if sv.SecretName != "pi-node-secrets" {
		t.Errorf("Secret volume %s is %q, want pi-node-secrets (the name the docs create)", vol.Name, sv.SecretName)
	}
	if sv.Optional != nil && *sv.Optional {
		t.Errorf("Secret volume %s is optional", vol.Name)
	}
	if len(sv.Items) > 0 {
		t.Errorf("Secret volume %s lists items: mount every file gen-secrets writes", vol.Name)
	}
	mode := int32(0o644) // Kubernetes' default
	if sv.DefaultMode != nil {
		mode = *sv.DefaultMode
	}
	fsGroup := pod.SecurityContext != nil && pod.SecurityContext.FSGroup != nil && *pod.SecurityContext.FSGroup == 65532
	if mode&0o007 != 0 || mode&0o222 != 0 || mode != 0o400 && !(mode == 0o440 && fsGroup) {
		t.Errorf("Secret volume mode %#o: want 0400, or 0440 with fsGroup 65532", mode)
	}
	var mount *corev1.VolumeMount
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].Name == vol.Name {
			mount = &c.VolumeMounts[i]
		}
	}
	if mount == nil || mount.MountPath != secretsMount || !mount.ReadOnly || mount.SubPath != "" {
		t.Errorf("Secret volume %s mounted as %+v, want read-only at %s (no subPath: it would not see updates)", vol.Name, mount, secretsMount)
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			t.Errorf("env %s from Secret %s: the secrets are files", e.Name, e.ValueFrom.SecretKeyRef.Name)
		}
	}
}

// TestK8sNetworkPolicy: the policy selects the pods; the route port takes
// only pi-node pods; the API and client ports take the namespace.
func TestK8sNetworkPolicy(t *testing.T) {
	m := loadManifests(t)
	np := m.netpol
	podLabels := labels.Set(m.sts.Spec.Template.Labels)
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil || sel.Empty() || !sel.Matches(podLabels) {
		t.Fatalf("NetworkPolicy selects %v, not the pods %v (%v)", np.Spec.PodSelector, podLabels, err)
	}
	if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
		t.Errorf("policyTypes %v lack Ingress", np.Spec.PolicyTypes)
	}
	ports := map[string]int32{}
	for _, p := range m.sts.Spec.Template.Spec.Containers[0].Ports {
		ports[p.Name] = p.ContainerPort
	}
	// Who may reach each port: "pods" (pi-node only), "namespace", or
	// something wider.
	reach := map[int32][]string{}
	for i, r := range np.Spec.Ingress {
		if len(r.Ports) == 0 {
			t.Errorf("ingress rule %d admits every port", i)
		}
		var from []string
		if len(r.From) == 0 {
			from = append(from, "anywhere")
		}
		for _, peer := range r.From {
			switch {
			case peer.IPBlock != nil || peer.NamespaceSelector != nil:
				from = append(from, "beyond the namespace")
			case peer.PodSelector != nil:
				s, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
				switch {
				case err != nil:
					t.Errorf("ingress rule %d: %v", i, err)
				case s.Empty():
					from = append(from, "namespace")
				case s.Matches(podLabels) && s.String() == sel.String():
					from = append(from, "pods")
				default:
					from = append(from, "other pods")
				}
			}
		}
		for _, p := range r.Ports {
			if p.Port == nil || p.EndPort != nil {
				t.Errorf("ingress rule %d: port %+v: name single ports", i, p)
				continue
			}
			n := resolvePort(*p.Port, ports)
			if n == 0 {
				t.Errorf("ingress rule %d: port %s is no container port (%v)", i, p.Port.String(), ports)
			}
			reach[n] = append(reach[n], from...)
		}
	}
	if got := reach[ports["cluster"]]; !slices.Equal(slices.Compact(got), []string{"pods"}) {
		t.Errorf("route port %d reachable from %v: want only the pi-node pods", ports["cluster"], got)
	}
	for _, name := range []string{"http", "nats"} {
		got := reach[ports[name]]
		if len(got) == 0 {
			t.Errorf("port %s (%d) admits no one: the clients and the Service need it", name, ports[name])
		}
		for _, f := range got {
			if f != "namespace" && f != "pods" {
				t.Errorf("port %s (%d) reachable from %s: the manifests admit the namespace, an overlay may widen it", name, ports[name], f)
			}
		}
	}
	for n := range reach {
		if n != ports["cluster"] && n != ports["http"] && n != ports["nats"] {
			t.Errorf("port %d admitted, which pi-node does not serve here", n)
		}
	}
}

// TestK8sBackupCronJob cross-checks the backup CronJob with pi-ctl (every
// flag it passes is one of pi-ctl backup's, as its --help lists them), the
// image and Secret of the StatefulSet, the client Service, and the volume:
// the password comes from the Secret's file, never the manifest.
func TestK8sBackupCronJob(t *testing.T) {
	m := loadManifests(t)
	cj := m.backup
	if cj == nil {
		t.Fatal("deploy/k8s has no backup CronJob")
	}
	if cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
		t.Errorf("concurrencyPolicy %q, want Forbid", cj.Spec.ConcurrencyPolicy)
	}
	pod := &cj.Spec.JobTemplate.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Containers))
	}
	c := &pod.Containers[0]
	if want := m.sts.Spec.Template.Spec.Containers[0].Image; c.Image != want {
		t.Errorf("image %q, want the StatefulSet's %q (it carries pi-ctl)", c.Image, want)
	}
	if !slices.Equal(c.Command, []string{"/pi-ctl"}) || len(c.Args) == 0 || c.Args[0] != "backup" {
		t.Fatalf("command %v args %v, want /pi-ctl backup ...", c.Command, c.Args)
	}
	help := piCtlHelp(t, "backup")
	args := map[string]string{}
	var dir string
	for _, a := range c.Args[1:] {
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") {
			dir = a
			continue
		}
		if !help[name] {
			t.Errorf("arg %s: pi-ctl backup has no --%s", a, name)
		}
		args[name] = value
	}
	if _, ok := args["password"]; ok {
		t.Error("--password in the manifest: use --password-file with the Secret's file")
	}
	if args["user"] != "admin" || args["password-file"] != secretsMount+"/nats-admin.password" || args["tls-ca"] != secretsMount+"/ca.pem" {
		t.Errorf("credentials %v: want user admin, the Secret's nats-admin.password and ca.pem under %s", args, secretsMount)
	}
	if _, ok := args["dated"]; !ok || args["keep"] == "" {
		t.Errorf("args %v: want --dated and --keep (a schedule without them fills the volume or fails)", c.Args)
	}
	timeout, err := time.ParseDuration(args["timeout"])
	if d := cj.Spec.JobTemplate.Spec.ActiveDeadlineSeconds; err != nil || d == nil || timeout >= time.Duration(*d)*time.Second {
		t.Errorf("--timeout %q must be under activeDeadlineSeconds %v", args["timeout"], d)
	}
	u, err := url.Parse(strings.ReplaceAll(args["server"], "$(POD_NAMESPACE)", "NS"))
	svc := m.services[strings.Split(u.Hostname(), ".")[0]]
	if err != nil || u.Scheme != "tls" || svc == nil || !strings.HasSuffix(u.Hostname(), ".NS.svc") {
		t.Fatalf("--server %q: want tls://<Service>.$(POD_NAMESPACE).svc:4222 (%v)", args["server"], err)
	}
	if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return strconv.Itoa(int(p.Port)) == u.Port() }) {
		t.Errorf("--server port %s is not a port of Service %s", u.Port(), svc.Name)
	}
	var ns bool
	for _, e := range c.Env {
		ns = ns || e.Name == "POD_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace"
	}
	if !ns {
		t.Error("no POD_NAMESPACE from the downward API for $(POD_NAMESPACE)")
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, vm := range c.VolumeMounts {
		mounts[vm.Name] = vm
	}
	for _, v := range pod.Volumes {
		vm, ok := mounts[v.Name]
		switch {
		case !ok:
			t.Errorf("volume %s is not mounted", v.Name)
		case v.Secret != nil:
			if v.Secret.SecretName != "pi-node-secrets" || vm.MountPath != secretsMount || !vm.ReadOnly {
				t.Errorf("Secret volume %+v mounted %+v: want pi-node-secrets read-only at %s", v.Secret, vm, secretsMount)
			}
		case v.PersistentVolumeClaim != nil:
			if m.pvcs[v.PersistentVolumeClaim.ClaimName] == nil {
				t.Errorf("volume %s claims %s, which deploy/k8s does not make", v.Name, v.PersistentVolumeClaim.ClaimName)
			}
			if vm.MountPath != dir || vm.ReadOnly {
				t.Errorf("the backup directory %s is not the claim's writable mount %+v", dir, vm)
			}
		}
	}
	sc := pod.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.FSGroup == nil || *sc.FSGroup != 65532 {
		t.Errorf("pod securityContext %+v: want non-root with fsGroup 65532 (the Secret's files are 0440)", sc)
	}
	if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Error("the container's root filesystem is not read-only")
	}
}
