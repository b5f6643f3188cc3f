package drift

import (
	"context"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
)

// rbacReference is what the objects Paddock builds grant: the roles it
// declares, and for each tenant identity the rules its bindings give it.
type rbacReference struct {
	roles        map[string][]rbacv1.PolicyRule // by "namespace/name"
	clusterRoles map[string][]rbacv1.PolicyRule
	grants       map[identity][]scopedRules
}

// allObjects is every object of the platform, release included.
func allObjects(built *manifests.Objects) []*unstructured.Unstructured {
	out := append([]*unstructured.Unstructured(nil), built.Release...)
	for _, tp := range built.Tenants {
		out = append(out, tp.All()...)
	}
	return out
}

func declaredRBAC(ids []identity, built *manifests.Objects) (rbacReference, error) {
	ref := rbacReference{roles: map[string][]rbacv1.PolicyRule{}, clusterRoles: map[string][]rbacv1.PolicyRule{}, grants: map[identity][]scopedRules{}}
	objs := allObjects(built)
	for _, u := range objs {
		switch u.GetKind() {
		case "Role":
			var r rbacv1.Role
			if err := fromUnstructured(u, &r); err != nil {
				return ref, err
			}
			ref.roles[r.Namespace+"/"+r.Name] = r.Rules
		case "ClusterRole":
			var r rbacv1.ClusterRole
			if err := fromUnstructured(u, &r); err != nil {
				return ref, err
			}
			ref.clusterRoles[r.Name] = r.Rules
		}
	}
	grant := func(bindingNS string, subjects []rbacv1.Subject, roleRef rbacv1.RoleRef, scope string) {
		rules, ok := ref.lookup(bindingNS, roleRef)
		if !ok {
			return
		}
		bound, _ := boundIdentities(ids, bindingNS, subjects)
		for _, id := range bound {
			ref.grants[id] = append(ref.grants[id], scopedRules{namespace: scope, rules: rules})
		}
	}
	for _, u := range objs {
		switch u.GetKind() {
		case "RoleBinding":
			var b rbacv1.RoleBinding
			if err := fromUnstructured(u, &b); err != nil {
				return ref, err
			}
			grant(b.Namespace, b.Subjects, b.RoleRef, b.Namespace)
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			if err := fromUnstructured(u, &b); err != nil {
				return ref, err
			}
			grant("", b.Subjects, b.RoleRef, "")
		}
	}
	return ref, nil
}

// lookup finds the rules of the role a binding in bindingNS refers to.
func (r rbacReference) lookup(bindingNS string, ref rbacv1.RoleRef) ([]rbacv1.PolicyRule, bool) {
	switch {
	case ref.Kind == "ClusterRole":
		rules, ok := r.clusterRoles[ref.Name]
		return rules, ok
	case ref.Kind == "Role" && bindingNS != "":
		rules, ok := r.roles[bindingNS+"/"+ref.Name]
		return rules, ok
	}
	return nil, false
}

// bindingCandidate is a live binding whose subjects include tenant identities.
type bindingCandidate struct {
	kind  string
	meta  metav1.ObjectMeta
	ref   rbacv1.RoleRef
	bound []identity
	how   []string
}

