package localcluster

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/pins"
)

// The controller's job carries the labels the Prometheus Operator gives the
// targets of Paddock's ServiceMonitor, which the controller-down rule selects.
func TestPrometheusConfigScrapesLikeTheServiceMonitor(t *testing.T) {
	b, err := PrometheusConfig("/x/rules", ObsTargets{Controller: 1001, KubeStateMetrics: 1002, CiliumAgent: 1003, Hubble: 1004})
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Global        map[string]string `json:"global"`
		RuleFiles     []string          `json:"rule_files"`
		ScrapeConfigs []struct {
			Job           string `json:"job_name"`
			HonorLabels   bool   `json:"honor_labels"`
			StaticConfigs []struct {
				Targets []string          `json:"targets"`
				Labels  map[string]string `json:"labels"`
			} `json:"static_configs"`
		} `json:"scrape_configs"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	ep, err := agentsandbox.Metrics(pins.AgentSandbox)
	if err != nil {
		t.Fatal(err)
	}
	jobs := map[string]string{}
	for _, sc := range cfg.ScrapeConfigs {
		if len(sc.StaticConfigs) != 1 || len(sc.StaticConfigs[0].Targets) != 1 {
			t.Fatalf("job %s: %+v", sc.Job, sc.StaticConfigs)
		}
		target := sc.StaticConfigs[0].Targets[0]
		if !strings.HasPrefix(target, "127.0.0.1:") {
			t.Errorf("job %s scrapes %s, not loopback", sc.Job, target)
		}
		jobs[sc.Job] = target
		if sc.Job == ep.Service {
			if sc.StaticConfigs[0].Labels["namespace"] != agentsandbox.Namespace || sc.HonorLabels != manifests.ServiceMonitorHonorLabels {
				t.Errorf("controller job %+v: want namespace %s and honor_labels %v", sc, agentsandbox.Namespace, manifests.ServiceMonitorHonorLabels)
			}
		}
	}
	for job, want := range map[string]string{ep.Service: "127.0.0.1:1001", "kube-state-metrics": "127.0.0.1:1002", "cilium-agent": "127.0.0.1:1003", "hubble": "127.0.0.1:1004"} {
		if jobs[job] != want {
			t.Errorf("job %s scrapes %q, want %q (all: %v)", job, jobs[job], want, jobs)
		}
	}
	if len(cfg.RuleFiles) != 1 || cfg.RuleFiles[0] != filepath.Join("/x/rules", "*.yaml") {
		t.Errorf("rule_files %v", cfg.RuleFiles)
	}

	// A kwok-node cluster has no Cilium agent to scrape.
	b, _ = PrometheusConfig("/x/rules", ObsTargets{Controller: 1001, KubeStateMetrics: 1002})
	if strings.Contains(string(b), "cilium") || strings.Contains(string(b), "hubble") {
		t.Errorf("scrapes Cilium without an agent:\n%s", b)
	}
}

// A PrometheusRule's spec.groups become the rule file unchanged.
func TestRuleFileIsTheSpecsGroups(t *testing.T) {
	groups := []any{map[string]any{"name": "g", "rules": []any{map[string]any{"alert": "A", "expr": "up == 0", "for": "1m"}}}}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"groups": groups}}}
	b, err := RuleFile(u)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(map[string]any{"groups": groups})
	gotB, _ := json.Marshal(got)
	if string(gotB) != string(want) {
		t.Errorf("rule file %s, want %s", gotB, want)
	}
	bad := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"groups": "not a list"}}}
	bad.SetNamespace("ns")
	bad.SetName("r")
	if _, err := RuleFile(bad); err == nil || !strings.Contains(err.Error(), "ns/r") {
		t.Errorf("a spec.groups that is no list: %v, want an error naming the object", err)
	}
	if ruleFileName("agent-sandbox-system", "paddock-alerts") != "agent-sandbox-system_paddock-alerts.yaml" {
		t.Error(ruleFileName("agent-sandbox-system", "paddock-alerts"))
	}
}

// kube-state-metrics listens on loopback only and labels sandbox pods with
// the claim label the lifetime rules select by.
func TestKubeStateMetricsArgs(t *testing.T) {
	args := strings.Join(ksmArgs("/k", obsPorts{KubeStateMetrics: 1, KubeStateMetricsTelemetry: 2}), " ")
	for _, want := range []string{"--host=127.0.0.1", "--telemetry-host=127.0.0.1", "--port=1", "--telemetry-port=2", "--metric-labels-allowlist=pods=[agents.x-k8s.io/sandbox-name-hash,agents.x-k8s.io/warm-pool-sandbox]", "resourcequotas"} {
		if !strings.Contains(args, want) {
			t.Errorf("kube-state-metrics args %q lack %q", args, want)
		}
	}
	pargs := strings.Join(prometheusArgs("/d", obsPorts{Prometheus: 3}), " ")
	if !strings.Contains(pargs, "--web.listen-address=127.0.0.1:3") || strings.Contains(pargs, "enable-lifecycle") {
		t.Errorf("prometheus args %q: want loopback only and no lifecycle API", pargs)
	}
}

// The stand-in CRDs serve the group and version Paddock's objects use.
func TestMonitoringCRDs(t *testing.T) {
	names := map[string]bool{}
	for _, crd := range monitoringCRDs() {
		names[crd.GetName()] = true
		v, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		if len(v) != 1 || v[0].(map[string]any)["name"] != "v1" {
			t.Errorf("%s versions %v", crd.GetName(), v)
		}
	}
	if !names["prometheusrules.monitoring.coreos.com"] || !names["servicemonitors.monitoring.coreos.com"] {
		t.Errorf("CRDs %v", names)
	}
}

// Alerts reads Prometheus' /api/v1/alerts, and says so when it answers an error.
func TestAlertsReadsTheAPI(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/alerts" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"status":"success","data":{"alerts":[{"labels":{"alertname":"PaddockAgentSandboxControllerDown","platform":"p"},"annotations":{"summary":"down"},"state":"firing","activeAt":"2026-12-05T19:00:00Z","value":"1e+00"}]}}`))
	}))
	defer srv.Close()
	as, err := Alerts(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 || as[0].Labels["alertname"] != "PaddockAgentSandboxControllerDown" || as[0].State != "firing" || as[0].ActiveAt.IsZero() {
		t.Errorf("alerts %+v", as)
	}
	if _, err := Alerts(context.Background(), srv.URL+"/nothing"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a 404: %v", err)
	}
}
