package drift

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	admissionv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
)

// Mutating admission (S09). A mutating webhook rewrites a request before it
// is stored: what it adds to a SandboxTemplate (an envFrom of a secret) or to
// a tenant's pods (a sidecar) is in every stored object, so a comparison
// with the API server's answer agrees with it, and it runs in every sandbox.
// Nothing Paddock declares is a mutating webhook, so every one that can
// change a guarded object is reported, judged by what it can reach:
//
//   - its rules: an operation that writes (CREATE, UPDATE or *), the group
//     and resource (any version: the default matchPolicy Equivalent sends a
//     request in another version too) of an object Paddock applies, or of
//     what runs from them (pods, sandboxes and claims in tenant namespaces);
//   - its namespaceSelector, against the live labels of the namespaces those
//     objects are in (a Namespace against its own labels; other
//     cluster-scoped objects are not filtered by it);
//   - its objectSelector and matchConditions never exempt it: they read
//     labels and fields that whoever writes the object chooses, an agent's
//     orchestrator included, so they narrow nothing an attacker cannot widen.
//
// The failure policy changes nothing here: Ignore still mutates whenever the
// webhook answers.

// guardedTarget is one kind of object S09 protects, in the namespaces it is
// in ("" for a cluster-scoped kind).
type guardedTarget struct {
	group, resource string
	kind            string
	namespaced      bool
	namespaces      map[string]bool
}

// guardedTargets are the kinds of everything Paddock applies, with their
// namespaces, and what runs from them in tenant namespaces. Resource names
// come from discovery; a kind the API server does not serve is skipped (it
// cannot be written).
func guardedTargets(built *manifests.Objects, kube kubernetes.Interface) ([]*guardedTarget, error) {
	resources, err := servedResources(kube)
	if err != nil {
		return nil, err
	}
	byKey := map[string]*guardedTarget{}
	add := func(group, kind, ns string) {
		r, ok := resources[schema.GroupKind{Group: group, Kind: kind}]
		if !ok {
			return
		}
		key := group + "/" + r.Name
		t := byKey[key]
		if t == nil {
			t = &guardedTarget{group: group, resource: r.Name, kind: kind, namespaced: r.Namespaced, namespaces: map[string]bool{}}
			byKey[key] = t
		}
		if r.Namespaced && ns != "" {
			t.namespaces[ns] = true
		}
		if kind == "Namespace" {
			t.namespaces[ns] = true
		}
	}
	for _, g := range built.Groups() {
		for _, o := range g.Objects {
			gvk := o.GroupVersionKind()
			ns := o.GetNamespace()
			if gvk.Kind == "Namespace" {
				ns = o.GetName()
			}
			add(gvk.Group, gvk.Kind, ns)
		}
	}
	for _, tp := range built.Tenants {
		ns := tp.Tenant.Namespace
		add("", "Pod", ns)
		add(agentsandbox.Sandboxes.Group, "Sandbox", ns)
		add(agentsandbox.SandboxClaims.Group, "SandboxClaim", ns)
	}
	// The release's own pods (the controller) run from its Deployment.
	for _, o := range built.Release {
		if o.GetKind() == "Deployment" {
			add("", "Pod", o.GetNamespace())
		}
	}
	out := make([]*guardedTarget, 0, len(byKey))
	for _, t := range byKey {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].group+"/"+out[i].resource < out[j].group+"/"+out[j].resource
	})
	return out, nil
}

// servedResources maps each kind the API server serves to its resource (a
// kind's resource name is the same in every version of its group). A group
// whose discovery failed is left out.
func servedResources(kube kubernetes.Interface) (map[schema.GroupKind]metav1.APIResource, error) {
	_, lists, err := kube.Discovery().ServerGroupsAndResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discovering the API server's resources: %w", err)
	}
	out := map[schema.GroupKind]metav1.APIResource{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			out[schema.GroupKind{Group: gv.Group, Kind: r.Kind}] = r
		}
	}
	return out, nil
}

// mutatingWebhooks lists every MutatingWebhookConfiguration, page by page.
func mutatingWebhooks(ctx context.Context, kube kubernetes.Interface) ([]admissionv1.MutatingWebhookConfiguration, error) {
	configs, err := pages(ctx, func(ctx context.Context, o metav1.ListOptions) ([]admissionv1.MutatingWebhookConfiguration, string, error) {
		l, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	}, func(*admissionv1.MutatingWebhookConfiguration) bool { return true })
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("listing mutating webhook configurations: %w", err)
	}
	return configs, nil
}

