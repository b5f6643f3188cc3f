package verify

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/policy"
	"github.com/paddock-platform/paddock/internal/pools"
)

var (
	claimsGVR          = agentsandbox.SandboxClaims
	warmPoolsGVR       = agentsandbox.SandboxWarmPools
	sandboxesGVR       = agentsandbox.Sandboxes
	networkPoliciesGVR = networkingv1.SchemeGroupVersion.WithResource("networkpolicies")
	ciliumCRDName      = "ciliumnetworkpolicies.cilium.io"
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
	{"V08", "claims are held to their lifecycle: without TTL, without shutdownTime or beyond max_ttl rejected (server-side dry-run), and no live claim outlives max_ttl", checkClaimLifecycleEnforced},
	{"V09", "network policies as the spec declares them, whole, and none in a tenant namespace opens more than the spec", checkNetworkPolicies},
	{"V10", "network policy enforced, with traffic judged against a policy-free control: each tenant's egress and ingress, pod to pod within it and between tenants refused; names resolve through the pod's resolv.conf; an FQDN allow-list lets a listed name through and refuses an unlisted host and its lookup", checkNetworkPolicyEnforced},
	{"V11", "agent sandbox controller healthy", checkController},
	{"V12", "a running sandbox holds its template's controls (a kernel of its own, not the node's; UID, read-only root, no token, no capabilities)", checkSandboxRuntime},
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
		_, err := v.kube.CoreV1().Pods(t.Namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
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

// access asks the API server whether a service account may do something. A
// review the authorizer could not finish (status.evaluationError without an
// allow) is an error, never a "no": a broken authorizer must not read as a
// locked-down identity.
func (v *Verifier) access(ctx context.Context, ns, sa, namespace string, a access) (bool, error) {
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + ns + ":" + sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		ResourceAttributes: &authzv1.ResourceAttributes{
			Namespace: namespace, Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.sub,
		},
	}}
	res, err := v.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("SubjectAccessReview of %s: %w", a, err)
	}
	if !res.Status.Allowed && res.Status.EvaluationError != "" {
		return false, fmt.Errorf("SubjectAccessReview of %s did not complete: %s", a, res.Status.EvaluationError)
	}
	return res.Status.Allowed, nil
}

type access struct{ verb, group, resource, sub string }

func (a access) String() string {
	r := a.resource
	if a.sub != "" {
		r += "/" + a.sub
	}
	if a.group != "" {
		r += "." + a.group
	}
	return a.verb + " " + r
}

var (
	allVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	// probedResources are what a compromised sandbox would go for first.
	probedResources = []access{
		{"", "", "pods", ""}, {"", "", "pods", "exec"}, {"", "", "pods", "log"}, {"", "", "secrets", ""},
		{"", "", "configmaps", ""}, {"", "", "serviceaccounts", "token"}, {"", "", "services", ""},
		{"", "", "persistentvolumeclaims", ""}, {"", "", "events", ""},
		resourceAccess(agentsandbox.Sandboxes), resourceAccess(agentsandbox.SandboxClaims),
		resourceAccess(agentsandbox.SandboxTemplates), resourceAccess(agentsandbox.SandboxWarmPools),
		{"", "rbac.authorization.k8s.io", "roles", ""}, {"", "rbac.authorization.k8s.io", "rolebindings", ""},
		{"", "networking.k8s.io", "networkpolicies", ""},
	}
	// clusterWideProbes are asked without a namespace.
	clusterWideProbes = []access{{"list", "", "namespaces", ""}, {"list", "", "nodes", ""}, {"get", "", "secrets", ""}}
)

// namespacedProbes is every verb on every probed resource.
func namespacedProbes() []access {
	var out []access
	for _, r := range probedResources {
		for _, verb := range allVerbs {
			out = append(out, access{verb, r.group, r.resource, r.sub})
		}
	}
	return out
}

