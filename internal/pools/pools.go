// Package pools reads how fresh the warm pools on a live cluster are: which
// of a pool's sandboxes were built from the template the pool uses now
// (current), which from an older one or another template (stale), and which
// a claim has taken (claimed: a session's, never touched). `up` waits on it,
// `verify` (V07) judges it and `status` shows it. It only reads.
//
// The Agent Sandbox controller (v0.5.6) marks each sandbox it creates for a
// pool with two labels: agents.x-k8s.io/sandbox-template-ref-hash, a hash of
// the template's name, and agents.x-k8s.io/sandbox-template-hash, a hash of
// the template's blueprint (spec.podTemplate, volumeClaimTemplates and
// service) as the controller serialised it then. A sandbox is stale when the
// name hash is not that of the pool's template, or when the blueprint hash
// differs and its blueprint differs from the template's in a way the
// controller counts: pod spec, volume claim templates and service, never
// labels or annotations. That is the controller's own test, so a sandbox
// this package calls stale is one a Recreate pool replaces.
package pools

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"

	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
)

// State is what a sandbox of a pool is.
type State string

const (
	// Current: an unclaimed pool sandbox built from the template the pool
	// uses now.
	Current State = "current"
	// Stale: an unclaimed pool sandbox built from an older revision of the
	// template, or from another template.
	Stale State = "stale"
	// Claimed: a sandbox a claim on the pool has taken; it serves that
	// session and is never replaced.
	Claimed State = "claimed"
	// Terminating: a pool sandbox being deleted; no claim can take it.
	Terminating State = "terminating"
)

// Sandbox is one sandbox of a pool.
type Sandbox struct {
	Name  string `json:"name"`
	State State  `json:"state"`
	// Ready: its Ready condition is true and its pod exists and is Ready.
	Ready   bool      `json:"ready"`
	Created time.Time `json:"created"`
	// Claim is the claim that took it (claimed sandboxes only).
	Claim string `json:"claim,omitempty"`
	// TemplateHash is the blueprint hash it was built from (its label).
	TemplateHash string `json:"templateHash,omitempty"`
	// Why says what makes a stale sandbox stale.
	Why string `json:"why,omitempty"`
	// Diverged: a stale sandbox whose pod no longer runs what the template
	// says in a way the controller's hash test cannot see (an image set on
	// the pod, its runtime class deleted and recreated after the pod
	// started: it may run under another handler). The controller never
	// replaces it, so `up` deletes it (unclaimed only).
	Diverged bool `json:"diverged,omitempty"`
	// UID is the sandbox's, for a delete that must not hit a successor.
	UID types.UID `json:"-"`
}

// Pool is the freshness of one warm pool.
type Pool struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Template  string `json:"template"`
	// UpdateStrategy is the pool's effective spec.updateStrategy.type
	// (OnReplenish when unset, as the controller reads it).
	UpdateStrategy string `json:"updateStrategy"`
	// TemplateHash is the hash of the template's blueprint now.
	TemplateHash string `json:"templateHash,omitempty"`
	// TemplateWritten is when the template was last written (its newest
	// managedFields entry, else its creation), to the second.
	TemplateWritten time.Time `json:"templateWritten,omitzero"`
	Desired         int32     `json:"desired"`
	// Ready counts current sandboxes that are ready: the pool's capacity for
	// warm sessions on today's template.
	Ready int32 `json:"ready"`
	// Current, Stale and Terminating count unclaimed pool sandboxes.
	Current     int32 `json:"current"`
	Stale       int32 `json:"stale"`
	Terminating int32 `json:"terminating"`
	// Diverged counts the stale sandboxes whose pods diverged (Sandbox.Diverged).
	Diverged int32 `json:"diverged,omitempty"`
	// Claimed counts sandboxes claims on the pool hold.
	Claimed int32 `json:"claimed"`
	// Oldest is when the pool's oldest unclaimed sandbox was created (zero
	// when it has none).
	Oldest time.Time `json:"oldest,omitzero"`
	// Problem says why the pool could not be judged (its template is
	// missing); the counts are then of what could be read.
	Problem   string    `json:"problem,omitempty"`
	Sandboxes []Sandbox `json:"sandboxes"`
}

