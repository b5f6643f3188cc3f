package components

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddock-platform/paddock/internal/manifests"
)

// EgressGatewayArgs are the inputs of a tenant's egress gateway.
type EgressGatewayArgs struct {
	// Objects are the gateway's workload objects (manifests.TenantParts
	// Gateway): its ServiceAccount, Role and binding, ConfigMap, Deployment
	// and Service. Its NetworkPolicies belong to the tenant's egress fence.
	Objects []*unstructured.Unstructured
	// Namespace is the tenant's namespace resource (see SandboxTemplateArgs).
	Namespace pulumi.Resource

	outputs *laterOutputs // see TenantArgs
}

// EgressGateway is a tenant's egress gateway: the one route out of its
// sandboxes, holding the destinations' credentials. The provider waits until
// its Deployment is rolled out.
type EgressGateway struct {
	pulumi.ResourceState

	// URL is where the tenant's sandboxes reach the gateway.
	URL     pulumi.StringOutput      `pulumi:"url"`
	Objects pulumi.StringArrayOutput `pulumi:"objects"`

	// Ready are the resources a dependant waits for (see ObjectGroup.Ready).
	Ready []pulumi.Resource
}

// NewEgressGateway registers the gateway's objects as its children. url is
// manifests.GatewayURL of the tenant.
func NewEgressGateway(ctx *pulumi.Context, name, url string, args *EgressGatewayArgs, opts ...pulumi.ResourceOption) (*EgressGateway, error) {
	g := &EgressGateway{}
	if err := ctx.RegisterComponentResource("paddock:network:EgressGateway", name, g, opts...); err != nil {
		return nil, err
	}
	names, ready, err := registerAll(ctx, args.Objects, inNamespace(args.Namespace, pulumi.Parent(g))...)
	if err != nil {
		return nil, err
	}
	g.Ready = ready
	g.URL = pulumi.String(url).ToStringOutput()
	g.Objects = names.ToStringArrayOutput()
	return g, args.outputs.register(ctx, g, pulumi.Map{"url": g.URL, "objects": g.Objects})
}

// gatewayURL is where tenant parts' sandboxes reach their gateway.
func gatewayURL(parts manifests.TenantParts) string { return manifests.GatewayURL(parts.Tenant) }
