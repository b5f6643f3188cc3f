//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/paddock-platform/paddock/components/project"
	"github.com/paddock-platform/paddock/internal/drift"
)

// driftStack is the stack TestDrift provisions examples/local into: not the
// platform's default stack, so it never meets TestLocalPlatform's state.
const driftStack = "drift-e2e"

// run is one paddock run with stdout and stderr apart (JSON reports go to
// stdout, the policy report to stderr).
type run struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// runPaddock runs the binary with the isolated home and extra environment.
func (e *env) runPaddock(t *testing.T, extraEnv []string, args ...string) run {
	t.Helper()
	cmd := exec.Command(e.bin, args...)
	cmd.Dir = e.repo
	cmd.Env = append(append(os.Environ(), "PADDOCK_HOME="+e.home), extraEnv...)
	return runCommand(t, cmd, "paddock "+strings.Join(args, " "))
}

// runCommand runs cmd and waits for it: its output, exit code and time. A
// command that cannot be started at all fails the test, naming what.
func runCommand(t *testing.T, cmd *exec.Cmd, what string) run {
	t.Helper()
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := run{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("%s: %v", what, err)
	}
	return r
}

// driftReport runs `paddock drift ... --format json` and decodes the report;
// the exit status must be want (0 no drift, 2 drift).
func (e *env) driftReport(t *testing.T, want int, extraEnv []string, args ...string) (*drift.Report, time.Duration) {
	t.Helper()
	r := e.runPaddock(t, extraEnv, append(append([]string{"drift"}, args...), "--format", "json")...)
	if r.code != want {
		t.Fatalf("paddock drift %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, want, r.stdout, tail(r.stderr, 20))
	}
	t.Logf("paddock drift %s answered by %s", strings.Join(args, " "), driftPath(r.stderr))
	var rep drift.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("drift JSON: %v\n%s", err, r.stdout)
	}
	return &rep, r.took
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// driftPath says which path answered a drift: the fast comparison of the
// live cluster, or the engine's refresh-and-preview (and why).
func driftPath(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		switch {
		case strings.HasPrefix(l, "paddock drift: compared"):
			return "the fast path (" + strings.TrimPrefix(l, "paddock drift: ") + ")"
		case strings.HasPrefix(l, "paddock drift: full run:"):
			return "the engine (" + strings.TrimPrefix(l, "paddock drift: ") + ")"
		}
	}
	return "the engine"
}

func findResource(rep *drift.Report, kind, name string) *drift.Resource {
	for i := range rep.Resources {
		if rep.Resources[i].Kind == kind && rep.Resources[i].Name == name {
			return &rep.Resources[i]
		}
	}
	return nil
}

func findField(r *drift.Resource, pathPart string) *drift.Field {
	for i := range r.Fields {
		if strings.Contains(r.Fields[i].Path, pathPart) {
			return &r.Fields[i]
		}
	}
	return nil
}

// destroyAndWait destroys a stack and waits until its namespaces are gone, so
// the next test's platform does not meet a terminating namespace. It
// returns the destroy's run.
func (e *env) destroyAndWait(t *testing.T, extraEnv []string, namespaces []string, args ...string) run {
	t.Helper()
	return e.destroyWaiting(t, extraEnv, append(namespaces, "agent-sandbox-system"), args...)
}

