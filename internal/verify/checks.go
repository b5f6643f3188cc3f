package verify

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
)

var (
	claimsGVR          = agentsandbox.SandboxClaims
	warmPoolsGVR       = agentsandbox.SandboxWarmPools
	sandboxesGVR       = agentsandbox.Sandboxes
	networkPoliciesGVR = networkingv1.SchemeGroupVersion.WithResource("networkpolicies")
	ciliumCRDName      = manifests.CiliumNetworkPolicies.GroupResource().String()
)

// checks run in this order; IDs are stable so reports can be compared over time.
var checks = []check{
	{"V01", "tenant namespace enforces its Pod Security level (restricted unless the spec says baseline)", checkNamespaces},
	{"V02", "privileged pod is rejected (server-side dry-run)", checkPrivilegedPodRejected},
	{"V03", "agent-runtime identity can do nothing", checkAgentRuntimeRBAC},
	{"V04", "orchestrator identity has only its verbs", checkOrchestratorRBAC},
	{"V05", "runtime classes match the spec", checkRuntimeClasses},
	{"V06", "sandbox pods run on sandbox nodes", checkSandboxPlacement},
	{"V07", "warm pools at replicas (ready sandboxes counted)", checkWarmPools},
	{"V08", "sessions are held to their lifecycle: claims without TTL, without shutdownTime or beyond max_ttl and a Sandbox opened without a claim or shutdownTime rejected (server-side dry-run), and no live claim or sandbox outlives its end", checkClaimLifecycleEnforced},
	{"V09", "network policies as the spec declares them, whole, and none in a tenant namespace opens more than the spec", checkNetworkPolicies},
	{"V10", "network policy enforced, with traffic judged against a policy-free control: each tenant's egress and ingress, pod to pod within it and between tenants refused; names resolve through the pod's resolv.conf; an FQDN allow-list lets a listed name through and refuses an unlisted host and its lookup", checkNetworkPolicyEnforced},
	{"V11", "agent sandbox controller healthy", checkController},
	{"V12", "every ready warm sandbox holds its template's controls (a kernel of its own, not the node's; UID, read-only root, no token, no capabilities)", checkSandboxRuntime},
	{"V13", "API audit records who changed sandboxes, claims and the fence (a dry-run claim as the orchestrator, found in the API server's audit log)", checkAuditTrail},
	{"V14", "nothing outside the stack weakens the platform (the drift sweep: bindings, pods' runtime handlers, dangling bindings, guardrails as enforced, session lifetimes, mutating admission; network policies are V09's)", checkSweep},
	{"V15", "every object of the stack is, whole, what Paddock applies (drift's comparison, every kind)", checkStackWhole},
	{"V16", "each egress gateway is its tenant's route out and the only holder of its keys, from inside a ready sandbox: an unlisted host and an IP literal refused by the gateway, each listed destination answered through it, the direct route to it refused, no key in any process environment or the pod's Secret references", checkEgressGateway},
}

func checkNamespaces(ctx context.Context, v *Verifier) []Result {
	var out []Result
	for _, t := range v.p.Tenants {
		ns, err := v.kube.CoreV1().Namespaces().Get(ctx, t.Namespace, metav1.GetOptions{})
		if err != nil {
			out = append(out, fail(t.Namespace, "namespace: %v", err))
			continue
		}
		var missing []string
		labels := manifests.PSSLabels(t.PodSecurity)
		for k, want := range labels {
			if !strings.HasSuffix(k, "-version") && ns.Labels[k] != want {
				missing = append(missing, fmt.Sprintf("%s=%q (want %q)", k, ns.Labels[k], want))
			}
		}
		if len(missing) > 0 {
			out = append(out, fail(t.Namespace, "labels: %s", joinMax(missing, 3)))
		} else {
			out = append(out, pass(t.Namespace, "enforce is %s, audit and warn are restricted", labels["pod-security.kubernetes.io/enforce"]))
		}
	}
	return out
}

