package components

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/components/agentsandbox"
	"github.com/paddock-platform/paddock/model"
)

// AgentSandboxReleaseArgs are the inputs of the pinned Agent Sandbox install.
type AgentSandboxReleaseArgs struct {
	Release model.AgentSandboxRelease
	Labels  map[string]string
	// ExternalController is set on the local target: the in-cluster Deployment is
	// installed with zero replicas (nothing can run its image without a container
	// runtime) and the real controller runs outside the cluster against the same
	// API server.
	ExternalController bool
}

// AgentSandboxRelease installs the CRDs, controller and RBAC of one pinned release.
type AgentSandboxRelease struct {
	pulumi.ResourceState

	Version pulumi.StringOutput `pulumi:"version"`
	Image   pulumi.StringOutput `pulumi:"image"`
}

// NewAgentSandboxRelease registers the release's objects as children.
func NewAgentSandboxRelease(ctx *pulumi.Context, name string, args *AgentSandboxReleaseArgs, opts ...pulumi.ResourceOption) (*AgentSandboxRelease, error) {
	r := &AgentSandboxRelease{}
	if err := ctx.RegisterComponentResource("paddock:agentsandbox:Release", name, r, opts...); err != nil {
		return nil, err
	}
	objs, err := agentsandbox.Objects(args.Release.Version, ReleaseOptions(args))
	if err != nil {
		return nil, err
	}
	// Namespaces first: the release's namespaced objects cannot be created before them.
	var namespaces []pulumi.Resource
	for _, u := range objs {
		if u.GetKind() == "Namespace" {
			ns, err := registerObject(ctx, u, pulumi.Parent(r))
			if err != nil {
				return nil, err
			}
			namespaces = append(namespaces, ns)
		}
	}
	for _, u := range objs {
		if u.GetKind() == "Namespace" {
			continue
		}
		if _, err := registerObject(ctx, u, pulumi.Parent(r), pulumi.DependsOn(namespaces)); err != nil {
			return nil, err
		}
	}
	r.Version = pulumi.String(args.Release.Version).ToStringOutput()
	r.Image = pulumi.String(args.Release.Image).ToStringOutput()
	return r, ctx.RegisterResourceOutputs(r, pulumi.Map{"version": r.Version, "image": r.Image})
}

// ReleaseOptions shapes the embedded release for the args (shared with render).
func ReleaseOptions(args *AgentSandboxReleaseArgs) agentsandbox.Options {
	o := agentsandbox.Options{Image: args.Release.Image, Labels: args.Labels}
	if args.ExternalController {
		zero := int64(0)
		o.ControllerReplicas = &zero
	}
	return o
}
