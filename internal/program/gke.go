package program

import (
	"strings"

	"github.com/pulumi/pulumi-gcp/sdk/v7/go/gcp"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/components"
	gcplayer "github.com/paddock-platform/paddock/components/gcp"
	"github.com/paddock-platform/paddock/internal/gcpinputs/frommodel"
	"github.com/paddock-platform/paddock/internal/model"
)

// gke is the program of target "gke": an explicit gcp provider for the
// target's project and location, the GCP layer (cluster, node pools, Kata,
// workload identities, audit sinks) with the model mapped onto its inputs,
// then the in-cluster layer through the kubernetes provider of the cluster
// the GCP layer creates. Cloud and cluster come up in one run: the provider
// is made from the cluster's outputs (exec auth through
// gke-gcloud-auth-plugin, no credential) and waits for every node pool.
//
// Only the pulumi-gcp packages used are imported: gcp (the provider) here,
// and those of components/gcp.
func gke(ctx *pulumi.Context, p *model.Platform) error {
	region, zone := SplitLocation(p.Target.Location)
	pargs := &gcp.ProviderArgs{
		Project: pulumi.StringPtr(p.Target.Project),
		Region:  pulumi.StringPtr(region),
	}
	if zone != "" {
		pargs.Zone = pulumi.StringPtr(zone)
	}
	prov, err := gcp.NewProvider(ctx, "gcp", pargs)
	if err != nil {
		return err
	}
	// The same inputs policy validated (rules.Validate on frommodel.Args):
	// NewPlatform runs the rules again and refuses what they refuse.
	args := frommodel.Args(p)
	cloud, err := gcplayer.NewPlatform(ctx, p.Name, &args, pulumi.Providers(prov))
	if err != nil {
		return err
	}
	root, err := components.NewPlatform(ctx, p.Name, &components.PlatformArgs{Platform: p},
		pulumi.Providers(cloud.KubernetesProvider), pulumi.DependsOn(cloud.InClusterReady))
	if err != nil {
		return err
	}
	var runtimeClasses pulumi.StringArray
	for _, rc := range p.RuntimeClasses {
		runtimeClasses = append(runtimeClasses, pulumi.String(rc.Name))
	}
	ctx.Export("platform", pulumi.String(p.Name))
	ctx.Export("target", pulumi.String(string(p.Target.Kind)))
	ctx.Export("tenants", root.Tenants)
	ctx.Export("agentSandboxVersion", root.AgentSandboxVersion)
	ctx.Export("clusterName", cloud.ClusterName)
	ctx.Export("workloadPool", cloud.WorkloadPool)
	// It carries no credential (exec auth), but names the endpoint and CA.
	ctx.Export("kubeconfig", pulumi.ToSecret(cloud.Kubeconfig))
	// NAMESPACE/KSA -> the Google service account email it is annotated with.
	ctx.Export("identities", cloud.Identities)
	ctx.Export("runtimeClasses", runtimeClasses)
	// Images the nodes pull from outside Artifact Registry: they must be
	// pullable without credentials (Cloud NAT on private nodes) or mirrored.
	ctx.Export("pullPrerequisites", pulumi.ToStringArray(cloud.PullPrerequisites))
	return nil
}

// SplitLocation splits a GKE location into its region and, for a zonal
// cluster, its zone: "europe-west4" is ("europe-west4", ""),
// "europe-west4-a" is ("europe-west4", "europe-west4-a").
func SplitLocation(location string) (region, zone string) {
	parts := strings.Split(location, "-")
	if len(parts) == 3 && len(parts[2]) == 1 {
		return parts[0] + "-" + parts[1], location
	}
	return location, ""
}
