package drift

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/paddock-platform/paddock/internal/model"
)

// What mutating admission added to the reference. The reference Compare
// judges a live object by is the server-side dry-run of what Paddock
// applies, and that request passes through every mutating webhook and
// policy: an envFrom of a secret injected into a SandboxTemplate would be in
// the reference as in the live object, and the two would agree. So the
// dry-run's answer is split in two: what the API server itself explains
// (the desired object, with its CRD's structural defaults and pruning for a
// custom resource), and the rest. The rest is taken out of the reference,
// where a mutating admission object can rewrite the object (the S09 rules
// and namespace selectors, for an UPDATE, which the dry-run is), and noted
// in it (admissionKey) with the objects that could have added it; Compare
// then reports it as drift naming them.
//
// Defaulting is known exactly only for custom resources: their defaults and
// pruning come from the CRD's structural schema alone. A built-in kind's
// defaulting is compiled into the API server, so for one only what no
// built-in defaulting ever does is attributed to admission: an element added
// to a list Paddock built or a list it did not (env, envFrom, containers,
// volumes, ...), a label or annotation added. A changed or removed value of a
// built-in kind is never attributed (the server canonicalises quantities).
// With no mutating admission object that can rewrite the object, nothing is
// attributed at all.

// admissionKey holds, in a reference, the notes of what admission added:
// [{"path": "spec.x", "by": ["mutatingwebhookconfiguration/a"], "can":
// "sandboxtemplates.agents.x-k8s.io in agents-a"}]. No Kubernetes object
// has a top-level field of this name.
const admissionKey = "__paddockAdmissionAdded"

// Admission attributes what a dry-run added to the mutating admission
// objects of one cluster. It reads them once (the first object that needs
// it), and each namespace's labels and each CRD's schema once. Safe for
// concurrent use.
type Admission struct {
	dyn dynamic.Interface

	once     sync.Once
	err      error
	webhooks []admissionv1.MutatingWebhookConfiguration
	policies map[string]admissionv1.MutatingAdmissionPolicy
	bindings []admissionv1.MutatingAdmissionPolicyBinding

	mu      sync.Mutex
	nsLabel map[string]labels.Set
	schemas map[schema.GroupVersionResource]*crdSchema
}

// crdSchema is one served version's structural schema (nil Root: a built-in
// kind, or one whose schema cannot be read).
type crdSchema struct {
	Root map[string]any
}

// NewAdmission reads the cluster through dyn.
func NewAdmission(dyn dynamic.Interface) *Admission {
	return &Admission{dyn: dyn, nsLabel: map[string]labels.Set{}, schemas: map[schema.GroupVersionResource]*crdSchema{}}
}

var (
	webhooksGVR         = admissionv1.SchemeGroupVersion.WithResource("mutatingwebhookconfigurations")
	crdsGVR             = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	namespacesGVR       = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	policyVersionsOrder = []string{"v1", "v1beta1"}
)

func (a *Admission) load(ctx context.Context) error {
	a.once.Do(func() {
		l, err := a.dyn.Resource(webhooksGVR).List(ctx, metav1.ListOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			a.err = fmt.Errorf("listing mutating webhook configurations: %w", err)
			return
		}
		if l != nil {
			for _, u := range l.Items {
				var c admissionv1.MutatingWebhookConfiguration
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &c); err != nil {
					a.err = fmt.Errorf("reading mutating webhook configuration %s: %w", u.GetName(), err)
					return
				}
				a.webhooks = append(a.webhooks, c)
			}
		}
		a.policies = map[string]admissionv1.MutatingAdmissionPolicy{}
		// The newest version served; v1beta1 has the shape v1 kept.
		for _, v := range policyVersionsOrder {
			gv := schema.GroupVersion{Group: admissionv1.GroupName, Version: v}
			ps, err := a.dyn.Resource(gv.WithResource("mutatingadmissionpolicies")).List(ctx, metav1.ListOptions{})
			if apierrors.IsNotFound(err) || isNotServed(err) {
				continue
			}
			if err != nil {
				a.err = fmt.Errorf("listing mutating admission policies: %w", err)
				return
			}
			bs, err := a.dyn.Resource(gv.WithResource("mutatingadmissionpolicybindings")).List(ctx, metav1.ListOptions{})
			if err != nil {
				a.err = fmt.Errorf("listing mutating admission policy bindings: %w", err)
				return
			}
			for _, u := range ps.Items {
				var p admissionv1.MutatingAdmissionPolicy
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err == nil {
					a.policies[p.Name] = p
				}
			}
			for _, u := range bs.Items {
				var b admissionv1.MutatingAdmissionPolicyBinding
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &b); err == nil {
					a.bindings = append(a.bindings, b)
				}
			}
			break
		}
	})
	return a.err
}

