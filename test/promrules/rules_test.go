package promrules

import (
	"encoding/json"
	"log/slog"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddock-platform/paddock/internal/localcluster"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/manifests/promoperator"
	"github.com/paddock-platform/paddock/schemas"
)

// spec has three tenants (two sharing max_ttl, one without any), a warm
// pool, and every threshold set away from its default.
const spec = `platform { name = "obs" }
target "kubeconfig" {
  context     = "c"
  fqdn_policy = "cilium"
}
agent_sandbox { version = "v0.5.6" }
runtime_class "gvisor" { handler = "runsc" }
tenant "team-a" {
  template "py" {
    image         = "python:3.12-slim"
    runtime_class = "gvisor"
  }
  warm_pool "py" {
    template = "py"
    replicas = 2
  }
}
tenant "team-b" {
  claims { max_ttl = "30m" }
}
tenant "team-c" {
  claims { max_ttl = "none" }
}
observability {
  lifetime_factor     = 1.5
  claim_expiry_rate   = 4
  quota_saturation    = 0.85
  pool_empty_for      = "15m"
  controller_down_for = "3m"
  labels              = { release = "kube-prometheus-stack" }
}
`

// Metrics the rules may read: what the pinned controller registers
// (sigs.k8s.io/agent-sandbox internal/metrics: the agent_sandboxes collector
// and agent_sandbox_claim_creation_total), kube-state-metrics, Prometheus'
// own up, and the rule file's own recording.
var knownMetrics = map[string]string{
	"agent_sandboxes":                    "agent-sandbox controller",
	"agent_sandbox_claim_creation_total": "agent-sandbox controller",
	"kube_pod_labels":                    "kube-state-metrics",
	"kube_resourcequota":                 "kube-state-metrics",
	"up":                                 "Prometheus",
	"hubble_drop_total":                  "Cilium's Hubble (drop:sourceContext=namespace)",
	manifests.RecordClaimedSeconds:       "paddock-alerts",
}

func prometheusRule(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	p, diags := schemas.NewLoader().LoadSource("platform.hcl", []byte(spec), schemas.LoadOptions{Environ: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	groups, err := manifests.Platform(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		for _, u := range g.Objects {
			if u.GetKind() == promoperator.PrometheusRuleKind {
				return u
			}
		}
	}
	t.Fatal("no PrometheusRule rendered")
	return nil
}

// The PrometheusRule's spec is a Prometheus rule file: Prometheus' own
// parser accepts it (YAML fields, PromQL, durations, label names and the
// annotation templates), refusing unknown fields.
func TestRulesParseWithPrometheus(t *testing.T) {
	u := prometheusRule(t)
	// JSON is YAML, and the spec is exactly what the operator hands Prometheus.
	b, err := json.Marshal(u.Object["spec"])
	if err != nil {
		t.Fatal(err)
	}
	rgs, errs := rulefmt.Parse(b, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	for _, e := range errs {
		t.Errorf("Prometheus refuses the rules: %v", e)
	}
	if t.Failed() {
		t.Fatalf("rules:\n%s", b)
	}
	names := map[string]int{}
	for _, g := range rgs.Groups {
		for _, r := range g.Rules {
			names[r.Alert+r.Record]++
		}
	}
	for name, want := range map[string]int{
		manifests.RecordClaimedSeconds:     2, // team-a (4h) and team-b (30m); team-c has no max_ttl
		manifests.AlertLifetimeExceeded:    2,
		manifests.AlertClaimsHittingMaxTTL: 2,
		manifests.AlertQuotaSaturated:      1,
		manifests.AlertWarmPoolEmpty:       1,
		manifests.AlertWarmPoolColdStarts:  1,
		manifests.AlertControllerDown:      1,
		manifests.AlertSandboxPolicyDrops:  1,
	} {
		if names[name] != want {
			t.Errorf("%d rules %s, want %d (all: %v)", names[name], name, want, names)
		}
	}
}

// Every metric a rule reads is one an exporter really has: none is invented.
func TestRulesReadOnlyExportedMetrics(t *testing.T) {
	u := prometheusRule(t)
	groups, _, _ := unstructured.NestedSlice(u.Object, "spec", "groups")
	p := parser.NewParser(parser.Options{})
	read := map[string]bool{}
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			expr := r.(map[string]any)["expr"].(string)
			e, err := p.ParseExpr(expr)
			if err != nil {
				t.Fatalf("%s: %v", expr, err)
			}
			parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
				if vs, ok := n.(*parser.VectorSelector); ok {
					read[vs.Name] = true
					if _, known := knownMetrics[vs.Name]; !known {
						t.Errorf("%q reads %s, which no exporter Paddock relies on has", expr, vs.Name)
					}
				}
				return nil
			})
		}
	}
	var got []string
	for m := range read {
		got = append(got, m)
	}
	sort.Strings(got)
	if len(got) != len(knownMetrics) {
		t.Errorf("the rules read %s; expected each of the known metrics once", strings.Join(got, ", "))
	}
}

// The check is not vacuous: a broken expression in the same object is refused.
func TestRuleParserRefusesABrokenRule(t *testing.T) {
	u := prometheusRule(t)
	b, _ := json.Marshal(u.Object["spec"])
	broken := strings.Replace(string(b), "max by (namespace, resourcequota, resource)", "max by (namespace,, resourcequota)", 1)
	if broken == string(b) {
		t.Fatal("the quota expression was not found to break")
	}
	if _, errs := rulefmt.Parse([]byte(broken), false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler)); len(errs) == 0 {
		t.Error("a broken expression was accepted")
	}
}

// The local stack's Prometheus loads the rule file the supervisor writes from
// the PrometheusRule, and the scrape configuration it writes.
func TestLocalStackFilesLoadInPrometheus(t *testing.T) {
	b, err := localcluster.RuleFile(prometheusRule(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, errs := rulefmt.Parse(b, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler)); len(errs) > 0 {
		t.Errorf("Prometheus refuses the local rule file: %v", errs)
	}
	cfg, err := localcluster.PrometheusConfig(t.TempDir(), localcluster.ObsTargets{Controller: 1, KubeStateMetrics: 2, CiliumAgent: 3, Hubble: 4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(string(cfg), slog.New(slog.DiscardHandler)); err != nil {
		t.Errorf("Prometheus refuses the local configuration: %v\n%s", err, cfg)
	}
}
