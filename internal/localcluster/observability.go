// Observability on the local stack: `local up --observability` has the
// supervisor run kube-state-metrics and Prometheus beside the Agent Sandbox
// controller, on loopback only. Prometheus scrapes the controller (as the
// ServiceMonitor Paddock renders would have the Prometheus Operator do),
// kube-state-metrics and the Cilium agent with its Hubble drop counter, and
// evaluates the PrometheusRule objects on the cluster as they are: the
// supervisor writes each one's spec (a Prometheus rule file) to disk and
// reloads Prometheus, which is the part of the operator's work the alerts need.
// The operator's CRDs are installed in a minimal form (any spec), so `paddock
// up` of a spec with an observability block is accepted here.

package localcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/paddock-platform/paddock/internal/loopbackport"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/manifests/promoperator"
	"github.com/paddock-platform/paddock/internal/paths"
	"github.com/paddock-platform/paddock/internal/pins"
)

// The observability processes' tools (Makefile TEST_TOOLS: `make tools-test`).
const (
	ksmTool        = "kube-state-metrics"
	prometheusTool = "prometheus"
)

const (
	obsDir        = "observability"      // config, rule files and the TSDB, under Dir
	obsReportFile = "observability.json" // written by the supervisor only
)

// Short intervals: on the local stack an alert's `for:` is what a test waits,
// not the evaluation cadence.
const (
	obsScrapeInterval = "5s"
	obsEvalInterval   = "5s"
)

// obsPorts are the loopback ports of the observability processes, chosen at
// the `local up` that turned them on.
type obsPorts struct {
	KubeStateMetrics          int `json:"kubeStateMetrics"`
	KubeStateMetricsTelemetry int `json:"kubeStateMetricsTelemetry"`
	Prometheus                int `json:"prometheus"`
}

// obsReport is Dir/observability.json: what the supervisor's observability
// part runs.
type obsReport struct {
	Supervisor int                     `json:"supervisor"`
	Procs      map[string]*nodeProcRep `json:"procs"`
	// Rules are the rule files Prometheus loads, one per PrometheusRule
	// object ("namespace/name"); RulesError says why the last reload failed.
	Rules      []string `json:"rules,omitempty"`
	RulesError string   `json:"rulesError,omitempty"`
}

// obsProcessNames are the processes the supervisor runs when observability is on.
var obsProcessNames = []string{ksmTool, prometheusTool}

func (c *cluster) obsDir() string { return filepath.Join(c.dir, obsDir) }

// ksmArgs: out of cluster against the local kubeconfig, both listeners on
// loopback, only the resources Paddock's rules read, and the sandbox pods'
// labels the lifetime rules select by on kube_pod_labels.
func ksmArgs(kubeconfig string, p obsPorts) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--host=127.0.0.1", fmt.Sprintf("--port=%d", p.KubeStateMetrics),
		"--telemetry-host=127.0.0.1", fmt.Sprintf("--telemetry-port=%d", p.KubeStateMetricsTelemetry),
		"--resources=pods,resourcequotas",
		"--metric-labels-allowlist=pods=[" + strings.Join(manifests.KubeStateMetricsPodLabels, ",") + "]",
	}
}

func prometheusArgs(dir string, p obsPorts) []string {
	return []string{
		"--config.file=" + filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--storage.tsdb.retention.time=1d",
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", p.Prometheus),
	}
}

// ObsTargets are the loopback endpoints Prometheus scrapes.
type ObsTargets struct {
	Controller, KubeStateMetrics, CiliumAgent, Hubble int
}

