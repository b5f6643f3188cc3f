// The API server's audit policy: who created, changed or deleted the
// platform's sandbox resources and the tenants' fence. The local control plane
// runs with it; `paddock render --out` writes it for an operator to give their
// own API server (--audit-policy-file). GKE records its Cloud Audit Logs and
// takes no policy file.

package manifests

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
)

// AuditAPIVersion is the API of the audit policy and of the events the API
// server logs under it.
const AuditAPIVersion = "audit.k8s.io/v1"

// Audit levels: None records nothing, Metadata the request's user, groups,
// source, verb, object and time, never a request or response body.
const (
	AuditLevelNone     = "None"
	AuditLevelMetadata = "Metadata"
)

// AuditPolicy is the audit.k8s.io/v1 Policy, with the fields Paddock uses (the
// API server's type lives in k8s.io/apiserver, which Paddock does not import).
type AuditPolicy struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	OmitStages []string    `json:"omitStages,omitempty"`
	Rules      []AuditRule `json:"rules"`
}

// AuditRule is one rule of the policy; the first rule a request matches sets
// its level. An empty Verbs or Resources matches every verb or resource.
type AuditRule struct {
	Level     string                `json:"level"`
	Verbs     []string              `json:"verbs,omitempty"`
	Resources []AuditGroupResources `json:"resources,omitempty"`
}

// AuditGroupResources names resources of one API group ("" is the core group).
// The names match the resources themselves, not their subresources (status
// updates of the controllers are not recorded).
type AuditGroupResources struct {
	Group     string   `json:"group"`
	Resources []string `json:"resources"`
}

// AuditWriteVerbs are the verbs that create, change or delete an object.
var AuditWriteVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}

// auditedSandboxResources are the Agent Sandbox resources whose changes are
// recorded.
var auditedSandboxResources = []schema.GroupVersionResource{
	agentsandbox.Sandboxes, agentsandbox.SandboxClaims, agentsandbox.SandboxTemplates, agentsandbox.SandboxWarmPools,
}

// auditedFenceResources are what holds a tenant in: its namespace and the
// quotas in it, RBAC, network policies (Cilium's too, the cluster-wide kind
// included, which can select a tenant's pods from outside) and the admission
// policies of its guardrails.
var auditedFenceResources = []schema.GroupVersionResource{
	corev1.SchemeGroupVersion.WithResource("namespaces"),
	corev1.SchemeGroupVersion.WithResource("resourcequotas"),
	corev1.SchemeGroupVersion.WithResource("limitranges"),
	rbacv1.SchemeGroupVersion.WithResource("roles"),
	rbacv1.SchemeGroupVersion.WithResource("rolebindings"),
	rbacv1.SchemeGroupVersion.WithResource("clusterroles"),
	rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"),
	networkingv1.SchemeGroupVersion.WithResource("networkpolicies"),
	CiliumNetworkPolicies,
	CiliumClusterwideNetworkPolicies,
	admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies"),
	admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicybindings"),
}

// auditedConfidential are the resources that can hold secrets: their changes
// are recorded at Metadata, never with their contents.
var auditedConfidential = []schema.GroupVersionResource{
	corev1.SchemeGroupVersion.WithResource("secrets"),
	corev1.SchemeGroupVersion.WithResource("configmaps"),
}

// byGroup gathers resources by API group, groups in order of first mention.
func byGroup(gvrs []schema.GroupVersionResource) []AuditGroupResources {
	var out []AuditGroupResources
	at := map[string]int{}
	for _, r := range gvrs {
		i, ok := at[r.Group]
		if !ok {
			i = len(out)
			at[r.Group] = i
			out = append(out, AuditGroupResources{Group: r.Group})
		}
		out[i].Resources = append(out[i].Resources, r.Resource)
	}
	return out
}

// Audit returns the audit policy: creates, updates and deletes of the sandbox
// resources and the fence at Metadata, Secrets and ConfigMaps at Metadata at
// most, and nothing else. No event is logged at the RequestReceived stage:
// each request is one event, once it is answered.
func Audit() AuditPolicy {
	return AuditPolicy{
		APIVersion: AuditAPIVersion,
		Kind:       "Policy",
		OmitStages: []string{"RequestReceived"},
		Rules: []AuditRule{
			// First, so that no rule below could ever record their contents.
			{Level: AuditLevelMetadata, Verbs: AuditWriteVerbs, Resources: byGroup(auditedConfidential)},
			{Level: AuditLevelNone, Resources: byGroup(auditedConfidential)},
			{Level: AuditLevelMetadata, Verbs: AuditWriteVerbs, Resources: byGroup(auditedSandboxResources)},
			{Level: AuditLevelMetadata, Verbs: AuditWriteVerbs, Resources: byGroup(auditedFenceResources)},
			{Level: AuditLevelNone},
		},
	}
}

// AuditPolicyFile is the name of the file the policy is written to.
const AuditPolicyFile = "audit-policy.yaml"

// AuditPolicyYAML is the policy as the file an API server's
// --audit-policy-file reads, with a header saying what it is.
func AuditPolicyYAML() ([]byte, error) {
	b, err := yaml.Marshal(Audit())
	if err != nil {
		return nil, fmt.Errorf("audit policy: %w", err)
	}
	header := "# Rendered by paddock: the API server's audit policy (kube-apiserver --audit-policy-file).\n" +
		"# Records who created, changed or deleted sandboxes, claims, templates, warm pools and the\n" +
		"# tenants' fence, at Metadata level (never a request or response body); nothing else.\n"
	return append([]byte(header), b...), nil
}
