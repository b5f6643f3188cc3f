package drift

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
)

// Sweep rules: objects outside any stack that weaken what Paddock guards,
// judged by what they do, never by how they are named or labelled. IDs are
// stable so reports compare over time; S03 (a network policy Paddock did
// not create) is retired, since S02 now judges every policy by its effect,
// and is never reused.
const (
	RuleAgentBinding      = "S01"
	RuleNetworkOpen       = "S02"
	RuleRuntimeMissing    = "S04"
	RuleDanglingBinding   = "S06"
	RuleGuardrail         = "S07"
	RuleSessionOverdue    = "S08"
	RuleMutatingAdmission = "S09"
)

var ruleTitles = map[string]string{
	RuleAgentBinding:      "binding grants a tenant identity more than the spec does",
	RuleNetworkOpen:       "network policy allows traffic the spec does not",
	RuleRuntimeMissing:    "pod without an allowed runtime class",
	RuleDanglingBinding:   "binding to a tenant identity names a role that does not exist",
	RuleGuardrail:         "guardrail no longer enforced on the tenant as declared",
	RuleSessionOverdue:    "session outlives its lifetime, or nothing ends it",
	RuleMutatingAdmission: "mutating admission can rewrite what the platform guards",
}

// RuleTitle is the short text of a sweep rule.
func RuleTitle(id string) string { return ruleTitles[id] }

// Sweep reads the cluster (lists only) for objects that are in no stack, or
// were changed in fields the stack does not hold, and weaken platform p.
// What the spec allows is computed from the objects Paddock builds for p
// (manifests.Build), never from a list kept by hand:
//
//   - S01 a RoleBinding or ClusterRoleBinding whose subjects include a
//     tenant identity (agent-runtime or agent-orchestrator, by name, as the
//     user system:serviceaccount:<ns>:<name>, or through the groups
//     system:serviceaccounts:<ns>, system:serviceaccounts and
//     system:authenticated) and whose role grants it, in the binding's scope,
//     a permission beyond what Paddock's own bindings grant it there and
//     beyond the API server's default grants to every identity (defaultGrants:
//     discovery, health and issuer URLs, self-subject reviews). No binding is
//     exempt by label or name.
//   - S02 a NetworkPolicy, CiliumNetworkPolicy or GKE FQDNNetworkPolicy in a
//     tenant namespace, or a CiliumClusterwideNetworkPolicy that can select
//     a tenant's pods, that allows traffic — either direction, any pods, any
//     peers and ports, however split across rules — that no declared rule
//     allows for a superset of those pods (the tenant's NetworkPolicies, its
//     FQDN policy, the policies the Agent Sandbox controller derives from its
//     templates, and everything for pods the declared policies leave
//     unisolated when the spec waives default deny). See netpol_effect.go.
//   - S04 a running pod in a tenant namespace whose runtime class is not one
//     the platform declares for it: it runs on the host kernel (or another
//     runtime), outside the sandbox. A pod of a declared class is judged by
//     the handler that class resolves to: one that resolves to another
//     handler, no longer exists, or was created after the pod started (a
//     swap, even one put back since) is reported too.
//   - S06 a binding that includes a tenant identity and names a role that
//     does not exist (and that Paddock does not declare): it grants nothing
//     now, but whoever creates the role grants its rules.
//   - S07 a guardrail Paddock declares (ValidatingAdmissionPolicy and
//     binding) that the live objects no longer enforce on the tenant's
//     namespace as declared: missing, match constraints or resources that
//     no longer cover the declared requests, a namespaceSelector that does
//     not select the live namespace, an objectSelector, exclusions, match
//     conditions, matchPolicy Exact, or no Deny among the binding's actions.
//   - S08 a claim or a sandbox opened without one that outlives its end
//     (shutdownTime, or creation + max_ttl), or that nothing ends in time:
//     admission holds an end only when it is written. See Lifetimes.
//   - S09 a mutating webhook that can rewrite an object Paddock applies, or
//     the pods, sandboxes and claims that run from them, in the namespaces
//     they are in: what it adds is stored, so no comparison with the API
//     server's answer can see it. See sweep_admission.go. An object the
//     spec trusts by kind and name (trust_admission) is not reported:
//     AdmissionTrust says what it reaches, in every report.
//
// dyn reads Cilium's and GKE's policies and the tenants' claims and
// sandboxes; nil, or their CRDs absent, skips them. Objects of the stack itself are compared by the engine
// (engine.Drift); S05 (Orphans) is the labelled objects no stack holds.
func Sweep(ctx context.Context, p *model.Platform, kube kubernetes.Interface, dyn dynamic.Interface) ([]Finding, error) {
	built, nsLabels, err := sweepInputs(ctx, p, kube)
	if err != nil {
		return nil, err
	}
	var out []Finding
	fs, err := sweepBindings(ctx, p, built, kube)
	if err != nil {
		return nil, err
	}
	out = append(out, fs...)
	if fs, err = sweepNetwork(ctx, built, nsLabels, kube, dyn); err != nil {
		return nil, err
	}
	out = append(out, fs...)
	if fs, err = sweepGuardrails(ctx, built, nsLabels, kube); err != nil {
		return nil, err
	}
	out = append(out, fs...)
	trusted := func(kind, name string) bool { return p.TrustOf(kind, name) != nil }
	if fs, err = sweepMutatingAdmission(ctx, built, nsLabels, kube, trusted); err != nil {
		return nil, err
	}
	out = append(out, fs...)
	fs, err = sweepTenants(ctx, p, kube, dyn, time.Now())
	if err != nil {
		return nil, err
	}
	return append(out, fs...), nil
}

