package components

import (
	"slices"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/manifests"
	"github.com/paddock-platform/paddock/model"
)

// PlatformArgs are the inputs of the platform root.
type PlatformArgs struct {
	Platform *model.Platform
}

// Platform is the root component: the Agent Sandbox release, the runtime classes
// and every tenant, in dependency order. The kubernetes provider comes from the
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
	release, err := NewAgentSandboxRelease(ctx, "agent-sandbox", &AgentSandboxReleaseArgs{Platform: p}, pulumi.Parent(root))
	if err != nil {
		return nil, err
	}
	deps := slices.Clone(release.Ready)
	for _, rc := range p.RuntimeClasses {
		if !manifests.ManagesRuntimeClass(p, rc) {
			continue // GKE creates and owns it; templates just reference it
		}
		c, err := NewRuntimeClass(ctx, rc.Name, &RuntimeClassArgs{Platform: p, RuntimeClass: rc}, pulumi.Parent(root))
		if err != nil {
			return nil, err
		}
		deps = append(deps, c.Ready...)
	}
	var tenants pulumi.StringArray
	for _, t := range p.Tenants {
		if _, err := NewTenant(ctx, t.Name, &TenantArgs{Platform: p, Tenant: t, DependsOn: deps}, pulumi.Parent(root)); err != nil {
			return nil, err
		}
		tenants = append(tenants, pulumi.String(t.Name))
	}
	root.Tenants = tenants.ToStringArrayOutput()
	root.AgentSandboxVersion = pulumi.String(p.AgentSandbox.Version).ToStringOutput()
	return root, ctx.RegisterResourceOutputs(root, pulumi.Map{
		"tenants":             root.Tenants,
		"agentSandboxVersion": root.AgentSandboxVersion,
	})
}
