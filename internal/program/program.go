// Package program is the Pulumi program Paddock runs: a kubernetes provider for the
// platform's target (for target "gke", the GCP layer that creates the cluster
// and yields that provider), then the platform root component. The engine runs it inline
// through the Automation API; a standard `pulumi up` runs the very same function.
package program

import (
	"fmt"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/components"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/targets"
)

// New returns the program for a resolved platform: for target "gke", the GCP
// layer and the in-cluster layer on the cluster it creates (gke.go); for the
// others (Target.Kubeconfig set), the in-cluster layer on an existing cluster.
func New(p *model.Platform) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		if p.Target.Kind == model.TargetGKE {
			if err := keepSecrets(ctx, p); err != nil {
				return err
			}
			return gke(ctx, p)
		}
		if p.Target.Kubeconfig == "" {
			return fmt.Errorf("target %s has no kubeconfig resolved", p.Target.Kind)
		}
		if err := keepSecrets(ctx, p); err != nil {
			return err
		}
		// The provider is given the kubeconfig *path*, never its contents, so no
		// cluster credential is written into the state.
		args := &kubernetes.ProviderArgs{
			Kubeconfig:            pulumi.StringPtr(p.Target.Kubeconfig),
			EnableServerSideApply: pulumi.BoolPtr(true),
		}
		if p.Target.Context != "" {
			args.Context = pulumi.StringPtr(p.Target.Context)
		}
		prov, err := kubernetes.NewProvider(ctx, "kubernetes", args)
		if err != nil {
			return err
		}
		root, err := components.NewPlatform(ctx, p.Name, &components.PlatformArgs{Platform: p}, pulumi.Providers(prov))
		if err != nil {
			return err
		}
		ctx.Export("platform", pulumi.String(p.Name))
		ctx.Export("target", pulumi.String(string(p.Target.Kind)))
		ctx.Export("tenants", root.Tenants)
		ctx.Export("agentSandboxVersion", root.AgentSandboxVersion)
		// The cluster reached, by server and CA: a runner whose kubeconfig
		// lies elsewhere can tell it is the same cluster (engine's fast
		// path). A kubeconfig without a CA records none.
		if id, err := targets.KubeconfigCluster(p.Target.Kubeconfig, p.Target.Context); err == nil {
			ctx.Export(targets.ClusterOutput, pulumi.ToStringMap(id.Map()))
		}
		return nil
	}
}
