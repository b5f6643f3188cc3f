package converge

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
)

// This file is destroy at the speed of namespace deletion. Pulumi's destroy
// refreshes every resource and then deletes them one by one along the
// dependency graph, waiting on each. A Paddock platform needs only one order:
//
//  1. the tenants, all at once: each tenant namespace takes its namespaced
//     objects along, so only the namespaces and the tenants' cluster-scoped
//     objects (admission policies, bindings, ...) are deleted;
//  2. a wait for the tenants' Agent Sandbox objects: they may carry the
//     controller's finalizers, so the controller, part of the release, must
//     outlive them;
//  3. the release (its namespace, CRDs, cluster roles, webhooks), while the
//     tenant namespaces finish;
//  4. the runtime classes, once no tenant pod is left to run under them.
//
// Only when every object is gone is the state emptied. Until then it still
// holds every object, so a destroy killed at any point is carried on by the
// next destroy (deleting what is gone is a no-op) or undone by the next up.

// Layers of a platform's stack, by the component that owns each object.
const (
	layerTenant       = "tenant"
	layerRelease      = "release"
	layerRuntimeClass = "runtimeclass"
)

// componentLayers maps Paddock's component types to their destroy layer.
var componentLayers = map[string]string{
	"paddock:tenant:Tenant":        layerTenant,
	"paddock:agentsandbox:Release": layerRelease,
	"paddock:runtime:RuntimeClass": layerRuntimeClass,
	// The monitoring objects live in the release's namespace and go with it.
	"paddock:observability:Monitoring": layerRelease,
}

// Direct destroy's bounds. The client rate limit (ClusterQPS) is far above
// what the deletes and polls need, so client-go never queues them.
const (
	directDestroyWorkers = 32
	directDestroyTimeout = 5 * time.Minute
	directDestroyMaxPoll = time.Second
	// directDestroyPerObject is added to each wait's bound per object the
	// stack holds: the namespace controller empties a namespace at a time
	// (a few at once), so 1,000 tenants' namespaces take minutes to go
	// even on an idle control plane.
	directDestroyPerObject = 20 * time.Millisecond
)

// directDestroyBound is how long each of direct destroy's waits may take
// for a stack of objects objects.
func directDestroyBound(objects int) time.Duration {
	return directDestroyTimeout + time.Duration(objects)*directDestroyPerObject
}

// DestroyObject is one Kubernetes object the state holds.
type DestroyObject struct {
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
}

func (o DestroyObject) String() string {
	if o.Namespace != "" {
		return fmt.Sprintf("%s %s/%s", o.GVK.Kind, o.Namespace, o.Name)
	}
	return fmt.Sprintf("%s %s", o.GVK.Kind, o.Name)
}

// DestroyLayer is what one layer deletes: its namespaces, and the objects
// no namespace of the plan takes along (cluster-scoped ones, and namespaced
// ones in a namespace the stack does not own).
type DestroyLayer struct {
	Namespaces []DestroyObject
	Objects    []DestroyObject
}

func (l DestroyLayer) all() []DestroyObject {
	return append(append([]DestroyObject(nil), l.Namespaces...), l.Objects...)
}

// DestroyPlan is a platform's stack, layered for direct deletion.
type DestroyPlan struct {
	Tenants, Release, RuntimeClasses DestroyLayer
	// SandboxKinds are the namespaced kinds the release's CRDs define
	// (Sandbox, SandboxClaim, SandboxTemplate, SandboxWarmPool): their
	// objects in the tenants' namespaces, whoever created them, must be gone
	// before the release goes.
	SandboxKinds []schema.GroupKind
	// WarmPools are the tenants' warm pools, deleted just before their
	// namespaces (which take them along anyway): a pool still there while
	// its namespace terminates has the release's controller refilling it,
	// every create refused. At 1,000 tenants those refusals were about
	// 15,000 creates of sandboxes and their network policies, most of
	// destroy's extra load on the API server over the floor's.
	WarmPools []DestroyObject
	// Resources is how many Kubernetes objects it deletes.
	Resources int
	// Kept are the objects other stacks hold too (KeepShared): left in the
	// cluster, dropped from this stack's state with the rest.
	Kept []DestroyObject
	// StateResources is how many resources of any kind it holds.
	StateResources int
}

