package components

import (
	"slices"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddock-platform/paddock/components/internal/k8sres"
	"github.com/paddock-platform/paddock/internal/manifests"
)

// TenantArgs are the inputs of one trust boundary.
type TenantArgs struct {
	// Parts are the tenant's objects by concept and its spec block
	// (manifests.Objects.Tenants).
	Parts manifests.TenantParts
	// DependsOn are resources the tenant's sandbox objects need first (the Agent
	// Sandbox CRDs, the runtime classes).
	DependsOn []pulumi.Resource

	// outputs, when set (by NewPlatform), holds the outputs of the tenant's
	// components for the platform to register after every tenant's
	// resources (laterOutputs); else the tenant registers them at its end.
	outputs *laterOutputs
}

// Tenant is one trust boundary: a restricted namespace with its quota and
// limits, the identities, the network fence, the admission guardrails and the
// tenant's own templates and warm pools.
type Tenant struct {
	pulumi.ResourceState

	Namespace pulumi.StringOutput `pulumi:"namespace"`
}

// NewTenant registers the tenant and its children.
func NewTenant(ctx *pulumi.Context, name string, args *TenantArgs, opts ...pulumi.ResourceOption) (*Tenant, error) {
	t := &Tenant{}
	if err := ctx.RegisterComponentResource("paddock:tenant:Tenant", name, t, opts...); err != nil {
		return nil, err
	}
	parts, tn := args.Parts, args.Parts.Tenant
	later := args.outputs
	if later == nil {
		later = &laterOutputs{}
	}
	nsObj, err := k8sres.RegisterUnstructured(ctx, parts.Namespace, pulumi.Parent(t))
	if err != nil {
		return nil, err
	}
	inNS := []pulumi.Resource{nsObj}
	_, fenceReady, err := registerAll(ctx, parts.Fence, inNamespace(nsObj, pulumi.Parent(t), pulumi.DependsOn(inNS))...)
	if err != nil {
		return nil, err
	}
	identity, err := newGroup(ctx, later, "paddock:tenant:Identity", name, parts.Identity, nsObj, pulumi.Parent(t), pulumi.DependsOn(inNS))
	if err != nil {
		return nil, err
	}
	egress, err := newGroup(ctx, later, "paddock:network:Egress", name, parts.Egress, nsObj, pulumi.Parent(t), pulumi.DependsOn(inNS))
	if err != nil {
		return nil, err
	}
	// Guardrails are cluster-scoped: they go on their own, never with the namespace.
	guardrails, err := newGroup(ctx, later, "paddock:policy:Guardrails", name, parts.Guardrails, nil, pulumi.Parent(t), pulumi.DependsOn(args.DependsOn))
	if err != nil {
		return nil, err
	}
	// Sandboxes start only inside the finished fence: namespace, identity,
	// network policy and guardrails first.
	deps := slices.Concat([]pulumi.Resource{nsObj}, fenceReady, identity.Ready, egress.Ready, guardrails.Ready, args.DependsOn)
	if len(parts.Gateway) > 0 {
		// The gateway runs inside the same fence (its own NetworkPolicies
		// are in the egress group, the identity guardrails bind its label),
		// and the sandboxes start once it serves.
		gw, err := NewEgressGateway(ctx, name, gatewayURL(parts), &EgressGatewayArgs{Objects: parts.Gateway, Namespace: nsObj, outputs: later},
			pulumi.Parent(t), pulumi.DependsOn(deps))
		if err != nil {
			return nil, err
		}
		deps = slices.Concat(deps, gw.Ready)
	}
	templates := map[string]*SandboxTemplate{}
	for _, tpl := range parts.Templates {
		st, err := NewSandboxTemplate(ctx, tn.Name+"/"+tpl.Template.Name, &SandboxTemplateArgs{Part: tpl, Namespace: nsObj, outputs: later},
			pulumi.Parent(t), pulumi.DependsOn(deps))
		if err != nil {
			return nil, err
		}
		templates[tpl.Template.Name] = st
	}
	for _, wp := range parts.WarmPools {
		poolDeps := deps
		if st, ok := templates[wp.WarmPool.Template]; ok {
			poolDeps = slices.Concat(deps, st.Ready)
		}
		if _, err := NewWarmPool(ctx, tn.Name+"/"+wp.WarmPool.Name, &WarmPoolArgs{Part: wp, Namespace: nsObj, outputs: later},
			pulumi.Parent(t), pulumi.DependsOn(poolDeps)); err != nil {
			return nil, err
		}
	}
	t.Namespace = pulumi.String(tn.Namespace).ToStringOutput()
	if err := ctx.RegisterResourceOutputs(t, pulumi.Map{"namespace": t.Namespace}); err != nil {
		return nil, err
	}
	if args.outputs == nil {
		return t, later.flush()
	}
	return t, nil
}

// ObjectGroup is a component that owns the objects of one concept of a tenant
// (paddock:tenant:Identity, paddock:network:Egress, paddock:policy:Guardrails).
type ObjectGroup struct {
	pulumi.ResourceState

	Objects pulumi.StringArrayOutput `pulumi:"objects"`

	// Ready are the resources a dependant waits for. Depending on the
	// component itself is not enough: the Go SDK expands a component into the
	// children it has registered so far, which races with their registration.
	Ready []pulumi.Resource
}

func newGroup(ctx *pulumi.Context, later *laterOutputs, token, name string, objs []*unstructured.Unstructured,
	ns pulumi.Resource, opts ...pulumi.ResourceOption) (*ObjectGroup, error) {
	g := &ObjectGroup{}
	if err := ctx.RegisterComponentResource(token, name, g, opts...); err != nil {
		return nil, err
	}
	names, ready, err := registerAll(ctx, objs, inNamespace(ns, pulumi.Parent(g))...)
	if err != nil {
		return nil, err
	}
	g.Ready = ready
	g.Objects = names.ToStringArrayOutput()
	return g, later.register(ctx, g, pulumi.Map{"objects": g.Objects})
}

// registerAll registers objs and returns "Kind name" of each and the
// registered resources.
func registerAll(ctx *pulumi.Context, objs []*unstructured.Unstructured, opts ...pulumi.ResourceOption) (pulumi.StringArray, []pulumi.Resource, error) {
	var names pulumi.StringArray
	var rs []pulumi.Resource
	for _, u := range objs {
		r, err := k8sres.RegisterUnstructured(ctx, u, opts...)
		if err != nil {
			return nil, nil, err
		}
		names = append(names, pulumi.String(u.GetKind()+" "+k8sres.Name(u)))
		rs = append(rs, r)
	}
	return names, rs, nil
}

// inNamespace adds DeletedWith(ns) to the options of an object in the
// tenant's namespace: when the tenant goes, deleting the namespace deletes
// everything in it, so destroy asks the API server for one deletion per
// tenant instead of one per object and a wait on each. Objects that stay
// while the namespace stays are still deleted one by one.
func inNamespace(ns pulumi.Resource, opts ...pulumi.ResourceOption) []pulumi.ResourceOption {
	if ns == nil {
		return opts
	}
	return append(opts, pulumi.DeletedWith(ns))
}