func checkAgentRuntimeRBAC(ctx context.Context, v *Verifier) []Result {
	var out []Result
	for _, t := range v.p.Tenants {
		subject := t.Namespace + "/" + model.AgentRuntimeServiceAccount
		var allowed []string
		var reviewErr error
		asked := 0
		ask := func(namespace string, a access, suffix string) {
			if reviewErr != nil {
				return
			}
			ok, err := v.access(ctx, t.Namespace, model.AgentRuntimeServiceAccount, namespace, a)
			if err != nil {
				reviewErr = err
				return
			}
			asked++
			if ok {
				allowed = append(allowed, a.String()+suffix)
			}
		}
		for _, a := range namespacedProbes() {
			ask(t.Namespace, a, "")
		}
		for _, a := range clusterWideProbes {
			ask("", a, " (cluster-wide)")
		}
		switch {
		case len(allowed) > 0:
			out = append(out, fail(subject, "may %s", joinMax(allowed, 4)))
		case reviewErr != nil:
			out = append(out, fail(subject, "could not establish what it may do: %v", reviewErr))
		default:
			out = append(out, pass(subject, "denied all %d probed actions", asked))
		}
	}
	return out
}

// resourceAccess is an access to every verb of r (verb left empty).
func resourceAccess(r schema.GroupVersionResource) access {
	return access{"", r.Group, r.Resource, ""}
}

// orchestratorGrants is exactly what the orchestrator's Role allows: the
// rules of manifests.OrchestratorRules, one entry per verb and resource.
var orchestratorGrants = func() map[string]bool {
	out := map[string]bool{}
	for _, r := range manifests.OrchestratorRules() {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, verb := range r.Verbs {
					out[access{verb, g, res, ""}.String()] = true
				}
			}
		}
	}
	return out
}()