// PlanDirectDestroy layers the Kubernetes objects of deployment (a stack's
// exported state) for direct deletion. A non-empty reason says why the
// stack must go through Pulumi's destroy instead: it holds something only
// Pulumi knows how to delete or keep, or its objects live on another
// cluster than the platform's kubeconfig reaches.
func PlanDirectDestroy(deployment json.RawMessage, p *model.Platform, shared map[string]bool) (plan *DestroyPlan, reason string, err error) {
	d, err := decodeDestroyState(deployment)
	if err != nil {
		return nil, "", fmt.Errorf("reading the exported state: %w", err)
	}
	if p.Target.Kind == model.TargetGKE || p.Target.Kubeconfig == "" {
		return nil, "the platform's cluster is reached only through the stack (target " + string(p.Target.Kind) + ")", nil
	}
	if n := len(d.PendingOperations); n > 0 {
		return nil, fmt.Sprintf("the state holds %d pending operation(s) of a run that died, which Pulumi clears first", n), nil
	}
	providers := map[string]destroyResource{}
	for _, r := range d.Resources {
		if strings.HasPrefix(string(r.Type), "pulumi:providers:") {
			providers[string(r.URN)+"::"+string(r.ID)] = r
		}
	}
	plan = &DestroyPlan{StateResources: len(d.Resources)}
	type placed struct {
		obj   DestroyObject
		layer string
	}
	var objs []placed
	seen := map[DestroyObject]bool{}
	for _, r := range d.Resources {
		typ := string(r.Type)
		switch {
		case r.Protect:
			return nil, fmt.Sprintf("%s is protected", r.URN), nil
		case r.RetainOnDelete:
			return nil, fmt.Sprintf("%s is kept on delete (retainOnDelete)", r.URN), nil
		case strings.HasPrefix(typ, "gcp:") || typ == "pulumi:providers:gcp":
			return nil, "the stack holds GCP resources", nil
		case typ == "pulumi:pulumi:Stack" || typ == "pulumi:providers:kubernetes":
			continue
		case !r.Custom && strings.HasPrefix(typ, "paddock:"):
			continue // a component: nothing in the cluster
		case !strings.HasPrefix(typ, "kubernetes:"):
			return nil, fmt.Sprintf("the stack holds a %s resource, which only Pulumi can delete", typ), nil
		}
		if why := providerMismatch(providers[r.Provider], p); why != "" {
			return nil, why, nil
		}
		obj, ok := objectOf(r)
		if !ok {
			return nil, fmt.Sprintf("%s records no apiVersion, kind and name", r.URN), nil
		}
		layer := ""
		for _, t := range strings.Split(string(r.URN.QualifiedType()), "$") {
			if l, ok := componentLayers[t]; ok {
				layer = l
			}
		}
		if layer == "" {
			return nil, fmt.Sprintf("%s belongs to none of Paddock's tenants, release or runtime classes", r.URN), nil
		}
		if seen[obj] {
			continue // a replacement's old and new copies: one object
		}
		seen[obj] = true
		if shared[sharedKey(obj.GVK.Group, obj.GVK.Kind, obj.Namespace, obj.Name)] {
			plan.Kept = append(plan.Kept, obj)
			continue
		}
		objs = append(objs, placed{obj, layer})
		if layer == layerRelease && obj.GVK.Kind == "CustomResourceDefinition" {
			if gk, ok := namespacedKindOf(r.Outputs.Spec.v); ok {
				plan.SandboxKinds = append(plan.SandboxKinds, gk)
			}
		}
	}
	plan.Resources = len(objs)
	layers := map[string]*DestroyLayer{layerTenant: &plan.Tenants, layerRelease: &plan.Release, layerRuntimeClass: &plan.RuntimeClasses}
	deletedNamespaces := map[string]bool{}
	for _, o := range objs {
		if o.obj.GVK.Group == "" && o.obj.GVK.Kind == "Namespace" {
			deletedNamespaces[o.obj.Name] = true
			layers[o.layer].Namespaces = append(layers[o.layer].Namespaces, o.obj)
		}
	}
	for _, o := range objs {
		if o.obj.GVK.Group == "" && o.obj.GVK.Kind == "Namespace" {
			continue
		}
		if o.obj.Namespace != "" && deletedNamespaces[o.obj.Namespace] {
			if o.layer == layerTenant && isWarmPool(o.obj.GVK) {
				plan.WarmPools = append(plan.WarmPools, o.obj)
			}
			continue // its namespace takes it along
		}
		layers[o.layer].Objects = append(layers[o.layer].Objects, o.obj)
	}
	return plan, "", nil
}

// providerMismatch says why the objects of the kubernetes provider prov
// may not be on the cluster the platform's kubeconfig reaches, or "".
func providerMismatch(prov destroyResource, p *model.Platform) string {
	if prov.URN == "" {
		return "an object's kubernetes provider is missing from the state"
	}
	if kubeconfig := string(prov.Inputs.Kubeconfig); kubeconfig != p.Target.Kubeconfig {
		return "the stack's kubernetes provider reaches another kubeconfig than the platform's " + p.Target.Kubeconfig
	}
	kubeContext := string(prov.Inputs.Context)
	if p.Target.Context != "" && kubeContext != "" && kubeContext != p.Target.Context {
		return fmt.Sprintf("the stack's kubernetes provider uses context %q, not the platform's %q", kubeContext, p.Target.Context)
	}
	return ""
}