// NetworkReach is the network part of the sweep (S02): every policy in a
// tenant namespace, Paddock's own or not, that lets through traffic the
// spec does not. verify's V09 fails a tenant on any of them.
func NetworkReach(ctx context.Context, p *model.Platform, kube kubernetes.Interface, dyn dynamic.Interface) ([]Finding, error) {
	built, nsLabels, err := sweepInputs(ctx, p, kube)
	if err != nil {
		return nil, err
	}
	return sweepNetwork(ctx, built, nsLabels, kube, dyn)
}

// sweepInputs are what every sweep rule judges against: the objects Paddock
// builds for p, and the tenant namespaces' live labels.
func sweepInputs(ctx context.Context, p *model.Platform, kube kubernetes.Interface) (*manifests.Objects, map[string]labels.Set, error) {
	built, err := manifests.Build(p)
	if err != nil {
		return nil, nil, err
	}
	nsLabels, err := tenantNamespaceLabels(ctx, p, kube)
	if err != nil {
		return nil, nil, err
	}
	return built, nsLabels, nil
}

func finding(rule, kind string, meta metav1.ObjectMeta, tenant, reason, fix string) Finding {
	return Finding{Rule: rule, Title: ruleTitles[rule], Kind: kind, Namespace: meta.Namespace, Name: meta.Name, Tenant: tenant, Reason: reason, Fix: fix}
}

// tenantNamespaceLabels are the live labels of the tenants' namespaces (a
// namespace that is not live has none: the engine reports it missing).
func tenantNamespaceLabels(ctx context.Context, p *model.Platform, kube kubernetes.Interface) (map[string]labels.Set, error) {
	want := map[string]bool{}
	for _, t := range p.Tenants {
		want[t.Namespace] = true
	}
	out := map[string]labels.Set{}
	_, err := pages(ctx, func(ctx context.Context, o metav1.ListOptions) ([]corev1.Namespace, string, error) {
		l, err := kube.CoreV1().Namespaces().List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	}, func(ns *corev1.Namespace) bool {
		if want[ns.Name] {
			out[ns.Name] = labels.Set(ns.Labels)
			if out[ns.Name] == nil {
				out[ns.Name] = labels.Set{}
			}
		}
		return false
	})
	if err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	return out, nil
}