func checkOrchestratorRBAC(ctx context.Context, v *Verifier) []Result {
	var out []Result
	for _, t := range v.p.Tenants {
		if !t.Identity.Orchestrator {
			continue
		}
		subject := t.Namespace + "/" + model.AgentOrchestratorServiceAccount
		var extra, missing []string
		var reviewErr error
		for _, a := range namespacedProbes() {
			ok, err := v.access(ctx, t.Namespace, model.AgentOrchestratorServiceAccount, t.Namespace, a)
			if err != nil {
				reviewErr = err
				break
			}
			want := orchestratorGrants[a.String()]
			switch {
			case ok && !want:
				extra = append(extra, a.String())
			case !ok && want:
				missing = append(missing, a.String())
			}
		}
		// Its rights stop at its own namespace.
		if reviewErr == nil {
			a := access{"create", claimsGVR.Group, claimsGVR.Resource, ""}
			ok, err := v.access(ctx, t.Namespace, model.AgentOrchestratorServiceAccount, "default", a)
			switch {
			case err != nil:
				reviewErr = err
			case ok:
				extra = append(extra, "create sandboxclaims in namespace default")
			}
		}
		switch {
		case len(extra) > 0:
			out = append(out, fail(subject, "may also %s", joinMax(extra, 4)))
		case reviewErr != nil:
			out = append(out, fail(subject, "could not establish what it may do: %v", reviewErr))
		case len(missing) > 0:
			out = append(out, fail(subject, "cannot %s", joinMax(missing, 4)))
		default:
			out = append(out, pass(subject, "exactly create/get/list/watch/delete claims and get/list/watch sandboxes in %s", t.Namespace))
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

// checkWarmPools counts each pool's ready sandboxes itself instead of trusting
// status.readyReplicas, which only the controller writes and which stays as it
// was when the controller dies. A sandbox counts when the pool owns it, it is
// not being deleted, its Ready condition is true and its pod exists and is
// Ready (the pod's status comes from the node, not the controller). A pool
// that holds unclaimed sandboxes built from an older template (pools.Classify)
// fails too, whatever its update strategy: under OnReplenish the result says
// which waiver keeps them.
func checkWarmPools(ctx context.Context, v *Verifier) []Result {
	var out []Result
	var rep *policy.Report // judged only for a pool that keeps stale sandboxes
	// A release whose pools do not report the generation their status
	// describes (v0.5.5) cannot be held to it.
	tracksGeneration := agentsandbox.ReportsPoolGeneration(v.p.AgentSandbox.Version)
	for i := range v.p.Tenants {
		t := &v.p.Tenants[i]
		if len(t.WarmPools) == 0 {
			continue
		}
		sandboxes, sbErr := v.dyn.Resource(sandboxesGVR).Namespace(t.Namespace).List(ctx, metav1.ListOptions{})
		pods, podErr := v.kube.CoreV1().Pods(t.Namespace).List(ctx, metav1.ListOptions{})
		claims, claimErr := v.dyn.Resource(claimsGVR).Namespace(t.Namespace).List(ctx, metav1.ListOptions{})
		for j := range t.WarmPools {
			wp := &t.WarmPools[j]
			subject := t.Namespace + "/" + wp.Name
			u, err := v.dyn.Resource(warmPoolsGVR).Namespace(t.Namespace).Get(ctx, wp.Name, metav1.GetOptions{})
			switch {
			case err != nil:
				out = append(out, fail(subject, "%v", err))
				continue
			case sbErr != nil:
				out = append(out, fail(subject, "listing sandboxes: %v", sbErr))
				continue
			case podErr != nil:
				out = append(out, fail(subject, "listing pods: %v", podErr))
				continue
			case claimErr != nil:
				out = append(out, fail(subject, "listing claims: %v", claimErr))
				continue
			}
			ref, _, _ := unstructured.NestedString(u.Object, "spec", "sandboxTemplateRef", "name")
			tpl, err := v.dyn.Resource(agentsandbox.SandboxTemplates).Namespace(t.Namespace).Get(ctx, ref, metav1.GetOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				out = append(out, fail(subject, "reading its template %q: %v", ref, err))
				continue
			}
			if err != nil {
				tpl = nil // judged without: V09 reports the missing template
			}
			fresh := pools.Classify(u, tpl, sandboxes.Items, claims.Items, pods.Items)
			var waiver *model.Waiver
			if fresh.Stale > 0 && fresh.UpdateStrategy != model.UpdateRecreate {
				if rep == nil {
					rep = policy.Check(v.p, time.Now())
				}
				waiver = policy.StaleSandboxWaiver(rep, t, wp)
			}
			out = append(out, warmPoolResult(subject, *wp, u, sandboxes.Items, pods.Items, &fresh, waiver, tracksGeneration))
		}
	}
	return out
}

// warmPoolResult judges one pool from its object, the namespace's sandboxes
// and its pods, and fresh, its sandboxes judged against its template;
// waiver is the one that lets it keep stale sandboxes, if any. The pool's
// status must be of its current generation when the release reports one
// (tracksGeneration).
func warmPoolResult(subject string, wp model.WarmPool, pool *unstructured.Unstructured, sandboxes []unstructured.Unstructured, pods []corev1.Pod, fresh *pools.Pool, waiver *model.Waiver, tracksGeneration bool) Result {
	if replicas, found, _ := unstructured.NestedInt64(pool.Object, "spec", "replicas"); found && int32(replicas) != wp.Replicas {
		return fail(subject, "spec.replicas is %d, the spec says %d", replicas, wp.Replicas)
	}
	observed, _, _ := unstructured.NestedInt64(pool.Object, "status", "observedGeneration")
	if tracksGeneration && observed < pool.GetGeneration() {
		return fail(subject, "the controller has not observed the pool's generation %d (status is of generation %d)", pool.GetGeneration(), observed)
	}
	if fresh != nil && fresh.Stale > 0 {
		first := ""
		for _, s := range fresh.Sandboxes {
			if s.State == pools.Stale {
				first = s.Why
				break
			}
		}
		why := fmt.Sprintf("update strategy %s: the controller has not replaced them", fresh.UpdateStrategy)
		if fresh.UpdateStrategy != model.UpdateRecreate {
			why = fmt.Sprintf("update strategy %s keeps them until claims take them", fresh.UpdateStrategy)
			if waiver != nil {
				why += " (waived: " + waiver.Reason + ")"
			}
		}
		return fail(subject, "%d unclaimed sandbox(es) built from an older template: %s (%s); %s",
			fresh.Stale, strings.Join(fresh.StaleNames(), ", "), first, why)
	}
	podReady := map[string]bool{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				podReady[p.Name] = true
			}
		}
	}
	owned, ready := 0, 0
	for i := range sandboxes {
		sb := &sandboxes[i]
		if sb.GetDeletionTimestamp() != nil || !ownedBy(sb, "SandboxWarmPool", pool.GetName(), pool.GetUID()) {
			continue
		}
		owned++
		podName := sb.GetName()
		if n := sb.GetAnnotations()[sandboxPodNameAnnotation]; n != "" {
			podName = n
		}
		if pools.ConditionTrue(sb, "Ready") && podReady[podName] {
			ready++
		}
	}
	unjudged := ""
	if fresh != nil && fresh.Problem != "" {
		unjudged = "; not judged against the template: " + fresh.Problem
	}
	reported, _, _ := unstructured.NestedInt64(pool.Object, "status", "readyReplicas")
	if int32(ready) >= wp.Replicas {
		current := ""
		if fresh != nil && fresh.Problem == "" {
			current = ", all of the current template"
		}
		return pass(subject, "%d/%d sandboxes ready with a ready pod%s%s", ready, wp.Replicas, current, unjudged)
	}
	detail := ""
	if reported != int64(ready) {
		detail = fmt.Sprintf(" (its status says %d: the controller has not caught up)", reported)
	}
	return fail(subject, "%d/%d sandboxes ready with a ready pod, %d owned by the pool%s%s", ready, wp.Replicas, owned, detail, unjudged)
}

// sandboxPodNameAnnotation names the pod of a sandbox whose pod is not
// called after it (Agent Sandbox's agents.x-k8s.io/pod-name).
const sandboxPodNameAnnotation = "agents.x-k8s.io/pod-name"

func ownedBy(u *unstructured.Unstructured, kind, name string, uid types.UID) bool {
	for _, o := range u.GetOwnerReferences() {
		if o.Kind == kind && o.Name == name && (uid == "" || o.UID == uid) {
			return true
		}
	}
	return false
}

// claimsGuardrail is the admission policy that holds a tenant's claims to
// their lifecycle: a TTL, shutdown Delete and a shutdownTime within max_ttl.
func claimsGuardrail(p *model.Platform, t model.Tenant) (manifests.Guardrail, bool) {
	name := manifests.GuardrailName(p, t, "claims")
	for _, g := range manifests.Guardrails(p, t) {
		if g.Policy.Name == name {
			return g, true
		}
	}
	return manifests.Guardrail{}, false
}

// probeClaim is a claim the tenant's guardrail admits: the first warm pool,
// the tenant's TTL (capped by its maximum), shutdown Delete and, unless
// max_ttl is none, a shutdownTime half of max_ttl after now. The API server
// measures from its own clock; the other half is room for this machine's
// running ahead of it.
func probeClaim(t model.Tenant, name string, now time.Time) *unstructured.Unstructured {
	ttl := int64(t.Claims.TTL.Seconds())
	if ttl <= 0 {
		ttl = 600
	}
	if max := int64(t.Claims.MaxTTL.Seconds()); max > 0 && ttl > max {
		ttl = max
	}
	lifecycle := map[string]any{"ttlSecondsAfterFinished": ttl, "shutdownPolicy": "Delete"}
	if t.Claims.MaxTTL > 0 {
		lifecycle["shutdownTime"] = now.Add(t.Claims.MaxTTL / 2).UTC().Format(time.RFC3339)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": claimsGVR.GroupVersion().String(),
		"kind":       "SandboxClaim",
		"metadata":   map[string]any{"name": name, "namespace": t.Namespace},
		"spec": map[string]any{
			"warmPoolRef": map[string]any{"name": t.WarmPools[0].Name},
			"lifecycle":   lifecycle,
		},
	}}
}