// objectOf is the object a kubernetes resource of the state stands for.
func objectOf(r destroyResource) (DestroyObject, bool) {
	for _, props := range []destroyProps{r.Outputs, r.Inputs} {
		apiVersion, kind := string(props.APIVersion), string(props.Kind)
		name, ns := props.Name(), props.Namespace()
		if apiVersion == "" || kind == "" || name == "" {
			continue
		}
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err != nil {
			continue
		}
		return DestroyObject{GVK: gv.WithKind(kind), Namespace: ns, Name: name}, true
	}
	return DestroyObject{}, false
}

// namespacedKindOf is the kind a CustomResourceDefinition defines, when its
// objects are namespaced.
func namespacedKindOf(spec crdSpec) (schema.GroupKind, bool) {
	kind := string(spec.Names.v.Kind)
	if kind == "" || spec.Scope != "Namespaced" {
		return schema.GroupKind{}, false
	}
	return schema.GroupKind{Group: string(spec.Group), Kind: kind}, true
}

// SharedKeys are the names of objs, objects other stacks hold too, in the
// form PlanDirectDestroy's shared takes (sharedKey).
func SharedKeys(objs []drift.ObjectRef) map[string]bool {
	shared := map[string]bool{}
	for _, o := range objs {
		group := ""
		if i := strings.Index(o.APIVersion, "/"); i >= 0 {
			group = o.APIVersion[:i]
		}
		shared[sharedKey(group, o.Kind, o.Namespace, o.Name)] = true
	}
	return shared
}

// sharedKey names an object across the API versions of its group.
func sharedKey(group, kind, namespace, name string) string {
	return group + "/" + kind + "/" + namespace + "/" + name
}

// KeptList names a few of the kept objects.
func KeptList(objs []DestroyObject) string {
	names := make([]string, 0, 3)
	for _, o := range objs[:min(3, len(objs))] {
		names = append(names, o.String())
	}
	if len(objs) > 3 {
		names = append(names, fmt.Sprintf("and %d more", len(objs)-3))
	}
	return strings.Join(names, ", ")
}

// DeploymentOf is the deployment a stack file holds (its checkpoint, as the
// engine reads it from the backend), as `pulumi stack export` gives it but
// for secrets, which stay encrypted (the Automation API's export decrypts
// every one). ok is false for a checkpoint of another schema than the
// current one (3): only the CLI migrates those. Read from the file, a
// 1,000-tenant stack's 150 MB state is one copy in Paddock's memory, where
// the export cost the Pulumi CLI 2.6 GiB and Paddock copies of its output.
func DeploymentOf(checkpoint []byte) (dep apitype.UntypedDeployment, ok bool, err error) {
	var c struct {
		Version    int `json:"version"`
		Checkpoint struct {
			Latest json.RawMessage `json:"latest"`
		} `json:"checkpoint"`
	}
	if err := json.Unmarshal(checkpoint, &c); err != nil {
		return apitype.UntypedDeployment{}, false, fmt.Errorf("reading the stack's checkpoint: %w", err)
	}
	if c.Version != apitype.DeploymentSchemaVersionCurrent {
		return apitype.UntypedDeployment{}, false, nil
	}
	latest := c.Checkpoint.Latest
	if len(latest) == 0 || string(latest) == "null" {
		latest = json.RawMessage("{}") // never updated: nothing to delete
	}
	return apitype.UntypedDeployment{Version: apitype.DeploymentSchemaVersionCurrent, Deployment: latest}, true, nil
}

// EmptyDeployment is the exported deployment with no resources and no
// pending operations, everything else (its secrets provider, its manifest)
// as it was.
func EmptyDeployment(exported apitype.UntypedDeployment) (apitype.UntypedDeployment, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(exported.Deployment, &fields); err != nil {
		return apitype.UntypedDeployment{}, fmt.Errorf("reading the exported state: %w", err)
	}
	delete(fields, "resources")
	delete(fields, "pending_operations")
	raw, err := json.Marshal(fields)
	if err != nil {
		return apitype.UntypedDeployment{}, err
	}
	return apitype.UntypedDeployment{Version: exported.Version, Deployment: raw}, nil
}

// isWarmPool says gvk is the Agent Sandbox release's SandboxWarmPool.
func isWarmPool(gvk schema.GroupVersionKind) bool {
	return gvk.Group == agentsandbox.SandboxWarmPools.Group && gvk.Kind == "SandboxWarmPool"
}
