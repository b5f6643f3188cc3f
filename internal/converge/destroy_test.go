package converge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/model"
)

const testKubeconfig = "/home/u/.paddock/local/kubeconfig"

func minimalLocalPlatform() *model.Platform {
	return &model.Platform{Name: "demo", Target: model.Target{Kind: model.TargetLocal, Kubeconfig: testKubeconfig, Context: "paddock"}}
}

// stateBuilder writes an exported deployment the way Paddock's program
// lays out its stack.
type stateBuilder struct {
	resources []map[string]any
	pending   []map[string]any
}

const (
	testProvider = "urn:pulumi:demo::paddock::pulumi:providers:kubernetes::kubernetes"
	testRoot     = "urn:pulumi:demo::paddock::paddock:index:Platform::demo"
)

func newState() *stateBuilder {
	b := &stateBuilder{}
	b.resources = append(b.resources,
		map[string]any{"urn": "urn:pulumi:demo::paddock::pulumi:pulumi:Stack::paddock-demo", "custom": false, "type": "pulumi:pulumi:Stack"},
		map[string]any{"urn": testProvider, "custom": true, "id": "prov-1", "type": "pulumi:providers:kubernetes",
			"inputs": map[string]any{"kubeconfig": testKubeconfig, "context": "paddock"}},
		map[string]any{"urn": testRoot, "custom": false, "type": "paddock:index:Platform"},
	)
	return b
}

// object adds a Kubernetes object under the component chain parents (below
// the platform root).
func (b *stateBuilder) object(parents, apiVersion, kind, ns, name string, extra ...func(map[string]any)) *stateBuilder {
	typ := "kubernetes:" + apiVersion + ":" + kind
	md := map[string]any{"name": name}
	if ns != "" {
		md["namespace"] = ns
	}
	r := map[string]any{
		"urn":      "urn:pulumi:demo::paddock::paddock:index:Platform$" + parents + "$" + typ + "::" + kind + "-" + ns + "-" + name,
		"custom":   true,
		"type":     typ,
		"id":       strings.TrimPrefix(ns+"/"+name, "/"),
		"provider": testProvider + "::prov-1",
		"outputs":  map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md},
	}
	for _, f := range extra {
		f(r)
	}
	b.resources = append(b.resources, r)
	return b
}

func (b *stateBuilder) resource(r map[string]any) *stateBuilder {
	b.resources = append(b.resources, r)
	return b
}

func (b *stateBuilder) json(t *testing.T) json.RawMessage {
	t.Helper()
	d := map[string]any{
		"manifest":          map[string]any{"time": "2026-12-01T00:00:00Z", "magic": "m", "version": "v3.274.1"},
		"secrets_providers": map[string]any{"type": "passphrase", "state": map[string]any{"salt": "v1:abc"}},
		"resources":         b.resources,
	}
	if b.pending != nil {
		d["pending_operations"] = b.pending
	}
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

const (
	tenantT  = "paddock:tenant:Tenant"
	releaseT = "paddock:agentsandbox:Release"
	rcT      = "paddock:runtime:RuntimeClass"
)

func sandboxCRD(r map[string]any) {
	r["outputs"].(map[string]any)["spec"] = map[string]any{
		"group": "agents.x-k8s.io", "scope": "Namespaced",
		"names": map[string]any{"kind": "Sandbox", "plural": "sandboxes"},
	}
}

// platformState is a one-tenant platform: release, runtime class, and a
// tenant with namespaced objects, cluster-scoped guardrails, and one
// object in a namespace the stack does not own.
func platformState() *stateBuilder {
	return newState().
		object(releaseT, "v1", "Namespace", "", "agent-sandbox-system").
		object(releaseT, "apps/v1", "Deployment", "agent-sandbox-system", "agent-sandbox-controller").
		object(releaseT, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "sandboxes.agents.x-k8s.io", sandboxCRD).
		object(releaseT, "rbac.authorization.k8s.io/v1", "ClusterRole", "", "agent-sandbox-controller").
		object(rcT, "node.k8s.io/v1", "RuntimeClass", "", "gvisor").
		object(tenantT, "v1", "Namespace", "", "agents-team-a").
		object(tenantT+"$paddock:tenant:Identity", "rbac.authorization.k8s.io/v1", "Role", "agents-team-a", "agent").
		object(tenantT+"$paddock:network:Egress", "networking.k8s.io/v1", "NetworkPolicy", "agents-team-a", "default-deny").
		object(tenantT+"$paddock:sandbox:Template", "extensions.agents.x-k8s.io/v1alpha1", "SandboxTemplate", "agents-team-a", "agent").
		object(tenantT+"$paddock:policy:Guardrails", "admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "", "team-a-guard").
		object(tenantT+"$paddock:policy:Guardrails", "admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", "", "team-a-guard").
		object(tenantT+"$paddock:tenant:Identity", "rbac.authorization.k8s.io/v1", "RoleBinding", "shared", "team-a-reader")
}

func names(objs []DestroyObject) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.String())
	}
	sort.Strings(out)
	return out
}