// beyondMaxTTLMargin is how far past max_ttl the probe that must be refused
// sets its shutdownTime: room for this machine's clock running behind the
// API server's.
const beyondMaxTTLMargin = time.Hour

// claimProbe is a claim that breaks one rule of the claims guardrail: the
// valid probe with its lifecycle changed.
type claimProbe struct {
	name   string
	what   string // how it breaks the rule, as the report says it
	want   string // the message of the rule that must refuse it
	change func(lifecycle map[string]any)
}

// claimProbes break, one rule each, the rules of the tenant's guardrail
// that bound a session: the TTL after it finishes and, unless max_ttl is
// none, its shutdownTime.
func claimProbes(t model.Tenant, now time.Time) []claimProbe {
	msg := manifests.ClaimsGuardrailMessages(t)
	probes := []claimProbe{{
		name: "paddock-verify-no-ttl", what: "without lifecycle TTL (spec.lifecycle.ttlSecondsAfterFinished)", want: msg.TTLRequired,
		change: func(l map[string]any) { delete(l, "ttlSecondsAfterFinished") },
	}}
	if t.Claims.MaxTTL <= 0 {
		return probes
	}
	beyond := now.Add(t.Claims.MaxTTL + beyondMaxTTLMargin).UTC().Format(time.RFC3339)
	return append(probes,
		claimProbe{
			name: "paddock-verify-no-shutdown-time", what: "without spec.lifecycle.shutdownTime", want: msg.ShutdownTimeRequired,
			change: func(l map[string]any) { delete(l, "shutdownTime") },
		},
		claimProbe{
			name: "paddock-verify-beyond-max-ttl", what: fmt.Sprintf("with spec.lifecycle.shutdownTime %s past max_ttl (%s)", beyondMaxTTLMargin, t.Claims.MaxTTL),
			want:   msg.ShutdownTimeMax,
			change: func(l map[string]any) { l["shutdownTime"] = beyond },
		},
	)
}

