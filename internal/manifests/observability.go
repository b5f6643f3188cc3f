package manifests

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"

	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/manifests/promoperator"
	"github.com/paddock-platform/paddock/internal/model"
)

// KubeStateMetricsPodLabels are the pod labels kube-state-metrics must put on
// kube_pod_labels for the lifetime rules (its
// --metric-labels-allowlist=pods=[...]): every sandbox's pod carries the
// controller's name-hash label, and a warm one the pool's label, which the
// controller takes off when a claim adopts the sandbox. A sandbox pod without
// the pool's label is a session's. (The claim's UID label,
// agents.x-k8s.io/claim-uid, never reaches the pod: the pinned controller
// drops every agents.x-k8s.io/ key of a pod template as reserved, which the
// live test showed.)
var KubeStateMetricsPodLabels = []string{agentsandbox.PodNameHashLabel, sandboxv1beta1.SandboxWarmPoolLabel}

// PrometheusRuleName names the platform's alert rules, in the release namespace.
const PrometheusRuleName = "paddock-alerts"

// Names of the rules in PrometheusRuleName, for tests and runbooks.
const (
	RecordClaimedSeconds      = "paddock:sandbox_claimed_seconds"
	AlertLifetimeExceeded     = "PaddockSandboxLifetimeExceeded"
	AlertClaimsHittingMaxTTL  = "PaddockClaimsHittingMaxTTL"
	AlertQuotaSaturated       = "PaddockTenantQuotaSaturated"
	AlertWarmPoolEmpty        = "PaddockWarmPoolEmpty"
	AlertWarmPoolColdStarts   = "PaddockWarmPoolColdStarts"
	AlertControllerDown       = "PaddockAgentSandboxControllerDown"
	AlertSandboxPolicyDrops   = "PaddockSandboxPolicyDrops"
	policyDropWindow          = 5 * time.Minute
	claimTTLNearFraction      = 0.9 // a session ended this close to max_ttl ran into it
	claimExpiryWindow         = time.Hour
	claimedSubqueryMinStep    = time.Minute
	claimedSubqueryMaxSamples = 240
)

// ObservabilityObjects are the opt-in ServiceMonitor and PrometheusRule, in
// the release namespace; none without an observability block.
func ObservabilityObjects(p *model.Platform) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	if p.WantsServiceMonitor() {
		sm, err := ServiceMonitor(p)
		if err != nil {
			return nil, err
		}
		out = append(out, sm)
	}
	if p.WantsPrometheusRule() {
		pr, err := PrometheusRule(p)
		if err != nil {
			return nil, err
		}
		out = append(out, pr)
	}
	return out, nil
}

func monitoringObject(p *model.Platform, kind, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(promoperator.GroupVersion.String())
	u.SetKind(kind)
	u.SetName(name)
	u.SetNamespace(agentsandbox.Namespace)
	// The spec's labels select the objects for the operator; Paddock's own
	// ownership labels win over them.
	u.SetLabels(merge(p.Observability.Labels, p.Labels("")))
	return u
}

// ServiceMonitorHonorLabels keeps the labels the controller exports over the
// operator's target labels. Its metrics carry the sandbox's namespace as
// "namespace"; without it the operator's namespace target label (the
// Service's, agent-sandbox-system) wins and the tenant's moves to
// exported_namespace, so no warm pool rule, which selects tenants by
// namespace, would ever match. up, which no exporter writes, keeps the
// target's labels either way.
const ServiceMonitorHonorLabels = true

// ServiceMonitor scrapes the controller's metrics Service of the pinned
// release (agent_sandboxes, agent_sandbox_claim_creation_total, the latency
// histograms, controller-runtime's own).
func ServiceMonitor(p *model.Platform) (*unstructured.Unstructured, error) {
	ep, err := agentsandbox.Metrics(p.AgentSandbox.Version)
	if err != nil {
		return nil, err
	}
	matchLabels := map[string]any{}
	for k, v := range ep.Labels {
		matchLabels[k] = v
	}
	return monitoringObject(p, promoperator.ServiceMonitorKind, ep.Service, map[string]any{
		"selector":          map[string]any{"matchLabels": matchLabels},
		"namespaceSelector": map[string]any{"matchNames": []any{agentsandbox.Namespace}},
		"endpoints":         []any{map[string]any{"port": ep.PortName, "path": "/metrics", "interval": "30s", "honorLabels": ServiceMonitorHonorLabels}},
	}), nil
}

