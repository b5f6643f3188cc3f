// The identity checks (V03, V04): what the agent-runtime and orchestrator
// identities may do, asked of the API server's authorizer.

package verify

import (
	"context"
	"fmt"

	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
)

// access asks the API server whether a service account may do something. A
// review the authorizer could not finish (status.evaluationError without an
// allow) is an error, never a "no": a broken authorizer must not read as a
// locked-down identity.
func (v *Verifier) access(ctx context.Context, ns, sa, namespace string, a access) (bool, error) {
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User:   serviceAccountUser(ns, sa),
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

// serviceAccountUser is the user name the API server gives service account sa
// of namespace ns.
func serviceAccountUser(ns, sa string) string {
	return "system:serviceaccount:" + ns + ":" + sa
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