// checkClaimLifecycleEnforced dry-runs a claim the guardrail admits and, for
// each rule that bounds a session, the same claim breaking that rule only
// (no TTL; no shutdownTime; a shutdownTime beyond max_ttl). The first must
// be accepted, and each other refused by the tenant's claims policy with
// that rule's message: a refusal from anywhere else (RBAC, another policy,
// the schema), by another rule, or a policy that refuses every claim proves
// nothing about the rule.
func checkClaimLifecycleEnforced(ctx context.Context, v *Verifier) []Result {
	var out []Result
	for _, t := range v.p.Tenants {
		if len(t.WarmPools) == 0 {
			continue
		}
		g, ok := claimsGuardrail(v.p, t)
		if !ok {
			out = append(out, fail(t.Namespace, "the spec builds no claims guardrail for this tenant"))
			continue
		}
		claims := v.dyn.Resource(claimsGVR).Namespace(t.Namespace)
		dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
		now := time.Now()
		if _, err := claims.Create(ctx, probeClaim(t, "paddock-verify-valid", now), dry); err != nil {
			out = append(out, fail(t.Namespace, "a valid claim (TTL, shutdown Delete and a shutdownTime within max_ttl) is refused too, so the lifecycle rules cannot be told apart: %s", shortErr(err)))
			continue
		}
		var problems, refused []string
		for _, probe := range claimProbes(t, now) {
			claim := probeClaim(t, probe.name, now)
			lifecycle, _, _ := unstructured.NestedMap(claim.Object, "spec", "lifecycle")
			probe.change(lifecycle)
			if err := unstructured.SetNestedMap(claim.Object, lifecycle, "spec", "lifecycle"); err != nil {
				problems = append(problems, err.Error())
				continue
			}
			_, err := claims.Create(ctx, claim, dry)
			msg, byPolicy := deniedByPolicy(err, g)
			switch {
			case err == nil:
				problems = append(problems, fmt.Sprintf("a claim %s was accepted", probe.what))
			case !byPolicy:
				problems = append(problems, fmt.Sprintf("a claim %s was refused, but not by the claims guardrail %s: %s", probe.what, g.Policy.Name, shortErr(err)))
			case msg != probe.want:
				problems = append(problems, fmt.Sprintf("a claim %s was refused by another rule of %s (%q), so its own is unproven", probe.what, g.Policy.Name, msg))
			default:
				refused = append(refused, probe.what)
			}
		}
		// Admission holds new claims only: a claim made before the guardrail, or
		// while someone had it switched off, runs on unbounded.
		if unbounded, err := claimsBeyondMaxTTL(ctx, v, t); err != nil {
			problems = append(problems, fmt.Sprintf("listing the live claims to check their shutdownTime: %s", shortErr(err)))
		} else if len(unbounded) > 0 {
			problems = append(problems, fmt.Sprintf("%d live claim(s) outlive max_ttl (%s), admitted before the guardrail held: %s", len(unbounded), t.Claims.MaxTTL, strings.Join(unbounded, "; ")))
		}
		switch {
		case len(problems) > 0:
			out = append(out, fail(t.Namespace, "%s", strings.Join(problems, "; ")))
		case t.Claims.MaxTTL <= 0:
			out = append(out, pass(t.Namespace, "refused by %s: a claim %s; max_ttl is none, so no shutdownTime is required and sessions have no maximum lifetime", g.Policy.Name, strings.Join(refused, ", ")))
		default:
			out = append(out, pass(t.Namespace, "refused by %s, each by its own rule: a claim %s; admitted with a shutdownTime within max_ttl", g.Policy.Name, strings.Join(refused, ", a claim ")))
		}
	}
	return out
}

