package drift

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
)

// A guardrail is enforced on a tenant when its policy still matches the
// requests Paddock declared it for, in the tenant's namespace as it is live,
// and some binding of it does as well with Deny among its actions. Each
// check below is one way a live object stops doing that while keeping its
// name; none of them is something `paddock up` necessarily resets, since
// several are fields Paddock never sets.

// guardrailPair is one declared policy and its binding.
type guardrailPair struct {
	tenant  model.Tenant
	policy  admissionv1.ValidatingAdmissionPolicy
	binding admissionv1.ValidatingAdmissionPolicyBinding
}

func declaredGuardrails(built *manifests.Objects) ([]guardrailPair, error) {
	var out []guardrailPair
	for _, tp := range built.Tenants {
		policies := map[string]admissionv1.ValidatingAdmissionPolicy{}
		var bindings []admissionv1.ValidatingAdmissionPolicyBinding
		for _, u := range tp.Guardrails {
			switch u.GetKind() {
			case "ValidatingAdmissionPolicy":
				var vap admissionv1.ValidatingAdmissionPolicy
				if err := fromUnstructured(u, &vap); err != nil {
					return nil, err
				}
				policies[vap.Name] = vap
			case "ValidatingAdmissionPolicyBinding":
				var b admissionv1.ValidatingAdmissionPolicyBinding
				if err := fromUnstructured(u, &b); err != nil {
					return nil, err
				}
				bindings = append(bindings, b)
			}
		}
		for _, b := range bindings {
			vap, ok := policies[b.Spec.PolicyName]
			if !ok {
				return nil, fmt.Errorf("tenant %s: declared binding %s names policy %s, which is not declared", tp.Tenant.Name, b.Name, b.Spec.PolicyName)
			}
			out = append(out, guardrailPair{tenant: tp.Tenant, policy: vap, binding: b})
		}
	}
	return out, nil
}

// admissionRequest is one kind of request a guardrail is declared to check.
type admissionRequest struct {
	op                       admissionv1.OperationType
	group, version, resource string
}

func (r admissionRequest) String() string {
	res := r.resource
	if r.group != "" {
		res += "." + r.group
	}
	return strings.ToLower(string(r.op)) + " " + res
}

// requests expands rules into the requests they match.
func requests(rules []admissionv1.NamedRuleWithOperations) []admissionRequest {
	var out []admissionRequest
	for _, r := range rules {
		for _, op := range r.Operations {
			for _, g := range r.APIGroups {
				for _, v := range r.APIVersions {
					for _, res := range r.Resources {
						out = append(out, admissionRequest{op, g, v, res})
					}
				}
			}
		}
	}
	return out
}

// admissionResourceMatches reports whether a rule's resources hold r:
// "*" is every resource but no subresource, "*/*" everything.
func admissionResourceMatches(list []string, r string) bool {
	for _, v := range list {
		switch {
		case v == r, v == "*/*":
			return true
		case v == "*" && !strings.Contains(r, "/"):
			return true
		}
	}
	return false
}

func hasOp(ops []admissionv1.OperationType, op admissionv1.OperationType) bool {
	return slices.Contains(ops, op) || slices.Contains(ops, admissionv1.OperationAll)
}

// covers reports whether rule matches every request of kind req, on every
// object of it (the declared resources are namespaced).
func covers(rule admissionv1.NamedRuleWithOperations, req admissionRequest) bool {
	return hasOp(rule.Operations, req.op) && has(rule.APIGroups, req.group) && has(rule.APIVersions, req.version) &&
		admissionResourceMatches(rule.Resources, req.resource) && len(rule.ResourceNames) == 0 &&
		(rule.Scope == nil || *rule.Scope == admissionv1.AllScopes || *rule.Scope == admissionv1.NamespacedScope)
}

// overlaps reports whether an exclusion takes any request of kind req away
// (even one object of it, by name).
func overlaps(rule admissionv1.NamedRuleWithOperations, req admissionRequest) bool {
	wild := func(list []string, x string) bool { return x == "*" || has(list, x) }
	return (req.op == admissionv1.OperationAll || hasOp(rule.Operations, req.op)) &&
		wild(rule.APIGroups, req.group) && wild(rule.APIVersions, req.version) &&
		(req.resource == "*" || admissionResourceMatches(rule.Resources, req.resource)) &&
		(rule.Scope == nil || *rule.Scope != admissionv1.ClusterScope)
}