// PrometheusConfig is the scrape configuration, in JSON (which is YAML).
// The controller's job and namespace labels are the ones the Prometheus
// Operator gives the targets of Paddock's ServiceMonitor (the Service's name
// and namespace), with its honor_labels, so the rules meet the same series
// here as on a cluster.
func PrometheusConfig(rulesDir string, t ObsTargets) ([]byte, error) {
	ep, err := agentsandbox.Metrics(pins.AgentSandbox)
	if err != nil {
		return nil, err
	}
	static := func(port int, labels map[string]string) []any {
		sc := map[string]any{"targets": []any{fmt.Sprintf("127.0.0.1:%d", port)}}
		if len(labels) > 0 {
			sc["labels"] = labels
		}
		return []any{sc}
	}
	jobs := []any{
		map[string]any{
			"job_name":       ep.Service,
			"honor_labels":   manifests.ServiceMonitorHonorLabels,
			"static_configs": static(t.Controller, map[string]string{"namespace": agentsandbox.Namespace, "service": ep.Service, "endpoint": ep.PortName}),
		},
		map[string]any{
			"job_name":       ksmTool,
			"honor_labels":   true, // the objects' namespace label, not the exporter's
			"static_configs": static(t.KubeStateMetrics, nil),
		},
	}
	if t.CiliumAgent != 0 {
		jobs = append(jobs, map[string]any{"job_name": "cilium-agent", "static_configs": static(t.CiliumAgent, nil)})
	}
	if t.Hubble != 0 {
		jobs = append(jobs, map[string]any{"job_name": "hubble", "static_configs": static(t.Hubble, nil)})
	}
	cfg := map[string]any{
		"global": map[string]any{
			"scrape_interval":     obsScrapeInterval,
			"scrape_timeout":      "4s",
			"evaluation_interval": obsEvalInterval,
		},
		"rule_files":     []any{filepath.Join(rulesDir, "*.yaml")},
		"scrape_configs": jobs,
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	return append(b, '\n'), err
}

// ruleFileName is the file of one PrometheusRule object.
func ruleFileName(namespace, name string) string { return namespace + "_" + name + ".yaml" }

// RuleFile is a PrometheusRule's spec as a Prometheus rule file: the
// operator hands Prometheus spec.groups unchanged.
func RuleFile(u *unstructured.Unstructured) ([]byte, error) {
	groups, found, err := unstructured.NestedSlice(u.Object, "spec", "groups")
	if err != nil {
		return nil, fmt.Errorf("PrometheusRule %s/%s: spec.groups: %w", u.GetNamespace(), u.GetName(), err)
	}
	if !found {
		groups = []any{}
	}
	b, err := json.MarshalIndent(map[string]any{"groups": groups}, "", "  ")
	return append(b, '\n'), err
}

// Monitoring CRDs: the Prometheus Operator's group, version and resources
// with a schema that takes any spec. They exist so that the objects of a
// spec's observability block can be applied here; the supervisor reads
// PrometheusRules, and nothing reads ServiceMonitors (no operator selects them).
func monitoringCRDs() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, r := range []struct {
		gvr        schema.GroupVersionResource
		kind, list string
	}{
		{promoperator.ServiceMonitors, promoperator.ServiceMonitorKind, promoperator.ServiceMonitorKind + "List"},
		{promoperator.PrometheusRules, promoperator.PrometheusRuleKind, promoperator.PrometheusRuleKind + "List"},
	} {
		out = append(out, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1",
			"kind":       "CustomResourceDefinition",
			"metadata": map[string]any{
				"name":   r.gvr.GroupResource().String(),
				"labels": map[string]any{"app.kubernetes.io/managed-by": "paddock-local"},
				"annotations": map[string]any{
					"paddock.dev/local-stack": "a minimal stand-in for the Prometheus Operator's CRD (any spec), installed by `paddock local up --observability`",
				},
			},
			"spec": map[string]any{
				"group": r.gvr.Group,
				"scope": "Namespaced",
				"names": map[string]any{
					"plural":   r.gvr.Resource,
					"singular": strings.ToLower(r.kind),
					"kind":     r.kind,
					"listKind": r.list,
				},
				"versions": []any{map[string]any{
					"name": r.gvr.Version, "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{
						"type": "object",
						"properties": map[string]any{
							"spec": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
						},
					}},
				}},
			},
		}})
	}
	return out
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installMonitoringCRDs applies monitoringCRDs, leaving alone a CRD of that
// name that someone else installed (the operator's own).
func (c *cluster) installMonitoringCRDs(ctx context.Context) error {
	cfg, err := restConfig(c.kubeconfig(), 30*time.Second)
	if err != nil {
		return err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, crd := range monitoringCRDs() {
		live, err := dc.Resource(crdResource).Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err == nil && live.GetLabels()["app.kubernetes.io/managed-by"] != "paddock-local" {
			continue
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("read CRD %s: %w", crd.GetName(), err)
		}
		b, err := json.Marshal(crd.Object)
		if err != nil {
			return err
		}
		force := true
		if _, err := dc.Resource(crdResource).Patch(ctx, crd.GetName(), types.ApplyPatchType, b, metav1.PatchOptions{FieldManager: "paddock-local", Force: &force}); err != nil {
			return fmt.Errorf("install CRD %s: %w", crd.GetName(), err)
		}
	}
	return nil
}

// resolveObsTools finds the observability processes' binaries.
func resolveObsTools(bins map[string]string) error {
	for _, t := range obsProcessNames {
		p, err := paths.Tool(t)
		if err != nil {
			return fmt.Errorf("--observability runs the pinned %s, which `make tools` leaves out: run `make tools-test` (or `make tool-%s`) first (%w)", t, t, err)
		}
		bins[t] = p
	}
	return nil
}

// applyObservability records the requested observability in the state (the
// supervisor follows it within a few seconds) and, when on, waits until
// Prometheus is ready. The caller holds the lock.
func (c *cluster) applyObservability(ctx context.Context) error {
	want := c.observability
	if want == nil {
		return nil
	}
	if !*want {
		if c.state.Observability == nil {
			return nil
		}
		c.state.Observability = nil
		if err := writeState(c.dir, c.state); err != nil {
			return err
		}
		return c.waitObservability(ctx, false)
	}
	if err := resolveObsTools(c.state.Binaries); err != nil {
		return err
	}
	done := c.step("installing the monitoring CRDs (servicemonitors, prometheusrules.%s; any spec: no operator runs here)", promoperator.GroupVersion.Group)
	err := c.installMonitoringCRDs(ctx)
	done(err)
	if err != nil {
		return err
	}
	if c.state.Observability == nil {
		ports, err := loopbackport.Free(3)
		if err != nil {
			return fmt.Errorf("choose ports for kube-state-metrics and Prometheus: %w", err)
		}
		c.state.Observability = &obsPorts{KubeStateMetrics: ports[0], KubeStateMetricsTelemetry: ports[1], Prometheus: ports[2]}
	}
	if err := writeState(c.dir, c.state); err != nil {
		return err
	}
	done = c.step("waiting for kube-state-metrics and Prometheus (127.0.0.1:%d)", c.state.Observability.Prometheus)
	err = c.waitObservability(ctx, true)
	done(err)
	return err
}

// waitObservability waits until the supervisor runs the observability
// processes and Prometheus answers /-/ready (on), or until it has stopped
// them (off).
func (c *cluster) waitObservability(ctx context.Context, on bool) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	last := "no report yet"
	for {
		rep, err := readObsReport(c.dir)
		running := 0
		if err == nil {
			for _, name := range obsProcessNames {
				if pr := rep.Procs[name]; pr != nil && pr.Proc != nil {
					if ok, _ := pr.Proc.alive(); ok {
						running++
					}
				}
			}
		}
		switch {
		case !on && running == 0:
			return nil
		case on && running == len(obsProcessNames):
			err := httpOK(ctx, fmt.Sprintf("http://127.0.0.1:%d/-/ready", c.state.Observability.Prometheus))
			if err == nil {
				return nil
			}
			last = "Prometheus /-/ready: " + err.Error()
		case err != nil:
			last = err.Error()
		default:
			last = fmt.Sprintf("%d of %d processes run", running, len(obsProcessNames))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the supervisor did not %s kube-state-metrics and Prometheus within %s (%s); see %s, %s and %s",
				map[bool]string{true: "start", false: "stop"}[on], c.timeout, last,
				filepath.Join(c.logsDir(), supervisorLog), filepath.Join(c.logsDir(), ksmTool+".log"), filepath.Join(c.logsDir(), prometheusTool+".log"))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func readObsReport(dir string) (*obsReport, error) {
	b, err := os.ReadFile(filepath.Join(dir, obsReportFile))
	if err != nil {
		return nil, err
	}
	var r obsReport
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, obsReportFile), err)
	}
	return &r, nil
}