// PrometheusRule holds the Agent Sandbox guide's alerts, with the spec's
// thresholds. Which exporter each rule reads:
//   - the controller (via the ServiceMonitor): warm pools and controller down;
//   - kube-state-metrics: quota saturation (kube_resourcequota) and the claimed
//     sandboxes' lifetime (kube_pod_labels of KubeStateMetricsPodLabels): the
//     controller exports no age of a sandbox or claim, nor a count of expiries;
//   - Cilium's Hubble (hubble_drop_total with drop:sourceContext=namespace):
//     policy drops from a tenant's pods.
func PrometheusRule(p *model.Platform) (*unstructured.Unstructured, error) {
	ep, err := agentsandbox.Metrics(p.AgentSandbox.Version)
	if err != nil {
		return nil, err
	}
	o := p.Observability
	common := map[string]any{"platform": p.Name}
	var groups []any
	if rules := lifetimeRules(p, o, common); len(rules) > 0 {
		groups = append(groups, ruleGroup("paddock.sandbox-lifetime", rules))
	}
	if all := tenantNamespaces(p, func(model.Tenant) bool { return true }); all != "" {
		groups = append(groups, ruleGroup("paddock.tenant-quotas", []any{alert(AlertQuotaSaturated,
			fmt.Sprintf(`max by (namespace, resourcequota, resource) (kube_resourcequota{namespace=~"%[1]s", type="used"} / ignoring (type) (kube_resourcequota{namespace=~"%[1]s", type="hard"} > 0)) >= %[2]s`,
				all, promNumber(o.QuotaSaturation)),
			o.QuotaSaturatedFor, "warning", common,
			"Tenant quota {{ $labels.resource }} in {{ $labels.namespace }} is {{ $value | humanizePercentage }} used",
			fmt.Sprintf("ResourceQuota {{ $labels.resourcequota }} in {{ $labels.namespace }} is at or above %s of its %s cap. A sandbox stuck in a loop is the usual cause: check the tenant's claims before raising the quota.", percent(o.QuotaSaturation), "{{ $labels.resource }}"),
		)}))
	}
	if pools := tenantNamespaces(p, hasWarmPool); pools != "" {
		sel := fmt.Sprintf(`namespace=~"%s", owned_by=%q`, pools, extv1beta1.SandboxWarmPoolKind)
		groups = append(groups, ruleGroup("paddock.warm-pools", []any{
			alert(AlertWarmPoolEmpty,
				fmt.Sprintf(`sum by (namespace, sandbox_template) (agent_sandboxes{%[1]s}) unless sum by (namespace, sandbox_template) (agent_sandboxes{%[1]s, ready_condition="true"})`, sel),
				o.PoolEmptyFor, "warning", common,
				"Warm pool of template {{ $labels.sandbox_template }} in {{ $labels.namespace }} has no ready sandbox",
				fmt.Sprintf("For %s the warm pool has held sandboxes but none ready: sessions start cold. Look at the pool's pods (quota, node capacity, image pulls) and the controller's events.", promDuration(o.PoolEmptyFor))),
			alert(AlertWarmPoolColdStarts,
				fmt.Sprintf(`sum by (namespace, warmpool_name) (increase(agent_sandbox_claim_creation_total{namespace=~"%s", launch_type="cold", warmpool_name!=""}[%s])) > 0`, pools, promDuration(o.PoolEmptyFor)),
				0, "warning", common,
				"Claims for warm pool {{ $labels.warmpool_name }} in {{ $labels.namespace }} start cold",
				fmt.Sprintf("Within %s, claims that asked for the warm pool got no warm sandbox: the pool is empty or refills too slowly for the claim rate.", promDuration(o.PoolEmptyFor))),
		}))
	}
	if rule, ok := policyDropRule(p, common); ok {
		groups = append(groups, ruleGroup("paddock.network", []any{rule}))
	}
	groups = append(groups, ruleGroup("paddock.controller", []any{alert(AlertControllerDown,
		fmt.Sprintf(`absent(up{namespace=%q, job=%q} == 1)`, agentsandbox.Namespace, ep.Service),
		o.ControllerDownFor, "critical", common,
		"The Agent Sandbox controller is down",
		fmt.Sprintf("For %s Prometheus has not scraped the controller in %s: no warm pool refills, no claim is bound, no session expires.", promDuration(o.ControllerDownFor), agentsandbox.Namespace)),
	}))
	return monitoringObject(p, promoperator.PrometheusRuleKind, PrometheusRuleName, map[string]any{"groups": groups}), nil
}

