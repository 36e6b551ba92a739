package deploy_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/yaml"
)

// binary is example-service, built once from the main module.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "deploy-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "example-service")
	build := exec.Command("go", "build", "-o", binary, "./example-service")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./example-service: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// objects decodes every document of the manifests in kubernetes/,
// strictly: an unknown or duplicate field, or a kind outside the scheme,
// fails the test.
func objects(t *testing.T) []runtime.Object {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	files, _ := filepath.Glob("kubernetes/*.yaml")
	if len(files) == 0 {
		t.Fatal("no manifests in kubernetes/")
	}
	var objs []runtime.Object
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
			js, err := yaml.YAMLToJSONStrict([]byte(doc))
			if err != nil {
				t.Fatalf("%s, document %d: %v", f, i, err)
			}
			if string(js) == "null" {
				continue // comments only
			}
			obj, _, err := decoder.Decode(js, nil, nil)
			if err != nil {
				t.Fatalf("%s, document %d: %v", f, i, err)
			}
			objs = append(objs, obj)
		}
	}
	return objs
}

func find[T runtime.Object](t *testing.T, objs []runtime.Object, name string) T {
	t.Helper()
	for _, o := range objs {
		if v, ok := o.(T); ok {
			if any(v).(interface{ GetName() string }).GetName() == name {
				return v
			}
		}
	}
	var zero T
	t.Fatalf("no %T named %q in the manifests", zero, name)
	return zero
}

func envOf(c corev1.Container) map[string]string {
	m := map[string]string{}
	for _, e := range c.Env {
		m[e.Name] = e.Value
	}
	return m
}

func duration(t *testing.T, env map[string]string, name string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(env[name])
	if err != nil {
		t.Fatalf("%s=%q: %v", name, env[name], err)
	}
	return d
}

