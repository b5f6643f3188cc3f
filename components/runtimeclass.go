package components

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/components/internal/k8sres"
	"github.com/paddock-platform/paddock/internal/manifests"
)

// RuntimeClassArgs are the inputs of one sandbox RuntimeClass.
type RuntimeClassArgs struct {
	// Part is the RuntimeClass object and its spec block.
	Part manifests.RuntimeClassPart
}

// RuntimeClass exposes a sandbox runtime (gVisor runsc, Kata) to the scheduler.
type RuntimeClass struct {
	pulumi.ResourceState

	Name    pulumi.StringOutput `pulumi:"name"`
	Handler pulumi.StringOutput `pulumi:"handler"`

	// Ready are the resources a dependant waits for (see ObjectGroup.Ready).
	Ready []pulumi.Resource
}

// NewRuntimeClass registers the RuntimeClass object.
func NewRuntimeClass(ctx *pulumi.Context, name string, args *RuntimeClassArgs, opts ...pulumi.ResourceOption) (*RuntimeClass, error) {
	c := &RuntimeClass{}
	if err := ctx.RegisterComponentResource("paddock:runtime:RuntimeClass", name, c, opts...); err != nil {
		return nil, err
	}
	obj, err := k8sres.RegisterUnstructured(ctx, args.Part.Object, pulumi.Parent(c))
	if err != nil {
		return nil, err
	}
	c.Ready = []pulumi.Resource{obj}
	c.Name = pulumi.String(args.Part.RuntimeClass.Name).ToStringOutput()
	c.Handler = pulumi.String(args.Part.RuntimeClass.Handler).ToStringOutput()
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"name": c.Name, "handler": c.Handler})
}