// matchProblems are the ways live match resources stop matching the
// declared requests in namespace ns (labels nsLabels; nil when the namespace
// is not live, then its selector is not judged). rulesRequired is true for a
// policy's constraints, which match nothing without rules; a binding
// without rules matches what its policy does.
func matchProblems(live, decl *admissionv1.MatchResources, want []admissionRequest, ns string, nsLabels labels.Set, rulesRequired bool) []string {
	var out []string
	if live == nil {
		if rulesRequired {
			return []string{"it has no matchConstraints, so it matches no request"}
		}
		return nil
	}
	if decl == nil {
		decl = &admissionv1.MatchResources{}
	}
	if nsLabels != nil && !emptySelector(live.NamespaceSelector) {
		sel, err := metav1.LabelSelectorAsSelector(live.NamespaceSelector)
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("its namespaceSelector is unreadable (%v)", err))
		case !sel.Matches(nsLabels):
			out = append(out, fmt.Sprintf("its namespaceSelector %q does not select namespace %s (%s)", sel.String(), ns, relevantLabels(sel, nsLabels)))
		}
	}
	if !emptySelector(live.ObjectSelector) && !sameSelector(live.ObjectSelector, decl.ObjectSelector) {
		sel, err := metav1.LabelSelectorAsSelector(live.ObjectSelector)
		what := "an unreadable objectSelector"
		if err == nil {
			what = fmt.Sprintf("objectSelector %q", sel.String())
		}
		out = append(out, fmt.Sprintf("its %s lets every object it does not select through", what))
	}
	if len(live.ResourceRules) > 0 || rulesRequired {
		var missed []string
		for _, req := range want {
			if !slices.ContainsFunc(live.ResourceRules, func(r admissionv1.NamedRuleWithOperations) bool { return covers(r, req) }) {
				missed = append(missed, req.String())
			}
		}
		if len(missed) > 0 {
			out = append(out, "its resourceRules no longer match "+listSome(missed, 4))
		}
	}
	var excluded []string
	for _, req := range want {
		if slices.ContainsFunc(live.ExcludeResourceRules, func(r admissionv1.NamedRuleWithOperations) bool { return overlaps(r, req) }) {
			excluded = append(excluded, req.String())
		}
	}
	if len(excluded) > 0 {
		out = append(out, "its excludeResourceRules exempt "+listSome(excluded, 4))
	}
	if exact := admissionv1.Exact; live.MatchPolicy != nil && *live.MatchPolicy == exact && (decl.MatchPolicy == nil || *decl.MatchPolicy != exact) {
		out = append(out, "its matchPolicy is Exact, so requests through another version or group of the API are not checked")
	}
	return out
}

// relevantLabels are the namespace's values of the keys sel asks about.
func relevantLabels(sel labels.Selector, nsLabels labels.Set) string {
	reqs, _ := sel.Requirements()
	var parts []string
	for _, r := range reqs {
		if v, ok := nsLabels[r.Key()]; ok {
			parts = append(parts, r.Key()+"="+v)
		} else {
			parts = append(parts, "no "+r.Key())
		}
	}
	return "it has " + strings.Join(parts, ", ")
}

func emptySelector(s *metav1.LabelSelector) bool {
	return s == nil || len(s.MatchLabels)+len(s.MatchExpressions) == 0
}

func sameSelector(a, b *metav1.LabelSelector) bool {
	if emptySelector(a) || emptySelector(b) {
		return emptySelector(a) && emptySelector(b)
	}
	sa, errA := metav1.LabelSelectorAsSelector(a)
	sb, errB := metav1.LabelSelectorAsSelector(b)
	return errA == nil && errB == nil && sa.String() == sb.String()
}

// policyProblems are the ways a live policy stops checking what Paddock declared.
func policyProblems(decl, live *admissionv1.ValidatingAdmissionPolicy, ns string, nsLabels labels.Set) []string {
	var want []admissionRequest
	if decl.Spec.MatchConstraints != nil {
		want = requests(decl.Spec.MatchConstraints.ResourceRules)
	}
	out := matchProblems(live.Spec.MatchConstraints, decl.Spec.MatchConstraints, want, ns, nsLabels, true)
	for _, c := range live.Spec.MatchConditions {
		if !slices.Contains(decl.Spec.MatchConditions, c) {
			out = append(out, fmt.Sprintf("its matchCondition %s (%s) lets every request for which it is false through", c.Name, c.Expression))
		}
	}
	return out
}

// bindingProblems are the ways a live binding stops enforcing the declared
// policy in namespace ns.
func bindingProblems(g guardrailPair, live *admissionv1.ValidatingAdmissionPolicyBinding, nsLabels labels.Set) []string {
	var out []string
	if live.Spec.PolicyName != g.policy.Name {
		return []string{fmt.Sprintf("it binds policy %s, not %s", live.Spec.PolicyName, g.policy.Name)}
	}
	if !slices.Contains(live.Spec.ValidationActions, admissionv1.Deny) {
		out = append(out, fmt.Sprintf("its validationActions %v do not include Deny, so violations are admitted", live.Spec.ValidationActions))
	}
	var want []admissionRequest
	if mc := g.policy.Spec.MatchConstraints; mc != nil {
		want = requests(mc.ResourceRules)
	}
	return append(out, matchProblems(live.Spec.MatchResources, g.binding.Spec.MatchResources, want, g.tenant.Namespace, nsLabels, false)...)
}