// isNotServed reports an error of a resource the server does not serve
// (the dynamic client's 404 without a status body reads as NotFound too).
func isNotServed(err error) bool {
	return err != nil && (apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) || strings.Contains(err.Error(), "the server could not find the requested resource"))
}

// labelsOf are the live labels of namespace ns (false: it cannot be read).
func (a *Admission) labelsOf(ctx context.Context, ns string) (labels.Set, bool) {
	a.mu.Lock()
	l, ok := a.nsLabel[ns]
	a.mu.Unlock()
	if ok {
		return l, l != nil
	}
	u, err := a.dyn.Resource(namespacesGVR).Get(ctx, ns, metav1.GetOptions{})
	if err == nil {
		l = labels.Set(u.GetLabels())
		if l == nil {
			l = labels.Set{}
		}
	}
	a.mu.Lock()
	a.nsLabel[ns] = l
	a.mu.Unlock()
	return l, l != nil
}

// Candidates are the mutating admission objects that can rewrite an UPDATE
// of the object (group, resource, namespace; a Namespace is judged by its
// own labels), as model.AdmissionRef names them, and what they rewrite
// there ("sandboxtemplates.agents.x-k8s.io in agents-a").
func (a *Admission) Candidates(ctx context.Context, gvr schema.GroupVersionResource, kind, namespace, name string) ([]string, string, error) {
	if err := a.load(ctx); err != nil {
		return nil, "", err
	}
	if len(a.webhooks) == 0 && len(a.bindings) == 0 {
		return nil, "", nil
	}
	t := &guardedTarget{group: gvr.Group, resource: gvr.Resource, kind: kind, namespaced: namespace != "", namespaces: map[string]bool{}}
	if namespace != "" {
		t.namespaces[namespace] = true
	}
	if kind == "Namespace" {
		t.namespaces[name] = true
	}
	targets := []*guardedTarget{t}
	update := func(match func(admissionv1.OperationType, *guardedTarget) bool) func(admissionv1.OperationType, *guardedTarget) bool {
		return func(op admissionv1.OperationType, t *guardedTarget) bool {
			return op == admissionv1.Update && match(op, t)
		}
	}
	var refs []string
	for _, c := range a.webhooks {
		for _, w := range c.Webhooks {
			r := reach(ctx, targets, a.labelsOf, []*metav1.LabelSelector{w.NamespaceSelector}, update(func(op admissionv1.OperationType, t *guardedTarget) bool {
				return webhookRulesMatch(w.Rules, op, t)
			}))
			if len(r) > 0 {
				refs = append(refs, model.AdmissionRef(model.AdmissionWebhook, c.Name))
				break
			}
		}
	}
	for _, b := range a.bindings {
		p, ok := a.policies[b.Spec.PolicyName]
		if !ok || p.Spec.MatchConstraints == nil {
			continue
		}
		selectors := []*metav1.LabelSelector{p.Spec.MatchConstraints.NamespaceSelector}
		bindingRules := b.Spec.MatchResources != nil && len(b.Spec.MatchResources.ResourceRules) > 0
		if b.Spec.MatchResources != nil {
			selectors = append(selectors, b.Spec.MatchResources.NamespaceSelector)
		}
		r := reach(ctx, targets, a.labelsOf, selectors, update(func(op admissionv1.OperationType, t *guardedTarget) bool {
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
		}))
		if ref := model.AdmissionRef(model.AdmissionPolicy, p.Name); len(r) > 0 && !containsString(refs, ref) {
			refs = append(refs, ref)
		}
	}
	sort.Strings(refs)
	what := gvr.Resource
	if gvr.Group != "" {
		what += "." + gvr.Group
	}
	switch {
	case kind == "Namespace":
		what += " " + name
	case namespace != "":
		what += " in " + namespace
	}
	return refs, what, nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// schemaOf is the structural schema of gvr's version when gvr is a custom
// resource (nil Root otherwise).
func (a *Admission) schemaOf(ctx context.Context, gvr schema.GroupVersionResource) (*crdSchema, error) {
	a.mu.Lock()
	s, ok := a.schemas[gvr]
	a.mu.Unlock()
	if ok {
		return s, nil
	}
	s = &crdSchema{}
	// Built-in groups hold no dot or end in .k8s.io, as some CRDs' do too:
	// whether a CRD serves the group is asked, not guessed.
	if strings.Contains(gvr.Group, ".") {
		u, err := a.dyn.Resource(crdsGVR).Get(ctx, gvr.Resource+"."+gvr.Group, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("reading the CustomResourceDefinition of %s.%s: %w", gvr.Resource, gvr.Group, err)
		default:
			s.Root = servedSchema(u, gvr.Version)
		}
	}
	a.mu.Lock()
	a.schemas[gvr] = s
	a.mu.Unlock()
	return s, nil
}

// servedSchema is the openAPIV3Schema of version v of a CRD (nil: none).
func servedSchema(crd *unstructured.Unstructured, v string) map[string]any {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, x := range versions {
		m, _ := x.(map[string]any)
		if m["name"] != v {
			continue
		}
		root, _, _ := unstructured.NestedMap(m, "schema", "openAPIV3Schema")
		return root
	}
	return nil
}

// Reference is stored (the dry-run's answer for desired, of resource gvr)
// with what mutating admission added to it taken out and noted
// (admissionKey), for Compare. It is stored unchanged when no admission
// object can rewrite the object or nothing is unexplained.
func (a *Admission) Reference(ctx context.Context, gvr schema.GroupVersionResource, desired *unstructured.Unstructured, stored map[string]any) (map[string]any, error) {
	refs, what, err := a.Candidates(ctx, gvr, desired.GetKind(), desired.GetNamespace(), desired.GetName())
	if err != nil || len(refs) == 0 {
		return stored, err
	}
	sch, err := a.schemaOf(ctx, gvr)
	if err != nil {
		return nil, err
	}
	return splitAdmission(desired.Object, stored, sch.Root, refs, what), nil
}

// splitAdmission is Reference once the candidates and the schema are known:
// root is the CRD's structural schema (nil for a built-in kind).
func splitAdmission(desired, stored, root map[string]any, refs []string, what string) map[string]any {
	explained := Comparable(desired)
	if root != nil {
		explained = applyStructural(explained, root).(map[string]any)
	}
	ref := Comparable(stored)
	var diffs []Difference
	diffValue(nil, explained, ref, &diffs)
	kind, _ := desired["kind"].(string)
	var notes []any
	noted := map[string]bool{}
	for _, d := range diffs {
		if !admissionMade(d, kind, root != nil) {
			continue
		}
		at := d.Path
		if i := firstIndexStep(at); i >= 0 {
			// An unkeyed list is put back whole: its elements have no identity.
			at = at[:i]
		}
		key := at.String()
		if noted[key] {
			continue
		}
		want, ok := lookupPath(explained, at)
		setPath(ref, at, want, ok)
		noted[key] = true
		by := make([]any, len(refs))
		for i, r := range refs {
			by[i] = r
		}
		notes = append(notes, map[string]any{"path": key, "by": by, "can": what})
	}
	if len(notes) == 0 {
		return stored
	}
	ref[admissionKey] = notes
	return ref
}

// neverDefaulted are fields no built-in defaulting of the kinds Paddock
// applies ever sets: lists of what runs and what it sees.
var neverDefaulted = map[string]bool{
	"containers": true, "initContainers": true, "ephemeralContainers": true, "volumes": true,
	"env": true, "envFrom": true, "volumeMounts": true, "volumeDevices": true,
	"imagePullSecrets": true, "command": true, "args": true, "hostAliases": true,
}

// serverLabels are labels the API server itself sets, by kind.
var serverLabels = map[string]map[string]bool{
	"Namespace": {"kubernetes.io/metadata.name": true},
}

// admissionMade reports whether a difference between what the server
// explains and what the dry-run stored can only be admission's doing.
func admissionMade(d Difference, kind string, custom bool) bool {
	if isEmptyValue(d.Expected) && isEmptyValue(d.Live) {
		return false
	}
	if custom {
		// Defaults and pruning are in the explained side: the rest is not
		// the server's.
		return true
	}
	if d.Expected != nil || len(d.Path) == 0 {
		return false
	}
	last := d.Path[len(d.Path)-1]
	switch {
	case last.matchKey != "":
		return true // an element added to a keyed list Paddock built
	case last.key == "":
		return true // an element added past the end of an unkeyed list
	case neverDefaulted[last.key]:
		return true
	}
	if n := len(d.Path); n >= 2 && d.Path[n-2].key == "metadata" && (last.key == "labels" || last.key == "annotations") {
		// A whole map of them added; the server's own labels alone are not.
		m, _ := d.Live.(map[string]any)
		for k := range m {
			if last.key != "labels" || n != 2 || !serverLabels[kind][k] {
				return true
			}
		}
		return false
	}
	if n := len(d.Path); n >= 3 {
		parent, grand := d.Path[n-2].key, d.Path[n-3].key
		if (parent == "labels" || parent == "annotations") && grand == "metadata" {
			return !(parent == "labels" && n == 3 && serverLabels[kind][last.key])
		}
	}
	return false
}

func isEmptyValue(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// firstIndexStep is the position of the first unkeyed list step of p, or -1.
func firstIndexStep(p Path) int {
	for i, s := range p {
		if s.key == "" && s.matchKey == "" {
			return i
		}
	}
	return -1
}

// lookupPath reads p (keys and keyed list elements) in v.
func lookupPath(v any, p Path) (any, bool) {
	cur := v
	for _, s := range p {
		switch {
		case s.key != "":
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[s.key]; !ok {
				return nil, false
			}
		case s.matchKey != "":
			l, ok := cur.([]any)
			if !ok {
				return nil, false
			}
			i := keyedIndex(l, s)
			if i < 0 {
				return nil, false
			}
			cur = l[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func keyedIndex(l []any, s step) int {
	for i, e := range l {
		if m, ok := e.(map[string]any); ok && m[s.matchKey] == s.matchVal {
			return i
		}
	}
	return -1
}

// setPath sets p in root to v, or removes it when !present. p holds keys and
// keyed list elements only; a missing parent means nothing to do.
func setPath(root map[string]any, p Path, v any, present bool) {
	if len(p) == 0 {
		return
	}
	parent, ok := lookupPath(root, p[:len(p)-1])
	if !ok {
		return
	}
	last := p[len(p)-1]
	switch {
	case last.key != "":
		m, ok := parent.(map[string]any)
		if !ok {
			return
		}
		if present {
			m[last.key] = v
		} else {
			delete(m, last.key)
		}
	case last.matchKey != "":
		l, ok := parent.([]any)
		if !ok {
			return
		}
		i := keyedIndex(l, last)
		switch {
		case i < 0 && present:
			l = append(l, v)
		case i < 0:
			return
		case present:
			l[i] = v
		default:
			l = append(l[:i:i], l[i+1:]...)
		}
		// The list may have a new length: write it back into its parent.
		if len(p) == 1 {
			return
		}
		setPath(root, p[:len(p)-1], l, true)
	}
}

// admissionNote is one entry of admissionKey.
type admissionNote struct {
	path string
	by   []string
	can  string
}

// takeAdmission removes the notes from a comparable reference and returns
// them.
func takeAdmission(ref map[string]any) []admissionNote {
	raw, ok := ref[admissionKey].([]any)
	delete(ref, admissionKey)
	if !ok {
		return nil
	}
	var out []admissionNote
	for _, x := range raw {
		m, _ := x.(map[string]any)
		n := admissionNote{}
		n.path, _ = m["path"].(string)
		n.can, _ = m["can"].(string)
		by, _ := m["by"].([]any)
		for _, b := range by {
			if s, ok := b.(string); ok {
				n.by = append(n.by, s)
			}
		}
		if n.path != "" && len(n.by) > 0 {
			out = append(out, n)
		}
	}
	return out
}

// under reports whether path is at or below prefix.
func under(path, prefix string) bool {
	if !strings.HasPrefix(path, prefix) {
		return false
	}
	rest := path[len(prefix):]
	return rest == "" || rest[0] == '.' || rest[0] == '['
}

// applyStructural is v as the API server stores it under structural schema
// s: fields the schema does not declare pruned (where it does not preserve
// unknown fields), then its defaults filled in where a field is absent,
// at every level, defaults included. Metadata and the object's apiVersion
// and kind are the server's, never pruned.
func applyStructural(v any, s map[string]any) any {
	v = prune(v, s, true)
	return defaults(v, s)
}

func prune(v any, s map[string]any, root bool) any {
	if s == nil {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		if b, _ := s["x-kubernetes-preserve-unknown-fields"].(bool); b {
			// Known fields are still pruned below themselves.
			props, _ := s["properties"].(map[string]any)
			for k, e := range x {
				if ps, ok := props[k].(map[string]any); ok {
					x[k] = prune(e, ps, false)
				}
			}
			return x
		}
		embedded, _ := s["x-kubernetes-embedded-resource"].(bool)
		props, _ := s["properties"].(map[string]any)
		add, _ := s["additionalProperties"].(map[string]any)
		addAny, _ := s["additionalProperties"].(bool)
		for k, e := range x {
			if (root || embedded) && (k == "apiVersion" || k == "kind" || k == "metadata") {
				continue
			}
			switch ps, ok := props[k].(map[string]any); {
			case ok:
				x[k] = prune(e, ps, false)
			case add != nil:
				x[k] = prune(e, add, false)
			case addAny:
			default:
				delete(x, k)
			}
		}
		return x
	case []any:
		items, _ := s["items"].(map[string]any)
		for i, e := range x {
			x[i] = prune(e, items, false)
		}
		return x
	}
	return v
}

func defaults(v any, s map[string]any) any {
	if s == nil {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for k, p := range props {
			ps, _ := p.(map[string]any)
			if _, has := x[k]; !has {
				if d, ok := ps["default"]; ok && d != nil {
					x[k] = normalize(d)
				}
			}
		}
		for k, e := range x {
			if ps, ok := props[k].(map[string]any); ok {
				x[k] = defaults(e, ps)
			} else if add, ok := s["additionalProperties"].(map[string]any); ok {
				x[k] = defaults(e, add)
			}
		}
		return x
	case []any:
		items, _ := s["items"].(map[string]any)
		for i, e := range x {
			x[i] = defaults(e, items)
		}
		return x
	}
	return v
}
