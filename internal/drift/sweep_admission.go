package drift

import (
	"context"
	"fmt"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
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

// sweepMutatingAdmission is S09: every mutating webhook that can change an
// object Paddock guards.
func sweepMutatingAdmission(ctx context.Context, built *manifests.Objects, nsLabels map[string]labels.Set, kube kubernetes.Interface) ([]Finding, error) {
	configs, err := pages(ctx, func(ctx context.Context, o metav1.ListOptions) ([]admissionv1.MutatingWebhookConfiguration, string, error) {
		l, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	}, func(*admissionv1.MutatingWebhookConfiguration) bool { return true })
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing mutating webhook configurations: %w", err)
	}
	if len(configs) == 0 {
		return nil, nil
	}
	targets, err := guardedTargets(built, kube)
	if err != nil {
		return nil, err
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
	var out []Finding
	for _, c := range configs {
		for _, w := range c.Webhooks {
			reach := webhookReach(ctx, w, targets, labelsOf)
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

// webhookReach lists what webhook w can change among targets, one entry per
// kind: "create, update pods in agents-a, agents-b".
func webhookReach(ctx context.Context, w admissionv1.MutatingWebhook, targets []*guardedTarget, labelsOf func(context.Context, string) (labels.Set, bool)) []string {
	nsSel, selErr := metav1.LabelSelectorAsSelector(w.NamespaceSelector)
	if w.NamespaceSelector == nil {
		nsSel = labels.Everything()
	}
	var out []string
	for _, t := range targets {
		var ops []string
		for _, op := range []admissionv1.OperationType{admissionv1.Create, admissionv1.Update} {
			if webhookRulesMatch(w.Rules, op, t) {
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
			l, live := labelsOf(ctx, ns)
			// An unreadable selector fails closed: the API server refuses such a
			// configuration, and one it kept is judged to match.
			if !live || selErr != nil || nsSel.Matches(l) {
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
		if !hasOp(r.Operations, op) || !has(r.APIGroups, t.group) || !admissionResourceMatches(r.Resources, t.resource) {
			continue
		}
		scope := admissionv1.AllScopes
		if r.Scope != nil {
			scope = *r.Scope
		}
		switch {
		case scope == admissionv1.AllScopes,
			scope == admissionv1.NamespacedScope && t.namespaced,
			scope == admissionv1.ClusterScope && !t.namespaced:
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