// Key is "namespace/name".
func (p *Pool) Key() string { return p.Namespace + "/" + p.Name }

// Fresh reports whether the pool holds only current sandboxes and enough
// of them ready.
func (p *Pool) Fresh() bool {
	return p.Problem == "" && p.Stale == 0 && p.Ready >= p.Desired
}

// OldestAge is how long the oldest unclaimed sandbox has existed at now.
func (p *Pool) OldestAge(now time.Time) time.Duration {
	if p.Oldest.IsZero() {
		return 0
	}
	return now.Sub(p.Oldest)
}

// StaleNames are the pool's stale sandboxes, by name.
func (p *Pool) StaleNames() []string {
	var out []string
	for _, s := range p.Sandboxes {
		if s.State == Stale {
			out = append(out, s.Name)
		}
	}
	return out
}

// DivergedNames are the pool's diverged sandboxes, by name.
func (p *Pool) DivergedNames() []string {
	var out []string
	for _, s := range p.Sandboxes {
		if s.Diverged {
			out = append(out, s.Name)
		}
	}
	return out
}

// RuntimeClasses are the cluster's RuntimeClass objects by name, with when
// each was created: a pod created before its class object was admitted
// under an earlier one, whose handler may have been another. Nil when
// unknown: the class test is then skipped.
type RuntimeClasses map[string]time.Time

// Clients reach the cluster.
type Clients struct {
	Dyn  dynamic.Interface
	Kube kubernetes.Interface
}

// podLabel is on every pod the Agent Sandbox controller makes for a sandbox.
const podLabel = "agents.x-k8s.io/sandbox-name-hash"

// Read reads every warm pool in namespace ("" for all namespaces) with its
// sandboxes, in one LIST per kind, and judges each. Pools come back by
// namespace and name.
func Read(ctx context.Context, c Clients, namespace string) ([]Pool, error) {
	list := func(gvr schema.GroupVersionResource) ([]unstructured.Unstructured, error) {
		got, err := c.Dyn.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", gvr.Resource, err)
		}
		return got.Items, nil
	}
	warmPools, err := list(agentsandbox.SandboxWarmPools)
	if err != nil || len(warmPools) == 0 {
		return nil, err
	}
	templates, err := list(agentsandbox.SandboxTemplates)
	if err != nil {
		return nil, err
	}
	sandboxes, err := list(agentsandbox.Sandboxes)
	if err != nil {
		return nil, err
	}
	claims, err := list(agentsandbox.SandboxClaims)
	if err != nil {
		return nil, err
	}
	pods, err := c.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: podLabel})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	classes, err := ReadRuntimeClasses(ctx, c.Kube)
	if err != nil {
		return nil, err
	}
	byNS := func(items []unstructured.Unstructured) map[string][]unstructured.Unstructured {
		m := map[string][]unstructured.Unstructured{}
		for _, u := range items {
			m[u.GetNamespace()] = append(m[u.GetNamespace()], u)
		}
		return m
	}
	tplByNS, sbByNS, claimsByNS := byNS(templates), byNS(sandboxes), byNS(claims)
	podsByNS := map[string][]corev1.Pod{}
	for _, p := range pods.Items {
		podsByNS[p.Namespace] = append(podsByNS[p.Namespace], p)
	}
	out := make([]Pool, 0, len(warmPools))
	for i := range warmPools {
		wp := &warmPools[i]
		ns := wp.GetNamespace()
		ref, _, _ := unstructured.NestedString(wp.Object, "spec", "sandboxTemplateRef", "name")
		var tpl *unstructured.Unstructured
		for j := range tplByNS[ns] {
			if tplByNS[ns][j].GetName() == ref {
				tpl = &tplByNS[ns][j]
			}
		}
		out = append(out, Classify(wp, tpl, sbByNS[ns], claimsByNS[ns], podsByNS[ns], classes))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, nil
}

