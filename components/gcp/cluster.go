// Package gcp is Paddock's GCP layer: Pulumi ComponentResources that take an
// empty GCP project to a GKE cluster ready for the in-cluster layer — the
// hardened cluster, the system, gVisor and KVM node pools, Kata on the KVM
// pools, one Google service account per tenant identity that needs cloud
// access, audit log sinks and alert policies — tied together by Platform.
//
// The components take the plain values of package gcpinputs as their Args (aliased
// here), never the model or the HCL; package rules validates those values and
// NewPlatform refuses anything it rejects. Only the pulumi-gcp packages used
// are imported (container, serviceaccount, projects, artifactregistry,
// logging, storage, bigquery, pubsub, monitoring).
package gcp

import (
	"fmt"

	"github.com/pulumi/pulumi-gcp/sdk/v7/go/gcp/artifactregistry"
	"github.com/pulumi/pulumi-gcp/sdk/v7/go/gcp/container"
	"github.com/pulumi/pulumi-gcp/sdk/v7/go/gcp/projects"
	"github.com/pulumi/pulumi-gcp/sdk/v7/go/gcp/serviceaccount"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

// Args of the components: plain values, defined in package gcpinputs so that the
// policy layer can validate them without importing Pulumi.
type (
	PlatformArgs         = gcpinputs.PlatformArgs
	ClusterArgs          = gcpinputs.ClusterArgs
	NodePoolArgs         = gcpinputs.NodePoolArgs
	KataArgs             = gcpinputs.KataArgs
	WorkloadIdentityArgs = gcpinputs.WorkloadIdentityArgs
	AuditSinkArgs        = gcpinputs.AuditSinkArgs
	AlertArgs            = gcpinputs.AlertArgs
)

// ClusterLoggingComponents are the GKE logging components the cluster ships to
// Cloud Logging: system and workload logs, and the control plane's API server,
// controller manager and scheduler logs. API audit logs (Admin Activity) are
// always written by GKE on top of these.
var ClusterLoggingComponents = []string{"SYSTEM_COMPONENTS", "WORKLOADS", "APISERVER", "CONTROLLER_MANAGER", "SCHEDULER"}

// Cluster is the GKE cluster and the least-privilege service account its
// nodes run as.
type Cluster struct {
	pulumi.ResourceState

	Name     pulumi.StringOutput `pulumi:"name"`
	Endpoint pulumi.StringOutput `pulumi:"endpoint"`
	// Kubeconfig authenticates with gke-gcloud-auth-plugin (no static
	// credential); it is a secret all the same.
	Kubeconfig         pulumi.StringOutput `pulumi:"kubeconfig"`
	WorkloadPool       pulumi.StringOutput `pulumi:"workloadPool"`
	NodeServiceAccount pulumi.StringOutput `pulumi:"nodeServiceAccount"`

	// Args are the defaulted args the cluster was made with.
	Args ClusterArgs
	// GKE is the container.Cluster resource itself.
	GKE *container.Cluster
}

// NewCluster registers the hardened GKE cluster: VPC-native with Dataplane V2,
// Workload Identity, private nodes and a private control plane range with
// master authorized networks, shielded nodes, a release channel, control-plane
// logging, no client certificate or legacy ABAC, deletion protection, and the
// default node pool removed (node pools are separate resources).
func NewCluster(ctx *pulumi.Context, name string, args *ClusterArgs, opts ...pulumi.ResourceOption) (*Cluster, error) {
	c := &Cluster{}
	if err := ctx.RegisterComponentResource("paddock:gcp:Cluster", name, c, opts...); err != nil {
		return nil, err
	}
	a := *args
	if a.ReleaseChannel == "" {
		a.ReleaseChannel = gcpinputs.DefaultReleaseChannel
	}
	if a.MasterCIDR == "" {
		a.MasterCIDR = gcpinputs.DefaultMasterCIDR
	}
	if a.Name == "" {
		a.Name = name
	}
	c.Args = a
	labels := gcpinputs.GCPLabels(a.Name, a.Labels)
	parent := pulumi.Parent(c)

	// The nodes' own identity: only what a node needs (logs, metrics,
	// metadata). Pods never see it: GKE_METADATA hides it behind Workload
	// Identity.
	var nodeSA pulumi.StringOutput
	var nodeSADeps []pulumi.Resource
	if a.NodeServiceAccount != "" {
		nodeSA = pulumi.String(a.NodeServiceAccount).ToStringOutput()
	} else {
		sa, err := serviceaccount.NewAccount(ctx, name+"-nodes", &serviceaccount.AccountArgs{
			Project:     pulumi.String(a.Project),
			AccountId:   pulumi.String(gcpinputs.ServiceAccountID(a.Name, "nodes")),
			DisplayName: pulumi.String(fmt.Sprintf("Paddock nodes of GKE cluster %s", a.Name)),
			Description: pulumi.String("Least-privilege node service account managed by Paddock; never granted to pods."),
		}, parent)
		if err != nil {
			return nil, err
		}
		role, err := projects.NewIAMMember(ctx, name+"-nodes-"+gcpinputs.NodeServiceAccountRole, &projects.IAMMemberArgs{
			Project: pulumi.String(a.Project),
			Role:    pulumi.String(gcpinputs.NodeServiceAccountRole),
			Member:  sa.Member,
		}, parent)
		if err != nil {
			return nil, err
		}
		nodeSA = sa.Email
		nodeSADeps = []pulumi.Resource{role}
	}

	var authorized container.ClusterMasterAuthorizedNetworksConfigCidrBlockArray
	for i, n := range a.AuthorizedNetworks {
		display := n.DisplayName
		if display == "" {
			display = fmt.Sprintf("paddock-%d", i)
		}
		authorized = append(authorized, container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs{
			CidrBlock: pulumi.String(n.CIDR), DisplayName: pulumi.String(display),
		})
	}

	datapath := "ADVANCED_DATAPATH"
	if a.DisableDataplaneV2 {
		datapath = "LEGACY_DATAPATH"
	}
	ipAlloc := &container.ClusterIpAllocationPolicyArgs{}
	if a.PodsRange != "" {
		ipAlloc.ClusterSecondaryRangeName = pulumi.String(a.PodsRange)
	}
	if a.ServicesRange != "" {
		ipAlloc.ServicesSecondaryRangeName = pulumi.String(a.ServicesRange)
	}
	private := &container.ClusterPrivateClusterConfigArgs{
		EnablePrivateNodes:    pulumi.Bool(!a.PublicNodes),
		EnablePrivateEndpoint: pulumi.Bool(a.PrivateEndpoint),
	}
	if !a.PublicNodes {
		private.MasterIpv4CidrBlock = pulumi.String(a.MasterCIDR)
	}
	// The short-lived default pool gets the same node identity, so the
	// project's default compute service account is never used.
	defaultPool := &container.ClusterNodeConfigArgs{
		ServiceAccount: nodeSA,
		OauthScopes:    pulumi.ToStringArray([]string{gcpinputs.CloudPlatformScope}),
		ShieldedInstanceConfig: &container.ClusterNodeConfigShieldedInstanceConfigArgs{
			EnableSecureBoot: pulumi.Bool(true), EnableIntegrityMonitoring: pulumi.Bool(true),
		},
		Metadata: pulumi.StringMap{"disable-legacy-endpoints": pulumi.String("true")},
	}
	cargs := &container.ClusterArgs{
		Name:        pulumi.String(a.Name),
		Project:     pulumi.String(a.Project),
		Location:    pulumi.String(a.Location),
		Description: pulumi.String("Agent sandbox platform " + a.Name + ", managed by Paddock"),
		// Node pools are separate resources; GKE still needs an initial pool,
		// which is removed as soon as the cluster exists.
		RemoveDefaultNodePool: pulumi.Bool(true),
		InitialNodeCount:      pulumi.Int(1),
		DeletionProtection:    pulumi.Bool(!a.AllowDeletion),
		NetworkingMode:        pulumi.String("VPC_NATIVE"),
		IpAllocationPolicy:    ipAlloc,
		DatapathProvider:      pulumi.String(datapath),
		ReleaseChannel:        &container.ClusterReleaseChannelArgs{Channel: pulumi.String(a.ReleaseChannel)},
		EnableShieldedNodes:   pulumi.Bool(true),
		EnableLegacyAbac:      pulumi.Bool(false),
		MasterAuth: &container.ClusterMasterAuthArgs{
			ClientCertificateConfig: &container.ClusterMasterAuthClientCertificateConfigArgs{IssueClientCertificate: pulumi.Bool(false)},
		},
		MasterAuthorizedNetworksConfig: &container.ClusterMasterAuthorizedNetworksConfigArgs{
			CidrBlocks:                  authorized,
			GcpPublicCidrsAccessEnabled: pulumi.Bool(false),
		},
		PrivateClusterConfig: private,
		LoggingConfig:        &container.ClusterLoggingConfigArgs{EnableComponents: pulumi.ToStringArray(ClusterLoggingComponents)},
		MonitoringConfig:     &container.ClusterMonitoringConfigArgs{EnableComponents: pulumi.ToStringArray([]string{"SYSTEM_COMPONENTS"})},
		ResourceLabels:       pulumi.ToStringMap(labels),
		NodeConfig:           defaultPool,
	}
	if !a.DisableWorkloadIdentity {
		cargs.WorkloadIdentityConfig = &container.ClusterWorkloadIdentityConfigArgs{WorkloadPool: pulumi.String(gcpinputs.WorkloadPool(a.Project))}
		defaultPool.WorkloadMetadataConfig = &container.ClusterNodeConfigWorkloadMetadataConfigArgs{Mode: pulumi.String("GKE_METADATA")}
	}
	if a.FQDNNetworkPolicy {
		cargs.EnableFqdnNetworkPolicy = pulumi.Bool(true)
	}
	if a.Network != "" {
		cargs.Network = pulumi.String(a.Network)
	}
	if a.Subnetwork != "" {
		cargs.Subnetwork = pulumi.String(a.Subnetwork)
	}
	gke, err := container.NewCluster(ctx, name, cargs, parent, pulumi.DependsOn(nodeSADeps),
		pulumi.IgnoreChanges(ClusterIgnoreChanges))
	if err != nil {
		return nil, err
	}
	c.GKE = gke

	if !a.PublicNodes {
		if _, err := newWebhookFirewall(ctx, c, nodeSA, parent); err != nil {
			return nil, err
		}
	}

	if a.DataAccessAuditLogs {
		if _, err := projects.NewIAMAuditConfig(ctx, name+"-container-data-access", &projects.IAMAuditConfigArgs{
			Project: pulumi.String(a.Project),
			Service: pulumi.String("container.googleapis.com"),
			AuditLogConfigs: projects.IAMAuditConfigAuditLogConfigArray{
				projects.IAMAuditConfigAuditLogConfigArgs{LogType: pulumi.String("DATA_READ")},
				projects.IAMAuditConfigAuditLogConfigArgs{LogType: pulumi.String("DATA_WRITE")},
			},
		}, parent); err != nil {
			return nil, err
		}
	}

	endpoint := gke.Endpoint
	if a.PrivateEndpoint {
		endpoint = gke.PrivateClusterConfig.PrivateEndpoint().Elem()
	}
	context := gcpinputs.KubeconfigContext(a.Project, a.Location, a.Name)
	c.Kubeconfig = pulumi.ToSecret(pulumi.All(endpoint, gke.MasterAuth.ClusterCaCertificate().Elem()).ApplyT(func(v []any) string {
		return gcpinputs.Kubeconfig(context, v[0].(string), v[1].(string))
	})).(pulumi.StringOutput)
	c.Name = gke.Name
	c.Endpoint = endpoint
	c.WorkloadPool = pulumi.String(workloadPool(a)).ToStringOutput()
	c.NodeServiceAccount = nodeSA
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{
		"name": c.Name, "endpoint": c.Endpoint, "kubeconfig": c.Kubeconfig,
		"workloadPool": c.WorkloadPool, "nodeServiceAccount": c.NodeServiceAccount,
	})
}