// claimsBeyondMaxTTL lists the tenant's live claims without a shutdownTime, or
// with one later than max_ttl after their creation ("name: why"), sorted by
// name. With max_ttl none there is no maximum to outlive.
func claimsBeyondMaxTTL(ctx context.Context, v *Verifier, t model.Tenant) ([]string, error) {
	if t.Claims.MaxTTL <= 0 {
		return nil, nil
	}
	list, err := v.dyn.Resource(claimsGVR).Namespace(t.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range list.Items {
		if c.GetDeletionTimestamp() != nil {
			continue
		}
		st, ok, _ := unstructured.NestedString(c.Object, "spec", "lifecycle", "shutdownTime")
		if !ok || st == "" {
			out = append(out, c.GetName()+": no spec.lifecycle.shutdownTime")
			continue
		}
		at, err := time.Parse(time.RFC3339, st)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: shutdownTime %q is not RFC 3339", c.GetName(), st))
			continue
		}
		if limit := c.GetCreationTimestamp().Add(t.Claims.MaxTTL); at.After(limit) {
			out = append(out, fmt.Sprintf("%s: shutdownTime %s is %s past max_ttl", c.GetName(), st, at.Sub(limit).Round(time.Second)))
		}
	}
	sort.Strings(out)
	return out, nil
}

// deniedByPolicy reports whether err is the API server refusing a request
// because guardrail g's policy, through its binding, denied it with one of
// the validation messages the spec gives it; it returns that message.
func deniedByPolicy(err error, g manifests.Guardrail) (string, bool) {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return "", false
	}
	s := st.Status()
	if s.Reason != metav1.StatusReasonInvalid && s.Reason != metav1.StatusReasonForbidden {
		return "", false
	}
	prefix := fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: ", g.Policy.Name, g.Binding.Name)
	var said []string
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			said = append(said, c.Message)
		}
	}
	said = append(said, s.Message)
	for _, m := range said {
		i := strings.Index(m, prefix)
		if i < 0 {
			continue
		}
		msg := m[i+len(prefix):]
		for _, val := range g.Policy.Spec.Validations {
			if msg == val.Message {
				return msg, true
			}
		}
	}
	return "", false
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