// ReadRuntimeClasses lists the cluster's RuntimeClasses for Classify.
func ReadRuntimeClasses(ctx context.Context, kube kubernetes.Interface) (RuntimeClasses, error) {
	list, err := kube.NodeV1().RuntimeClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing runtime classes: %w", err)
	}
	out := RuntimeClasses{}
	for _, rc := range list.Items {
		out[rc.Name] = rc.CreationTimestamp.Time
	}
	return out, nil
}

// Classify judges one pool from its object, its template (nil when missing),
// the sandboxes, claims and sandbox pods of its namespace and the cluster's
// runtime classes (nil: not judged).
func Classify(wp, tpl *unstructured.Unstructured, sandboxes, claims []unstructured.Unstructured, pods []corev1.Pod, classes RuntimeClasses) Pool {
	p := Pool{Namespace: wp.GetNamespace(), Name: wp.GetName(), Desired: 1, UpdateStrategy: string(extv1beta1.OnReplenishSandboxWarmPoolUpdateStrategyType)}
	p.Template, _, _ = unstructured.NestedString(wp.Object, "spec", "sandboxTemplateRef", "name")
	if n, found, _ := unstructured.NestedInt64(wp.Object, "spec", "replicas"); found {
		p.Desired = int32(n)
	}
	if s, _, _ := unstructured.NestedString(wp.Object, "spec", "updateStrategy", "type"); s == string(extv1beta1.RecreateSandboxWarmPoolUpdateStrategyType) {
		p.UpdateStrategy = s
	}

	var template *extv1beta1.SandboxTemplate
	if tpl == nil {
		p.Problem = fmt.Sprintf("its template %q does not exist", p.Template)
	} else {
		p.TemplateWritten = lastWritten(tpl)
		template = &extv1beta1.SandboxTemplate{}
		var err error
		if err = runtime.DefaultUnstructuredConverter.FromUnstructured(tpl.Object, template); err == nil {
			p.TemplateHash, err = BlueprintHash(&template.Spec.SandboxBlueprint)
		}
		if err != nil {
			p.Problem = fmt.Sprintf("reading its template %q: %v", p.Template, err)
			template = nil
		}
	}

	podReady := map[string]bool{}
	podByName := map[string]*corev1.Pod{}
	for i, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		podByName[pod.Name] = &pods[i]
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				podReady[pod.Name] = true
			}
		}
	}
	claimPool := map[string]string{}
	for _, c := range claims {
		claimPool[c.GetName()], _, _ = unstructured.NestedString(c.Object, "spec", "warmPoolRef", "name")
	}

	poolHash, refHash := NameHash(p.Name), NameHash(p.Template)
	for i := range sandboxes {
		u := &sandboxes[i]
		owner := metav1.GetControllerOfNoCopy(u)
		var s Sandbox
		switch {
		case owner != nil && owner.Kind == "SandboxClaim" && isExtension(owner.APIVersion):
			if claimPool[owner.Name] != p.Name {
				continue
			}
			s.State, s.Claim = Claimed, owner.Name
		case owner != nil && owner.Kind == "SandboxWarmPool" && isExtension(owner.APIVersion) && owner.Name == p.Name && owner.UID == wp.GetUID(),
			owner == nil && u.GetLabels()[sandboxv1beta1.SandboxWarmPoolLabel] == poolHash:
			// The pool's own, or an orphan with its label, which the
			// controller adopts.
			s.State = Current
			if u.GetDeletionTimestamp() != nil {
				s.State = Terminating
			} else if template != nil {
				if why := staleness(u, template, p.TemplateHash, refHash); why != "" {
					s.State, s.Why = Stale, why
				}
			}
		default:
			continue
		}
		s.Name, s.Created = u.GetName(), u.GetCreationTimestamp().Time
		s.TemplateHash = u.GetLabels()[sandboxv1beta1.SandboxTemplateHashLabel]
		pod := u.GetName()
		if n := u.GetAnnotations()[sandboxv1beta1.SandboxPodNameAnnotation]; n != "" {
			pod = n
		}
		s.Ready = ConditionTrue(u, "Ready") && podReady[pod]
		s.UID = u.GetUID()
		if s.State == Current && template != nil {
			if why := podDivergence(podByName[pod], template, classes); why != "" {
				s.State, s.Why, s.Diverged = Stale, why, true
			}
		}
		switch s.State {
		case Claimed:
			p.Claimed++
		case Terminating:
			p.Terminating++
		case Stale:
			p.Stale++
			if s.Diverged {
				p.Diverged++
			}
		case Current:
			p.Current++
			if s.Ready {
				p.Ready++
			}
		}
		if s.State != Claimed && (p.Oldest.IsZero() || s.Created.Before(p.Oldest)) {
			p.Oldest = s.Created
		}
		p.Sandboxes = append(p.Sandboxes, s)
	}
	sort.Slice(p.Sandboxes, func(i, j int) bool {
		a, b := p.Sandboxes[i], p.Sandboxes[j]
		if !a.Created.Equal(b.Created) {
			return a.Created.Before(b.Created)
		}
		return a.Name < b.Name
	})
	return p
}

