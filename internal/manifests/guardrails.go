package manifests

import (
	"fmt"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
)

// Guardrail is one ValidatingAdmissionPolicy and its binding: CEL rules the API
// server keeps enforcing after Paddock exits.
type Guardrail struct {
	Policy  *admissionv1.ValidatingAdmissionPolicy
	Binding *admissionv1.ValidatingAdmissionPolicyBinding
}

// GuardrailName names a tenant's guardrail; cluster-scoped, so it carries the
// platform and tenant.
func GuardrailName(p *model.Platform, t model.Tenant, what string) string {
	return fmt.Sprintf("paddock-%s-%s-%s", p.Name, t.Name, what)
}

func celList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = "'" + strings.ReplaceAll(s, "'", "\\'") + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func guardrail(p *model.Platform, t model.Tenant, what string, rules []admissionv1.NamedRuleWithOperations, validations []admissionv1.Validation) Guardrail {
	name := GuardrailName(p, t, what)
	fail := admissionv1.Fail
	return Guardrail{
		Policy: &admissionv1.ValidatingAdmissionPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
			ObjectMeta: meta(name, "", p.Labels(t.Name)),
			Spec: admissionv1.ValidatingAdmissionPolicySpec{
				FailurePolicy:    &fail,
				MatchConstraints: &admissionv1.MatchResources{ResourceRules: rules},
				Validations:      validations,
			},
		},
		Binding: &admissionv1.ValidatingAdmissionPolicyBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
			ObjectMeta: meta(name, "", p.Labels(t.Name)),
			Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        name,
				ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
				MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
					MatchLabels: map[string]string{"kubernetes.io/metadata.name": t.Namespace},
				}},
			},
		},
	}
}

func rule(group, version string, resources ...string) admissionv1.NamedRuleWithOperations {
	return admissionv1.NamedRuleWithOperations{RuleWithOperations: admissionv1.RuleWithOperations{
		Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
		Rule:       admissionv1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: resources},
	}}
}

// Guardrails are the tenant's admission policies:
//   - claims must set a lifecycle TTL no longer than the spec's maximum, and
//     shutdown policy Delete (the CRD defaults to Retain), and, unless max_ttl
//     is none, a shutdownTime no later than max_ttl after their creation;
//   - unless max_ttl is none, a sandbox no claim or warm pool controls must
//     carry such a shutdownTime too (a session opened without a claim);
//   - pods, sandboxes and templates may only use the platform's runtime classes;
//   - a warm pool may only reference one of its own tenant's templates.
func Guardrails(p *model.Platform, t model.Tenant) []Guardrail {
	var out []Guardrail

	out = append(out, claimsGuardrail(p, t))
	if g, ok := sandboxLifetimeGuardrail(p, t); ok {
		out = append(out, g)
	}

	var allowed []string
	for _, rc := range p.RuntimeClasses {
		allowed = append(allowed, rc.Name)
	}
	sort.Strings(allowed)
	// A template the spec lets run without a runtime class (a waived finding)
	// must still be admitted; otherwise absence is refused like a wrong class.
	absentOK := false
	for _, tpl := range t.Templates {
		if tpl.RuntimeClass == "" {
			absentOK = true
		}
	}
	expr := func(path string) string {
		e := fmt.Sprintf("has(%s.runtimeClassName) && %s.runtimeClassName in %s", path, path, celList(allowed))
		if absentOK {
			e = fmt.Sprintf("!has(%s.runtimeClassName) || %s.runtimeClassName in %s", path, path, celList(allowed))
		}
		return e
	}
	msg := fmt.Sprintf("tenant %s may only use runtime classes %s", t.Name, strings.Join(allowed, ", "))
	out = append(out,
		guardrail(p, t, "pod-runtime", []admissionv1.NamedRuleWithOperations{rule("", "v1", "pods")},
			[]admissionv1.Validation{{Expression: expr("object.spec"), Message: msg}}),
		guardrail(p, t, "sandbox-runtime", []admissionv1.NamedRuleWithOperations{
			rule("agents.x-k8s.io", "*", "sandboxes"),
			rule("extensions.agents.x-k8s.io", "*", "sandboxtemplates"),
		}, []admissionv1.Validation{{Expression: expr("object.spec.podTemplate.spec"), Message: msg}}),
	)

	var templates []string
	for _, tpl := range t.Templates {
		templates = append(templates, tpl.Name)
	}
	sort.Strings(templates)
	out = append(out, guardrail(p, t, "warmpools", []admissionv1.NamedRuleWithOperations{
		rule("extensions.agents.x-k8s.io", "*", "sandboxwarmpools"),
	}, []admissionv1.Validation{{
		Expression: fmt.Sprintf("object.spec.sandboxTemplateRef.name in %s", celList(templates)),
		Message:    fmt.Sprintf("a warm pool in tenant %s may only serve one of its own templates (%s): pools never cross trust boundaries", t.Name, strings.Join(templates, ", ")),
	}}))
	return append(out, orchestratorGuardrails(p, t)...)
}

