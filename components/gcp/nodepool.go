package gcp

import (
	"sort"

	"github.com/pulumi/pulumi-gcp/sdk/v7/go/gcp/container"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

// NodePool is one node pool: the system pool, a GKE Sandbox (gVisor) pool or a
// KVM pool for Kata.
type NodePool struct {
	pulumi.ResourceState

	Name      pulumi.StringOutput `pulumi:"name"`
	Isolation pulumi.StringOutput `pulumi:"isolation"`
	// NodeSelector and Tolerations are Scheduling as outputs.
	NodeSelector pulumi.StringMapOutput `pulumi:"nodeSelector"`
	Tolerations  pulumi.MapArrayOutput  `pulumi:"tolerations"`

	// Args are the defaulted args of the pool.
	Args NodePoolArgs
	// Scheduling is exactly what a RuntimeClass for this pool must carry: the
	// node selector and a toleration for every taint — GKE's own on gVisor
	// pools, Paddock's on KVM pools.
	Scheduling gcpinputs.Scheduling
	// Pool is the GKE node pool itself. Whatever must wait for the nodes
	// depends on it, not on the component: the Go SDK expands a component
	// into the children it has registered so far, which races with their
	// registration.
	Pool *container.NodePool
}

// NewNodePool registers a node pool of cluster: autoscaled, auto-repaired and
// auto-upgraded, shielded (secure boot, integrity monitoring), on the
// cluster's least-privilege node service account, with the metadata server
// concealed behind Workload Identity (GKE_METADATA). A gVisor pool gets
// sandbox_config gvisor on COS_CONTAINERD and no taint of Paddock's (GKE taints
// it); a KVM pool gets nested virtualisation on UBUNTU_CONTAINERD and the
// paddock.dev/isolation=kvm label and NoSchedule taint.
func NewNodePool(ctx *pulumi.Context, name string, cluster *Cluster, args *NodePoolArgs, opts ...pulumi.ResourceOption) (*NodePool, error) {
	np := &NodePool{}
	if err := ctx.RegisterComponentResource("paddock:gcp:NodePool", name, np, opts...); err != nil {
		return nil, err
	}
	a := args.WithDefaults()
	np.Args = a
	np.Scheduling = a.Scheduling()
	ca := cluster.Args

	var taints container.NodePoolNodeConfigTaintArray
	for _, t := range a.PaddockTaints() {
		taints = append(taints, container.NodePoolNodeConfigTaintArgs{
			Key: pulumi.String(t.Key), Value: pulumi.String(t.Value), Effect: pulumi.String(gcpinputs.GKETaintEffect(t.Effect)),
		})
	}
	cfg := &container.NodePoolNodeConfigArgs{
		MachineType:    pulumi.String(a.MachineType),
		ImageType:      pulumi.String(a.ImageType),
		Labels:         pulumi.ToStringMap(a.PaddockLabels()),
		Taints:         taints,
		ServiceAccount: cluster.NodeServiceAccount,
		OauthScopes:    pulumi.ToStringArray([]string{gcpinputs.CloudPlatformScope}),
		ShieldedInstanceConfig: &container.NodePoolNodeConfigShieldedInstanceConfigArgs{
			EnableSecureBoot: pulumi.Bool(true), EnableIntegrityMonitoring: pulumi.Bool(true),
		},
		Metadata:       pulumi.StringMap{"disable-legacy-endpoints": pulumi.String("true")},
		ResourceLabels: pulumi.ToStringMap(gcpinputs.GCPLabels(ca.Name, a.ResourceLabels)),
	}
	if !ca.DisableWorkloadIdentity {
		cfg.WorkloadMetadataConfig = &container.NodePoolNodeConfigWorkloadMetadataConfigArgs{Mode: pulumi.String("GKE_METADATA")}
	}
	if a.DiskSizeGB > 0 {
		cfg.DiskSizeGb = pulumi.Int(a.DiskSizeGB)
	}
	switch a.Isolation {
	case gcpinputs.IsolationGVisor:
		cfg.SandboxConfig = &container.NodePoolNodeConfigSandboxConfigArgs{SandboxType: pulumi.String("gvisor")}
	case gcpinputs.IsolationKVM:
		threads := 0 // the machine's default (2 on the accepted Intel series)
		if a.DisableSMT {
			threads = 1
		}
		cfg.AdvancedMachineFeatures = &container.NodePoolNodeConfigAdvancedMachineFeaturesArgs{
			EnableNestedVirtualization: pulumi.Bool(true),
			ThreadsPerCore:             pulumi.Int(threads),
		}
	}
	pool, err := container.NewNodePool(ctx, name, &container.NodePoolArgs{
		Name:             pulumi.String(a.Name),
		Project:          pulumi.String(ca.Project),
		Location:         pulumi.String(ca.Location),
		Cluster:          cluster.Name,
		InitialNodeCount: pulumi.Int(a.MinNodes),
		Autoscaling: &container.NodePoolAutoscalingArgs{
			MinNodeCount: pulumi.Int(a.MinNodes),
			MaxNodeCount: pulumi.Int(a.MaxNodes),
		},
		Management: &container.NodePoolManagementArgs{AutoRepair: pulumi.Bool(true), AutoUpgrade: pulumi.Bool(true)},
		NodeConfig: cfg,
	}, pulumi.Parent(np),
		// The pool's name is fixed: a replacement must delete the old pool first.
		pulumi.DeleteBeforeReplace(true),
		pulumi.IgnoreChanges(NodePoolIgnoreChanges))
	if err != nil {
		return nil, err
	}
	np.Pool = pool
	np.Name = pool.Name
	np.Isolation = pulumi.String(a.Isolation).ToStringOutput()
	np.NodeSelector = pulumi.ToStringMap(np.Scheduling.NodeSelector).ToStringMapOutput()
	np.Tolerations = tolerationsOutput(np.Scheduling.Tolerations)
	return np, ctx.RegisterResourceOutputs(np, pulumi.Map{
		"name": np.Name, "isolation": np.Isolation, "nodeSelector": np.NodeSelector, "tolerations": np.Tolerations,
	})
}

func tolerationsOutput(ts []gcpinputs.Toleration) pulumi.MapArrayOutput {
	arr := pulumi.MapArray{}
	for _, t := range ts {
		arr = append(arr, pulumi.Map{
			"key": pulumi.String(t.Key), "operator": pulumi.String(t.Operator),
			"value": pulumi.String(t.Value), "effect": pulumi.String(t.Effect),
		})
	}
	return arr.ToMapArrayOutput()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
