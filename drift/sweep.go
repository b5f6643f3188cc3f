package drift

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/paddock-platform/paddock/manifests"
	"github.com/paddock-platform/paddock/model"
)

// Sweep rules: objects outside any stack that weaken what Paddock guards.
// IDs are stable so reports compare over time.
const (
	RuleAgentBinding   = "S01"
	RuleEgressOpen     = "S02"
	RuleForeignNetpol  = "S03"
	RuleRuntimeMissing = "S04"
)

var ruleTitles = map[string]string{
	RuleAgentBinding:   "binding grants the agent identity rights",
	RuleEgressOpen:     "network policy allows all egress",
	RuleForeignNetpol:  "network policy not created by Paddock",
	RuleRuntimeMissing: "pod without an allowed runtime class",
}

// RuleTitle is the short text of a sweep rule.
func RuleTitle(id string) string { return ruleTitles[id] }

// bootstrapLabel marks the API server's own default bindings.
const bootstrapLabel = "kubernetes.io/bootstrapping"

// Sweep reads the cluster (lists only) for objects that are in no stack but
// weaken platform p:
//
//   - S01 a RoleBinding or ClusterRoleBinding whose subjects include a
//     tenant's agent-runtime identity — by name, through its namespace's
//     service-account group, or through a cluster-wide group
//     (system:serviceaccounts, system:authenticated) outside the API
//     server's bootstrap defaults. Paddock binds nothing to agent-runtime.
//   - S02 a NetworkPolicy in a tenant namespace that allows egress to any
//     destination (no `to`, or 0.0.0.0/0 or ::/0), where the spec does not
//     declare exactly that. NetworkPolicies only add allows, so one such
//     policy undoes the tenant's default deny.
//   - S03 any other NetworkPolicy in a tenant namespace that neither Paddock
//     declares nor the Agent Sandbox controller derives from a declared template.
//   - S04 a running pod in a tenant namespace whose runtime class is not one
//     the platform declares for it: it runs on the host kernel (or another
//     runtime), outside the sandbox.
//
// Objects of the stack itself are compared by the engine (engine.Drift);
// the sweep looks at what the stack cannot see.
func Sweep(ctx context.Context, p *model.Platform, kube kubernetes.Interface) ([]Finding, error) {
	var out []Finding
	fs, err := sweepBindings(ctx, p, kube)
	if err != nil {
		return nil, err
	}
	out = append(out, fs...)
	for _, t := range p.Tenants {
		fs, err := sweepNetworkPolicies(ctx, p, t, kube)
		if err != nil {
			return nil, err
		}
		out = append(out, fs...)
		fs, err = sweepPods(ctx, p, t, kube)
		if err != nil {
			return nil, err
		}
		out = append(out, fs...)
	}
	return out, nil
}

func finding(rule, kind string, meta metav1.ObjectMeta, tenant, reason, fix string) Finding {
	return Finding{Rule: rule, Title: ruleTitles[rule], Kind: kind, Namespace: meta.Namespace, Name: meta.Name, Tenant: tenant, Reason: reason, Fix: fix}
}

// grants reports which tenants' agent-runtime identity a binding's subjects
// include, and how.
func grants(p *model.Platform, bindingNS string, subjects []rbacv1.Subject, bootstrap bool) (tenants []string, how []string) {
	seen := map[string]bool{}
	for _, t := range p.Tenants {
		user := "system:serviceaccount:" + t.Namespace + ":" + model.AgentRuntimeServiceAccount
		for _, s := range subjects {
			var why string
			switch s.Kind {
			case rbacv1.ServiceAccountKind:
				ns := s.Namespace
				if ns == "" {
					ns = bindingNS
				}
				if s.Name == model.AgentRuntimeServiceAccount && ns == t.Namespace {
					why = "names " + t.Namespace + "/" + s.Name
				}
			case rbacv1.UserKind:
				if s.Name == user {
					why = "names user " + user
				}
			case rbacv1.GroupKind:
				switch s.Name {
				case "system:serviceaccounts:" + t.Namespace:
					why = "binds group " + s.Name + " (every service account of " + t.Namespace + ")"
				case "system:serviceaccounts", "system:authenticated":
					if !bootstrap {
						why = "binds group " + s.Name + ", which includes " + t.Namespace + "/" + model.AgentRuntimeServiceAccount
					}
				}
			}
			if why != "" && !seen[t.Name+why] {
				seen[t.Name+why] = true
				if len(tenants) == 0 || tenants[len(tenants)-1] != t.Name {
					tenants = append(tenants, t.Name)
				}
				how = append(how, why)
			}
		}
	}
	return tenants, how
}

func sweepBindings(ctx context.Context, p *model.Platform, kube kubernetes.Interface) ([]Finding, error) {
	var out []Finding
	rbs, err := kube.RbacV1().RoleBindings(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing role bindings: %w", err)
	}
	for _, rb := range rbs.Items {
		tenants, how := grants(p, rb.Namespace, rb.Subjects, rb.Labels[bootstrapLabel] == "rbac-defaults")
		if len(tenants) == 0 {
			continue
		}
		out = append(out, finding(RuleAgentBinding, "RoleBinding", rb.ObjectMeta, strings.Join(tenants, ","),
			fmt.Sprintf("grants %s %s in namespace %s: it %s; agent-runtime must hold no rights at all", rb.RoleRef.Kind, rb.RoleRef.Name, rb.Namespace, strings.Join(how, "; ")),
			fmt.Sprintf("kubectl delete rolebinding -n %s %s", rb.Namespace, rb.Name)))
	}
	crbs, err := kube.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing cluster role bindings: %w", err)
	}
	for _, crb := range crbs.Items {
		tenants, how := grants(p, "", crb.Subjects, crb.Labels[bootstrapLabel] == "rbac-defaults")
		if len(tenants) == 0 {
			continue
		}
		out = append(out, finding(RuleAgentBinding, "ClusterRoleBinding", crb.ObjectMeta, strings.Join(tenants, ","),
			fmt.Sprintf("grants ClusterRole %s cluster-wide: it %s; agent-runtime must hold no rights at all", crb.RoleRef.Name, strings.Join(how, "; ")),
			fmt.Sprintf("kubectl delete clusterrolebinding %s", crb.Name)))
	}
	return out, nil
}