// lastWritten is when u was last written: its newest managedFields time,
// else its creation.
func lastWritten(u *unstructured.Unstructured) time.Time {
	t := u.GetCreationTimestamp().Time
	for _, m := range u.GetManagedFields() {
		if m.Time != nil && m.Time.After(t) {
			t = m.Time.Time
		}
	}
	return t
}

// staleness says why sandbox u is not what template would make now, or ""
// when it is. hash is the template's blueprint hash, refHash the hash of
// its name.
func staleness(u *unstructured.Unstructured, template *extv1beta1.SandboxTemplate, hash, refHash string) string {
	labels := u.GetLabels()
	if got := labels[sandboxv1beta1.SandboxTemplateRefHashLabel]; got != refHash {
		return fmt.Sprintf("built from another template (template name hash %q, the pool's template %q is %q)", got, template.Name, refHash)
	}
	got := labels[sandboxv1beta1.SandboxTemplateHashLabel]
	if got != "" && got == hash {
		return ""
	}
	// The hashes cover labels and annotations too, which the controller does
	// not count: compare what it does.
	sb := &sandboxv1beta1.Sandbox{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, sb); err != nil {
		return fmt.Sprintf("unreadable: %v", err)
	}
	if what := blueprintDiff(template, &sb.Spec.SandboxBlueprint); what != "" {
		return fmt.Sprintf("built from template revision %s, the template is now at %s (its %s changed)", orNone(got), hash, what)
	}
	return ""
}

