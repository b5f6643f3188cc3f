package components

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/components/internal/k8sres"
	"github.com/paddock-platform/paddock/internal/manifests"
)

// SandboxTemplateArgs are the inputs of one hardened template.
type SandboxTemplateArgs struct {
	// Part is the SandboxTemplate object and its spec block.
	Part manifests.TemplatePart
	// Namespace is the tenant's namespace resource, if Paddock owns it:
	// deleting it deletes the template, so Pulumi need not (DeletedWith).
	Namespace pulumi.Resource

	outputs *laterOutputs // see TenantArgs
}

// SandboxTemplate is a hardened Agent Sandbox SandboxTemplate.
type SandboxTemplate struct {
	pulumi.ResourceState

	Name pulumi.StringOutput `pulumi:"name"`

	// Ready are the resources a dependant waits for (see ObjectGroup.Ready).
	Ready []pulumi.Resource
}

// NewSandboxTemplate registers the SandboxTemplate object.
func NewSandboxTemplate(ctx *pulumi.Context, name string, args *SandboxTemplateArgs, opts ...pulumi.ResourceOption) (*SandboxTemplate, error) {
	c := &SandboxTemplate{}
	if err := ctx.RegisterComponentResource("paddock:sandbox:Template", name, c, opts...); err != nil {
		return nil, err
	}
	tpl, err := k8sres.RegisterUnstructured(ctx, args.Part.Object, inNamespace(args.Namespace, pulumi.Parent(c))...)
	if err != nil {
		return nil, err
	}
	c.Ready = []pulumi.Resource{tpl}
	c.Name = pulumi.String(args.Part.Template.Name).ToStringOutput()
	return c, args.outputs.register(ctx, c, pulumi.Map{"name": c.Name})
}

// WarmPoolArgs are the inputs of one warm pool.
type WarmPoolArgs struct {
	// Part is the SandboxWarmPool object and its spec block.
	Part manifests.WarmPoolPart
	// Namespace is the tenant's namespace resource (see SandboxTemplateArgs).
	Namespace pulumi.Resource

	outputs *laterOutputs // see TenantArgs
}

// WarmPool keeps pre-created sandboxes of one template of its own tenant. The
// provider waits until the pool reports its replicas Ready.
type WarmPool struct {
	pulumi.ResourceState

	Name          pulumi.StringOutput `pulumi:"name"`
	ReadyReplicas pulumi.AnyOutput    `pulumi:"readyReplicas"`
}

// NewWarmPool registers the SandboxWarmPool object.
func NewWarmPool(ctx *pulumi.Context, name string, args *WarmPoolArgs, opts ...pulumi.ResourceOption) (*WarmPool, error) {
	c := &WarmPool{}
	if err := ctx.RegisterComponentResource("paddock:sandbox:WarmPool", name, c, opts...); err != nil {
		return nil, err
	}
	obj, err := k8sres.RegisterUnstructured(ctx, args.Part.Object, inNamespace(args.Namespace, pulumi.Parent(c))...)
	if err != nil {
		return nil, err
	}
	c.Name = pulumi.String(args.Part.WarmPool.Name).ToStringOutput()
	c.ReadyReplicas = obj.Status.ApplyT(func(s any) any {
		if m, ok := s.(map[string]any); ok {
			return m["readyReplicas"]
		}
		return nil
	}).(pulumi.AnyOutput)
	return c, args.outputs.register(ctx, c, pulumi.Map{"name": c.Name, "readyReplicas": c.ReadyReplicas})
}
