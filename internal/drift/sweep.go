package drift

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"golang.org/x/sync/errgroup"

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

// sweepWorkers bounds the tenants swept at once: each costs three lists
// (its pods, claims and sandboxes), which one after the other kept a
// sweep of 1,000 tenants waiting on the API server for most of a minute.
const sweepWorkers = 16

// sweepTenants judges each tenant's pods (S04) and sandbox lifetimes,
// sweepWorkers tenants at a time; the findings come in the tenants' order,
// as if swept one after the other.
func sweepTenants(ctx context.Context, p *model.Platform, kube kubernetes.Interface, dyn dynamic.Interface, now time.Time) ([]Finding, error) {
	found := make([][]Finding, len(p.Tenants))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(sweepWorkers)
	for i, t := range p.Tenants {
		g.Go(func() error {
			fs, err := sweepPods(gctx, p, t, kube)
			if err != nil {
				return err
			}
			lt, err := Lifetimes(gctx, t, dyn, now)
			if err != nil {
				return err
			}
			found[i] = append(fs, lt...)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var out []Finding
	for _, fs := range found {
		out = append(out, fs...)
	}
	return out, nil
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

func sweepPods(ctx context.Context, p *model.Platform, t model.Tenant, kube kubernetes.Interface) ([]Finding, error) {
	allowed := map[string]bool{}
	declared := map[string]string{} // class → the handler the spec gives it
	for _, rc := range p.RuntimeClasses {
		allowed[rc.Name] = true
		declared[rc.Name] = rc.Handler
	}
	for _, tpl := range t.Templates {
		// A template without a runtime class is a waived PDK-301: its pods may run without one.
		allowed[tpl.RuntimeClass] = true
	}
	names := make([]string, 0, len(allowed))
	for n := range allowed {
		if n != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	list, err := kube.CoreV1().Pods(t.Namespace).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing pods in %s: %w", t.Namespace, err)
	}
	var classes map[string]nodev1.RuntimeClass // read once, when a pod names one
	var out []Finding
	for _, pod := range list.Items {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		rc := ""
		if pod.Spec.RuntimeClassName != nil {
			rc = *pod.Spec.RuntimeClassName
		}
		if !allowed[rc] {
			got := "no runtime class (the host kernel)"
			if rc != "" {
				got = "runtime class " + rc
			}
			out = append(out, finding(RuleRuntimeMissing, "Pod", pod.ObjectMeta, t.Name,
				fmt.Sprintf("runs with %s; tenant %s's pods must run under %s", got, t.Name, strings.Join(names, " or ")),
				fmt.Sprintf("kubectl delete pod -n %s %s, and find what created it outside the platform's templates", pod.Namespace, pod.Name)))
			continue
		}
		want, managed := declared[rc]
		if rc == "" || !managed || want == "" {
			continue
		}
		if classes == nil {
			if classes, err = liveRuntimeClasses(ctx, kube); err != nil {
				return nil, err
			}
		}
		// The kubelet resolves the class to a handler when the pod starts: a
		// class swapped since (or swapped and put back) says nothing of it.
		why := ""
		live, ok := classes[rc]
		switch {
		case !ok:
			why = fmt.Sprintf("its runtime class %s no longer exists, so the handler it was started under cannot be known", rc)
		case live.Handler != want:
			why = fmt.Sprintf("its runtime class %s now resolves to handler %s, not %s as declared: the pod may run on another runtime than the sandbox's", rc, live.Handler, want)
		case live.CreationTimestamp.After(pod.CreationTimestamp.Time):
			why = fmt.Sprintf("it was created (%s) before runtime class %s was last created (%s): the class was replaced under it, so the handler it was started under cannot be known",
				pod.CreationTimestamp.UTC().Format(time.RFC3339), rc, live.CreationTimestamp.UTC().Format(time.RFC3339))
		}
		if why == "" {
			continue
		}
		out = append(out, finding(RuleRuntimeMissing, "Pod", pod.ObjectMeta, t.Name, why,
			fmt.Sprintf("`paddock up` puts runtime class %s back as declared; then kubectl delete pod -n %s %s (a warm pool or claim starts a new one under the declared handler)", rc, pod.Namespace, pod.Name)))
	}
	return out, nil
}

// liveRuntimeClasses are the cluster's RuntimeClasses by name.
func liveRuntimeClasses(ctx context.Context, kube kubernetes.Interface) (map[string]nodev1.RuntimeClass, error) {
	l, err := kube.NodeV1().RuntimeClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing runtime classes: %w", err)
	}
	out := make(map[string]nodev1.RuntimeClass, len(l.Items))
	for _, rc := range l.Items {
		out[rc.Name] = rc
	}
	return out, nil
}
