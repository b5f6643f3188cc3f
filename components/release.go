package components

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddock-platform/paddock/components/internal/k8sres"
)

// AgentSandboxReleaseArgs are the inputs of the pinned Agent Sandbox install.
// On the local target the in-cluster Deployment is installed with zero replicas
// (nothing there can run its image) and the real controller runs outside the
// cluster against the same API server (manifests.ReleaseOptions).
type AgentSandboxReleaseArgs struct {
	// Version and Image are the spec's agent_sandbox block (the outputs).
	Version, Image string
	// Objects are the release's objects (manifests.Objects.Release).
	Objects []*unstructured.Unstructured
}

// AgentSandboxRelease installs the CRDs, controller and RBAC of one pinned release.
type AgentSandboxRelease struct {
	pulumi.ResourceState

	Version pulumi.StringOutput `pulumi:"version"`
	Image   pulumi.StringOutput `pulumi:"image"`

	// Ready are the resources a dependant waits for (see ObjectGroup.Ready).
	Ready []pulumi.Resource
}

// NewAgentSandboxRelease registers the release's objects as children.
func NewAgentSandboxRelease(ctx *pulumi.Context, name string, args *AgentSandboxReleaseArgs, opts ...pulumi.ResourceOption) (*AgentSandboxRelease, error) {
	r := &AgentSandboxRelease{}
	if err := ctx.RegisterComponentResource("paddock:agentsandbox:Release", name, r, opts...); err != nil {
		return nil, err
	}
	objs := args.Objects
	// Namespaces first: the release's namespaced objects cannot be created before them.
	var namespaces []pulumi.Resource
	for _, u := range objs {
		if u.GetKind() == "Namespace" {
			ns, err := k8sres.RegisterUnstructured(ctx, u, pulumi.Parent(r))
			if err != nil {
				return nil, err
			}
			namespaces = append(namespaces, ns)
			r.Ready = append(r.Ready, ns)
		}
	}
	for _, u := range objs {
		if u.GetKind() == "Namespace" {
			continue
		}
		obj, err := k8sres.RegisterUnstructured(ctx, u, pulumi.Parent(r), pulumi.DependsOn(namespaces))
		if err != nil {
			return nil, err
		}
		r.Ready = append(r.Ready, obj)
	}
	r.Version = pulumi.String(args.Version).ToStringOutput()
	r.Image = pulumi.String(args.Image).ToStringOutput()
	return r, ctx.RegisterResourceOutputs(r, pulumi.Map{"version": r.Version, "image": r.Image})
}