// openEgress describes how a policy allows egress to any destination, or "".
func openEgress(spec networkingv1.NetworkPolicySpec) string {
	egress := len(spec.Egress) > 0
	for _, t := range spec.PolicyTypes {
		if t == networkingv1.PolicyTypeEgress {
			egress = true
		}
	}
	if !egress {
		return ""
	}
	for i, r := range spec.Egress {
		ports := "every port"
		if len(r.Ports) > 0 {
			var ps []string
			for _, p := range r.Ports {
				if p.Port != nil {
					ps = append(ps, p.Port.String())
				}
			}
			ports = "port " + strings.Join(ps, ",")
		}
		if len(r.To) == 0 {
			return fmt.Sprintf("egress rule %d has no `to`: any destination, %s", i, ports)
		}
		for _, peer := range r.To {
			if b := peer.IPBlock; b != nil && (b.CIDR == "0.0.0.0/0" || b.CIDR == "::/0") {
				return fmt.Sprintf("egress rule %d allows %s (any address), %s", i, b.CIDR, ports)
			}
		}
	}
	return ""
}

func sweepNetworkPolicies(ctx context.Context, p *model.Platform, t model.Tenant, kube kubernetes.Interface) ([]Finding, error) {
	declared, err := manifests.NetworkPolicySpecs(p, t)
	if err != nil {
		return nil, err
	}
	// The Agent Sandbox controller derives one policy per template
	// (<template>-network-policy, controlled by the template) from the
	// template's declared networkPolicy.
	derived, err := manifests.TemplateNetworkPolicySpecs(p, t)
	if err != nil {
		return nil, err
	}
	list, err := kube.NetworkingV1().NetworkPolicies(t.Namespace).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing network policies in %s: %w", t.Namespace, err)
	}
	var out []Finding
	for _, np := range list.Items {
		spec, isPaddock := declared[np.Name]
		isPaddock = isPaddock && np.Labels[model.ManagedByLabel] == model.ManagedByValue && np.Labels[model.PlatformLabel] == p.Name
		isDerived := false
		if ref := metav1.GetControllerOf(&np); ref != nil && ref.Kind == "SandboxTemplate" && np.Name == manifests.TemplateNetworkPolicyName(ref.Name) {
			spec, isDerived = derived[ref.Name]
		}
		del := fmt.Sprintf("kubectl delete networkpolicy -n %s %s", np.Namespace, np.Name)
		if how := openEgress(np.Spec); how != "" && (!(isPaddock || isDerived) || openEgress(spec) == "") && !t.Egress.Unrestricted {
			fix := del
			if isPaddock || isDerived {
				fix = "`paddock up` does not see this change (the field is not one Paddock sets): " + del + ", then `paddock up` recreates it"
			}
			out = append(out, finding(RuleEgressOpen, "NetworkPolicy", np.ObjectMeta, t.Name,
				fmt.Sprintf("%s; policies only add allows, so this undoes tenant %s's default-deny egress", how, t.Name), fix))
			continue
		}
		if !isPaddock && !isDerived {
			out = append(out, finding(RuleForeignNetpol, "NetworkPolicy", np.ObjectMeta, t.Name,
				fmt.Sprintf("tenant %s's network posture is Paddock's: every other policy can only open holes the spec does not declare", t.Name),
				"declare the hole in the tenant's egress block, then "+del))
		}
	}
	return out, nil
}

func sweepPods(ctx context.Context, p *model.Platform, t model.Tenant, kube kubernetes.Interface) ([]Finding, error) {
	allowed := map[string]bool{}
	for _, rc := range p.RuntimeClasses {
		allowed[rc.Name] = true
	}
	for _, tpl := range t.Templates {
		// A template without a runtime class is a waived PDK-301: its pods may run without one.
		allowed[tpl.RuntimeClass] = true
	}
	names := make([]string, 0, len(allowed))
	for n := range allowed {
		if n != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	list, err := kube.CoreV1().Pods(t.Namespace).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing pods in %s: %w", t.Namespace, err)
	}
	var out []Finding
	for _, pod := range list.Items {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		rc := ""
		if pod.Spec.RuntimeClassName != nil {
			rc = *pod.Spec.RuntimeClassName
		}
		if allowed[rc] {
			continue
		}
		got := "no runtime class (the host kernel)"
		if rc != "" {
			got = "runtime class " + rc
		}
		out = append(out, finding(RuleRuntimeMissing, "Pod", pod.ObjectMeta, t.Name,
			fmt.Sprintf("runs with %s; tenant %s's pods must run under %s", got, t.Name, strings.Join(names, " or ")),
			fmt.Sprintf("kubectl delete pod -n %s %s, and find what created it outside the platform's templates", pod.Namespace, pod.Name)))
	}
	return out, nil
}