// sweepMutatingAdmission is S09: every mutating webhook that can change an
// object Paddock guards.
// trusted (nil: none) says which objects the spec trusts (trust_admission):
// they are not reported; AdmissionTrust shows them instead.
func sweepMutatingAdmission(ctx context.Context, built *manifests.Objects, nsLabels map[string]labels.Set, kube kubernetes.Interface, trusted func(kind, name string) bool) ([]Finding, error) {
	if trusted == nil {
		trusted = func(string, string) bool { return false }
	}
	configs, err := mutatingWebhooks(ctx, kube)
	if err != nil {
		return nil, err
	}
	var cached []*guardedTarget
	targets := func() ([]*guardedTarget, error) {
		if cached != nil {
			return cached, nil
		}
		var err error
		cached, err = guardedTargets(built, kube)
		return cached, err
	}
	labelsOf := func(ctx context.Context, ns string) (labels.Set, bool) {
		if l, ok := nsLabels[ns]; ok {
			return l, true
		}
		live, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return nil, false
		}
		l := labels.Set(live.Labels)
		if l == nil {
			l = labels.Set{}
		}
		nsLabels[ns] = l
		return l, true
	}
	out, err := sweepMutatingPolicies(ctx, kube, targets, labelsOf, trusted)
	if err != nil {
		return nil, err
	}
	for _, c := range configs {
		if trusted(model.AdmissionWebhook, c.Name) {
			continue
		}
		for _, w := range c.Webhooks {
			ts, err := targets()
			if err != nil {
				return nil, err
			}
			reach := webhookReach(ctx, w, ts, labelsOf)
			if len(reach) == 0 {
				continue
			}
			reason := fmt.Sprintf("webhook %s (%s) can rewrite %s before it is stored", w.Name, webhookTarget(w.ClientConfig), strings.Join(reach, "; "))
			var caveats []string
			if !emptySelector(w.ObjectSelector) {
				caveats = append(caveats, "its objectSelector reads labels the object's writer chooses")
			}
			if len(w.MatchConditions) > 0 {
				caveats = append(caveats, "its matchConditions read fields the object's writer chooses")
			}
			if len(caveats) > 0 {
				reason += " (" + strings.Join(caveats, "; ") + ", so they narrow nothing)"
			}
			reason += ": what it adds is stored as if Paddock or the tenant had written it, so no comparison with the API server's answer can see it"
			fix := fmt.Sprintf("remove webhook %s from MutatingWebhookConfiguration %s (kubectl delete mutatingwebhookconfiguration %s), or narrow its rules "+
				"or namespaceSelector so that it selects no tenant namespace and not the Agent Sandbox release; then `paddock up --full` asks the API server afresh how it stores each object and rewrites what the webhook changed",
				w.Name, c.Name, c.Name)
			out = append(out, finding(RuleMutatingAdmission, "MutatingWebhookConfiguration", c.ObjectMeta, "", reason, fix))
		}
	}
	return out, nil
}

// sweepMutatingPolicies is S09 for MutatingAdmissionPolicies, where the API
// server serves them (v1, or v1beta1 behind its feature gate): a policy acts
// through each of its bindings, on what both its match constraints and the
// binding's match resources send it.
func sweepMutatingPolicies(ctx context.Context, kube kubernetes.Interface, targets func() ([]*guardedTarget, error),
	labelsOf func(context.Context, string) (labels.Set, bool), trusted func(kind, name string) bool) ([]Finding, error) {
	policies, bindings, err := mutatingPolicies(ctx, kube)
	if err != nil || len(bindings) == 0 {
		return nil, err
	}
	ts, err := targets()
	if err != nil {
		return nil, err
	}
	byName := map[string]admissionv1.MutatingAdmissionPolicy{}
	for _, p := range policies {
		byName[p.Name] = p
	}
	var out []Finding
	for _, b := range bindings {
		p, ok := byName[b.Spec.PolicyName]
		if !ok || p.Spec.MatchConstraints == nil || trusted(model.AdmissionPolicy, p.Name) {
			continue
		}
		selectors := []*metav1.LabelSelector{p.Spec.MatchConstraints.NamespaceSelector}
		bindingRules := b.Spec.MatchResources != nil && len(b.Spec.MatchResources.ResourceRules) > 0
		if b.Spec.MatchResources != nil {
			selectors = append(selectors, b.Spec.MatchResources.NamespaceSelector)
		}
		r := reach(ctx, ts, labelsOf, selectors, func(op admissionv1.OperationType, t *guardedTarget) bool {
			if !matchResourcesSend(p.Spec.MatchConstraints, op, t) {
				return false
			}
			if b.Spec.MatchResources != nil {
				for _, ex := range b.Spec.MatchResources.ExcludeResourceRules {
					if len(ex.ResourceNames) == 0 && ruleSends(ex.RuleWithOperations, op, t) {
						return false
					}
				}
			}
			return !bindingRules || matchResourcesSend(b.Spec.MatchResources, op, t)
		})
		if len(r) == 0 {
			continue
		}
		reason := fmt.Sprintf("bound by %s, it can rewrite %s before it is stored (object selectors and match conditions narrow nothing: the object's writer chooses what they read): "+
			"what it adds is stored as if Paddock or the tenant had written it, so no comparison with the API server's answer can see it", b.Name, strings.Join(r, "; "))
		fix := fmt.Sprintf("remove the binding (kubectl delete mutatingadmissionpolicybinding %s) or narrow its match resources so that it selects no tenant namespace "+
			"and not the Agent Sandbox release; then `paddock up --full` asks the API server afresh how it stores each object and rewrites what the policy changed", b.Name)
		out = append(out, finding(RuleMutatingAdmission, "MutatingAdmissionPolicy", p.ObjectMeta, "", reason, fix))
	}
	return out, nil
}

