//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gruntwork-io/terratest/modules/k8s"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"

	"github.com/paddock-platform/paddock/internal/localcluster"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
)

// alertsPlatform is the platform TestAlertsFireLive provisions.
const alertsPlatform = "alerts"

// alertsSpec is a healthy platform whose observability block sets every
// threshold and `for:` the test waits on to the smallest the spec allows,
// with one tenant per condition: obs-quota (a quota of 2 pods), obs-life
// (max_ttl 1m), obs-drop (the default egress: DNS only) and obs-pool.
func alertsSpec() string {
	tenant := func(name, extra string) string {
		return fmt.Sprintf(`
tenant %q {
%s
%s}
`, name, extra, sleeperTemplate(1))
	}
	s := `platform { name = "` + alertsPlatform + `" }
target "local" {}
agent_sandbox { version = "v0.5.6" }
runtime_class "gvisor" {
  handler       = "runsc"
  node_selector = { "sandbox.gke.io/runtime" = "gvisor" }
  toleration {
    key    = "sandbox.gke.io/runtime"
    value  = "gvisor"
    effect = "NoSchedule"
  }
}
observability {
  quota_saturation      = 0.9
  quota_saturated_for   = "1m"
  lifetime_factor       = 1
  lifetime_exceeded_for = "1m"
  claim_expiry_rate     = 1
  pool_empty_for        = "1m"
  controller_down_for   = "1m"
}
`
	s += tenant("obs-quota", `  quota { pods = 2 }`)
	s += tenant("obs-life", `  claims { max_ttl = "1m" }`)
	s += tenant("obs-drop", "")
	s += tenant("obs-pool", "")
	return s
}

// withObservability turns on the supervisor's kube-state-metrics and
// Prometheus on the suite's running cluster (`local up --observability`
// applies to a running cluster) and turns them off again when the test ends,
// so the tests after it meet the cluster as it was. It returns Prometheus'
// URL.
func withObservability(t *testing.T, e *env) string {
	t.Helper()
	if out, took, err := e.paddock(t, "local", "up", "--observability"); err != nil {
		t.Fatalf("paddock local up --observability: %v\n%s", err, out)
	} else {
		t.Logf("paddock local up --observability on the running cluster: %s", took)
	}
	t.Cleanup(func() {
		if out, err := e.paddockRaw("local", "up", "--observability=false"); err != nil {
			t.Errorf("paddock local up --observability=false: %v\n%s", err, out)
		}
	})
	url, ok := localcluster.PrometheusURL(filepath.Join(e.home, "local"))
	if !ok {
		t.Fatal("local up --observability returned, but no Prometheus runs")
	}
	return url
}