// podDivergence says how a pool sandbox's pod runs other than its template
// says, in ways its sandbox object does not show, or "" when it does not (or
// has no pod yet). Only what can change on a running pod, or under it, is
// judged: a container's image (`kubectl set image` on the pod), and its
// runtime class: another name, one that no longer exists, or a class object
// created after the pod (deleted and recreated, perhaps with another
// handler, while the pod started: the handler a pod runs under is fixed
// when it starts, and a pod does not record it).
func podDivergence(pod *corev1.Pod, template *extv1beta1.SandboxTemplate, classes RuntimeClasses) string {
	if pod == nil {
		return ""
	}
	want := template.Spec.PodTemplate.Spec
	images := map[string]string{}
	for _, c := range want.InitContainers {
		images["init:"+c.Name] = c.Image
	}
	for _, c := range want.Containers {
		images[c.Name] = c.Image
	}
	for _, c := range pod.Spec.InitContainers {
		if img, ok := images["init:"+c.Name]; ok && img != c.Image {
			return fmt.Sprintf("its pod's init container %s runs image %s, the template says %s (changed on the pod: the controller does not see it)", c.Name, c.Image, img)
		}
	}
	for _, c := range pod.Spec.Containers {
		if img, ok := images[c.Name]; ok && img != c.Image {
			return fmt.Sprintf("its pod's container %s runs image %s, the template says %s (changed on the pod: the controller does not see it)", c.Name, c.Image, img)
		}
	}
	if len(pod.Spec.Containers) == 0 {
		return "" // a pod not yet read whole: nothing to judge
	}
	wantClass, gotClass := deref(want.RuntimeClassName), deref(pod.Spec.RuntimeClassName)
	if wantClass != gotClass {
		return fmt.Sprintf("its pod runs under runtime class %q, the template says %q", orNone(gotClass), orNone(wantClass))
	}
	if classes == nil || gotClass == "" {
		return ""
	}
	created, ok := classes[gotClass]
	switch {
	case !ok:
		return fmt.Sprintf("its pod's runtime class %q no longer exists: the pod runs under whatever handler the class named when it started", gotClass)
	case pod.CreationTimestamp.Time.Before(created):
		return fmt.Sprintf("its pod started before runtime class %q was last created (%s): it runs under the handler the earlier class named, perhaps not today's", gotClass, created.UTC().Format(time.RFC3339))
	}
	return ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// blueprintDiff names the part of the sandbox's blueprint that differs from
// what template makes now, or "" when none does. The controller adds two
// defaults to a pool sandbox's pod spec, so they are added to the
// template's before comparing: no service account token unless the template
// says, and, under the controller's own default network policy, public DNS
// resolvers.
func blueprintDiff(template *extv1beta1.SandboxTemplate, got *sandboxv1beta1.SandboxBlueprint) string {
	want := template.Spec.PodTemplate.Spec.DeepCopy()
	if want.AutomountServiceAccountToken == nil {
		no := false
		want.AutomountServiceAccountToken = &no
	}
	managed := template.Spec.NetworkPolicyManagement == "" || template.Spec.NetworkPolicyManagement == extv1beta1.NetworkPolicyManagementManaged
	if managed && template.Spec.NetworkPolicy == nil && want.DNSPolicy == "" {
		want.DNSPolicy = corev1.DNSNone
		want.DNSConfig = &corev1.PodDNSConfig{Nameservers: controllerDefaultResolvers}
	}
	if !equality.Semantic.DeepEqual(want, &got.PodTemplate.Spec) {
		return "pod spec"
	}
	vcts := template.Spec.VolumeClaimTemplates
	if len(vcts) != len(got.VolumeClaimTemplates) {
		return "volume claim templates"
	}
	for i := range vcts {
		if vcts[i].Name != got.VolumeClaimTemplates[i].Name || !equality.Semantic.DeepEqual(vcts[i].Spec, got.VolumeClaimTemplates[i].Spec) {
			return "volume claim templates"
		}
	}
	if !equality.Semantic.DeepEqual(template.Spec.Service, got.Service) {
		return "service"
	}
	return ""
}

// controllerDefaultResolvers are the DNS servers the v0.5.6 controller gives
// a pool sandbox whose template leaves both network policy and DNS to it.
var controllerDefaultResolvers = []string{"8.8.8.8", "1.1.1.1"}

// BlueprintHash is the controller's hash of a blueprint: FNV-1a (32 bits,
// in hex) of its JSON.
func BlueprintHash(b *sandboxv1beta1.SandboxBlueprint) (string, error) {
	j, err := json.Marshal(b)
	if err != nil {
		return "", err
	}
	return NameHash(string(j)), nil
}

// NameHash is the controller's FNV-1a hash of a string, as 8 hex digits.
func NameHash(s string) string {
	h := fnv.New32a()
	h.Write([]byte(s))
	return fmt.Sprintf("%08x", h.Sum32())
}

func isExtension(apiVersion string) bool {
	gv, err := schema.ParseGroupVersion(apiVersion)
	return err == nil && gv.Group == extv1beta1.GroupVersion.Group
}

// ConditionTrue reports whether the object's status holds condition condType
// with status "True" (the Agent Sandbox objects' Ready, for one).
func ConditionTrue(u *unstructured.Unstructured, condType string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == condType && m["status"] == "True" {
			return true
		}
	}
	return false
}

func orNone(s string) string {
	if s == "" {
		return "(none recorded)"
	}
	return s
}
