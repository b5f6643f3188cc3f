package verify

import (
	"context"
	"fmt"
	"strings"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/paddock-platform/paddock/components/agentsandbox"
	"github.com/paddock-platform/paddock/components/objects"
	"github.com/paddock-platform/paddock/model"
)

var (
	claimsGVR     = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxclaims"}
	warmPoolsGVR  = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxwarmpools"}
	ciliumCRDName = "ciliumnetworkpolicies.cilium.io"
)

// checks run in this order; IDs are stable so reports can be compared over time.
var checks = []check{
	{"V01", "tenant namespace enforces its Pod Security level (restricted unless the spec says baseline)", checkNamespaces},
	{"V02", "privileged pod is rejected (server-side dry-run)", checkPrivilegedPodRejected},
	{"V03", "agent-runtime identity can do nothing", checkAgentRuntimeRBAC},
	{"V04", "orchestrator identity has only its verbs", checkOrchestratorRBAC},
	{"V05", "runtime classes exist", checkRuntimeClasses},
	{"V06", "sandbox pods run on sandbox nodes", checkSandboxPlacement},
	{"V07", "warm pools at replicas", checkWarmPools},
	{"V08", "claim without TTL is rejected (server-side dry-run)", checkClaimWithoutTTLRejected},
	{"V09", "network policies present", checkNetworkPoliciesPresent},
	{"V10", "network policy enforced", checkNetworkPolicyEnforced},
	{"V11", "agent sandbox controller healthy", checkController},
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
		labels := objects.PSSLabels(t.PodSecurity)
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
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "paddock-verify-privileged", Namespace: t.Namespace},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "probe", Image: "registry.k8s.io/pause:3.10",
				SecurityContext: &corev1.SecurityContext{Privileged: &yes},
			}}},
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

// access asks the API server whether a service account may do something.
func (v *Verifier) access(ctx context.Context, ns, sa, namespace, verb, group, resource, sub string) (bool, error) {
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + ns + ":" + sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		ResourceAttributes: &authzv1.ResourceAttributes{
			Namespace: namespace, Verb: verb, Group: group, Resource: resource, Subresource: sub,
		},
	}}
	res, err := v.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, err
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
		{"", "agents.x-k8s.io", "sandboxes", ""}, {"", "extensions.agents.x-k8s.io", "sandboxclaims", ""},
		{"", "extensions.agents.x-k8s.io", "sandboxtemplates", ""}, {"", "extensions.agents.x-k8s.io", "sandboxwarmpools", ""},
		{"", "rbac.authorization.k8s.io", "roles", ""}, {"", "rbac.authorization.k8s.io", "rolebindings", ""},
		{"", "networking.k8s.io", "networkpolicies", ""},
	}
)

func checkAgentRuntimeRBAC(ctx context.Context, v *Verifier) []Result {
	var out []Result
	for _, t := range v.p.Tenants {
		var allowed []string
		for _, r := range probedResources {
			for _, verb := range allVerbs {
				a := access{verb, r.group, r.resource, r.sub}
				ok, err := v.access(ctx, t.Namespace, model.AgentRuntimeServiceAccount, t.Namespace, a.verb, a.group, a.resource, a.sub)
				if err != nil {
					return append(out, fail(t.Namespace, "SubjectAccessReview: %v", err))
				}
				if ok {
					allowed = append(allowed, a.String())
				}
			}
		}
		for _, a := range []access{{"list", "", "namespaces", ""}, {"list", "", "nodes", ""}, {"get", "", "secrets", ""}} {
			if ok, _ := v.access(ctx, t.Namespace, model.AgentRuntimeServiceAccount, "", a.verb, a.group, a.resource, a.sub); ok {
				allowed = append(allowed, a.String()+" (cluster-wide)")
			}
		}
		if len(allowed) > 0 {
			out = append(out, fail(t.Namespace+"/"+model.AgentRuntimeServiceAccount, "may %s", joinMax(allowed, 4)))
		} else {
			out = append(out, pass(t.Namespace+"/"+model.AgentRuntimeServiceAccount, "denied all %d probed actions", len(probedResources)*len(allVerbs)+3))
		}
	}
	return out
}