func checkPrivilegedPodRejected(ctx context.Context, v *Verifier) []Result {
	var out []Result
	yes := true
	for _, t := range v.p.Tenants {
		// The probe carries one of the platform's runtime classes, so the
		// runtime-class guardrail admits it and only Pod Security can refuse it.
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "paddock-verify-privileged", Namespace: t.Namespace},
			Spec: corev1.PodSpec{
				RuntimeClassName: probeRuntimeClass(v.p, t),
				Containers: []corev1.Container{{
					Name: "probe", Image: "registry.k8s.io/pause:3.10",
					SecurityContext: &corev1.SecurityContext{Privileged: &yes},
				}},
			},
		}
		err := untilAdmissionSettles(ctx, v, func() (error, bool) {
			_, err := v.kube.CoreV1().Pods(t.Namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err, apierrors.IsForbidden(err) && strings.Contains(err.Error(), "PodSecurity")
		})
		switch {
		case err == nil:
			out = append(out, fail(t.Namespace, "the API server accepted a privileged pod"))
		case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "PodSecurity"):
			out = append(out, pass(t.Namespace, "rejected by Pod Security admission"))
		case apierrors.IsNotFound(err):
			out = append(out, fail(t.Namespace, "namespace missing"))
		default:
			out = append(out, fail(t.Namespace, "rejected, but not by Pod Security: %v", err))
		}
	}
	return out
}

// checkRuntimeClasses compares each live RuntimeClass with the one the model
// builds (the object `up` applies): handler, scheduling and overhead. A class
// the target provides itself (GKE's gvisor) must carry at least the model's
// scheduling; Paddock does not own the rest of it.
func checkRuntimeClasses(ctx context.Context, v *Verifier) []Result {
	var out []Result
	for _, rc := range v.p.RuntimeClasses {
		got, err := v.kube.NodeV1().RuntimeClasses().Get(ctx, rc.Name, metav1.GetOptions{})
		if err != nil {
			out = append(out, fail(rc.Name, "%v", err))
			continue
		}
		if diffs := runtimeClassDiffs(manifests.RuntimeClass(v.p, rc), got, manifests.ManagesRuntimeClass(v.p, rc)); len(diffs) > 0 {
			out = append(out, fail(rc.Name, "differs from the spec: %s", joinMax(diffs, 3)))
			continue
		}
		sel := map[string]string{}
		if got.Scheduling != nil {
			sel = got.Scheduling.NodeSelector
		}
		nodes, err := v.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sel).String()})
		switch {
		case err != nil:
			out = append(out, fail(rc.Name, "listing nodes: %v", err))
		case len(sel) > 0 && len(nodes.Items) == 0:
			out = append(out, fail(rc.Name, "no node matches its nodeSelector %v", sel))
		default:
			out = append(out, pass(rc.Name, "handler %s, scheduling as the spec, %d node(s) match it", got.Handler, len(nodes.Items)))
		}
	}
	return out
}

// runtimeClassDiffs lists how got differs from want. exact: got must equal
// want; otherwise want's selector, tolerations and overhead must be in got.
func runtimeClassDiffs(want, got *nodev1.RuntimeClass, exact bool) []string {
	var diffs []string
	if got.Handler != want.Handler {
		diffs = append(diffs, fmt.Sprintf("handler %q, want %q", got.Handler, want.Handler))
	}
	var wantSel, gotSel map[string]string
	var wantTol, gotTol []corev1.Toleration
	if want.Scheduling != nil {
		wantSel, wantTol = want.Scheduling.NodeSelector, want.Scheduling.Tolerations
	}
	if got.Scheduling != nil {
		gotSel, gotTol = got.Scheduling.NodeSelector, got.Scheduling.Tolerations
	}
	for _, k := range slices.Sorted(maps.Keys(wantSel)) {
		if g, ok := gotSel[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("nodeSelector lacks %s=%s", k, wantSel[k]))
		} else if g != wantSel[k] {
			diffs = append(diffs, fmt.Sprintf("nodeSelector %s=%s, want %s", k, g, wantSel[k]))
		}
	}
	if exact {
		for _, k := range slices.Sorted(maps.Keys(gotSel)) {
			if _, ok := wantSel[k]; !ok {
				diffs = append(diffs, fmt.Sprintf("nodeSelector has %s=%s, not in the spec", k, gotSel[k]))
			}
		}
	}
	have := map[string]bool{}
	for _, t := range gotTol {
		have[tolerationKey(t)] = true
	}
	need := map[string]bool{}
	for _, t := range wantTol {
		need[tolerationKey(t)] = true
		if !have[tolerationKey(t)] {
			diffs = append(diffs, "toleration "+tolerationKey(t)+" missing")
		}
	}
	if exact {
		for _, t := range gotTol {
			if !need[tolerationKey(t)] {
				diffs = append(diffs, "toleration "+tolerationKey(t)+" not in the spec")
			}
		}
	}
	var wantFixed, gotFixed corev1.ResourceList
	if want.Overhead != nil {
		wantFixed = want.Overhead.PodFixed
	}
	if got.Overhead != nil {
		gotFixed = got.Overhead.PodFixed
	}
	for name, q := range wantFixed {
		if g, ok := gotFixed[name]; !ok || g.Cmp(q) != 0 {
			diffs = append(diffs, fmt.Sprintf("overhead %s %s, want %s", name, g.String(), q.String()))
		}
	}
	if exact {
		for name, g := range gotFixed {
			if _, ok := wantFixed[name]; !ok {
				diffs = append(diffs, fmt.Sprintf("overhead %s %s, not in the spec", name, g.String()))
			}
		}
	}
	return diffs
}

