package manifests

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
)

// IdentityLabel marks the pods of a tenant's orchestrator. The tenant's
// orchestrator guardrails bind it to the orchestrator's service account (no
// other pod, no sandbox, template or claim may carry it), so a NetworkPolicy
// may select the orchestrator's pods by it.
const IdentityLabel = "paddock.dev/identity"

// OrchestratorPodLabels are what the orchestrator's pod template carries to
// get the orchestrator's own egress (the GKE metadata server, when it has a
// workload identity).
func OrchestratorPodLabels() map[string]string {
	return map[string]string{IdentityLabel: model.AgentOrchestratorServiceAccount}
}

// OrchestratorRules are all the orchestrator may do, in its tenant's namespace
// only: manage claims, read sandboxes. No secrets, no pods, no exec.
func OrchestratorRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{agentsandbox.SandboxClaims.Group}, Resources: []string{agentsandbox.SandboxClaims.Resource}, Verbs: []string{"create", "get", "list", "watch", "delete"}},
		{APIGroups: []string{agentsandbox.Sandboxes.Group}, Resources: []string{agentsandbox.Sandboxes.Resource}, Verbs: []string{"get", "list", "watch"}},
	}
}

// Orchestrator is the identity that creates claims for sessions: its
// ServiceAccount, a Role with OrchestratorRules and the binding. nil when the
// spec turns the orchestrator off.
func Orchestrator(p *model.Platform, t model.Tenant) (*corev1.ServiceAccount, *rbacv1.Role, *rbacv1.RoleBinding) {
	if !t.Identity.Orchestrator {
		return nil, nil, nil
	}
	name := model.AgentOrchestratorServiceAccount
	l := p.Labels(t.Name)
	sam := meta(name, t.Namespace, l)
	sam.Annotations = WorkloadIdentityAnnotations(p, t, name)
	sa := &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: sam,
	}
	role := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: meta(name, t.Namespace, l),
		Rules:      OrchestratorRules(),
	}
	rb := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: meta(name, t.Namespace, l),
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: t.Namespace}},
	}
	return sa, role, rb
}
