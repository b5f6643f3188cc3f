package manifests

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/manifests/promoperator"
	"github.com/paddock-platform/paddock/internal/model"
)

// observedPlatform is a platform of two tenants with different max_ttl and
// one warm pool, with obs as its observability block (nil: none).
func observedPlatform(obs *model.Observability) *model.Platform {
	a, b := model.DefaultTenant("team-a"), model.DefaultTenant("team-b")
	a.WarmPools = []model.WarmPool{{Name: "py", Template: "py", Replicas: 2}}
	b.Claims.MaxTTL = 30 * time.Minute
	return &model.Platform{
		Name:          "obs",
		Target:        model.Target{Kind: model.TargetKubeconfig},
		AgentSandbox:  model.AgentSandboxRelease{Version: agentsandbox.Versions()[len(agentsandbox.Versions())-1], Image: "example.com/c:v1"},
		Tenants:       []model.Tenant{a, b},
		Observability: obs,
	}
}

// rules are the PrometheusRule's rules by alert or record name.
func rules(t *testing.T, u *unstructured.Unstructured) map[string][]map[string]any {
	t.Helper()
	groups, _, _ := unstructured.NestedSlice(u.Object, "spec", "groups")
	out := map[string][]map[string]any{}
	for _, g := range groups {
		rs, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rs {
			m := r.(map[string]any)
			name, _ := m["alert"].(string)
			if name == "" {
				name, _ = m["record"].(string)
			}
			out[name] = append(out[name], m)
		}
	}
	return out
}