// promGet reads one Prometheus API path into v.
func promGet(url, path string, v any) error {
	var resp struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	r, err := httpGet(url + path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(r, &resp); err != nil {
		return err
	}
	if resp.Status != "success" {
		return fmt.Errorf("%s: %s", path, resp.Error)
	}
	return json.Unmarshal(resp.Data, v)
}

// platformAlerts are the alerts of this test's platform Prometheus holds now.
func platformAlerts(url string) ([]localcluster.Alert, error) {
	all, err := localcluster.Alerts(ctxTimeout(5*time.Second), url)
	if err != nil {
		return nil, err
	}
	var out []localcluster.Alert
	for _, a := range all {
		if a.Labels["platform"] == alertsPlatform {
			out = append(out, a)
		}
	}
	return out, nil
}

func describeAlerts(as []localcluster.Alert) string {
	var s []string
	for _, a := range as {
		s = append(s, fmt.Sprintf("%s{namespace=%q} %s", a.Labels["alertname"], a.Labels["namespace"], a.State))
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

// firing waits (bounded: a hang guard) until alert fires for namespace ("":
// any) and returns how long that took from since.
func firing(t *testing.T, url, alert, namespace string, since time.Time, timeout time.Duration) time.Duration {
	t.Helper()
	var last string
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		as, err := platformAlerts(url)
		if err != nil {
			last = err.Error()
		} else {
			last = describeAlerts(as)
			for _, a := range as {
				if a.Labels["alertname"] == alert && a.State == "firing" && (namespace == "" || a.Labels["namespace"] == namespace) {
					took := time.Since(since).Round(time.Second)
					t.Logf("%s fired for %q %s after its condition was made true (active since %s, value %s)", alert, namespace, took, a.ActiveAt.Format(time.TimeOnly), a.Value)
					return took
				}
			}
		}
		time.Sleep(2 * time.Second)
	}
	t.Errorf("%s did not fire for %q within %s; alerts now: %s", alert, namespace, timeout, last)
	return 0
}

// TestAlertsFireLive evaluates Paddock's own alert rules, as `paddock up`
// renders them from the spec, with Prometheus and kube-state-metrics on the
// live stack: a healthy platform fires none; then each rule's condition is
// made true the way it happens in operation, and the test waits for the
// alert to fire. Thresholds and `for:` come from the spec's observability
// block, at the smallest it allows (1m).
func TestAlertsFireLive(t *testing.T) {
	e := live
	if e.nodes == "fake" {
		t.Skip("kwok nodes run no container and no dataplane: no warm sandbox becomes ready, no packet is dropped (PADDOCK_E2E_NODES=fake)")
	}
	url := withObservability(t, e)

	dir := t.TempDir()
	file := filepath.Join(dir, "platform.hcl")
	write := func(text string) {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(alertsSpec())
	nsQuota, nsLife, nsDrop, nsPool := model.DefaultNamespacePrefix+"obs-quota", model.DefaultNamespacePrefix+"obs-life", model.DefaultNamespacePrefix+"obs-drop", model.DefaultNamespacePrefix+"obs-pool"
	e.mustPaddock(t, "up", dir)
	defer e.destroyAndWait(t, nil, []string{nsQuota, nsLife, nsDrop, nsPool}, dir)

	for _, ns := range []string{nsQuota, nsLife, nsDrop, nsPool} {
		readySandboxPod(t, e, ns)
	}
	// Prometheus has the rules as rendered and scrapes every exporter.
	eventually(t, "Prometheus loads paddock-alerts and scrapes the controller, kube-state-metrics, the agent and Hubble", 2*time.Minute, func() error {
		var rules struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []struct {
					Name  string `json:"name"`
					Query string `json:"query"`
				} `json:"rules"`
			} `json:"groups"`
		}
		if err := promGet(url, "/api/v1/rules", &rules); err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				if strings.Contains(r.Query, nsQuota) || strings.Contains(r.Query, nsLife) || r.Name == manifests.AlertControllerDown {
					seen[r.Name] = true
				}
			}
		}
		for _, want := range []string{manifests.AlertQuotaSaturated, manifests.AlertWarmPoolEmpty, manifests.AlertWarmPoolColdStarts, manifests.AlertControllerDown, manifests.AlertLifetimeExceeded, manifests.AlertClaimsHittingMaxTTL, manifests.AlertSandboxPolicyDrops} {
			if !seen[want] {
				return fmt.Errorf("rule %s for this platform not loaded (loaded: %v)", want, seen)
			}
		}
		var targets struct {
			ActiveTargets []struct {
				Labels    map[string]string `json:"labels"`
				Health    string            `json:"health"`
				LastError string            `json:"lastError"`
			} `json:"activeTargets"`
		}
		if err := promGet(url, "/api/v1/targets", &targets); err != nil {
			return err
		}
		up := 0
		for _, tg := range targets.ActiveTargets {
			if tg.Health != "up" {
				return fmt.Errorf("target %s is %s: %s", tg.Labels["job"], tg.Health, tg.LastError)
			}
			up++
		}
		if up != 4 {
			return fmt.Errorf("%d targets up, want 4", up)
		}
		return nil
	})

	// Healthy by its own metrics: every pool has a ready sandbox as the
	// controller reports it (a pod Running is not yet a sandbox Ready).
	eventually(t, "every warm pool of the platform has a ready sandbox in agent_sandboxes", 2*time.Minute, func() error {
		var v struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
			} `json:"result"`
		}
		if err := promGet(url, "/api/v1/query?query="+neturl.QueryEscape(`agent_sandboxes{namespace=~"agents-obs-.*", owned_by="SandboxWarmPool", ready_condition="true"} > 0`), &v); err != nil {
			return err
		}
		ready := map[string]bool{}
		for _, r := range v.Result {
			ready[r.Metric["namespace"]] = true
		}
		for _, ns := range []string{nsQuota, nsLife, nsDrop, nsPool} {
			if !ready[ns] {
				return fmt.Errorf("no ready warm sandbox of %s in agent_sandboxes (ready: %v)", ns, ready)
			}
		}
		return nil
	})

	// A pool being filled right after up is a pool without a ready sandbox:
	// PaddockWarmPoolEmpty goes pending then, and its for: keeps it from
	// firing. Settled means nothing pending.
	settleAt := time.Now()
	eventually(t, "no alert of the new platform pending", time.Minute, func() error {
		as, err := platformAlerts(url)
		if err == nil && len(as) > 0 {
			err = fmt.Errorf("alerts: %s", describeAlerts(as))
		}
		return err
	})
	t.Logf("the new platform settled: no alert pending %s after every pool was ready", time.Since(settleAt).Round(time.Second))

	t.Run("a healthy platform fires none", func(t *testing.T) {
		// Longer than every `for:` (1m) plus a few evaluations (5s): a
		// condition true now would be firing by the end.
		const watch = 80 * time.Second
		end := time.Now().Add(watch)
		for time.Now().Before(end) {
			as, err := platformAlerts(url)
			if err != nil {
				t.Fatal(err)
			}
			if len(as) > 0 {
				t.Fatalf("the healthy platform has alerts: %s", describeAlerts(as))
			}
			time.Sleep(5 * time.Second)
		}
		t.Logf("no alert of platform %q pending or firing over %s", alertsPlatform, watch)
	})

	claims := func(ns string) func(name string, shutdownIn time.Duration) string {
		return func(name string, shutdownIn time.Duration) string {
			t.Helper()
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": claimsGVR.GroupVersion().String(),
				"kind":       "SandboxClaim",
				"metadata":   map[string]any{"name": name, "namespace": ns},
				"spec": map[string]any{"warmPoolRef": map[string]any{"name": "agent"}, "lifecycle": map[string]any{
					// Within obs-life's max_ttl of 1m, which also bounds this.
					"ttlSecondsAfterFinished": int64(30),
					"shutdownPolicy":          "Delete",
					"shutdownTime":            time.Now().Add(shutdownIn).UTC().Format(time.RFC3339),
				}},
			}}
			created, err := e.dyn.Resource(claimsGVR).Namespace(ns).Create(ctxT(t, 10*time.Second), u, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("claim %s/%s: %v", ns, name, err)
			}
			return string(created.GetUID())
		}
	}
	var mu sync.Mutex
	took := map[string]time.Duration{}
	record := func(name string, d time.Duration) {
		mu.Lock()
		took[name] = d
		mu.Unlock()
	}
	defer func() {
		var lines []string
		for k, v := range took {
			lines = append(lines, fmt.Sprintf("%s %s", k, v))
		}
		sort.Strings(lines)
		t.Logf("time from condition to firing: %s", strings.Join(lines, "; "))
	}()

	t.Run("conditions made true fire", func(t *testing.T) {
		var wg sync.WaitGroup
		wait := func(alert, ns string, since time.Time, timeout time.Duration) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				record(alert, firing(t, url, alert, ns, since, timeout))
			}()
		}

		// A runaway loop claiming: the claim takes the warm sandbox, the pool
		// refills, and the tenant's 2 pods are used.
		quotaAt := time.Now()
		claims(nsQuota)("e2e-fill", 30*time.Minute)
		wait(manifests.AlertQuotaSaturated, nsQuota, quotaAt, 5*time.Minute)

		// An agent reaching for a destination its policy refuses: the local
		// stack's own world host, by address. Retried so the drop counter,
		// whose series the first drop creates, increases between scrapes.
		drop := localcluster.WorldHosts[2]
		pod := readySandboxPod(t, e, nsDrop)
		dropAt := time.Now()
		dropsDone := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 12; i++ {
				select {
				case <-dropsDone:
					return
				default:
				}
				_, _ = k8s.RunKubectlAndGetOutputE(t, k8s.NewKubectlOptions("", e.kubeconfig, nsDrop), "exec", pod, "-c", "agent", "--", "sh", "-c", fmt.Sprintf("nc -w 2 %s 443 </dev/null", drop.Addr()))
				time.Sleep(3 * time.Second)
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(dropsDone)
			record(manifests.AlertSandboxPolicyDrops, firing(t, url, manifests.AlertSandboxPolicyDrops, nsDrop, dropAt, 4*time.Minute))
		}()

		// A pool that cannot refill: the node cordoned (as when it is
		// drained), a claim takes obs-pool's one warm sandbox and the
		// replacement never schedules. Claims after it start cold; two, so the
		// claim counter, whose series the first cold claim creates, increases.
		cordon(t, e, true)
		defer cordon(t, e, false)
		poolAt := time.Now()
		claims(nsPool)("e2e-warm", 30*time.Minute)
		wait(manifests.AlertWarmPoolEmpty, nsPool, poolAt, 5*time.Minute)
		time.Sleep(10 * time.Second)
		coldAt := time.Now()
		for i := 1; i <= 3; i++ {
			claims(nsPool)(fmt.Sprintf("e2e-cold-%d", i), 30*time.Minute)
			time.Sleep(12 * time.Second)
		}
		wait(manifests.AlertWarmPoolColdStarts, nsPool, coldAt, 3*time.Minute)
		wg.Wait()
		cordon(t, e, false)

		// paddock status shows what fires.
		out, err := e.paddockStdout(t, "status", dir)
		if err != nil {
			t.Fatalf("paddock status: %v\n%s", err, out)
		}
		if !strings.Contains(out, "alerts (local Prometheus") || !strings.Contains(out, manifests.AlertQuotaSaturated) {
			t.Errorf("paddock status does not show the firing alerts:\n%s", out)
		}
	})

	t.Run("a claimed sandbox outliving its session, the controller down", func(t *testing.T) {
		// A session of obs-life (max_ttl 1m) whose claim does not expire: the
		// controller, which would delete it, is stopped once the claim holds
		// its sandbox. Past lifetime_factor × max_ttl = 60s it is reported,
		// and the controller's absence too.
		claims(nsLife)("e2e-overdue", 55*time.Second)
		// Adopted, the pod loses the pool's label (the claim's UID label never
		// reaches a pod; the rules select by these two).
		sel := agentsandbox.PodNameHashLabel + ",!" + sandboxv1beta1.SandboxWarmPoolLabel
		eventually(t, "the claim's sandbox pod leaves the pool", time.Minute, func() error {
			pods, err := e.kube.CoreV1().Pods(nsLife).List(ctxT(t, 10*time.Second), metav1.ListOptions{LabelSelector: sel})
			if err != nil {
				return err
			}
			if len(pods.Items) == 0 {
				return fmt.Errorf("no pod matches %s", sel)
			}
			return nil
		})
		claimedAt := time.Now()
		b, err := os.ReadFile(filepath.Join(e.home, "local", "supervisor.json"))
		if err != nil {
			t.Fatal(err)
		}
		var sup supervisorState
		if err := json.Unmarshal(b, &sup); err != nil || sup.Controller.PID == 0 {
			t.Fatalf("supervisor.json names no controller pid (%v):\n%s", err, b)
		}
		if err := syscall.Kill(sup.Controller.PID, syscall.SIGSTOP); err != nil {
			t.Fatalf("stopping the controller (pid %d): %v", sup.Controller.PID, err)
		}
		stoppedAt := time.Now()
		resumed := false
		resume := func() {
			if !resumed {
				resumed = true
				_ = syscall.Kill(sup.Controller.PID, syscall.SIGCONT)
			}
		}
		defer resume()
		var wg sync.WaitGroup
		for _, w := range []struct {
			alert, ns string
			since     time.Time
		}{{manifests.AlertControllerDown, "", stoppedAt}, {manifests.AlertLifetimeExceeded, nsLife, claimedAt}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				record(w.alert, firing(t, url, w.alert, w.ns, w.since, 5*time.Minute))
			}()
		}
		wg.Wait()
		// The controller back, the claim expires and its sandbox goes: one
		// session of obs-life ran into max_ttl, as many as claim_expiry_rate.
		resume()
		resumedAt := time.Now()
		record(manifests.AlertClaimsHittingMaxTTL, firing(t, url, manifests.AlertClaimsHittingMaxTTL, nsLife, resumedAt, 4*time.Minute))
	})
}

// cordon marks the node unschedulable (on) or schedulable again, as
// `kubectl cordon` and `uncordon` do.
func cordon(t *testing.T, e *env, on bool) {
	t.Helper()
	nodes, err := e.kube.CoreV1().Nodes().List(ctxTimeout(10*time.Second), metav1.ListOptions{})
	if err != nil {
		t.Errorf("cordon %v: %v", on, err)
		return
	}
	for _, n := range nodes.Items {
		patch := fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, on)
		if _, err := e.kube.CoreV1().Nodes().Patch(ctxTimeout(10*time.Second), n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Errorf("cordon %s %v: %v", n.Name, on, err)
		}
	}
}

func httpGet(url string) ([]byte, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d: %s", url, resp.StatusCode, firstLines(string(b), 1))
	}
	return b, nil
}