// WebhookPort is the port the Agent Sandbox release's webhook (CRD
// conversion) listens on: its Service's targetPort, the pod's port 9443.
const WebhookPort = 9443

// firewallToken is pulumi-gcp's compute firewall rule. It is registered by
// token, without the generated compute package: that package is 13 MB of Go
// source (container, already the costliest, is 3.9 MB) for one resource. A
// test checks the token and every input name against the pinned SDK's source.
const firewallToken = "gcp:compute/firewall:Firewall"

type firewallRule struct {
	pulumi.CustomResourceState
	Name pulumi.StringOutput `pulumi:"name"`
}

// newWebhookFirewall lets a private cluster's control plane reach the
// webhook on the nodes. GKE's own firewall rule for private clusters admits
// the control plane on 443 and 10250 only, so without this every request
// that needs CRD conversion (any object read or written in a version other
// than the stored one) times out. Exactly the control plane's range, to
// exactly this cluster's nodes (by their service account: unlike a network
// tag, nobody can attach it to another VM without the right to act as it),
// on exactly the webhook's port.
func newWebhookFirewall(ctx *pulumi.Context, c *Cluster, nodeSA pulumi.StringOutput, parent pulumi.ResourceOption) (*firewallRule, error) {
	a := c.Args
	network := a.Network
	if network == "" {
		network = "default"
	}
	fw := &firewallRule{}
	err := ctx.RegisterResource(firewallToken, a.Name+"-control-plane-webhooks", pulumi.Map{
		"project":               pulumi.String(a.Project),
		"network":               pulumi.String(network),
		"name":                  pulumi.String(a.Name + "-control-plane-webhooks"),
		"description":           pulumi.String(fmt.Sprintf("GKE control plane of %s to the Agent Sandbox webhook on its nodes; managed by Paddock", a.Name)),
		"direction":             pulumi.String("INGRESS"),
		"sourceRanges":          pulumi.StringArray{pulumi.String(a.MasterCIDR)},
		"targetServiceAccounts": pulumi.StringArray{nodeSA},
		"allows": pulumi.MapArray{pulumi.Map{
			"protocol": pulumi.String("tcp"),
			"ports":    pulumi.StringArray{pulumi.String(fmt.Sprint(WebhookPort))},
		}},
	}, fw, parent)
	return fw, err
}