func TestPlanDirectDestroyLayers(t *testing.T) {
	plan, why, err := PlanDirectDestroy(platformState().json(t), minimalLocalPlatform(), nil)
	if err != nil || why != "" {
		t.Fatalf("plan: %v / %q", err, why)
	}
	check := func(what string, got []DestroyObject, want ...string) {
		t.Helper()
		sort.Strings(want)
		if g := names(got); !slices.Equal(g, want) {
			t.Errorf("%s: got %q, want %q", what, g, want)
		}
	}
	check("tenant namespaces", plan.Tenants.Namespaces, "Namespace agents-team-a")
	// The tenant's namespaced objects go with its namespace: only the
	// cluster-scoped ones and the one in a namespace the stack does not own
	// are deleted by name.
	check("tenant objects", plan.Tenants.Objects,
		"ValidatingAdmissionPolicy team-a-guard", "ValidatingAdmissionPolicyBinding team-a-guard", "RoleBinding shared/team-a-reader")
	check("release namespaces", plan.Release.Namespaces, "Namespace agent-sandbox-system")
	check("release objects", plan.Release.Objects,
		"CustomResourceDefinition sandboxes.agents.x-k8s.io", "ClusterRole agent-sandbox-controller")
	check("runtime classes", plan.RuntimeClasses.all(), "RuntimeClass gvisor")
	check("warm pools", plan.WarmPools)
	if want := []schema.GroupKind{{Group: "agents.x-k8s.io", Kind: "Sandbox"}}; !slices.Equal(plan.SandboxKinds, want) {
		t.Errorf("sandbox kinds: %v, want %v", plan.SandboxKinds, want)
	}
	if plan.Resources != 12 || plan.StateResources != 15 {
		t.Errorf("counts: %d objects of %d resources, want 12 of 15", plan.Resources, plan.StateResources)
	}
}

// Objects another stack of the project holds too (the release, the runtime
// class) stay in the cluster: the plan deletes the tenant's alone.
func TestPlanDirectDestroyKeepsShared(t *testing.T) {
	shared := SharedKeys([]drift.ObjectRef{
		{APIVersion: "v1", Kind: "Namespace", Name: "agent-sandbox-system"},
		{APIVersion: "apiextensions.k8s.io/v1beta1", Kind: "CustomResourceDefinition", Name: "sandboxes.agents.x-k8s.io"}, // another version of its group: the same object
		{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "agent-sandbox-controller"},
		{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "agent-sandbox-system", Name: "agent-sandbox-controller"},
		{APIVersion: "node.k8s.io/v1", Kind: "RuntimeClass", Name: "gvisor"},
	})
	plan, why, err := PlanDirectDestroy(platformState().json(t), minimalLocalPlatform(), shared)
	if err != nil || why != "" {
		t.Fatalf("plan: %v / %q", err, why)
	}
	if got := names(plan.Release.all()); len(got) != 0 {
		t.Errorf("release objects deleted: %q", got)
	}
	if got := names(plan.RuntimeClasses.all()); len(got) != 0 {
		t.Errorf("runtime classes deleted: %q", got)
	}
	if got := names(plan.Tenants.Namespaces); !slices.Equal(got, []string{"Namespace agents-team-a"}) {
		t.Errorf("the tenant is not deleted: %q", got)
	}
	if len(plan.Kept) != 5 || plan.Resources != 7 {
		t.Errorf("kept %q, deleting %d; want 5 kept of 12", names(plan.Kept), plan.Resources)
	}
}