// tolerationKey spells a toleration the way the API server means it: an
// empty operator is Equal.
func tolerationKey(t corev1.Toleration) string {
	op := t.Operator
	if op == "" {
		op = corev1.TolerationOpEqual
	}
	s := fmt.Sprintf("%s %s %s:%s", t.Key, op, t.Value, t.Effect)
	if t.TolerationSeconds != nil {
		s += fmt.Sprintf(" for %ds", *t.TolerationSeconds)
	}
	return s
}

// checkSandboxPlacement fails a tenant pod without a runtime class, with one
// the platform does not declare, or on a node that lacks its class's labels.
func checkSandboxPlacement(ctx context.Context, v *Verifier) []Result {
	classes := map[string]model.RuntimeClass{}
	for _, rc := range v.p.RuntimeClasses {
		classes[rc.Name] = rc
	}
	var out []Result
	for _, t := range v.p.Tenants {
		pods, err := v.kube.CoreV1().Pods(t.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			out = append(out, fail(t.Namespace, "listing pods: %v", err))
			continue
		}
		var bad []string
		placed := 0
		for _, p := range pods.Items {
			if p.Spec.RuntimeClassName == nil || *p.Spec.RuntimeClassName == "" {
				bad = append(bad, p.Name+" has no runtime class")
				continue
			}
			rc, known := classes[*p.Spec.RuntimeClassName]
			if !known {
				bad = append(bad, fmt.Sprintf("%s runs runtime class %q, which the spec does not declare", p.Name, *p.Spec.RuntimeClassName))
				continue
			}
			if p.Spec.NodeName == "" {
				continue // not scheduled yet
			}
			node, err := v.kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s on %s: %v", p.Name, p.Spec.NodeName, err))
				continue
			}
			for _, k := range slices.Sorted(maps.Keys(rc.NodeSelector)) {
				if node.Labels[k] != rc.NodeSelector[k] {
					bad = append(bad, fmt.Sprintf("%s on %s, which lacks %s=%s", p.Name, node.Name, k, rc.NodeSelector[k]))
				}
			}
			placed++
		}
		switch {
		case len(bad) > 0:
			out = append(out, fail(t.Namespace, "%s", joinMax(bad, 3)))
		case placed == 0:
			out = append(out, notVerifiable(t.Namespace, "no scheduled sandbox pod to inspect"))
		default:
			out = append(out, pass(t.Namespace, "%d pod(s) on nodes matching their runtime class", placed))
		}
	}
	return out
}

// probeRuntimeClass is a runtime class the tenant's guardrails admit: its
// first template's, else the platform's first.
func probeRuntimeClass(p *model.Platform, t model.Tenant) *string {
	for _, tpl := range t.Templates {
		if tpl.RuntimeClass != "" {
			rc := tpl.RuntimeClass
			return &rc
		}
	}
	if len(p.RuntimeClasses) > 0 {
		rc := p.RuntimeClasses[0].Name
		return &rc
	}
	return nil
}