// PrometheusURL is the local Prometheus of the cluster in dir when the
// cluster runs with observability and its supervisor runs Prometheus.
func PrometheusURL(dir string) (string, bool) {
	st, err := readState(dir)
	if err != nil || st.Observability == nil {
		return "", false
	}
	rep, err := readObsReport(dir)
	if err != nil {
		return "", false
	}
	pr := rep.Procs[prometheusTool]
	if pr == nil || pr.Proc == nil {
		return "", false
	}
	if ok, _ := pr.Proc.alive(); !ok {
		return "", false
	}
	return fmt.Sprintf("http://127.0.0.1:%d", st.Observability.Prometheus), true
}

// stopObservability stops observability processes a supervisor that died
// left behind (each after checking its identity).
func (c *cluster) stopObservability() {
	rep, err := readObsReport(c.dir)
	if err != nil {
		return
	}
	for _, name := range obsProcessNames {
		if pr := rep.Procs[name]; pr != nil && pr.Proc != nil {
			_, _ = terminate(*pr.Proc, 15*time.Second)
		}
	}
}

// obsComponents reports the observability processes for Status.
func (c *cluster) obsComponents(st *clusterState, supAlive bool) []ComponentStatus {
	if st.Observability == nil {
		return nil
	}
	rep, _ := readObsReport(c.dir)
	var out []ComponentStatus
	for _, name := range obsProcessNames {
		var pr *nodeProcRep
		if rep != nil {
			pr = rep.Procs[name]
		}
		out = append(out, c.supervisedStatus(name, pr, supAlive, func(cs *ComponentStatus) {
			port := st.Observability.KubeStateMetrics
			if name == prometheusTool {
				port = st.Observability.Prometheus
			}
			cs.Detail = fmt.Sprintf("http://127.0.0.1:%d", port)
			if name == prometheusTool {
				cs.Detail += fmt.Sprintf(" (rules of %d PrometheusRule object(s))", len(rep.Rules))
				if rep.RulesError != "" {
					cs.State, cs.Detail = Unhealthy, rep.RulesError
				}
			}
		}))
	}
	return out
}

// Alert is one alert of the local Prometheus (its /api/v1/alerts).
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"` // "pending" or "firing"
	ActiveAt    time.Time         `json:"activeAt"`
	Value       string            `json:"value"`
}

// Alerts reads the alerts Prometheus at url holds (pending and firing).
func Alerts(ctx context.Context, url string) ([]Alert, error) {
	var resp struct {
		Status string `json:"status"`
		Data   struct {
			Alerts []Alert `json:"alerts"`
		} `json:"data"`
		Error string `json:"error"`
	}
	if err := getJSON(ctx, strings.TrimSuffix(url, "/")+"/api/v1/alerts", &resp); err != nil {
		return nil, err
	}
	if resp.Status != "success" {
		return nil, fmt.Errorf("%s/api/v1/alerts: %s %s", url, resp.Status, resp.Error)
	}
	return resp.Data.Alerts, nil
}

func getJSON(ctx context.Context, url string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d: %s", url, resp.StatusCode, firstLine(string(b)))
	}
	return json.Unmarshal(b, v)
}
