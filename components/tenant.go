package components

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/components/objects"
	"github.com/paddock-platform/paddock/model"
)

// TenantArgs are the inputs of one trust boundary.
type TenantArgs struct {
	Platform *model.Platform
	Tenant   model.Tenant
	// DependsOn are resources the tenant's sandbox objects need first (the Agent
	// Sandbox CRDs, the runtime classes).
	DependsOn []pulumi.Resource
}

// Tenant is one trust boundary: a restricted namespace, the zero-permission agent
// identity, and the tenant's own templates and warm pools.
type Tenant struct {
	pulumi.ResourceState

	Namespace pulumi.StringOutput `pulumi:"namespace"`
}

// NewTenant registers the tenant's namespace, identity, templates and pools.
func NewTenant(ctx *pulumi.Context, name string, args *TenantArgs, opts ...pulumi.ResourceOption) (*Tenant, error) {
	t := &Tenant{}
	if err := ctx.RegisterComponentResource("paddock:tenant:Tenant", name, t, opts...); err != nil {
		return nil, err
	}
	p, tn := args.Platform, args.Tenant
	ns, err := registerTyped(ctx, objects.Namespace(p, tn), pulumi.Parent(t))
	if err != nil {
		return nil, err
	}
	sa, err := registerTyped(ctx, objects.AgentRuntimeServiceAccount(p, tn), pulumi.Parent(t), pulumi.DependsOn([]pulumi.Resource{ns}))
	if err != nil {
		return nil, err
	}
	deps := append([]pulumi.Resource{ns, sa}, args.DependsOn...)
	templates := map[string]*SandboxTemplate{}
	for _, tpl := range tn.Templates {
		st, err := NewSandboxTemplate(ctx, tn.Name+"/"+tpl.Name, &SandboxTemplateArgs{Platform: p, Tenant: tn, Template: tpl},
			pulumi.Parent(t), pulumi.DependsOn(deps))
		if err != nil {
			return nil, err
		}
		templates[tpl.Name] = st
	}
	for _, wp := range tn.WarmPools {
		poolDeps := deps
		if st, ok := templates[wp.Template]; ok {
			poolDeps = append(append([]pulumi.Resource{}, deps...), st)
		}
		if _, err := NewWarmPool(ctx, tn.Name+"/"+wp.Name, &WarmPoolArgs{Platform: p, Tenant: tn, WarmPool: wp},
			pulumi.Parent(t), pulumi.DependsOn(poolDeps)); err != nil {
			return nil, err
		}
	}
	t.Namespace = pulumi.String(tn.Namespace).ToStringOutput()
	return t, ctx.RegisterResourceOutputs(t, pulumi.Map{"namespace": t.Namespace})
}