func TestPlanDirectDestroyLeavesToPulumi(t *testing.T) {
	gke := minimalLocalPlatform()
	gke.Target = model.Target{Kind: model.TargetGKE}
	otherCluster := minimalLocalPlatform()
	otherCluster.Target.Kubeconfig = "/elsewhere/kubeconfig"
	protect := func(r map[string]any) { r["protect"] = true }
	retain := func(r map[string]any) { r["retainOnDelete"] = true }
	for _, c := range []struct {
		name  string
		state *stateBuilder
		p     *model.Platform
		want  string
	}{
		{"gke target", platformState(), gke, "target gke"},
		{"gcp resource", platformState().resource(map[string]any{
			"urn": "urn:pulumi:demo::paddock::gcp:container/cluster:Cluster::c", "custom": true, "type": "gcp:container/cluster:Cluster"}),
			minimalLocalPlatform(), "GCP resources"},
		{"protected", platformState().object(tenantT, "v1", "Namespace", "", "agents-team-b", protect), minimalLocalPlatform(), "is protected"},
		{"retained", platformState().object(tenantT, "v1", "ConfigMap", "agents-team-a", "keep", retain), minimalLocalPlatform(), "retainOnDelete"},
		{"another cluster", platformState(), otherCluster, "another kubeconfig"},
		{"unknown resource", platformState().resource(map[string]any{
			"urn": "urn:pulumi:demo::paddock::random:index/randomId:RandomId::r", "custom": true, "type": "random:index/randomId:RandomId"}),
			minimalLocalPlatform(), "only Pulumi can delete"},
		{"object outside the components", newState().object("paddock:other:Thing", "v1", "ConfigMap", "default", "x"),
			minimalLocalPlatform(), "belongs to none"},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan, why, err := PlanDirectDestroy(c.state.json(t), c.p, nil)
			if err != nil {
				t.Fatal(err)
			}
			if plan != nil || !strings.Contains(why, c.want) {
				t.Errorf("got plan %v, reason %q; want Pulumi's destroy because %q", plan != nil, why, c.want)
			}
		})
	}
	t.Run("pending operations", func(t *testing.T) {
		s := platformState()
		s.pending = []map[string]any{{"type": "creating", "resource": map[string]any{"urn": testRoot + "$x", "type": "kubernetes:v1:ConfigMap", "custom": true}}}
		_, why, err := PlanDirectDestroy(s.json(t), minimalLocalPlatform(), nil)
		if err != nil || !strings.Contains(why, "pending operation") {
			t.Errorf("reason %q, err %v", why, err)
		}
	})
}

func TestEmptyDeploymentKeepsSecretsProvider(t *testing.T) {
	s := platformState()
	s.pending = []map[string]any{}
	empty, err := EmptyDeployment(apitype.UntypedDeployment{Version: 3, Deployment: s.json(t)})
	if err != nil {
		t.Fatal(err)
	}
	var d apitype.DeploymentV3
	if err := json.Unmarshal(empty.Deployment, &d); err != nil {
		t.Fatal(err)
	}
	if empty.Version != 3 || len(d.Resources) != 0 || len(d.PendingOperations) != 0 {
		t.Errorf("version %d, %d resources, %d pending: want an empty v3 deployment", empty.Version, len(d.Resources), len(d.PendingOperations))
	}
	if d.SecretsProviders == nil || d.SecretsProviders.Type != "passphrase" || !strings.Contains(string(d.SecretsProviders.State), "v1:abc") {
		t.Errorf("secrets provider lost: %+v", d.SecretsProviders)
	}
	if d.Manifest.Version != "v3.274.1" {
		t.Errorf("manifest lost: %+v", d.Manifest)
	}
}

// fakeCluster is an API server with what direct destroy relies on:
// objects with finalizers stay, marked deleting, until their controller
// lets go; a namespace being deleted takes its objects along and goes when
// none is left. Its Agent Sandbox controller runs until its release
// namespace is deleted, and lets go of its own finalizer only.
type fakeCluster struct {
	client *metadatafake.FakeMetadataClient
	mapper meta.RESTMapper

	mu      sync.Mutex
	objects map[string]*metav1.PartialObjectMetadata // resource/namespace/name
	log     []string
	// namespaceDeletes is how many namespaces were asked to go; the
	// controller waits for holdUntil of them before it finalizes anything.
	namespaceDeletes, holdUntil int
	stop                        chan struct{}
}