// policyDropRule is the seed's "drop spikes from sandbox pods" alert: any
// policy drop of traffic leaving a tenant's namespace, by tenant. It reads
// Hubble's drop counter labelled with the source namespace
// (--hubble-metrics=drop:sourceContext=namespace; the local stack's agent
// exports it so), so only targets whose dataplane is Cilium get it (GKE
// Dataplane V2 is Cilium; a kubeconfig target with fqdn_policy = "cilium").
// A spike is the first sign of an agent reaching for what it should not: it
// fires on the first drop in a window, not on a rate.
func policyDropRule(p *model.Platform, common map[string]any) (map[string]any, bool) {
	all := tenantNamespaces(p, func(t model.Tenant) bool { return !t.Egress.Unrestricted })
	if cilium := p.Target.FQDNPolicy == model.FQDNPolicyCilium || p.Target.FQDNPolicy == model.FQDNPolicyGKE; all == "" || !cilium {
		return nil, false
	}
	return alert(AlertSandboxPolicyDrops,
		fmt.Sprintf(`sum by (namespace) (label_replace(increase(hubble_drop_total{source=~"%s", reason=~"POLICY_DENIED|POLICY_DENY"}[%s]), "namespace", "$1", "source", "(.+)")) > 0`,
			all, promDuration(policyDropWindow)),
		0, "warning", common,
		"Policy drops of traffic from sandboxes in {{ $labels.namespace }}",
		fmt.Sprintf("Within %s the dataplane dropped {{ $value }} packets from pods of {{ $labels.namespace }} that its network policies do not allow: an agent may be reaching for a destination off its allow-list (read the tenant's recent Hubble drop flows, `hubble observe --verdict DROPPED --namespace {{ $labels.namespace }}`).", promDuration(policyDropWindow)),
	), true
}