// orchestratorGrants is exactly what the orchestrator's Role allows.
var orchestratorGrants = map[string]bool{
	"create sandboxclaims.extensions.agents.x-k8s.io": true,
	"get sandboxclaims.extensions.agents.x-k8s.io":    true,
	"list sandboxclaims.extensions.agents.x-k8s.io":   true,
	"watch sandboxclaims.extensions.agents.x-k8s.io":  true,
	"delete sandboxclaims.extensions.agents.x-k8s.io": true,
	"get sandboxes.agents.x-k8s.io":                   true,
	"list sandboxes.agents.x-k8s.io":                  true,
	"watch sandboxes.agents.x-k8s.io":                 true,
}

func checkOrchestratorRBAC(ctx context.Context, v *Verifier) []Result {
	var out []Result
	for _, t := range v.p.Tenants {
		if !t.Identity.Orchestrator {
			continue
		}
		subject := t.Namespace + "/" + model.AgentOrchestratorServiceAccount
		var extra, missing []string
		for _, r := range probedResources {
			for _, verb := range allVerbs {
				a := access{verb, r.group, r.resource, r.sub}
				ok, err := v.access(ctx, t.Namespace, model.AgentOrchestratorServiceAccount, t.Namespace, a.verb, a.group, a.resource, a.sub)
				if err != nil {
					return append(out, fail(subject, "SubjectAccessReview: %v", err))
				}
				want := orchestratorGrants[a.String()]
				switch {
				case ok && !want:
					extra = append(extra, a.String())
				case !ok && want:
					missing = append(missing, a.String())
				}
			}
		}
		// Its rights stop at its own namespace.
		if ok, _ := v.access(ctx, t.Namespace, model.AgentOrchestratorServiceAccount, "default", "create", "extensions.agents.x-k8s.io", "sandboxclaims", ""); ok {
			extra = append(extra, "create sandboxclaims in namespace default")
		}
		switch {
		case len(extra) > 0:
			out = append(out, fail(subject, "may also %s", joinMax(extra, 4)))
		case len(missing) > 0:
			out = append(out, fail(subject, "cannot %s", joinMax(missing, 4)))
		default:
			out = append(out, pass(subject, "exactly create/get/list/watch/delete claims and get/list/watch sandboxes in %s", t.Namespace))
		}
	}
	return out
}

func checkRuntimeClasses(ctx context.Context, v *Verifier) []Result {
	var out []Result
	for _, rc := range v.p.RuntimeClasses {
		got, err := v.kube.NodeV1().RuntimeClasses().Get(ctx, rc.Name, metav1.GetOptions{})
		switch {
		case err != nil:
			out = append(out, fail(rc.Name, "%v", err))
		case got.Handler != rc.Handler:
			out = append(out, fail(rc.Name, "handler %q, want %q", got.Handler, rc.Handler))
		default:
			sel := map[string]string{}
			if got.Scheduling != nil {
				sel = got.Scheduling.NodeSelector
			}
			nodes, err := v.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sel).String()})
			if err != nil {
				out = append(out, fail(rc.Name, "listing nodes: %v", err))
			} else if len(sel) > 0 && len(nodes.Items) == 0 {
				out = append(out, fail(rc.Name, "no node matches its nodeSelector %v", sel))
			} else {
				out = append(out, pass(rc.Name, "handler %s, %d node(s) match its scheduling", got.Handler, len(nodes.Items)))
			}
		}
	}
	return out
}