// mutatingPolicies lists the MutatingAdmissionPolicies and their bindings in
// the newest version the API server serves (none when it serves none).
func mutatingPolicies(ctx context.Context, kube kubernetes.Interface) ([]admissionv1.MutatingAdmissionPolicy, []admissionv1.MutatingAdmissionPolicyBinding, error) {
	served := func(gv string) bool {
		l, err := kube.Discovery().ServerResourcesForGroupVersion(gv)
		if err != nil {
			return false
		}
		for _, r := range l.APIResources {
			if r.Name == "mutatingadmissionpolicies" {
				return true
			}
		}
		return false
	}
	switch {
	case served(admissionv1.SchemeGroupVersion.String()):
		ps, err := kube.AdmissionregistrationV1().MutatingAdmissionPolicies().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("listing mutating admission policies: %w", err)
		}
		bs, err := kube.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("listing mutating admission policy bindings: %w", err)
		}
		return ps.Items, bs.Items, nil
	case served(admissionv1beta1.SchemeGroupVersion.String()):
		ps, err := kube.AdmissionregistrationV1beta1().MutatingAdmissionPolicies().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("listing mutating admission policies: %w", err)
		}
		bs, err := kube.AdmissionregistrationV1beta1().MutatingAdmissionPolicyBindings().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("listing mutating admission policy bindings: %w", err)
		}
		// v1beta1 has the shape v1 kept: read it as v1.
		var policies []admissionv1.MutatingAdmissionPolicy
		var bindings []admissionv1.MutatingAdmissionPolicyBinding
		if err := sameShape(ps.Items, &policies); err != nil {
			return nil, nil, err
		}
		if err := sameShape(bs.Items, &bindings); err != nil {
			return nil, nil, err
		}
		return policies, bindings, nil
	}
	return nil, nil, nil
}