// checkEnvAccepted runs the binary with env, its addresses and files
// swapped for local ones that cannot work (a temporary key, unreachable
// Redis and catalog): it must get past every flag and variable check and
// fail only when warming its services. A variable the binary does not
// know, or a value it refuses, fails before that, with a usage error.
func checkEnvAccepted(t *testing.T, where string, env map[string]string) {
	t.Helper()
	for k := range env {
		if !strings.HasPrefix(k, "TOOLROUTE_") {
			t.Errorf("%s: %s is not a variable example-service reads", where, k)
		}
	}
	key := filepath.Join(t.TempDir(), "state.key")
	os.WriteFile(key, bytes.Repeat([]byte("k"), 32), 0o600)
	local := map[string]string{
		"TOOLROUTE_ADDR":           "127.0.0.1:0",
		"TOOLROUTE_STATE_KEY_FILE": key,
		"TOOLROUTE_REDIS":          "redis://127.0.0.1:1/0",
		"TOOLROUTE_UPSTREAM":       "http://127.0.0.1:1",
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TOOLROUTE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range env {
		if l, ok := local[k]; ok {
			v = l
		}
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "warming service") {
		t.Errorf("%s: example-service with its environment: %v, want exit status 1 from warming the services (past every flag check):\n%s", where, err, out)
	}
}

func TestKubernetes(t *testing.T) {
	objs := objects(t)
	dep := find[*appsv1.Deployment](t, objs, "example-service")
	pod := dep.Spec.Template.Spec
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 3 {
		t.Errorf("replicas = %v, want 3", dep.Spec.Replicas)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	env := envOf(c)
	checkEnvAccepted(t, "Deployment example-service", env)

	// Probes on the paths the binary serves, on its port.
	port := c.Ports[0]
	if !strings.HasSuffix(env["TOOLROUTE_ADDR"], fmt.Sprintf(":%d", port.ContainerPort)) {
		t.Errorf("TOOLROUTE_ADDR %q does not listen on containerPort %d", env["TOOLROUTE_ADDR"], port.ContainerPort)
	}
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		want := map[string]string{"readiness": "/readyz", "liveness": "/healthz"}[name]
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != want || p.HTTPGet.Port.String() != port.Name {
			t.Errorf("%s probe = %+v, want GET %s on port %q", name, p, want, port.Name)
		}
	}

	// Shutdown: preStop, then the drain, then the in-flight calls, all
	// within the grace period.
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil {
		t.Fatal("no preStop sleep")
	}
	preStop := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	need := preStop + duration(t, env, "TOOLROUTE_DRAIN_DELAY") + duration(t, env, "TOOLROUTE_SHUTDOWN_TIMEOUT")
	grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	if grace < need+2*time.Second {
		t.Errorf("terminationGracePeriodSeconds %v < preStop %v + drain + shutdown = %v, plus a 2s margin", grace, preStop, need)
	}
	if preStop == 0 || duration(t, env, "TOOLROUTE_DRAIN_DELAY") == 0 {
		t.Error("no time for endpoints to drop the pod before it stops accepting")
	}

	// Non-root, read-only, no privilege.
	sc := c.SecurityContext
	if pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot ||
		sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("security context: pod %+v, container %+v", pod.SecurityContext, sc)
	}

	// The state key: a Secret mounted where TOOLROUTE_STATE_KEY_FILE
	// points, readable by the pod's group.
	keyFile := env["TOOLROUTE_STATE_KEY_FILE"]
	var mounted bool
	for _, m := range c.VolumeMounts {
		if filepath.Dir(keyFile) != m.MountPath {
			continue
		}
		i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if i < 0 || pod.Volumes[i].Secret == nil {
			t.Fatalf("volume %q is not a Secret", m.Name)
		}
		vs := pod.Volumes[i].Secret
		secret := find[*corev1.Secret](t, objs, vs.SecretName)
		if _, ok := secret.StringData[filepath.Base(keyFile)]; !ok {
			t.Errorf("Secret %s has no key %q", secret.Name, filepath.Base(keyFile))
		}
		if secret.StringData[filepath.Base(keyFile)] != "" {
			t.Errorf("Secret %s ships a key: it must ship empty, so that an unset key fails the start", secret.Name)
		}
		if vs.DefaultMode == nil || *vs.DefaultMode&0o040 == 0 || pod.SecurityContext.FSGroup == nil {
			t.Errorf("the state key is not readable by the pod's group (mode %v, fsGroup %v)", vs.DefaultMode, pod.SecurityContext.FSGroup)
		}
		mounted = true
	}
	if !mounted {
		t.Errorf("TOOLROUTE_STATE_KEY_FILE %q is under no volume mount", keyFile)
	}

	// The Service, the PodDisruptionBudget and the Redis and catalog
	// Services the environment names.
	svc := find[*corev1.Service](t, objs, "example-service")
	if !selects(svc.Spec.Selector, dep.Spec.Template.Labels) || svc.Spec.Ports[0].TargetPort.String() != port.Name {
		t.Errorf("Service example-service: selector %v, targetPort %v; pods %v, port %q", svc.Spec.Selector, svc.Spec.Ports[0].TargetPort.String(), dep.Spec.Template.Labels, port.Name)
	}
	pdb := find[*policyv1.PodDisruptionBudget](t, objs, "example-service")
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() < 1 || pdb.Spec.MinAvailable.IntValue() >= int(*dep.Spec.Replicas) ||
		!selects(pdb.Spec.Selector.MatchLabels, dep.Spec.Template.Labels) {
		t.Errorf("PodDisruptionBudget: minAvailable %v, selector %v", pdb.Spec.MinAvailable, pdb.Spec.Selector)
	}
	for _, v := range []string{"TOOLROUTE_REDIS", "TOOLROUTE_UPSTREAM"} {
		u, err := url.Parse(env[v])
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		s := find[*corev1.Service](t, objs, u.Hostname())
		if fmt.Sprint(s.Spec.Ports[0].Port) != u.Port() {
			t.Errorf("%s points at port %s, Service %s serves %d", v, u.Port(), s.Name, s.Spec.Ports[0].Port)
		}
		backend := find[*appsv1.Deployment](t, objs, s.Name)
		if !selects(s.Spec.Selector, backend.Spec.Template.Labels) {
			t.Errorf("Service %s selects no pod of Deployment %s", s.Name, backend.Name)
		}
	}
	catalog := find[*appsv1.Deployment](t, objs, "catalog").Spec.Template.Spec.Containers[0]
	checkCatalogArgs(t, "Deployment catalog", catalog.Args)
}