// destroyWaiting destroys a stack and waits until the namespaces given are
// gone: a stack that shares the release with others leaves its namespace.
func (e *env) destroyWaiting(t *testing.T, extraEnv []string, namespaces []string, args ...string) run {
	t.Helper()
	r := e.runPaddock(t, extraEnv, append([]string{"destroy"}, args...)...)
	if r.code != 0 {
		t.Errorf("paddock destroy %s: exit %d\n%s\n%s", strings.Join(args, " "), r.code, r.stdout, tail(r.stderr, 20))
		return r
	}
	t.Logf("paddock destroy %s: %s", strings.Join(args, " "), r.took)
	for _, ns := range namespaces {
		eventually(t, "namespace "+ns+" gone", 180*time.Second, func() error {
			_, err := e.kube.CoreV1().Namespaces().Get(ctxTimeout(5*time.Second), ns, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("namespace %s still exists (%v)", ns, err)
		})
	}
	return r
}

// assertDestroyedDirectly checks a destroy of stack (platform platform, in
// the isolated home's file backend) that printed out: it deleted the
// objects directly rather than through Pulumi's destroy, and when it
// returned no object labelled with the platform was left and the state
// held no resource.
func (e *env) assertDestroyedDirectly(t *testing.T, out, stack, platform string) {
	t.Helper()
	if !strings.Contains(out, "directly") || strings.Contains(out, "Pulumi's destroy, because") {
		t.Errorf("destroy of stack %s did not delete directly:\n%s", stack, out)
	}
	labelled, err := drift.Labelled(ctxT(t, time.Minute), e.kube.Discovery(), e.meta, platform)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range labelled {
		t.Errorf("left after destroy returned: %s %s/%s labelled with platform %s", o.Kind, o.Namespace, o.Name, platform)
	}
	raw, err := os.ReadFile(filepath.Join(e.home, "state", ".pulumi", "stacks", "paddock", stack+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Checkpoint struct {
			Latest apitype.DeploymentV3 `json:"latest"`
		} `json:"checkpoint"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	latest := file.Checkpoint.Latest
	if n := len(latest.Resources) + len(latest.PendingOperations); n != 0 {
		t.Errorf("the state of stack %s holds %d resources and %d pending operations after destroy", stack, len(latest.Resources), len(latest.PendingOperations))
	}
	if latest.SecretsProviders == nil || latest.SecretsProviders.Type != "passphrase" {
		t.Errorf("the emptied state of stack %s lost its secrets provider: %+v", stack, latest.SecretsProviders)
	}
}

// TestDrift provisions examples/local into its own stack, checks that drift
// sees nothing on the untouched platform run after run, then makes each edit
// of the catalogue out of band: every one must be reported, every one the
// stack owns repaired by `up`, and the one outside it (a RoleBinding) left
// reported until a person removes it.
func TestDrift(t *testing.T) {
	e := live
	r := e.runPaddock(t, nil, "up", example, "--stack", driftStack)
	if r.code != 0 {
		t.Fatalf("paddock up: exit %d\n%s\n%s", r.code, r.stdout, tail(r.stderr, 30))
	}
	t.Logf("paddock up %s --stack %s (create): %s", example, driftStack, r.took)
	defer func() {
		r := e.destroyAndWait(t, nil, []string{namespace}, example, "--stack", driftStack)
		e.assertDestroyedDirectly(t, r.stdout, driftStack, "local-demo")
	}()
	eventually(t, "warm pool ready", 120*time.Second, func() error { return poolReady(e, replicas) })

	t.Run("no drift on the untouched platform, run after run", func(t *testing.T) {
		for i := 1; i <= 3; i++ {
			rep, took := e.driftReport(t, 0, nil, example, "--stack", driftStack)
			t.Logf("DRIFT-TIME %s run %d: %s (compare %s, sweep %s, %d resources)", example, i, took.Round(10*time.Millisecond), rep.Compare.Round(10*time.Millisecond), rep.Sweep.Round(time.Millisecond), rep.Checked)
			if rep.Drifted() {
				t.Fatalf("run %d: drift on an untouched platform: %+v %+v", i, rep.Resources, rep.Unmanaged)
			}
			if rep.Checked < 30 {
				t.Fatalf("run %d compared only %d resources", i, rep.Checked)
			}
		}
	})

	t.Run("a no-op up takes the fast path, and a Pulumi preview agrees nothing changed", func(t *testing.T) {
		r := e.runPaddock(t, nil, "up", example, "--stack", driftStack)
		if r.code != 0 || !strings.Contains(r.stdout, "paddock up: nothing changed:") || strings.Contains(r.stdout, "full run") {
			t.Fatalf("no-op up: exit %d, not answered by the fast path:\n%s\n%s", r.code, r.stdout, tail(r.stderr, 20))
		}
		t.Logf("paddock up (no-op, fast path): %s: %s", r.took, summary(t, r.stdout))
		// The engine's own preview, with refresh: state and cluster agree.
		pr := e.runPaddock(t, nil, "preview", example, "--stack", driftStack)
		if pr.code != 0 {
			t.Fatalf("paddock preview: exit %d\n%s\n%s", pr.code, pr.stdout, tail(pr.stderr, 20))
		}
		m := regexp.MustCompile(`(?m)^paddock preview: (.*) in [0-9.]+s$`).FindStringSubmatch(pr.stdout)
		if m == nil || !strings.Contains(m[1], "unchanged") || regexp.MustCompile(`create|update|delete|replace`).MatchString(m[1]) {
			t.Fatalf("the Pulumi preview after a fast no-op up is not 0 changes:\n%s", pr.stdout)
		}
		t.Logf("Pulumi preview after the fast no-op up: %s", m[1])
		full, _ := e.driftReport(t, 0, nil, example, "--stack", driftStack, "--full")
		if full.Drifted() {
			t.Fatalf("drift --full after the fast no-op up: %+v %+v", full.Resources, full.Unmanaged)
		}
	})

	ctx := ctxT(t, 5*time.Minute)
	const grant = "drift-e2e-grant"
	evilImage := "registry.example.com/evil/agent-sandbox-controller:latest"
	var origImage string
	t.Run("out-of-band edits", func(t *testing.T) {
		// 1. PSS label removed from the tenant namespace.
		if _, err := e.kube.CoreV1().Namespaces().Patch(ctx, namespace, types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":null}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		// 2. Warm pool replicas changed.
		if _, err := e.dyn.Resource(poolsGVR).Namespace(namespace).Patch(ctx, poolName, types.MergePatchType,
			[]byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		// 3. The tenant's default-deny NetworkPolicy deleted.
		if err := e.kube.NetworkingV1().NetworkPolicies(namespace).Delete(ctx, "default-deny", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// 4. A RoleBinding that gives agent-runtime rights.
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: grant, Namespace: namespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "edit"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "agent-runtime", Namespace: namespace}},
		}
		if _, err := e.kube.RbacV1().RoleBindings(namespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// 5. RuntimeClass scheduling pointed at other nodes.
		if _, err := e.kube.NodeV1().RuntimeClasses().Patch(ctx, "gvisor", types.MergePatchType,
			[]byte(`{"scheduling":{"nodeSelector":{"sandbox.gke.io/runtime":"runc"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		// 6. The template's securityContext loosened.
		if _, err := e.dyn.Resource(templatesGVR).Namespace(namespace).Patch(ctx, templateName, types.JSONPatchType,
			[]byte(`[{"op":"replace","path":"/spec/podTemplate/spec/containers/0/securityContext/allowPrivilegeEscalation","value":true},
			         {"op":"replace","path":"/spec/podTemplate/spec/containers/0/securityContext/readOnlyRootFilesystem","value":false}]`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		// 7. The Agent Sandbox controller's image swapped.
		dep, err := e.kube.AppsV1().Deployments("agent-sandbox-system").Get(ctx, "agent-sandbox-controller", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		origImage = dep.Spec.Template.Spec.Containers[0].Image
		dep.Spec.Template.Spec.Containers[0].Image = evilImage
		if _, err := e.kube.AppsV1().Deployments("agent-sandbox-system").Update(ctx, dep, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	if t.Failed() {
		return
	}

	t.Run("drift reports every edit", func(t *testing.T) {
		rep, took := e.driftReport(t, 2, nil, example, "--stack", driftStack)
		t.Logf("DRIFT-TIME %s with 7 edits: %s (compare %s, sweep %s)", example, took.Round(10*time.Millisecond), rep.Compare.Round(10*time.Millisecond), rep.Sweep.Round(time.Millisecond))
		type want struct {
			kind, name, path string
			change           drift.Change
			declared, live   any
		}
		for _, w := range []want{
			{"Namespace", namespace, `pod-security.kubernetes.io/enforce`, drift.Modified, "restricted", nil},
			{"SandboxWarmPool", namespace + "/" + poolName, "spec.replicas", drift.Modified, 2.0, 5.0},
			{"NetworkPolicy", namespace + "/default-deny", "", drift.Missing, nil, nil},
			{"RuntimeClass", "gvisor", `scheduling.nodeSelector["sandbox.gke.io/runtime"]`, drift.Modified, "gvisor", "runc"},
			{"SandboxTemplate", namespace + "/" + templateName, "securityContext.allowPrivilegeEscalation", drift.Modified, false, true},
			{"SandboxTemplate", namespace + "/" + templateName, "securityContext.readOnlyRootFilesystem", drift.Modified, true, false},
			{"Deployment", "agent-sandbox-system/agent-sandbox-controller", "].image", drift.Modified, origImage, evilImage},
		} {
			res := findResource(rep, w.kind, w.name)
			if res == nil {
				t.Errorf("%s %s: not reported", w.kind, w.name)
				continue
			}
			if res.Change != w.change || res.Cause != drift.CauseCluster || res.Repair == "" {
				t.Errorf("%s %s: change %s cause %s repair %q, want %s cluster", w.kind, w.name, res.Change, res.Cause, res.Repair, w.change)
			}
			if w.path == "" {
				continue
			}
			f := findField(res, w.path)
			if f == nil {
				t.Errorf("%s %s: no field %s in %+v", w.kind, w.name, w.path, res.Fields)
				continue
			}
			if f.Declared != w.declared || f.Live != w.live {
				t.Errorf("%s %s %s: declared %v → live %v, want %v → %v", w.kind, w.name, f.Path, f.Declared, f.Live, w.declared, w.live)
			}
		}
		if len(rep.Resources) != 6 {
			t.Errorf("%d resources reported, want the 6 edited: %+v", len(rep.Resources), rep.Resources)
		}
		if len(rep.Unmanaged) != 1 || rep.Unmanaged[0].Rule != drift.RuleAgentBinding || rep.Unmanaged[0].Name != grant {
			t.Errorf("unmanaged = %+v, want the RoleBinding %s (S01)", rep.Unmanaged, grant)
		}

		// The engine's answer is the same: resources, change and field paths.
		full, _ := e.driftReport(t, 2, nil, example, "--stack", driftStack, "--full")
		if a, b := driftShape(rep), driftShape(full); a != b {
			t.Errorf("fast and --full drift disagree:\nfast:\n%s\nfull:\n%s", a, b)
		}

		// The other formats say the same, and exit 2 as well.
		md := e.runPaddock(t, nil, "drift", example, "--stack", driftStack, "--format", "markdown")
		if md.code != 2 || !strings.Contains(md.stdout, "❌ drift") || !strings.Contains(md.stdout, "`spec.replicas` | `2` | `5`") || !strings.Contains(md.stdout, grant) {
			t.Errorf("markdown report (exit %d):\n%s", md.code, md.stdout)
		}
		txt := e.runPaddock(t, nil, "drift", example, "--stack", driftStack)
		if txt.code != 2 || !strings.Contains(txt.stdout, "NetworkPolicy agents-team-a/default-deny  (deleted from the cluster)") {
			t.Errorf("text report (exit %d):\n%s", txt.code, txt.stdout)
		}
	})

	t.Run("up repairs what the stack owns", func(t *testing.T) {
		r := e.runPaddock(t, nil, "up", example, "--stack", driftStack)
		if r.code != 0 {
			t.Fatalf("paddock up: exit %d\n%s\n%s", r.code, r.stdout, tail(r.stderr, 30))
		}
		t.Logf("paddock up (repair): %s: %s", r.took, summary(t, r.stdout))
		ns, err := e.kube.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
		if err != nil || ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
			t.Errorf("namespace label not restored: %v %v", err, ns.Labels)
		}
		if _, err := e.kube.NetworkingV1().NetworkPolicies(namespace).Get(ctx, "default-deny", metav1.GetOptions{}); err != nil {
			t.Errorf("default-deny not recreated: %v", err)
		}
		rc, err := e.kube.NodeV1().RuntimeClasses().Get(ctx, "gvisor", metav1.GetOptions{})
		if err != nil || rc.Scheduling == nil || rc.Scheduling.NodeSelector["sandbox.gke.io/runtime"] != "gvisor" {
			t.Errorf("runtime class scheduling not restored: %v %+v", err, rc)
		}
		dep, err := e.kube.AppsV1().Deployments("agent-sandbox-system").Get(ctx, "agent-sandbox-controller", metav1.GetOptions{})
		if err != nil || dep.Spec.Template.Spec.Containers[0].Image != origImage {
			t.Errorf("controller image not restored: %v", err)
		}
		pool, err := e.dyn.Resource(poolsGVR).Namespace(namespace).Get(ctx, poolName, metav1.GetOptions{})
		if n, _, _ := unstructuredInt(pool.Object, "spec", "replicas"); err != nil || n != replicas {
			t.Errorf("warm pool replicas = %d (%v), want %d", n, err, replicas)
		}
		tpl, err := e.dyn.Resource(templatesGVR).Namespace(namespace).Get(ctx, templateName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sc := tpl.Object["spec"].(map[string]any)["podTemplate"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["securityContext"].(map[string]any)
		if sc["allowPrivilegeEscalation"] != false || sc["readOnlyRootFilesystem"] != true {
			t.Errorf("template securityContext not restored: %v", sc)
		}

		// Only what is outside the stack remains, reported until a person acts.
		rep, _ := e.driftReport(t, 2, nil, example, "--stack", driftStack)
		if len(rep.Resources) != 0 || len(rep.Unmanaged) != 1 || rep.Unmanaged[0].Name != grant {
			t.Errorf("after up: resources %+v, unmanaged %+v; want only the RoleBinding", rep.Resources, rep.Unmanaged)
		}
		if err := e.kube.RbacV1().RoleBindings(namespace).Delete(ctx, grant, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "warm pool ready again", 120*time.Second, func() error { return poolReady(e, replicas) })
		for i := 1; i <= 2; i++ {
			rep, took := e.driftReport(t, 0, nil, example, "--stack", driftStack)
			t.Logf("DRIFT-TIME %s after repair, run %d: %s", example, i, took.Round(10*time.Millisecond))
			if rep.Drifted() {
				t.Fatalf("drift after repair: %+v %+v", rep.Resources, rep.Unmanaged)
			}
		}
	})
}

// driftShape is what two drift answers must agree on, one line per
// resource: kind, name, change, cause and the field paths.
func driftShape(rep *drift.Report) string {
	var lines []string
	for _, r := range rep.Resources {
		var paths []string
		for _, f := range r.Fields {
			paths = append(paths, f.Path)
		}
		sort.Strings(paths)
		lines = append(lines, fmt.Sprintf("%s %s %s %s %s", r.Kind, r.Name, r.Change, r.Cause, strings.Join(paths, " ")))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func unstructuredInt(obj map[string]any, fields ...string) (int64, bool, error) {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return 0, false, nil
		}
		cur = m[f]
	}
	switch n := cur.(type) {
	case int64:
		return n, true, nil
	case float64:
		return int64(n), true, nil
	}
	return 0, false, nil
}

// teamProject copies the repository's Pulumi project (Pulumi.yaml, stacks/,
// the program entry and the team spec) into a temporary directory, so the
// stack files the run writes (encryptionsalt, secrets) stay out of the checkout.
func teamProject(t *testing.T, repo string) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range []string{"Pulumi.yaml", "stacks/Pulumi.team-a.yaml", "stacks/Pulumi.team-b.yaml", "cmd/paddock-pulumi/main.go", "examples/team-platform/platform.hcl"} {
		b, err := os.ReadFile(filepath.Join(repo, p))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(p, ".hcl") {
			// A spec only this copy has: a path taken from the wrong
			// directory shows as a different sandbox command. (The image
			// must stay one the local node has.)
			b = bytes.Replace(b, []byte(`["sleep", "infinity"]`), []byte(teamCommand), 1)
		}
		if err := os.WriteFile(filepath.Join(dir, p), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// pulumiEnv is the environment the pinned pulumi CLI needs for a stack of
// the project, the way a platform team's CI would set it.
func (e *env) pulumiEnv(backend string) map[string]string {
	// The provider leaves a copy of the kubeconfig in its TMPDIR after each
	// run: keep it inside the suite's home, which the suite removes.
	tmp := filepath.Join(e.home, "tmp")
	_ = os.MkdirAll(tmp, 0o700)
	return map[string]string{
		"TMPDIR":                                      tmp,
		"PULUMI_HOME":                                 filepath.Join(e.home, "pulumi"),
		"PULUMI_BACKEND_URL":                          backend,
		"PULUMI_CONFIG_PASSPHRASE":                    teamPassphrase,
		"PULUMI_SKIP_UPDATE_CHECK":                    "true",
		"PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK":    "true",
		"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
		"PULUMI_IGNORE_AMBIENT_PLUGINS":               "true",
		"PULUMI_K8S_ENABLE_PATCH_FORCE":               "true",
		"PADDOCK_HOME":                                e.home,
	}
}

// teamCommand is the sandbox command of the copied team spec, and
// teamCommandLive how it shows in the live template.
const (
	teamCommand     = `["sleep", "86400"]`
	teamCommandLive = `"command":["sleep","86400"]`
)

const teamPassphrase = "team-a shares this passphrase in its CI secrets"

// TestDriftStacks: a team's stack file drives `paddock up --stack` and the
// Pulumi program entry alike. The stack is created and its secret set with
// the pulumi CLI, exactly as a team would; the state of a file backend given
// by URL holds no plain secret; the program entry sees the very graph the CLI
// made (its preview changes nothing); two updates at once never both run, a
// lock left by a dead update is reported and cancelled; drift stays clean.
func TestDriftStacks(t *testing.T) {
	e := live
	dir := teamProject(t, e.repo)
	state := t.TempDir()
	backend := "file://" + state
	penv := e.pulumiEnv(backend)
	var extra []string
	for k, v := range penv {
		if k == "PULUMI_CONFIG_PASSPHRASE" {
			extra = append(extra, k+"="+v)
		}
	}
	pulumiCLI := filepath.Join(e.home, "bin", "pulumi")
	pulumi := func(args ...string) {
		t.Helper()
		cmd := exec.Command(pulumiCLI, args...)
		cmd.Dir = dir
		cmd.Env = os.Environ()
		for k, v := range penv {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("pulumi %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	secret := fmt.Sprintf("https://otel.example.com/ingest/%x", time.Now().UnixNano())
	pulumi("stack", "init", "team-a", "--secrets-provider", "passphrase")
	pulumi("config", "set", "--stack", "team-a", "--secret", "--path", "paddock:secretVars.telemetry_url", secret)
	stackFile, _ := os.ReadFile(filepath.Join(dir, "stacks", "Pulumi.team-a.yaml"))
	if strings.Contains(string(stackFile), secret) || !strings.Contains(string(stackFile), "secure: v1:") {
		t.Fatalf("the stack file holds the secret in plain text:\n%s", stackFile)
	}

	stackArgs := []string{"--stack", "team-a", "--project-dir", dir, "--backend", backend}
	r := e.runPaddock(t, extra, append([]string{"up"}, stackArgs...)...)
	if r.code != 0 {
		t.Fatalf("paddock up --stack team-a: exit %d\n%s\n%s", r.code, r.stdout, tail(r.stderr, 30))
	}
	t.Logf("paddock up --stack team-a (create): %s: %s", r.took, summary(t, r.stdout))
	defer e.destroyAndWait(t, extra, []string{"agents-research", "agents-support"}, append([]string{}, stackArgs...)...)

	t.Run("the secret is a secret in the live template, never in the state", func(t *testing.T) {
		tpl, err := e.dyn.Resource(templatesGVR).Namespace("agents-research").Get(ctxT(t, 10*time.Second), "python", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(tpl.Object)
		if !strings.Contains(string(b), secret) {
			t.Fatalf("the template does not carry the telemetry URL: the secret never reached the platform")
		}
		if !strings.Contains(string(b), teamCommandLive) {
			t.Fatalf("the template does not run %s: the spec was not read from the project's directory", teamCommand)
		}
		var files, ciphertexts int
		err = filepath.Walk(state, func(p string, info os.FileInfo, err error) error {
			if err != nil || info.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			files++
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds the secret in plain text", p)
			}
			ciphertexts += bytes.Count(b, []byte(`"ciphertext"`))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		stateFile := filepath.Join(state, ".pulumi", "stacks", "paddock", "team-a.json")
		sf, err := os.ReadFile(stateFile)
		if err != nil {
			t.Fatalf("state file: %v", err)
		}
		if !bytes.Contains(sf, []byte(`"ciphertext"`)) {
			t.Errorf("%s holds no encrypted value: the secret went somewhere else", stateFile)
		}
		t.Logf("%d files under the backend, %d encrypted values, no plain secret", files, ciphertexts)
	})

	t.Run("the Pulumi program entry sees the graph the CLI made", func(t *testing.T) {
		// What `pulumi preview --stack team-a` runs under a standard install:
		// the project's Pulumi.yaml and stack file, and the program of
		// cmd/paddock-pulumi (project.Program), here run inline, where the
		// engine does not tell the program its project root: ProgramAt does.
		t.Setenv("PADDOCK_HOME", e.home) // the program resolves the local cluster itself
		cmd, err := auto.NewPulumiCommand(&auto.PulumiCommandOptions{Root: e.home, SkipVersionCheck: true})
		if err != nil {
			t.Fatal(err)
		}
		ctx := ctxT(t, 5*time.Minute)
		s, err := auto.SelectStackInlineSource(ctx, "team-a", "paddock", project.ProgramAt(dir, os.Stderr),
			auto.WorkDir(dir), auto.Pulumi(cmd), auto.EnvVars(penv), auto.PulumiHome(penv["PULUMI_HOME"]))
		if err != nil {
			t.Fatal(err)
		}
		ch := make(chan events.EngineEvent)
		ops := map[apitype.OpType][]string{}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ev := range ch {
				if ev.ResourcePreEvent != nil {
					m := ev.ResourcePreEvent.Metadata
					ops[m.Op] = append(ops[m.Op], m.URN)
				}
			}
		}()
		start := time.Now()
		res, err := s.Preview(ctx, optpreview.EventStreams(ch), optpreview.SuppressProgress())
		<-done
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("program entry preview: %s, %v", time.Since(start).Round(10*time.Millisecond), res.ChangeSummary)
		for op, urns := range ops {
			if op != apitype.OpSame {
				t.Errorf("the program entry would %s %d resources the CLI made differently: %v", op, len(urns), urns)
			}
		}
		if n := len(ops[apitype.OpSame]); n < 60 {
			t.Errorf("only %d resources unchanged", n)
		}
	})

	t.Run("the standard pulumi CLI runs the project's own program: no change", func(t *testing.T) {
		// `pulumi preview --stack team-a` from this repository, its
		// Pulumi.yaml naming cmd/paddock-pulumi, built by the language host.
		copyModuleSource(t, e.repo, dir)
		p := newPulumiCLI(t, e, dir, "team-a", backend, "PULUMI_CONFIG_PASSPHRASE="+teamPassphrase)
		out, ok := p.run(t, "preview", "--expect-no-changes")
		if !ok || !strings.Contains(out, "unchanged") {
			t.Fatalf("pulumi preview --stack team-a --expect-no-changes:\n%s", tail(out, 40))
		}
		t.Logf("pulumi preview: %s", pulumiResources(out))
	})

	t.Run("two updates of one stack at once", func(t *testing.T) {
		upArgs := append([]string{"up"}, stackArgs...)
		lockDir := filepath.Join(state, ".pulumi", "locks", "organization", "paddock", "team-a")
		// The first update is a lock this test holds: the file the backend
		// writes for a running update, naming this live process. A real
		// first update may finish before the second reaches the lock (a
		// no-op up takes seconds), and then the second never meets it; a
		// holder the test controls is there for as long as the test says.
		host, _ := os.Hostname()
		hold := func() (release func()) {
			t.Helper()
			if err := os.MkdirAll(lockDir, 0o755); err != nil {
				t.Fatal(err)
			}
			held, _ := json.Marshal(map[string]any{"pid": os.Getpid(), "username": "e2e", "hostname": host, "timestamp": time.Now()})
			file := filepath.Join(lockDir, "00000000-e2e0-4e1d-8000-000000000001.json")
			if err := os.WriteFile(file, held, 0o644); err != nil {
				t.Fatal(err)
			}
			return func() {
				if err := os.Remove(file); err != nil {
					t.Errorf("releasing the test's lock: %v", err)
				}
			}
		}
		holder := fmt.Sprintf("locked by pid %d on %s (e2e)", os.Getpid(), host)

		release := hold()
		r2 := e.runPaddock(t, extra, upArgs...)
		release()
		t.Logf("behind a live holder: exit %d after %s:\n%s", r2.code, r2.took, tail(r2.stderr, 3))
		if r2.code != 1 || !strings.Contains(r2.stderr, "another update is running on this stack, so nothing was changed") || !strings.Contains(r2.stderr, holder) {
			t.Errorf("the second update: exit %d, want 1 naming the holder (%s):\n%s", r2.code, holder, tail(r2.stderr, 10))
		}

		// With --lock-wait it waits while the holder lives, and runs once
		// it lets go: released only after the waiting update said so.
		release = hold()
		cmd := exec.Command(e.bin, append(upArgs, "--lock-wait", "5m")...)
		cmd.Dir = e.repo
		cmd.Env = append(append(os.Environ(), "PADDOCK_HOME="+e.home), extra...)
		var out syncBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			release()
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var early error
		waiting := false
		for deadline := time.Now().Add(2 * time.Minute); !waiting && early == nil && time.Now().Before(deadline); {
			select {
			case early = <-done:
			case <-time.After(250 * time.Millisecond):
				waiting = strings.Contains(out.String(), "is locked by another update; waiting")
			}
		}
		releasedAt := time.Now()
		release()
		if !waiting {
			if early == nil {
				_ = cmd.Process.Kill()
				early = <-done
			}
			t.Fatalf("with --lock-wait, the update did not wait for the live holder (ended: %v):\n%s", early, tail(out.String(), 10))
		}
		err := <-done
		t.Logf("with --lock-wait: waited, then finished %s after the holder let go (%v)", time.Since(releasedAt).Round(100*time.Millisecond), err)
		if err != nil || !strings.Contains(out.String(), "paddock up: ") {
			t.Errorf("with --lock-wait the update should finish once the lock is free: %v\n%s", err, tail(out.String(), 10))
		}

		// A lock no run of Paddock's journal explains (a hand-run `pulumi up`
		// that died, or a live runner of this hostname in another PID
		// namespace: nothing here can tell which): `paddock cancel`, run by a
		// person, removes it; the next up never does by itself, and says so.
		// (A lock a dead journaled run explains is removed by the next up:
		// the fault tests.)
		stale, _ := json.Marshal(map[string]any{"pid": 1<<22 + 4321, "username": "ci", "hostname": host, "timestamp": time.Now().Add(-time.Hour)})
		writeStale := func() {
			if err := os.MkdirAll(lockDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(lockDir, "00000000-dead-beef-0000-000000000000.json"), stale, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		writeStale()
		c := e.runPaddock(t, extra, append([]string{"cancel"}, stackArgs...)...)
		if c.code != 0 || !strings.Contains(c.stdout, "removed the lock") || !strings.Contains(c.stdout, "no Paddock run explains it") {
			t.Errorf("paddock cancel: exit %d\n%s\n%s", c.code, c.stdout, c.stderr)
		}
		writeStale()
		refused := e.runPaddock(t, extra, upArgs...)
		if refused.code != 1 || strings.Contains(refused.stdout, "removed the lock") ||
			!strings.Contains(refused.stderr, "no Paddock run explains it") || !strings.Contains(refused.stderr, "if it died, run `paddock cancel") {
			t.Errorf("up under a lock no run explains: exit %d, want 1, the lock kept and named:\n%s\n%s", refused.code, tail(refused.stdout, 8), tail(refused.stderr, 8))
		}
		if c := e.runPaddock(t, extra, append([]string{"cancel"}, stackArgs...)...); c.code != 0 {
			t.Errorf("paddock cancel: exit %d\n%s\n%s", c.code, c.stdout, c.stderr)
		}
		if r := e.runPaddock(t, extra, upArgs...); r.code != 0 {
			t.Errorf("up after the cancel: exit %d\n%s\n%s", r.code, tail(r.stdout, 8), tail(r.stderr, 8))
		}

		// The state survived all of it: drift compares it cleanly, run after
		// run, and never writes it.
		stateFile := filepath.Join(state, ".pulumi", "stacks", "paddock", "team-a.json")
		before, err := os.ReadFile(stateFile)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 2; i++ {
			rep, took := e.driftReport(t, 0, extra, stackArgs...)
			t.Logf("DRIFT-TIME stack team-a run %d: %s (%d resources)", i, took.Round(10*time.Millisecond), rep.Checked)
			if rep.Drifted() {
				t.Fatalf("drift on team-a: %+v %+v", rep.Resources, rep.Unmanaged)
			}
		}
		if after, _ := os.ReadFile(stateFile); !bytes.Equal(before, after) {
			t.Errorf("drift wrote the state file")
		}
	})
}

// syncBuffer is a bytes.Buffer a process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