// sameShape copies in into out through JSON, for API versions of one shape.
func sameShape(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// webhookReach lists what webhook w can change among targets.
func webhookReach(ctx context.Context, w admissionv1.MutatingWebhook, targets []*guardedTarget, labelsOf func(context.Context, string) (labels.Set, bool)) []string {
	return reach(ctx, targets, labelsOf, []*metav1.LabelSelector{w.NamespaceSelector}, func(op admissionv1.OperationType, t *guardedTarget) bool {
		return webhookRulesMatch(w.Rules, op, t)
	})
}

// reach lists what a mutating admission object can change among targets,
// one entry per kind ("create, update pods in agents-a, agents-b"): the
// operations matches admits, in the namespaces every one of nsSelectors
// selects (nil selects all).
func reach(ctx context.Context, targets []*guardedTarget, labelsOf func(context.Context, string) (labels.Set, bool),
	nsSelectors []*metav1.LabelSelector, matches func(admissionv1.OperationType, *guardedTarget) bool) []string {
	selectsAll := func(l labels.Set) bool {
		for _, s := range nsSelectors {
			if s == nil {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(s)
			// An unreadable selector fails closed: the API server refuses one,
			// and one it kept is judged to match.
			if err == nil && !sel.Matches(l) {
				return false
			}
		}
		return true
	}
	var out []string
	for _, t := range targets {
		var ops []string
		for _, op := range []admissionv1.OperationType{admissionv1.Create, admissionv1.Update} {
			if matches(op, t) {
				ops = append(ops, strings.ToLower(string(op)))
			}
		}
		if len(ops) == 0 {
			continue
		}
		what := strings.Join(ops, ", ") + " " + t.resource
		if t.group != "" {
			what += "." + t.group
		}
		if !t.namespaced && t.kind != "Namespace" {
			out = append(out, what)
			continue
		}
		var in []string
		for ns := range t.namespaces {
			if l, live := labelsOf(ctx, ns); !live || selectsAll(l) {
				in = append(in, ns)
			}
		}
		if len(in) == 0 {
			continue
		}
		sort.Strings(in)
		out = append(out, what+" in "+strings.Join(in, ", "))
	}
	return out
}

// webhookRulesMatch reports whether any rule sends requests of operation op
// on target t to the webhook. Versions are not compared: under the default
// matchPolicy Equivalent a request in any version is sent, converted.
func webhookRulesMatch(rules []admissionv1.RuleWithOperations, op admissionv1.OperationType, t *guardedTarget) bool {
	for _, r := range rules {
		if ruleSends(r, op, t) {
			return true
		}
	}
	return false
}

// ruleSends reports whether one rule sends requests of operation op on
// target t, in any version.
func ruleSends(r admissionv1.RuleWithOperations, op admissionv1.OperationType, t *guardedTarget) bool {
	if !hasOp(r.Operations, op) || !has(r.APIGroups, t.group) || !admissionResourceMatches(r.Resources, t.resource) {
		return false
	}
	scope := admissionv1.AllScopes
	if r.Scope != nil {
		scope = *r.Scope
	}
	return scope == admissionv1.AllScopes ||
		scope == admissionv1.NamespacedScope && t.namespaced ||
		scope == admissionv1.ClusterScope && !t.namespaced
}

// matchResourcesSend reports whether match resources m send requests of
// operation op on target t: one of its rules does and no exclusion takes
// every object of it away (an exclusion by name leaves the others).
func matchResourcesSend(m *admissionv1.MatchResources, op admissionv1.OperationType, t *guardedTarget) bool {
	if m == nil {
		return false
	}
	for _, ex := range m.ExcludeResourceRules {
		if len(ex.ResourceNames) == 0 && ruleSends(ex.RuleWithOperations, op, t) {
			return false
		}
	}
	for _, r := range m.ResourceRules {
		if ruleSends(r.RuleWithOperations, op, t) {
			return true
		}
	}
	return false
}

// webhookTarget says where a webhook sends its requests.
func webhookTarget(c admissionv1.WebhookClientConfig) string {
	switch {
	case c.Service != nil:
		return "service " + c.Service.Namespace + "/" + c.Service.Name
	case c.URL != nil:
		return "URL " + *c.URL
	}
	return "no endpoint"
}

// AdmissionFingerprint identifies the cluster's mutating admission as it is
// now: every MutatingWebhookConfiguration and, where served, every
// MutatingAdmissionPolicy and binding, by name and generation. The stored
// form of an object is what admission made of it, so a cache of stored
// forms is only good while this stays the same.
func AdmissionFingerprint(ctx context.Context, kube kubernetes.Interface) (string, error) {
	var parts []string
	configs, err := mutatingWebhooks(ctx, kube)
	if err != nil {
		return "", err
	}
	for _, c := range configs {
		// Webhook configurations keep no generation: their content is hashed.
		b, err := json.Marshal(c.Webhooks)
		if err != nil {
			return "", err
		}
		parts = append(parts, fmt.Sprintf("webhook %s %x", c.Name, sha256.Sum256(b)))
	}
	policies, bindings, err := mutatingPolicies(ctx, kube)
	if err != nil {
		return "", err
	}
	for _, p := range policies {
		parts = append(parts, fmt.Sprintf("policy %s %s %d", p.Name, p.UID, p.Generation))
	}
	for _, b := range bindings {
		parts = append(parts, fmt.Sprintf("binding %s %s %d", b.Name, b.UID, b.Generation))
	}
	return fingerprintOf(parts), nil
}

func fingerprintOf(parts []string) string {
	sort.Strings(parts)
	sum := sha256.Sum256([]byte(strings.Join(parts, "\n")))
	return hex.EncodeToString(sum[:8])
}

// NoAdmission is the AdmissionFingerprint of a cluster without any mutating
// webhook configuration or admission policy: nothing rewrites a write.
var NoAdmission = fingerprintOf(nil)