// lifetimeRules are, per distinct max_ttl, the recording rule of how long
// each claimed sandbox has been claimed and the two alerts over it. Tenants
// sharing a max_ttl share rules, so a thousand tenants are not a thousand
// rules; tenants with max_ttl = "none" have no bound to compare against.
func lifetimeRules(p *model.Platform, o *model.Observability, common map[string]any) []any {
	var ttls []time.Duration
	byTTL := map[time.Duration][]string{}
	for _, t := range p.Tenants {
		ttl := t.Claims.MaxTTL
		if ttl <= 0 {
			continue
		}
		if _, ok := byTTL[ttl]; !ok {
			ttls = append(ttls, ttl)
		}
		byTTL[ttl] = append(byTTL[ttl], t.Namespace)
	}
	var rules []any
	podLabel, poolLabel := ksmLabel(agentsandbox.PodNameHashLabel), ksmLabel(sandboxv1beta1.SandboxWarmPoolLabel)
	for _, ttl := range ttls {
		ns := strings.Join(byTTL[ttl], "|")
		limit := time.Duration(math.Ceil(o.LifetimeFactor * float64(ttl)))
		window := (limit + time.Hour).Round(time.Minute)
		step := max(claimedSubqueryMinStep, (window / claimedSubqueryMaxSamples).Round(time.Minute))
		podSel := fmt.Sprintf(`kube_pod_labels{namespace=~"%s", %s!="", %s=""}`, ns, podLabel, poolLabel)
		claimed := fmt.Sprintf(`%s{namespace=~"%s"}`, RecordClaimedSeconds, ns)
		rules = append(rules,
			// The earliest sample of the pod without the pool's label is when
			// it was claimed (or created, cold); its time in the pool does not count.
			map[string]any{
				"record": RecordClaimedSeconds,
				"expr": fmt.Sprintf(`max by (namespace, pod) ((time() - min_over_time(timestamp(%[1]s)[%[2]s:%[3]s])) and on (namespace, pod) %[1]s)`,
					podSel, promDuration(window), promDuration(step)),
			},
			alert(AlertLifetimeExceeded,
				fmt.Sprintf(`%s > %s`, claimed, promNumber(limit.Seconds())),
				o.LifetimeExceededFor, "warning", common,
				"Sandbox {{ $labels.namespace }}/{{ $labels.pod }} outlived its session maximum",
				fmt.Sprintf("The sandbox has been claimed for {{ $value | humanizeDuration }}, more than %s × max_ttl (%s): its claim did not expire. Check the claim's shutdownTime and the controller.", promNumber(o.LifetimeFactor), promDuration(ttl))),
			alert(AlertClaimsHittingMaxTTL,
				fmt.Sprintf(`count by (namespace) (max_over_time(%[1]s[%[2]s]) >= %[3]s unless on (namespace, pod) %[1]s) >= %[4]d`,
					claimed, promDuration(claimExpiryWindow), promNumber((time.Duration(claimTTLNearFraction*float64(ttl))).Seconds()), o.ClaimExpiriesPerHour),
				0, "warning", common,
				"Sessions in {{ $labels.namespace }} keep running into max_ttl",
				fmt.Sprintf("{{ $value }} sessions ended within the last %s after running into max_ttl (%s): sessions die mid-work. Raise max_ttl or find why sessions run that long.", promDuration(claimExpiryWindow), promDuration(ttl))),
		)
	}
	return rules
}

func ruleGroup(name string, rules []any) map[string]any {
	return map[string]any{"name": name, "rules": rules}
}

func alert(name, expr string, forDur time.Duration, severity string, common map[string]any, summary, description string) map[string]any {
	labels := map[string]any{"severity": severity}
	for k, v := range common {
		labels[k] = v
	}
	r := map[string]any{
		"alert":       name,
		"expr":        expr,
		"labels":      labels,
		"annotations": map[string]any{"summary": summary, "description": description},
	}
	if forDur > 0 {
		r["for"] = promDuration(forDur)
	}
	return r
}

func hasWarmPool(t model.Tenant) bool {
	for _, wp := range t.WarmPools {
		if wp.Replicas > 0 {
			return true
		}
	}
	return false
}

// tenantNamespaces is a regular expression matching the namespaces of the
// tenants keep selects ("" for none). Namespaces are DNS labels, so they need
// no escaping; Prometheus anchors the match.
func tenantNamespaces(p *model.Platform, keep func(model.Tenant) bool) string {
	var ns []string
	for _, t := range p.Tenants {
		if keep(t) {
			ns = append(ns, t.Namespace)
		}
	}
	return strings.Join(ns, "|")
}

var nonLabelChar = regexp.MustCompile(`[^a-zA-Z0-9_]`)

// ksmLabel is the label kube-state-metrics gives a Kubernetes label key on
// kube_pod_labels ("agents.x-k8s.io/warm-pool-sandbox" -> label_agents_x_k8s_io_warm_pool_sandbox).
func ksmLabel(key string) string {
	return "label_" + nonLabelChar.ReplaceAllString(key, "_")
}

// promDuration writes d the way Prometheus reads a duration ("4h", "1h30m",
// "90s" as "1m30s"), to whole seconds.
func promDuration(d time.Duration) string {
	d = d.Round(time.Second)
	if d <= 0 {
		return "0s"
	}
	var b strings.Builder
	for _, u := range []struct {
		unit string
		d    time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}} {
		if n := d / u.d; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.unit)
			d -= n * u.d
		}
	}
	return b.String()
}

func promNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func percent(f float64) string { return promNumber(math.Round(f*1000)/10) + "%" }
