package components

import (
	"slices"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
)

// PlatformArgs are the inputs of the platform root.
type PlatformArgs struct {
	Platform *model.Platform
}

// Platform is the root component: the Agent Sandbox release, the runtime classes,
// every tenant and the opt-in monitoring objects, in dependency order. The kubernetes provider comes from the
// caller through pulumi.Providers and is inherited by every child.
type Platform struct {
	pulumi.ResourceState

	Tenants             pulumi.StringArrayOutput `pulumi:"tenants"`
	AgentSandboxVersion pulumi.StringOutput      `pulumi:"agentSandboxVersion"`
}

// NewPlatform registers the whole in-cluster platform.
func NewPlatform(ctx *pulumi.Context, name string, args *PlatformArgs, opts ...pulumi.ResourceOption) (*Platform, error) {
	root := &Platform{}
	if err := ctx.RegisterComponentResource("paddock:index:Platform", name, root, opts...); err != nil {
		return nil, err
	}
	p := args.Platform
	// One walk of the object tree: manifests.Build decides which objects
	// exist and in what order; each part becomes one component.
	objs, err := manifests.Build(p)
	if err != nil {
		return nil, err
	}
	release, err := NewAgentSandboxRelease(ctx, "agent-sandbox", &AgentSandboxReleaseArgs{
		Version: p.AgentSandbox.Version, Image: p.AgentSandbox.Image, Objects: objs.Release,
	}, pulumi.Parent(root))
	if err != nil {
		return nil, err
	}
	deps := slices.Clone(release.Ready)
	for _, rc := range objs.RuntimeClasses {
		c, err := NewRuntimeClass(ctx, rc.RuntimeClass.Name, &RuntimeClassArgs{Part: rc}, pulumi.Parent(root))
		if err != nil {
			return nil, err
		}
		deps = append(deps, c.Ready...)
	}
	var tenants pulumi.StringArray
	later := &laterOutputs{}
	for _, tp := range objs.Tenants {
		if _, err := NewTenant(ctx, tp.Tenant.Name, &TenantArgs{Parts: tp, DependsOn: deps, outputs: later}, pulumi.Parent(root)); err != nil {
			return nil, err
		}
		tenants = append(tenants, pulumi.String(tp.Tenant.Name))
	}
	if len(objs.Observability) > 0 {
		if _, err := NewMonitoring(ctx, "monitoring", &MonitoringArgs{Objects: objs.Observability, DependsOn: release.Ready}, pulumi.Parent(root)); err != nil {
			return nil, err
		}
	}
	// Every resource is registered: now the components' outputs, whose
	// calls wait for the components' dependencies to exist.
	if err := later.flush(); err != nil {
		return nil, err
	}
	root.Tenants = tenants.ToStringArrayOutput()
	root.AgentSandboxVersion = pulumi.String(p.AgentSandbox.Version).ToStringOutput()
	return root, ctx.RegisterResourceOutputs(root, pulumi.Map{
		"tenants":             root.Tenants,
		"agentSandboxVersion": root.AgentSandboxVersion,
	})
}