// sweepBindings judges every binding that includes a tenant identity by the
// rules of the role it binds.
func sweepBindings(ctx context.Context, p *model.Platform, built *manifests.Objects, kube kubernetes.Interface) ([]Finding, error) {
	ids := tenantIdentities(p)
	declared, err := declaredRBAC(ids, built)
	if err != nil {
		return nil, err
	}
	var candidates []bindingCandidate
	// Only the bindings that include a tenant identity are kept, as they
	// are met: a cluster's bindings are never held whole.
	consider := func(kind string, m metav1.ObjectMeta, ref rbacv1.RoleRef, subjects []rbacv1.Subject) {
		bound, how := boundIdentities(ids, m.Namespace, subjects)
		if len(bound) > 0 {
			candidates = append(candidates, bindingCandidate{kind: kind, meta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name}, ref: ref, bound: bound, how: how})
		}
	}
	if _, err := pages(ctx, func(ctx context.Context, o metav1.ListOptions) ([]rbacv1.RoleBinding, string, error) {
		l, err := kube.RbacV1().RoleBindings(metav1.NamespaceAll).List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	}, func(b *rbacv1.RoleBinding) bool {
		consider("RoleBinding", b.ObjectMeta, b.RoleRef, b.Subjects)
		return false
	}); err != nil {
		return nil, fmt.Errorf("listing role bindings: %w", err)
	}
	if _, err := pages(ctx, func(ctx context.Context, o metav1.ListOptions) ([]rbacv1.ClusterRoleBinding, string, error) {
		l, err := kube.RbacV1().ClusterRoleBindings().List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	}, func(b *rbacv1.ClusterRoleBinding) bool {
		consider("ClusterRoleBinding", b.ObjectMeta, b.RoleRef, b.Subjects)
		return false
	}); err != nil {
		return nil, fmt.Errorf("listing cluster role bindings: %w", err)
	}
	if len(candidates) == 0 {
		return nil, nil
	}

	// The roles they bind, read in one list per kind rather than one get per binding.
	live := rbacReference{roles: map[string][]rbacv1.PolicyRule{}, clusterRoles: map[string][]rbacv1.PolicyRule{}}
	needRoles, needClusterRoles := map[string]bool{}, map[string]bool{}
	for _, c := range candidates {
		switch {
		case c.ref.Kind == "ClusterRole":
			needClusterRoles[c.ref.Name] = true
		case c.ref.Kind == "Role" && c.meta.Namespace != "":
			needRoles[c.meta.Namespace+"/"+c.ref.Name] = true
		}
	}
	if len(needRoles) > 0 {
		if _, err := pages(ctx, func(ctx context.Context, o metav1.ListOptions) ([]rbacv1.Role, string, error) {
			l, err := kube.RbacV1().Roles(metav1.NamespaceAll).List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			return l.Items, l.Continue, nil
		}, func(r *rbacv1.Role) bool {
			if key := r.Namespace + "/" + r.Name; needRoles[key] {
				live.roles[key] = r.Rules
			}
			return false
		}); err != nil {
			return nil, fmt.Errorf("listing roles: %w", err)
		}
	}
	if len(needClusterRoles) > 0 {
		if _, err := pages(ctx, func(ctx context.Context, o metav1.ListOptions) ([]rbacv1.ClusterRole, string, error) {
			l, err := kube.RbacV1().ClusterRoles().List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			return l.Items, l.Continue, nil
		}, func(r *rbacv1.ClusterRole) bool {
			// An aggregated role's rules are the aggregate, kept current by
			// the controller: they are what it grants now.
			if needClusterRoles[r.Name] {
				live.clusterRoles[r.Name] = r.Rules
			}
			return false
		}); err != nil {
			return nil, fmt.Errorf("listing cluster roles: %w", err)
		}
	}

	var out []Finding
	for _, c := range candidates {
		if f, ok := judgeBinding(c, live, declared, len(p.Tenants)); ok {
			out = append(out, f)
		}
	}
	return out, nil
}

// judgeBinding is the finding about one binding that includes tenant
// identities, if it grants any of them more than its spec does.
func judgeBinding(c bindingCandidate, live, declared rbacReference, tenants int) (Finding, bool) {
	scope, where, del := c.meta.Namespace, "in namespace "+c.meta.Namespace, fmt.Sprintf("kubectl delete rolebinding -n %s %s", c.meta.Namespace, c.meta.Name)
	if c.kind == "ClusterRoleBinding" {
		scope, where, del = "", "cluster-wide", "kubectl delete clusterrolebinding "+c.meta.Name
	}
	tenant := tenantOf(c.bound, tenants)
	rules, ok := live.lookup(c.meta.Namespace, c.ref)
	if !ok {
		// A role Paddock declares comes back with the next `up`, with the
		// declared rules: judge the binding by those.
		if rules, ok = declared.lookup(c.meta.Namespace, c.ref); !ok {
			return finding(RuleDanglingBinding, c.kind, c.meta, tenant,
				fmt.Sprintf("refers to %s %s, which does not exist: it grants nothing now, but whoever creates that role grants its rules %s to %s (it %s)",
					c.ref.Kind, c.ref.Name, where, describeIdentities(c.bound, tenants), strings.Join(c.how, "; ")),
				del+" (or create the role it names with no rules)"), true
		}
	}
	// Identities granted the same excess are named together.
	groups := map[string][]identity{}
	var order []string
	for _, id := range c.bound {
		ex := excess(rules, scope, declared.grants[id])
		if len(ex) == 0 {
			continue
		}
		key := strings.Join(ex[:min(len(ex), 5)], "; ")
		if len(ex) > 5 {
			key += fmt.Sprintf("; and %d more", len(ex)-5)
		}
		if _, seen := groups[key]; !seen {
			order = append(order, key)
		}
		groups[key] = append(groups[key], id)
	}
	if len(order) == 0 {
		return Finding{}, false
	}
	var parts []string
	for _, key := range order {
		parts = append(parts, fmt.Sprintf("%s {%s}", describeIdentities(groups[key], tenants), key))
	}
	return finding(RuleAgentBinding, c.kind, c.meta, tenant,
		fmt.Sprintf("through %s %s, %s, it gives %s: more than the spec grants (it %s)", c.ref.Kind, c.ref.Name, where, strings.Join(parts, ", and "), strings.Join(c.how, "; ")),
		del+" (or remove the tenant identities from its subjects)"), true
}

// tenantOf is the Finding.Tenant of a binding: the tenants it reaches, or
// "" when it reaches every tenant of a platform with more than one.
func tenantOf(ids []identity, tenants int) string {
	var names []string
	seen := map[string]bool{}
	for _, i := range ids {
		if !seen[i.tenant] {
			seen[i.tenant] = true
			names = append(names, i.tenant)
		}
	}
	if len(names) == tenants && tenants > 1 {
		return ""
	}
	return strings.Join(names, ",")
}