// orchestratorGuardrails bind IdentityLabel to the orchestrator's service
// account where a NetworkPolicy selects by it (the orchestrator's metadata
// server hole): a pod may carry it only when it runs as agent-orchestrator,
// and a sandbox, template or claim never, nor may a sandbox run as the
// orchestrator. The claim matters: its additionalPodMetadata labels the
// sandbox pod, and the orchestrator writes claims. None without the hole.
func orchestratorGuardrails(p *model.Platform, t model.Tenant) []Guardrail {
	if t.EgressGateway != nil {
		return identityGuardrails(p, t)
	}
	if !p.OrchestratorNeedsMetadataServer(t) {
		return nil
	}
	key, sa := "'"+IdentityLabel+"'", "'"+model.AgentOrchestratorServiceAccount+"'"
	absent := func(labels string) string {
		return fmt.Sprintf("!has(%s) || !(%s in %s)", labels, key, labels)
	}
	podTemplate := func(path string) string {
		return fmt.Sprintf("!has(%[1]s.metadata) || %[2]s", path, absent(path+".metadata.labels"))
	}
	return []Guardrail{
		guardrail(p, t, "orchestrator-pods", []admissionv1.NamedRuleWithOperations{rule("", "v1", "pods")},
			[]admissionv1.Validation{{
				Expression: fmt.Sprintf("%s || (object.metadata.labels[%s] == %s && has(object.spec.serviceAccountName) && object.spec.serviceAccountName == %s)",
					absent("object.metadata.labels"), key, sa, sa),
				Message: fmt.Sprintf("in tenant %s only a pod running as %s may carry %s=%s (it opens the GKE metadata server)",
					t.Name, model.AgentOrchestratorServiceAccount, IdentityLabel, model.AgentOrchestratorServiceAccount),
			}}),
		guardrail(p, t, "orchestrator-sandboxes", []admissionv1.NamedRuleWithOperations{
			rule("agents.x-k8s.io", "*", "sandboxes"),
			rule("extensions.agents.x-k8s.io", "*", "sandboxtemplates"),
		}, []admissionv1.Validation{
			{
				Expression: podTemplate("object.spec.podTemplate"),
				Message:    fmt.Sprintf("a sandbox of tenant %s may not carry %s: it is the orchestrator's", t.Name, IdentityLabel),
			},
			{
				Expression: fmt.Sprintf("!has(object.spec.podTemplate.spec.serviceAccountName) || object.spec.podTemplate.spec.serviceAccountName != %s", sa),
				Message:    fmt.Sprintf("a sandbox of tenant %s may not run as %s", t.Name, model.AgentOrchestratorServiceAccount),
			},
		}),
		guardrail(p, t, "orchestrator-claims", []admissionv1.NamedRuleWithOperations{
			rule(agentsandbox.SandboxClaims.Group, "*", agentsandbox.SandboxClaims.Resource),
		}, []admissionv1.Validation{{
			Expression: fmt.Sprintf("!has(object.spec.additionalPodMetadata) || %s", absent("object.spec.additionalPodMetadata.labels")),
			Message:    fmt.Sprintf("a claim in tenant %s may not label its sandbox %s: it is the orchestrator's", t.Name, IdentityLabel),
		}}),
	}
}

// identityGuardrails bind IdentityLabel to the service account it names, for
// a tenant with an egress gateway (whose NetworkPolicies select its pods by
// the label) and, when it has its metadata server hole, the orchestrator: a
// pod may carry the label only with one of those values and only running as
// the service account of that name; a sandbox or template never carries it
// nor runs as one of them; a claim never labels its sandbox with it.
func identityGuardrails(p *model.Platform, t model.Tenant) []Guardrail {
	ids := []string{model.GatewayServiceAccount}
	if p.OrchestratorNeedsMetadataServer(t) {
		ids = append(ids, model.AgentOrchestratorServiceAccount)
	}
	sort.Strings(ids)
	key, allowed := "'"+IdentityLabel+"'", celList(ids)
	absent := func(labels string) string {
		return fmt.Sprintf("!has(%s) || !(%s in %s)", labels, key, labels)
	}
	return []Guardrail{
		guardrail(p, t, "identity-pods", []admissionv1.NamedRuleWithOperations{rule("", "v1", "pods")},
			[]admissionv1.Validation{{
				Expression: fmt.Sprintf("%s || (object.metadata.labels[%s] in %s && has(object.spec.serviceAccountName) && object.spec.serviceAccountName == object.metadata.labels[%s])",
					absent("object.metadata.labels"), key, allowed, key),
				Message: fmt.Sprintf("in tenant %s only a pod running as the service account it names may carry %s (%s): network policies select by it",
					t.Name, IdentityLabel, strings.Join(ids, ", ")),
			}}),
		guardrail(p, t, "identity-sandboxes", []admissionv1.NamedRuleWithOperations{
			rule("agents.x-k8s.io", "*", "sandboxes"),
			rule("extensions.agents.x-k8s.io", "*", "sandboxtemplates"),
		}, []admissionv1.Validation{
			{
				Expression: fmt.Sprintf("!has(object.spec.podTemplate.metadata) || %s", absent("object.spec.podTemplate.metadata.labels")),
				Message:    fmt.Sprintf("a sandbox of tenant %s may not carry %s: it selects the gateway's and the orchestrator's network policies", t.Name, IdentityLabel),
			},
			{
				Expression: fmt.Sprintf("!has(object.spec.podTemplate.spec.serviceAccountName) || !(object.spec.podTemplate.spec.serviceAccountName in %s)", allowed),
				Message:    fmt.Sprintf("a sandbox of tenant %s may not run as %s", t.Name, strings.Join(ids, " or ")),
			},
		}),
		guardrail(p, t, "identity-claims", []admissionv1.NamedRuleWithOperations{
			rule(agentsandbox.SandboxClaims.Group, "*", agentsandbox.SandboxClaims.Resource),
		}, []admissionv1.Validation{{
			Expression: fmt.Sprintf("!has(object.spec.additionalPodMetadata) || %s", absent("object.spec.additionalPodMetadata.labels")),
			Message:    fmt.Sprintf("a claim in tenant %s may not label its sandbox %s", t.Name, IdentityLabel),
		}}),
	}
}