func checkSandboxPlacement(ctx context.Context, v *Verifier) []Result {
	selectors := map[string]map[string]string{}
	for _, rc := range v.p.RuntimeClasses {
		selectors[rc.Name] = rc.NodeSelector
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
			if p.Spec.RuntimeClassName == nil {
				bad = append(bad, p.Name+" has no runtime class")
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
			for k, want := range selectors[*p.Spec.RuntimeClassName] {
				if node.Labels[k] != want {
					bad = append(bad, fmt.Sprintf("%s on %s lacks %s=%s", p.Name, node.Name, k, want))
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

func checkWarmPools(ctx context.Context, v *Verifier) []Result {
	var out []Result
	for _, t := range v.p.Tenants {
		for _, wp := range t.WarmPools {
			subject := t.Namespace + "/" + wp.Name
			u, err := v.dyn.Resource(warmPoolsGVR).Namespace(t.Namespace).Get(ctx, wp.Name, metav1.GetOptions{})
			if err != nil {
				out = append(out, fail(subject, "%v", err))
				continue
			}
			ready, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
			if int32(ready) >= wp.Replicas {
				out = append(out, pass(subject, "%d/%d ready", ready, wp.Replicas))
			} else {
				out = append(out, fail(subject, "%d/%d ready", ready, wp.Replicas))
			}
		}
	}
	return out
}

func checkClaimWithoutTTLRejected(ctx context.Context, v *Verifier) []Result {
	var out []Result
	for _, t := range v.p.Tenants {
		if len(t.WarmPools) == 0 {
			continue
		}
		claim := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "extensions.agents.x-k8s.io/v1beta1",
			"kind":       "SandboxClaim",
			"metadata":   map[string]any{"name": "paddock-verify-no-ttl", "namespace": t.Namespace},
			"spec":       map[string]any{"warmPoolRef": map[string]any{"name": t.WarmPools[0].Name}},
		}}
		_, err := v.dyn.Resource(claimsGVR).Namespace(t.Namespace).Create(ctx, claim, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		switch {
		case err == nil:
			out = append(out, fail(t.Namespace, "a claim without lifecycle TTL was accepted"))
		case apierrors.IsInvalid(err) || apierrors.IsForbidden(err):
			out = append(out, pass(t.Namespace, "rejected: %s", shortErr(err)))
		default:
			out = append(out, fail(t.Namespace, "unexpected error: %v", err))
		}
	}
	return out
}

func checkNetworkPoliciesPresent(ctx context.Context, v *Verifier) []Result {
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
		for _, p := range pols.Items {
			if len(p.Spec.PodSelector.MatchLabels) == 0 && len(p.Spec.PodSelector.MatchExpressions) == 0 &&
				len(p.Spec.Ingress) == 0 && len(p.Spec.Egress) == 0 && len(p.Spec.PolicyTypes) == 2 {
				denyAll = true
			}
		}
		if denyAll {
			out = append(out, pass(t.Namespace, "%d policies incl. default-deny ingress+egress", len(pols.Items)))
		} else {
			out = append(out, fail(t.Namespace, "no default-deny (ingress+egress, all pods) policy among %d", len(pols.Items)))
		}
	}
	return out
}

// checkNetworkPolicyEnforced never passes on faith: without a CNI that enforces
// policy, a NetworkPolicy is a comment, not a boundary.
func checkNetworkPolicyEnforced(ctx context.Context, v *Verifier) []Result {
	cni := detectCNI(ctx, v)
	if cni == "" {
		return []Result{notVerifiable("cluster", "no policy-enforcing CNI detected (no Cilium, Calico or GKE Dataplane V2 agents): NetworkPolicy objects are stored but not enforced")}
	}
	return []Result{notVerifiable("cluster", "%s detected; an enforcement probe needs a running pod, which this verify does not start — test with a pod that dials a denied address", cni)}
}

func detectCNI(ctx context.Context, v *Verifier) string {
	ds, err := v.kube.AppsV1().DaemonSets("kube-system").List(ctx, metav1.ListOptions{})
	if err != nil {
		return ""
	}
	for _, d := range ds.Items {
		switch {
		case d.Name == "cilium" && d.Status.NumberReady > 0:
			return "Cilium"
		case d.Name == "anetd" && d.Status.NumberReady > 0:
			return "GKE Dataplane V2"
		case d.Name == "calico-node" && d.Status.NumberReady > 0:
			return "Calico"
		}
	}
	return ""
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