// checked names what a guardrail checks, for a report line.
func checked(g guardrailPair) string {
	var res []string
	if mc := g.policy.Spec.MatchConstraints; mc != nil {
		for _, r := range mc.ResourceRules {
			for _, x := range r.Resources {
				if !slices.Contains(res, x) {
					res = append(res, x)
				}
			}
		}
	}
	sort.Strings(res)
	return strings.Join(res, ", ")
}

// sweepGuardrails reports each declared guardrail that the live objects no
// longer enforce on its tenant's namespace as declared.
func sweepGuardrails(ctx context.Context, built *manifests.Objects, nsLabels map[string]labels.Set, kube kubernetes.Interface) ([]Finding, error) {
	declared, err := declaredGuardrails(built)
	if err != nil {
		return nil, err
	}
	if len(declared) == 0 {
		return nil, nil
	}
	policyNames, bindingNames := map[string]bool{}, map[string]bool{}
	for _, g := range declared {
		policyNames[g.policy.Name], bindingNames[g.binding.Name] = true, true
	}
	adm := kube.AdmissionregistrationV1()
	livePolicies := map[string]*admissionv1.ValidatingAdmissionPolicy{}
	if _, err := pages(ctx, func(ctx context.Context, o metav1.ListOptions) ([]admissionv1.ValidatingAdmissionPolicy, string, error) {
		l, err := adm.ValidatingAdmissionPolicies().List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	}, func(v *admissionv1.ValidatingAdmissionPolicy) bool {
		if policyNames[v.Name] {
			livePolicies[v.Name] = v.DeepCopy()
		}
		return false
	}); err != nil {
		return nil, fmt.Errorf("listing validating admission policies: %w", err)
	}
	byName := map[string]*admissionv1.ValidatingAdmissionPolicyBinding{}
	byPolicy := map[string][]*admissionv1.ValidatingAdmissionPolicyBinding{}
	if _, err := pages(ctx, func(ctx context.Context, o metav1.ListOptions) ([]admissionv1.ValidatingAdmissionPolicyBinding, string, error) {
		l, err := adm.ValidatingAdmissionPolicyBindings().List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	}, func(b *admissionv1.ValidatingAdmissionPolicyBinding) bool {
		if bindingNames[b.Name] || policyNames[b.Spec.PolicyName] {
			c := b.DeepCopy()
			if bindingNames[b.Name] {
				byName[b.Name] = c
			}
			byPolicy[b.Spec.PolicyName] = append(byPolicy[b.Spec.PolicyName], c)
		}
		return false
	}); err != nil {
		return nil, fmt.Errorf("listing validating admission policy bindings: %w", err)
	}

	var out []Finding
	reported := map[string]bool{} // a policy shared by bindings is judged once
	for _, g := range declared {
		ns, nsl := g.tenant.Namespace, nsLabels[g.tenant.Namespace]
		what := fmt.Sprintf("%s in namespace %s", checked(g), ns)
		if !reported[g.policy.Name] {
			reported[g.policy.Name] = true
			vapMeta := metav1.ObjectMeta{Name: g.policy.Name}
			if live := livePolicies[g.policy.Name]; live == nil {
				out = append(out, finding(RuleGuardrail, "ValidatingAdmissionPolicy", vapMeta, g.tenant.Name,
					fmt.Sprintf("is missing: nothing checks %s", what), "`paddock up` recreates it"))
			} else if problems := policyProblems(&g.policy, live, ns, nsl); len(problems) > 0 {
				out = append(out, finding(RuleGuardrail, "ValidatingAdmissionPolicy", vapMeta, g.tenant.Name,
					fmt.Sprintf("no longer checks %s as declared: %s", what, strings.Join(problems, "; ")),
					"`paddock up` puts it back as declared, removing the fields it does not declare"))
			}
		}
		// Any live binding of the policy that enforces it as declared will do.
		enforced := slices.ContainsFunc(byPolicy[g.policy.Name], func(b *admissionv1.ValidatingAdmissionPolicyBinding) bool {
			return len(bindingProblems(g, b, nsl)) == 0
		})
		if enforced {
			continue
		}
		bMeta := metav1.ObjectMeta{Name: g.binding.Name}
		live := byName[g.binding.Name]
		if live == nil {
			reason := fmt.Sprintf("is missing: nothing enforces policy %s on %s", g.policy.Name, what)
			if n := len(byPolicy[g.policy.Name]); n > 0 {
				reason += fmt.Sprintf(" (%d other binding(s) of it do not apply as declared)", n)
			}
			out = append(out, finding(RuleGuardrail, "ValidatingAdmissionPolicyBinding", bMeta, g.tenant.Name, reason, "`paddock up` recreates it"))
			continue
		}
		out = append(out, finding(RuleGuardrail, "ValidatingAdmissionPolicyBinding", bMeta, g.tenant.Name,
			fmt.Sprintf("no longer enforces %s as declared: %s", what, strings.Join(bindingProblems(g, live, nsl), "; ")),
			"`paddock up` puts it back as declared, removing the fields it does not declare"))
	}
	return out, nil
}