const controllerFinalizer = "agents.x-k8s.io/sandbox-cleanup"

var fakeKinds = []struct {
	gvk        schema.GroupVersionKind
	namespaced bool
}{
	{schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, false},
	{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, true},
	{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, true},
	{schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"}, true},
	{schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"}, true},
	{schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, false},
	{schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"}, true},
	{schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy"}, false},
	{schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicyBinding"}, false},
	{schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, false},
	{schema.GroupVersionKind{Group: "node.k8s.io", Version: "v1", Kind: "RuntimeClass"}, false},
	{schema.GroupVersionKind{Group: "agents.x-k8s.io", Version: "v1alpha1", Kind: "Sandbox"}, true},
	{schema.GroupVersionKind{Group: "extensions.agents.x-k8s.io", Version: "v1alpha1", Kind: "SandboxTemplate"}, true},
	{schema.GroupVersionKind{Group: "extensions.agents.x-k8s.io", Version: "v1alpha1", Kind: "SandboxWarmPool"}, true},
}

func newFakeCluster(t *testing.T) *fakeCluster {
	// Like discovery's mapper, a kind asked for without a version maps to
	// its served one.
	var versions []schema.GroupVersion
	for _, k := range fakeKinds {
		versions = append(versions, k.gvk.GroupVersion())
	}
	mapper := meta.NewDefaultRESTMapper(versions)
	for _, k := range fakeKinds {
		scope := meta.RESTScopeRoot
		if k.namespaced {
			scope = meta.RESTScopeNamespace
		}
		plural, singular := meta.UnsafeGuessKindToResource(k.gvk)
		if k.gvk.Kind == "Sandbox" {
			plural = k.gvk.GroupVersion().WithResource("sandboxes") // beyond the guess
		}
		mapper.AddSpecific(k.gvk, plural, singular, scope)
	}
	c := &fakeCluster{
		client:  metadatafake.NewSimpleMetadataClient(runtime.NewScheme()),
		mapper:  mapper,
		objects: map[string]*metav1.PartialObjectMetadata{},
		stop:    make(chan struct{}),
	}
	c.client.PrependReactor("delete", "*", c.deleteReaction)
	c.client.PrependReactor("list", "*", c.listReaction)
	c.client.PrependReactor("get", "*", c.getReaction)
	go c.controller()
	t.Cleanup(func() { close(c.stop) })
	return c
}

func (c *fakeCluster) resourceOf(kind string) string {
	for _, k := range fakeKinds {
		if k.gvk.Kind == kind {
			m, _ := c.mapper.RESTMapping(k.gvk.GroupKind(), k.gvk.Version)
			return m.Resource.Resource
		}
	}
	panic("unknown kind " + kind)
}

// add creates an object of kind, with finalizers.
func (c *fakeCluster) add(kind, ns, name string, finalizers ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.objects[c.resourceOf(kind)+"/"+ns+"/"+name] = &metav1.PartialObjectMetadata{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: finalizers},
	}
}

// addState creates every object the state holds.
func (c *fakeCluster) addState(t *testing.T, state json.RawMessage) {
	d, err := decodeDestroyState(state)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range d.Resources {
		if o, ok := objectOf(r); ok && strings.HasPrefix(r.Type, "kubernetes:") {
			c.add(o.GVK.Kind, o.Namespace, o.Name)
		}
	}
}

func (c *fakeCluster) deleteReaction(a k8stesting.Action) (bool, runtime.Object, error) {
	d := a.(k8stesting.DeleteAction)
	res := d.GetResource()
	key := res.Resource + "/" + d.GetNamespace() + "/" + d.GetName()
	c.mu.Lock()
	defer c.mu.Unlock()
	obj, ok := c.objects[key]
	if !ok {
		return true, nil, apierrors.NewNotFound(res.GroupResource(), d.GetName())
	}
	c.log = append(c.log, "delete "+key)
	if res.Resource == "namespaces" {
		c.namespaceDeletes++
		held := false
		for k, o := range c.objects {
			if o.Namespace == d.GetName() {
				c.markDeleted(k, o)
				held = held || c.objects[k] != nil
			}
		}
		if held {
			obj.Finalizers = []string{"kubernetes"}
		}
	}
	c.markDeleted(key, obj)
	return true, nil, nil
}

// markDeleted deletes an object, or marks it deleting while finalizers
// hold it. c.mu is held.
func (c *fakeCluster) markDeleted(key string, o *metav1.PartialObjectMetadata) {
	if len(o.Finalizers) == 0 {
		delete(c.objects, key)
		c.log = append(c.log, "gone "+key)
		return
	}
	if o.DeletionTimestamp == nil {
		now := metav1.Now()
		o.DeletionTimestamp = &now
	}
}

func (c *fakeCluster) listReaction(a k8stesting.Action) (bool, runtime.Object, error) {
	l := a.(k8stesting.ListAction)
	c.mu.Lock()
	defer c.mu.Unlock()
	list := &metav1.List{}
	for k, o := range c.objects {
		if strings.HasPrefix(k, l.GetResource().Resource+"/") && (l.GetNamespace() == "" || o.Namespace == l.GetNamespace()) {
			list.Items = append(list.Items, runtime.RawExtension{Object: o.DeepCopy()})
		}
	}
	return true, list, nil
}

func (c *fakeCluster) getReaction(a k8stesting.Action) (bool, runtime.Object, error) {
	g := a.(k8stesting.GetAction)
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.objects[g.GetResource().Resource+"/"+g.GetNamespace()+"/"+g.GetName()]
	if !ok {
		return true, nil, apierrors.NewNotFound(g.GetResource().GroupResource(), g.GetName())
	}
	return true, o.DeepCopy(), nil
}

// markDeleting marks an object as being deleted, with finalizers.
func (c *fakeCluster) markDeleting(kind, ns, name string, finalizers ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.objects[c.resourceOf(kind)+"/"+ns+"/"+name]
	now := metav1.Now()
	o.DeletionTimestamp, o.Finalizers = &now, finalizers
}

// controller is the Agent Sandbox controller and the namespace controller.
func (c *fakeCluster) controller() {
	for {
		select {
		case <-c.stop:
			return
		case <-time.After(2 * time.Millisecond):
		}
		c.mu.Lock()
		release, ok := c.objects["namespaces//agent-sandbox-system"]
		running := ok && release.DeletionTimestamp == nil && c.namespaceDeletes >= c.holdUntil
		for k, o := range c.objects {
			if o.DeletionTimestamp == nil || !running {
				continue
			}
			if i := slices.Index(o.Finalizers, controllerFinalizer); i >= 0 {
				o.Finalizers = slices.Delete(o.Finalizers, i, i+1)
				if len(o.Finalizers) == 0 {
					delete(c.objects, k)
					c.log = append(c.log, "gone "+k)
				}
			}
		}
		for k, o := range c.objects {
			if !strings.HasPrefix(k, "namespaces/") || o.DeletionTimestamp == nil {
				continue
			}
			empty := true
			for _, in := range c.objects {
				empty = empty && in.Namespace != o.Name
			}
			if empty {
				delete(c.objects, k)
				c.log = append(c.log, "gone "+k)
			}
		}
		c.mu.Unlock()
	}
}

// at is where entry first appears in the log (-1 if never).
func (c *fakeCluster) at(entry string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Index(c.log, entry)
}

func (c *fakeCluster) deleter(timeout time.Duration) *DirectDeleter {
	return &DirectDeleter{client: c.client, mapper: c.mapper, out: io.Discard, workers: 4, timeout: timeout, poll: time.Millisecond}
}

func TestDirectDestroyOrder(t *testing.T) {
	state := platformState().
		object(tenantT+"$paddock:sandbox:WarmPool", "extensions.agents.x-k8s.io/v1alpha1", "SandboxWarmPool", "agents-team-a", "agent").
		json(t)
	plan, why, err := PlanDirectDestroy(state, minimalLocalPlatform(), nil)
	if err != nil || why != "" {
		t.Fatalf("plan: %v / %q", err, why)
	}
	c := newFakeCluster(t)
	c.addState(t, state)
	// Two sandboxes the warm pool made, which the controller must finalize.
	c.add("Sandbox", "agents-team-a", "agent-1", controllerFinalizer)
	c.add("Sandbox", "agents-team-a", "agent-2", controllerFinalizer)
	if err := c.deleter(10*time.Second).Run(context.Background(), plan); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	left := len(c.objects)
	log := slices.Clone(c.log)
	c.mu.Unlock()
	if left != 0 {
		t.Errorf("%d objects left", left)
	}
	for _, entry := range log {
		// Namespaced tenant objects go with their namespace, never one by one.
		for _, r := range []string{"roles/agents-team-a/", "networkpolicies/agents-team-a/", "sandboxtemplates/agents-team-a/", "sandboxes/"} {
			if strings.HasPrefix(entry, "delete "+r) {
				t.Errorf("%s: deleted one by one; its namespace takes it along", entry)
			}
		}
	}
	before := func(a, b string) {
		t.Helper()
		ia, ib := c.at(a), c.at(b)
		if ia < 0 || ib < 0 || ia > ib {
			t.Errorf("want %q (at %d) before %q (at %d) in\n  %s", a, ia, b, ib, strings.Join(log, "\n  "))
		}
	}
	// 1. The tenants all at once, before anything of the release; their warm
	// pools first, so the controller has no pool to refill in a namespace
	// that is terminating.
	before("delete sandboxwarmpools/agents-team-a/agent", "delete namespaces//agents-team-a")
	//    And the rest of the tenant before anything of the release.
	for _, tenant := range []string{"namespaces//agents-team-a", "validatingadmissionpolicies//team-a-guard", "validatingadmissionpolicybindings//team-a-guard", "rolebindings/shared/team-a-reader"} {
		before("delete "+tenant, "delete namespaces//agent-sandbox-system")
	}
	// 2. The release only once the controller has finalized the sandboxes.
	before("gone sandboxes/agents-team-a/agent-1", "delete namespaces//agent-sandbox-system")
	before("gone sandboxes/agents-team-a/agent-2", "delete customresourcedefinitions//sandboxes.agents.x-k8s.io")
	// 4. The runtime classes once the tenant namespace is gone.
	before("gone namespaces//agents-team-a", "delete runtimeclasses//gvisor")
}

func TestDirectDestroyNamesWhatAFinalizerHolds(t *testing.T) {
	state := platformState().json(t)
	plan, _, err := PlanDirectDestroy(state, minimalLocalPlatform(), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := newFakeCluster(t)
	c.addState(t, state)
	c.add("Sandbox", "agents-team-a", "agent-1", controllerFinalizer)
	c.add("Sandbox", "agents-team-a", "stuck", "example.com/never-released")
	err = c.deleter(300*time.Millisecond).Run(context.Background(), plan)
	if err == nil {
		t.Fatal("destroy succeeded with a sandbox held by a finalizer nobody removes")
	}
	for _, want := range []string{"Sandbox agents-team-a/stuck", "example.com/never-released", "run destroy again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "agent-1") {
		t.Errorf("error names a sandbox that went:\n%v", err)
	}
	// The controller stays while a tenant's sandbox is there.
	if i := c.at("delete namespaces//agent-sandbox-system"); i >= 0 {
		t.Errorf("the release was deleted while a tenant's sandbox was left")
	}
}

func TestDirectDestroyDeletesEveryNamespaceBeforeWaiting(t *testing.T) {
	const tenants = 40
	s := newState().
		object(releaseT, "v1", "Namespace", "", "agent-sandbox-system").
		object(releaseT, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "sandboxes.agents.x-k8s.io", sandboxCRD)
	for i := range tenants {
		s.object(tenantT, "v1", "Namespace", "", fmt.Sprintf("t%02d", i)).
			object(tenantT, "v1", "ConfigMap", fmt.Sprintf("t%02d", i), "settings")
	}
	state := s.json(t)
	plan, why, err := PlanDirectDestroy(state, minimalLocalPlatform(), nil)
	if err != nil || why != "" {
		t.Fatalf("plan: %v / %q", err, why)
	}
	c := newFakeCluster(t)
	c.addState(t, state)
	for i := range tenants {
		c.add("Sandbox", fmt.Sprintf("t%02d", i), "agent", controllerFinalizer)
	}
	// The controller finalizes nothing until every namespace was asked to
	// go: a destroy that waited on the first few before deleting the rest
	// would never finish.
	c.holdUntil = tenants
	if err := c.deleter(5*time.Second).Run(context.Background(), plan); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.objects) != 0 {
		t.Errorf("%d objects left", len(c.objects))
	}
	for _, entry := range c.log {
		if strings.HasPrefix(entry, "delete configmaps/") {
			t.Errorf("%s deleted one by one", entry)
		}
	}
}

// The monitoring objects are in the release's namespace: a stack holding them
// is still destroyed directly, the objects going with that namespace.
func TestPlanDirectDestroyTakesMonitoringWithTheRelease(t *testing.T) {
	const monT = "paddock:index:Platform$paddock:observability:Monitoring"
	st := platformState().
		object(monT, "monitoring.coreos.com/v1", "ServiceMonitor", "agent-sandbox-system", "agent-sandbox-controller").
		object(monT, "monitoring.coreos.com/v1", "PrometheusRule", "agent-sandbox-system", "paddock-alerts")
	plan, why, err := PlanDirectDestroy(st.json(t), minimalLocalPlatform(), nil)
	if err != nil || why != "" {
		t.Fatalf("plan: %v / %q", err, why)
	}
	if got := names(plan.Release.Namespaces); !slices.Equal(got, []string{"Namespace agent-sandbox-system"}) {
		t.Errorf("release namespaces %q", got)
	}
	for _, o := range plan.Release.all() {
		if o.GVK.Group == "monitoring.coreos.com" {
			t.Errorf("%s is deleted by name; its namespace takes it along", o)
		}
	}
	if plan.Resources != 14 {
		t.Errorf("%d objects, want 14", plan.Resources)
	}
}

// Direct destroy's waits grow with the stack: 1,000 tenants' objects get
// more than the small platform's five minutes, which stay its floor.
func TestDirectDestroyBoundGrowsWithTheStack(t *testing.T) {
	if got := directDestroyBound(0); got != directDestroyTimeout {
		t.Errorf("bound of an empty stack %s, want %s", got, directDestroyTimeout)
	}
	small, large := directDestroyBound(36), directDestroyBound(20016)
	if small < directDestroyTimeout || large <= small || large < 10*time.Minute {
		t.Errorf("bounds: 36 objects %s, 20,016 objects %s", small, large)
	}
}

// A tenant's warm pools are deleted before its namespace (which would take
// them along): a pool left while its namespace terminates is refilled by the
// controller, every create refused. Another stack's pools, and pools in a
// namespace the stack does not own, are not.
func TestPlanDirectDestroyDeletesWarmPoolsFirst(t *testing.T) {
	pool := func(ns, name string) (string, string, string, string, string) {
		return tenantT + "$paddock:sandbox:WarmPool", "extensions.agents.x-k8s.io/v1beta1", "SandboxWarmPool", ns, name
	}
	s := platformState().
		object(pool("agents-team-a", "agent")).
		object(pool("agents-team-a", "reviewer")).
		object(pool("shared", "borrowed")).
		object(releaseT, "extensions.agents.x-k8s.io/v1beta1", "SandboxWarmPool", "agent-sandbox-system", "not-a-tenants")
	plan, why, err := PlanDirectDestroy(s.json(t), minimalLocalPlatform(), nil)
	if err != nil || why != "" {
		t.Fatalf("plan: %v / %q", err, why)
	}
	if got, want := names(plan.WarmPools), []string{"SandboxWarmPool agents-team-a/agent", "SandboxWarmPool agents-team-a/reviewer"}; !slices.Equal(got, want) {
		t.Errorf("warm pools deleted first: %q, want %q", got, want)
	}
	if got := names(plan.Tenants.Objects); !slices.Contains(got, "SandboxWarmPool shared/borrowed") {
		t.Errorf("a pool in a namespace the stack does not own is deleted by name with the tenant: %q", got)
	}
}
