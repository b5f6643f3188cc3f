package drift

import (
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/paddock-platform/paddock/internal/manifests"
)

func TestSweepGuardrails(t *testing.T) {
	p := platform()
	tn := p.Tenants[0]
	name := func(what string) string { return manifests.GuardrailName(p, tn, what) }
	binding := func(c *cluster, what string) *admissionv1.ValidatingAdmissionPolicyBinding {
		return c.find(t, "ValidatingAdmissionPolicyBinding", "", name(what)).(*admissionv1.ValidatingAdmissionPolicyBinding)
	}
	policy := func(c *cluster, what string) *admissionv1.ValidatingAdmissionPolicy {
		return c.find(t, "ValidatingAdmissionPolicy", "", name(what)).(*admissionv1.ValidatingAdmissionPolicy)
	}
	exact := admissionv1.Exact
	equivalent := admissionv1.Equivalent
	for _, c := range []struct {
		name   string
		edit   func(c *cluster)
		object string // "" when nothing is reported
		reason string
	}{
		{"the API server's defaults", func(c *cluster) {
			for _, what := range []string{"claims", "pod-runtime", "sandbox-runtime", "warmpools"} {
				b := binding(c, what)
				b.Spec.MatchResources.MatchPolicy, b.Spec.MatchResources.ObjectSelector = &equivalent, &metav1.LabelSelector{}
				mc := policy(c, what).Spec.MatchConstraints
				mc.MatchPolicy, mc.NamespaceSelector, mc.ObjectSelector = &equivalent, &metav1.LabelSelector{}, &metav1.LabelSelector{}
				all := admissionv1.AllScopes
				for i := range mc.ResourceRules {
					mc.ResourceRules[i].Scope = &all
				}
			}
		}, "", ""},
		{"warn only", func(c *cluster) {
			binding(c, "claims").Spec.ValidationActions = []admissionv1.ValidationAction{admissionv1.Warn, admissionv1.Audit}
		}, "ValidatingAdmissionPolicyBinding " + name("claims"), "validationActions [Warn Audit] do not include Deny"},
		{"warn only, but another binding denies", func(c *cluster) {
			b := binding(c, "claims")
			other := b.DeepCopy()
			other.Name = "backup"
			other.Labels = nil
			b.Spec.ValidationActions = []admissionv1.ValidationAction{admissionv1.Warn}
			c.typed = append(c.typed, other)
		}, "", ""},
		{"an object selector", func(c *cluster) {
			binding(c, "pod-runtime").Spec.MatchResources.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"checked": "yes"}}
		}, "ValidatingAdmissionPolicyBinding " + name("pod-runtime"), `objectSelector "checked=yes" lets every object it does not select through`},
		{"an exclusion", func(c *cluster) {
			binding(c, "pod-runtime").Spec.MatchResources.ExcludeResourceRules = []admissionv1.NamedRuleWithOperations{{ResourceNames: []string{"debug"},
				RuleWithOperations: admissionv1.RuleWithOperations{Operations: []admissionv1.OperationType{"*"}, Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"*"}, Resources: []string{"*"}}}}}
		}, "ValidatingAdmissionPolicyBinding " + name("pod-runtime"), "excludeResourceRules exempt create pods, update pods"},
		{"an exclusion of something else", func(c *cluster) {
			binding(c, "pod-runtime").Spec.MatchResources.ExcludeResourceRules = []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{Operations: []admissionv1.OperationType{"*"}, Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"*"}, Resources: []string{"pods/status", "configmaps"}}}}}
		}, "", ""},
		{"a binding narrowed to some resources", func(c *cluster) {
			binding(c, "sandbox-runtime").Spec.MatchResources.ResourceRules = []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{Operations: []admissionv1.OperationType{"*"}, Rule: admissionv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"sandboxes"}}}}}
		}, "ValidatingAdmissionPolicyBinding " + name("sandbox-runtime"), "resourceRules no longer match create sandboxtemplates.extensions.agents.x-k8s.io, update sandboxtemplates.extensions.agents.x-k8s.io"},
		{"a policy pinned to one version", func(c *cluster) {
			policy(c, "claims").Spec.MatchConstraints.ResourceRules[0].APIVersions = []string{"v1beta1"}
		}, "ValidatingAdmissionPolicy " + name("claims"), "resourceRules no longer match create sandboxclaims.extensions.agents.x-k8s.io"},
		{"a policy's namespace selector", func(c *cluster) {
			policy(c, "warmpools").Spec.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "legacy", Operator: metav1.LabelSelectorOpExists}}}
		}, "ValidatingAdmissionPolicy " + name("warmpools"), `namespaceSelector "legacy" does not select namespace agents-team-a (it has no legacy)`},
		{"matchPolicy Exact", func(c *cluster) {
			policy(c, "warmpools").Spec.MatchConstraints.MatchPolicy = &exact
		}, "ValidatingAdmissionPolicy " + name("warmpools"), "matchPolicy is Exact"},
		{"an unreadable selector", func(c *cluster) {
			binding(c, "warmpools").Spec.MatchResources.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Maybe"}}}
		}, "ValidatingAdmissionPolicyBinding " + name("warmpools"), "namespaceSelector is unreadable"},
		{"no constraints at all", func(c *cluster) {
			policy(c, "warmpools").Spec.MatchConstraints = nil
		}, "ValidatingAdmissionPolicy " + name("warmpools"), "no matchConstraints"},
		{"a policy deleted", func(c *cluster) {
			c.remove(t, "ValidatingAdmissionPolicy", "", name("claims"))
		}, "ValidatingAdmissionPolicy " + name("claims"), "is missing: nothing checks sandboxclaims in namespace agents-team-a"},
		{"a binding pointed at another policy", func(c *cluster) {
			binding(c, "claims").Spec.PolicyName = name("warmpools")
		}, "ValidatingAdmissionPolicyBinding " + name("claims"), "binds policy " + name("warmpools") + ", not " + name("claims")},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := afterUp(t, p)
			c.edit(cl)
			got := cl.sweep(t, p)
			if c.object == "" {
				if len(got) != 0 {
					t.Errorf("findings:%s", describe(got))
				}
				return
			}
			if len(got) != 1 || got[0].Object() != c.object || got[0].Rule != RuleGuardrail || !strings.Contains(got[0].Reason, c.reason) {
				t.Errorf("findings:%s\nwant one S07 on %s saying %q", describe(got), c.object, c.reason)
			}
		})
	}
}