func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// checkCatalogArgs checks that args are a catalog command the binary
// accepts, by its usage text.
func checkCatalogArgs(t *testing.T, where string, args []string) {
	t.Helper()
	if len(args) != 3 || args[0] != "catalog" || args[1] != "-addr" {
		t.Errorf("%s: args %q, want catalog -addr ADDR", where, args)
		return
	}
	out, _ := exec.Command(binary, "catalog", "-h").CombinedOutput()
	if !strings.Contains(string(out), "-addr") {
		t.Errorf("%s: example-service catalog has no -addr:\n%s", where, out)
	}
}

// compose is the part of a compose file the test reads.
type compose struct {
	Services map[string]struct {
		Image           string            `json:"image"`
		Command         []string          `json:"command"`
		Environment     map[string]string `json:"environment"`
		Secrets         []string          `json:"secrets"`
		StopGracePeriod string            `json:"stop_grace_period"`
		Volumes         []string          `json:"volumes"`
	} `json:"services"`
	Secrets map[string]struct {
		File string `json:"file"`
	} `json:"secrets"`
}

func TestCompose(t *testing.T) {
	data, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := yaml.YAMLToJSONStrict(data); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	var c compose
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	replicas := []string{"app1", "app2", "app3"}
	env := c.Services["app1"].Environment
	for _, name := range append(slices.Clone(replicas), "redis", "catalog", "lb") {
		if _, ok := c.Services[name]; !ok {
			t.Fatalf("no service %q", name)
		}
	}
	for _, name := range replicas {
		if fmt.Sprint(c.Services[name].Environment) != fmt.Sprint(env) || len(env) == 0 {
			t.Errorf("service %s: environment %v, want the replicas' %v", name, c.Services[name].Environment, env)
		}
	}
	checkEnvAccepted(t, "compose app1", env)

	grace, err := time.ParseDuration(c.Services["app1"].StopGracePeriod)
	if need := duration(t, env, "TOOLROUTE_DRAIN_DELAY") + duration(t, env, "TOOLROUTE_SHUTDOWN_TIMEOUT"); err != nil || grace < need+2*time.Second {
		t.Errorf("stop_grace_period %q, want at least drain + shutdown (%v) + 2s", c.Services["app1"].StopGracePeriod, need)
	}
	// The state key: a compose secret, at the path the replicas read.
	keyFile := env["TOOLROUTE_STATE_KEY_FILE"]
	name := strings.TrimPrefix(keyFile, "/run/secrets/")
	if _, ok := c.Secrets[name]; !ok || !slices.Contains(c.Services["app1"].Secrets, name) {
		t.Errorf("TOOLROUTE_STATE_KEY_FILE %q is not a secret of the replicas", keyFile)
	}
	for _, v := range []string{"TOOLROUTE_REDIS", "TOOLROUTE_UPSTREAM"} {
		u, _ := url.Parse(env[v])
		if _, ok := c.Services[u.Hostname()]; !ok {
			t.Errorf("%s names host %q, which is no service", v, u.Hostname())
		}
	}
	cat := c.Services["catalog"].Command
	checkCatalogArgs(t, "compose catalog", cat)
	if u, _ := url.Parse(env["TOOLROUTE_UPSTREAM"]); len(cat) == 3 && !strings.HasSuffix(cat[2], ":"+u.Port()) {
		t.Errorf("the catalog listens on %s, the replicas call %s", cat[2], env["TOOLROUTE_UPSTREAM"])
	}

	// The load balancer: round robin over the three, by readiness.
	if !slices.Contains(c.Services["lb"].Volumes, "./haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro") {
		t.Errorf("lb does not mount haproxy.cfg: %q", c.Services["lb"].Volumes)
	}
	cfg, err := os.ReadFile("haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(env["TOOLROUTE_ADDR"], ":")
	for _, want := range []string{"balance roundrobin", "option httpchk GET /readyz"} {
		if !bytes.Contains(cfg, []byte(want)) {
			t.Errorf("haproxy.cfg lacks %q", want)
		}
	}
	for _, r := range replicas {
		if !regexp.MustCompile(`(?m)^\s*server ` + r + ` ` + r + `:` + port + ` check\b`).Match(cfg) {
			t.Errorf("haproxy.cfg has no checked server %s:%s", r, port)
		}
	}
}

// accepted returns the environment variables example-service reads: one
// per flag of its usage text.
func accepted(t *testing.T) []string {
	t.Helper()
	out, _ := exec.Command(binary, "-h").CombinedOutput()
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z][a-z-]*)`).FindAllStringSubmatch(string(out), -1) {
		names = append(names, "TOOLROUTE_"+strings.ToUpper(strings.ReplaceAll(m[1], "-", "_")))
	}
	if len(names) < 10 {
		t.Fatalf("found %d flags in the usage text:\n%s", len(names), out)
	}
	return names
}

func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	stages := regexp.MustCompile(`(?m)^FROM (\S+)`).FindAllStringSubmatch(text, -1)
	if len(stages) != 2 {
		t.Fatalf("%d stages, want a build stage and a final one", len(stages))
	}
	if final := stages[1][1]; !strings.HasPrefix(final, "gcr.io/distroless/static") || !strings.HasSuffix(final, ":nonroot") {
		t.Errorf("final stage FROM %s, want distroless static, nonroot", final)
	}
	// The builder's Go is at least the main module's.
	gomod, _ := os.ReadFile("../go.mod")
	want := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	got := regexp.MustCompile(`^golang:(\d+\.\d+)`).FindStringSubmatch(stages[0][1])
	if want == nil || got == nil || versionLess(got[1], string(want[1])) {
		t.Errorf("build stage FROM %s, main module needs go %s", stages[0][1], want)
	}
	if !strings.Contains(text, "CGO_ENABLED=0") {
		t.Error("the binary is not built static (CGO_ENABLED=0)")
	}
	user := regexp.MustCompile(`(?m)^USER (\d+)(:\d+)?$`).FindStringSubmatch(text)
	if user == nil || user[1] == "0" {
		t.Errorf("USER %v, want a numeric non-root user", user)
	}
	names := accepted(t)
	for _, m := range regexp.MustCompile(`(?m)^ENV (\w+)=(\S+)`).FindAllStringSubmatch(text, -1) {
		if !slices.Contains(names, m[1]) {
			t.Errorf("ENV %s is not a variable example-service reads (%s)", m[1], strings.Join(names, ", "))
		}
		if m[1] == "TOOLROUTE_ADDR" && !regexp.MustCompile(`(?m)^EXPOSE `+regexp.QuoteMeta(m[2][strings.LastIndex(m[2], ":")+1:])+`$`).MatchString(text) {
			t.Errorf("ENV TOOLROUTE_ADDR=%s, but that port is not EXPOSEd", m[2])
		}
	}
	if !strings.Contains(text, `ENTRYPOINT ["/example-service"]`) {
		t.Error("no ENTRYPOINT /example-service")
	}
}

func versionLess(a, b string) bool {
	var a1, a2, b1, b2 int
	fmt.Sscanf(a, "%d.%d", &a1, &a2)
	fmt.Sscanf(b, "%d.%d", &b1, &b2)
	return a1 < b1 || a1 == b1 && a2 < b2
}