// grantImagePull lets the nodes pull from each repository: the node service
// account gets gcpinputs.ImagePullRole on the repository itself (not the project),
// beside the one role GKE documents for nodes, which reads no private
// repository.
func grantImagePull(ctx *pulumi.Context, c *Cluster, repos []gcpinputs.ArtifactRegistryRepository) ([]pulumi.Resource, error) {
	member := c.NodeServiceAccount.ApplyT(func(email string) string { return "serviceAccount:" + email }).(pulumi.StringOutput)
	var out []pulumi.Resource
	for _, r := range repos {
		grant, err := artifactregistry.NewRepositoryIamMember(ctx, c.Args.Name+"-nodes-pull/"+r.String(), &artifactregistry.RepositoryIamMemberArgs{
			Project:    pulumi.String(r.Project),
			Location:   pulumi.String(r.Location),
			Repository: pulumi.String(r.Repository),
			Role:       pulumi.String(gcpinputs.ImagePullRole),
			Member:     member,
		}, pulumi.Parent(c))
		if err != nil {
			return nil, err
		}
		out = append(out, grant)
	}
	return out, nil
}

// ClusterIgnoreChanges are the cluster inputs Pulumi ignores after creation:
// the default pool's settings only matter while it exists; once it is
// removed they must not force a replacement of the cluster.
var ClusterIgnoreChanges = []string{"nodeConfig", "initialNodeCount"}

// NodePoolIgnoreChanges: the autoscaler owns the node count after creation.
var NodePoolIgnoreChanges = []string{"initialNodeCount"}

func workloadPool(a ClusterArgs) string {
	if a.DisableWorkloadIdentity {
		return ""
	}
	return gcpinputs.WorkloadPool(a.Project)
}