// Without an observability block no monitoring object exists anywhere in
// the platform, so a cluster without the Prometheus Operator is untouched.
func TestNoObservabilityBlockRendersNothing(t *testing.T) {
	groups, err := Platform(observedPlatform(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		for _, u := range g.Objects {
			if u.GroupVersionKind().Group == promoperator.GroupVersion.Group {
				t.Errorf("group %s holds %s %s", g.Name, u.GetKind(), u.GetName())
			}
		}
		if g.Name == ObservabilityGroup {
			t.Errorf("an observability group without the block: %d objects", len(g.Objects))
		}
	}
}

// Each object is rendered only when asked for, in the release namespace,
// with the spec's selector labels and Paddock's ownership labels.
func TestObservabilityObjectsAsAskedFor(t *testing.T) {
	for _, c := range []struct {
		sm, pr bool
		want   []string
	}{
		{true, true, []string{promoperator.ServiceMonitorKind, promoperator.PrometheusRuleKind}},
		{true, false, []string{promoperator.ServiceMonitorKind}},
		{false, true, []string{promoperator.PrometheusRuleKind}},
		{false, false, nil},
	} {
		o := model.DefaultObservability()
		o.ServiceMonitor, o.PrometheusRule = c.sm, c.pr
		o.Labels = map[string]string{"release": "kube-prometheus-stack", model.ManagedByLabel: "someone-else"}
		p := observedPlatform(&o)
		built, err := Build(p)
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, u := range built.Observability {
			kinds = append(kinds, u.GetKind())
			if u.GetNamespace() != agentsandbox.Namespace || u.GetAPIVersion() != "monitoring.coreos.com/v1" {
				t.Errorf("%s at %s/%s", u.GetKind(), u.GetAPIVersion(), u.GetNamespace())
			}
			l := u.GetLabels()
			if l["release"] != "kube-prometheus-stack" || l[model.ManagedByLabel] != p.Labels("")[model.ManagedByLabel] {
				t.Errorf("%s labels %v: want the spec's selector label and Paddock's ownership", u.GetKind(), l)
			}
		}
		if strings.Join(kinds, ",") != strings.Join(c.want, ",") {
			t.Errorf("service_monitor=%v prometheus_rule=%v: rendered %v, want %v", c.sm, c.pr, kinds, c.want)
		}
		groups := built.Groups()
		if last := groups[len(groups)-1]; (last.Name == ObservabilityGroup) != (len(c.want) > 0) {
			t.Errorf("service_monitor=%v prometheus_rule=%v: last group %s", c.sm, c.pr, last.Name)
		}
	}
}

// The ServiceMonitor scrapes the Service and port the pinned release
// declares for the controller's metrics.
func TestServiceMonitorScrapesTheReleaseMetricsService(t *testing.T) {
	o := model.DefaultObservability()
	p := observedPlatform(&o)
	sm, err := ServiceMonitor(p)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := agentsandbox.Objects(p.AgentSandbox.Version, ReleaseOptions(p))
	if err != nil {
		t.Fatal(err)
	}
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 || len(sel) == 0 {
		t.Fatalf("endpoints %v, selector %v", eps, sel)
	}
	port := eps[0].(map[string]any)["port"]
	// The controller's series keep their tenant namespace label (see
	// ServiceMonitorHonorLabels): the warm pool rules select by it.
	if eps[0].(map[string]any)["honorLabels"] != true {
		t.Errorf("endpoint %v does not honor the controller's labels: its namespace label would become exported_namespace", eps[0])
	}
	matched := 0
	for _, u := range rel {
		if u.GetKind() != "Service" {
			continue
		}
		labels := u.GetLabels()
		selects := true
		for k, v := range sel {
			selects = selects && labels[k] == v
		}
		if !selects {
			continue
		}
		matched++
		ports, _, _ := unstructured.NestedSlice(u.Object, "spec", "ports")
		found := false
		for _, sp := range ports {
			found = found || sp.(map[string]any)["name"] == port
		}
		if !found {
			t.Errorf("Service %s has no port %v", u.GetName(), port)
		}
	}
	if matched != 1 {
		t.Errorf("the selector %v picks %d Services of the release, want the controller's one", sel, matched)
	}
}

// The spec's thresholds reach the PromQL and the rules' durations, and
// tenants are grouped by max_ttl.
func TestThresholdsReachThePromQL(t *testing.T) {
	o := model.DefaultObservability()
	o.LifetimeFactor, o.ClaimExpiriesPerHour, o.QuotaSaturation = 3, 7, 0.75
	o.PoolEmptyFor, o.ControllerDownFor = 20*time.Minute, 2*time.Minute
	o.QuotaSaturatedFor, o.LifetimeExceededFor = 3*time.Minute, 90*time.Second
	pr, err := PrometheusRule(observedPlatform(&o))
	if err != nil {
		t.Fatal(err)
	}
	rs := rules(t, pr)
	expect := func(name string, i int, field, want string) {
		t.Helper()
		if len(rs[name]) <= i {
			t.Fatalf("no rule %s #%d; have %v", name, i, rs)
		}
		if got, _ := rs[name][i][field].(string); !strings.Contains(got, want) {
			t.Errorf("%s #%d %s = %q, want it to contain %q", name, i, field, got, want)
		}
	}
	// team-a: max_ttl 4h, so 3 × 4h = 43200s; team-b: 30m, 5400s.
	expect(AlertLifetimeExceeded, 0, "expr", `paddock:sandbox_claimed_seconds{namespace=~"agents-team-a"} > 43200`)
	expect(AlertLifetimeExceeded, 1, "expr", `paddock:sandbox_claimed_seconds{namespace=~"agents-team-b"} > 5400`)
	expect(RecordClaimedSeconds, 0, "expr", `[13h:3m]`)
	expect(RecordClaimedSeconds, 0, "expr", `label_agents_x_k8s_io_sandbox_name_hash!="", label_agents_x_k8s_io_warm_pool_sandbox=""`)
	// Sessions ending within 10% of max_ttl count as running into it.
	expect(AlertClaimsHittingMaxTTL, 0, "expr", `>= 12960 unless on (namespace, pod)`)
	expect(AlertClaimsHittingMaxTTL, 0, "expr", `) >= 7`)
	expect(AlertQuotaSaturated, 0, "expr", `namespace=~"agents-team-a|agents-team-b", type="used"`)
	expect(AlertQuotaSaturated, 0, "expr", `>= 0.75`)
	expect(AlertQuotaSaturated, 0, "for", "3m")
	expect(AlertLifetimeExceeded, 0, "for", "1m30s")
	expect(AlertLifetimeExceeded, 1, "for", "1m30s")
	expect(AlertWarmPoolEmpty, 0, "for", "20m")
	expect(AlertWarmPoolEmpty, 0, "expr", `agent_sandboxes{namespace=~"agents-team-a", owned_by="SandboxWarmPool", ready_condition="true"}`)
	expect(AlertWarmPoolColdStarts, 0, "expr", `launch_type="cold", warmpool_name!=""}[20m]`)
	expect(AlertControllerDown, 0, "for", "2m")
	expect(AlertControllerDown, 0, "expr", `absent(up{namespace="agent-sandbox-system", job="agent-sandbox-controller"} == 1)`)
}

// A tenant without a session maximum gets no lifetime rules; tenants sharing
// one share a rule.
func TestLifetimeRulesPerDistinctMaxTTL(t *testing.T) {
	o := model.DefaultObservability()
	p := observedPlatform(&o)
	p.Tenants[1].Claims.MaxTTL = 0
	c := model.DefaultTenant("team-c")
	p.Tenants = append(p.Tenants, c)
	pr, err := PrometheusRule(p)
	if err != nil {
		t.Fatal(err)
	}
	got := rules(t, pr)[AlertLifetimeExceeded]
	if len(got) != 1 || !strings.Contains(got[0]["expr"].(string), `namespace=~"agents-team-a|agents-team-c"} > 28800`) {
		t.Errorf("lifetime alerts %v, want one for team-a and team-c at 2 × 4h", got)
	}
}

func TestPromDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 90 * time.Second: "1m30s", 4 * time.Hour: "4h", 49 * time.Hour: "2d1h", 1500 * time.Millisecond: "2s",
	} {
		if got := promDuration(d); got != want {
			t.Errorf("promDuration(%s) = %q, want %q", d, got, want)
		}
	}
}

// The policy-drop alert reads Hubble's drop counter for every fenced tenant,
// named by namespace, where the dataplane is Cilium, and nowhere else.
func TestPolicyDropAlertOnCiliumTargets(t *testing.T) {
	o := model.DefaultObservability()
	for _, c := range []struct {
		fqdnPolicy string
		want       bool
	}{{model.FQDNPolicyCilium, true}, {model.FQDNPolicyGKE, true}, {model.FQDNPolicyNone, false}, {"", false}} {
		p := observedPlatform(&o)
		p.Target.FQDNPolicy = c.fqdnPolicy
		p.Tenants[1].Egress.Unrestricted = true // waived: nothing to drop
		pr, err := PrometheusRule(p)
		if err != nil {
			t.Fatal(err)
		}
		rs := rules(t, pr)[AlertSandboxPolicyDrops]
		if (len(rs) == 1) != c.want {
			t.Fatalf("fqdn_policy %q: %d %s rules, want %v", c.fqdnPolicy, len(rs), AlertSandboxPolicyDrops, c.want)
		}
		if !c.want {
			continue
		}
		expr, _ := rs[0]["expr"].(string)
		for _, want := range []string{`hubble_drop_total{source=~"agents-team-a", reason=~"POLICY_DENIED|POLICY_DENY"}[5m]`, `"namespace", "$1", "source"`, `> 0`} {
			if !strings.Contains(expr, want) {
				t.Errorf("expr %q does not contain %q", expr, want)
			}
		}
	}
}