func checkNetworkPolicies(ctx context.Context, v *Verifier) []Result {
	built, err := manifests.Build(v.p)
	if err != nil {
		return []Result{fail("platform", "building the expected objects: %v", err)}
	}
	// What any policy in a tenant namespace opens beyond the spec, judged by
	// its effect (the sweep's S02), whoever made it.
	reach, err := drift.NetworkReach(ctx, v.p, v.kube, v.dyn)
	if err != nil {
		return []Result{fail("platform", "judging the live policies' reach: %v", err)}
	}
	var out []Result
	for _, t := range v.p.Tenants {
		if t.Egress.Unrestricted {
			out = append(out, fail(t.Namespace, "default-deny waived in the spec: the namespace has no network fence"))
			continue
		}
		pols, err := v.kube.NetworkingV1().NetworkPolicies(t.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			out = append(out, fail(t.Namespace, "%v", err))
			continue
		}
		denyAll := false
		live := map[string]networkingv1.NetworkPolicySpec{}
		for _, p := range pols.Items {
			live[p.Name] = p.Spec
			if len(p.Spec.PodSelector.MatchLabels) == 0 && len(p.Spec.PodSelector.MatchExpressions) == 0 &&
				len(p.Spec.Ingress) == 0 && len(p.Spec.Egress) == 0 && len(p.Spec.PolicyTypes) == 2 {
				denyAll = true
			}
		}
		if !denyAll {
			out = append(out, fail(t.Namespace, "no default-deny (ingress+egress, all pods) policy among %d", len(pols.Items)))
			continue
		}
		// The policies the spec declares, whole: the same comparison
		// `paddock drift` and `up` make (drift.Compare against the policy as
		// the server stores it), so a rule added to one is a failure too.
		var bad []string
		want := 0
		for _, d := range declaredObjects(built, "NetworkPolicy", t.Namespace) {
			want++
			got, err := v.dyn.Resource(networkPoliciesGVR).Namespace(t.Namespace).Get(ctx, d.GetName(), metav1.GetOptions{})
			if err != nil {
				bad = append(bad, "missing "+d.GetName()+" ("+shortErr(err)+")")
				continue
			}
			expected, err := drift.StoredForm(ctx, v.dyn.Resource(networkPoliciesGVR).Namespace(t.Namespace), d, got)
			if err != nil {
				bad = append(bad, d.GetName()+": "+shortErr(err))
				continue
			}
			for _, f := range drift.Fields(drift.Compare(expected, got, drift.Options{}), nil) {
				msg := fmt.Sprintf("%s: %s is %s, the spec says %s", d.GetName(), f.Path, drift.Value(f.Live), drift.Value(f.Declared))
				if by := f.By(); by != "" {
					msg += " (written by " + by + ")"
				}
				bad = append(bad, msg)
			}
		}
		for _, f := range reach {
			if f.Namespace == t.Namespace || f.Tenant == t.Name {
				bad = append(bad, f.Object()+" "+f.Reason)
			}
		}
		if len(bad) > 0 {
			out = append(out, fail(t.Namespace, "%s", joinMax(bad, 3)))
			continue
		}
		out = append(out, pass(t.Namespace, "%d policies incl. default-deny ingress+egress; the spec's %d as declared; none opens more than the spec", len(pols.Items), want))
	}
	return out
}

// declaredObjects are the objects of kind in namespace that Paddock builds.
func declaredObjects(built *manifests.Objects, kind, namespace string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, g := range built.Groups() {
		for _, u := range g.Objects {
			if u.GetKind() == kind && u.GetNamespace() == namespace {
				out = append(out, u)
			}
		}
	}
	return out
}

func checkController(ctx context.Context, v *Verifier) []Result {
	if v.opts.ControllerHealth != nil {
		ok, detail := v.opts.ControllerHealth(ctx)
		if ok {
			return []Result{pass("controller", "%s", detail)}
		}
		return []Result{fail("controller", "%s", detail)}
	}
	d, err := v.kube.AppsV1().Deployments(agentsandbox.Namespace).Get(ctx, agentsandbox.ControllerDeployment, metav1.GetOptions{})
	if err != nil {
		return []Result{fail("controller", "%v", err)}
	}
	if d.Status.AvailableReplicas < 1 {
		return []Result{fail("controller", "deployment %s/%s has no available replica", d.Namespace, d.Name)}
	}
	return []Result{pass("controller", "%d replica(s) available", d.Status.AvailableReplicas)}
}

func shortErr(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i > 0 && len(s)-i < 200 {
		return s[i+2:]
	}
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
