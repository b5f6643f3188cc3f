package gcp

import (
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddock-platform/paddock/components/gcp/kata"
	"github.com/paddock-platform/paddock/components/internal/k8sres"
	"github.com/paddock-platform/paddock/internal/gcpinputs"
	"github.com/paddock-platform/paddock/internal/gcpinputs/rules"
)

// Platform is the root of the GCP layer: the cluster, the system and sandbox
// node pools, a kubernetes provider for the new cluster, Kata on the KVM pools,
// the tenants' workload identities, the audit sinks and the alerts. The
// in-cluster layer is then run with KubernetesProvider, so cloud and cluster
// come up in one `pulumi up`.
type Platform struct {
	pulumi.ResourceState

	ClusterName pulumi.StringOutput `pulumi:"clusterName"`
	// Kubeconfig (secret) uses gke-gcloud-auth-plugin; no static credential.
	Kubeconfig        pulumi.StringOutput      `pulumi:"kubeconfig"`
	WorkloadPool      pulumi.StringOutput      `pulumi:"workloadPool"`
	RuntimeClassNames pulumi.StringArrayOutput `pulumi:"runtimeClasses"`
	// Identities maps NAMESPACE/KSA to the Google service account email the
	// KSA must be annotated with.
	Identities pulumi.StringMapOutput `pulumi:"identities"`
	// PullPrerequisites are the images the nodes pull from outside Artifact
	// Registry (kata-deploy from quay.io, public images): nothing is granted
	// for them, so they must be pullable without credentials, through Cloud
	// NAT on private nodes, or mirrored to Artifact Registry.
	PullPrerequisites []string

	// Args are the defaulted args.
	Args PlatformArgs
	// Cluster, NodePools, Kata (nil without a KVM pool), WorkloadIdentities
	// and AuditSinks are the children.
	Cluster            *Cluster
	SystemPool         *NodePool
	NodePools          []*NodePool
	Kata               *kata.Install
	WorkloadIdentities []*WorkloadIdentity
	AuditSinks         []*AuditSink
	// KubernetesProvider reaches the new cluster (it waits for every node
	// pool); pass it to the in-cluster layer with pulumi.Providers.
	KubernetesProvider *kubernetes.Provider
	// InClusterReady is what the in-cluster layer waits for besides the
	// provider: Kata and the workload identities its service accounts name.
	InClusterReady []pulumi.Resource
	// RuntimeClasses are the sandbox runtimes the pools provide, with the
	// scheduling the in-cluster layer's RuntimeClasses must use. gvisor is
	// GKE's own (ManagedByGKE): use it, do not create it.
	RuntimeClasses []gcpinputs.RuntimeClass
}

// NewPlatform validates args with package rules (refusing any violation) and
// registers the whole GCP layer.
func NewPlatform(ctx *pulumi.Context, name string, args *PlatformArgs, opts ...pulumi.ResourceOption) (*Platform, error) {
	if err := rules.Err(rules.Validate(*args)); err != nil {
		return nil, err
	}
	p := &Platform{}
	if err := ctx.RegisterComponentResource("paddock:gcp:Platform", name, p, opts...); err != nil {
		return nil, err
	}
	a := args.WithDefaults()
	p.Args = a
	p.RuntimeClasses = a.RuntimeClasses()
	parent := pulumi.Parent(p)

	cluster, err := NewCluster(ctx, a.Cluster.Name, &a.Cluster, parent)
	if err != nil {
		return nil, err
	}
	p.Cluster = cluster

	var pools []pulumi.Resource
	sys, err := NewNodePool(ctx, a.Cluster.Name+"/"+a.SystemPool.Name, cluster, &a.SystemPool, parent)
	if err != nil {
		return nil, err
	}
	p.SystemPool = sys
	pools = append(pools, sys.Pool)
	for i := range a.NodePools {
		np, err := NewNodePool(ctx, a.Cluster.Name+"/"+a.NodePools[i].Name, cluster, &a.NodePools[i], parent)
		if err != nil {
			return nil, err
		}
		p.NodePools = append(p.NodePools, np)
		pools = append(pools, np.Pool)
	}

	// The nodes pull the platform's images (and kata-deploy's) as their own
	// service account.
	images := append([]string(nil), a.Images...)
	if len(a.PoolsOf(gcpinputs.IsolationKVM)) > 0 {
		images = append(images, kata.ImageOf(a.Kata))
	}
	repos, elsewhere := gcpinputs.ImageRepositories(images...)
	p.PullPrerequisites = elsewhere
	grants, err := grantImagePull(ctx, cluster, repos)
	if err != nil {
		return nil, err
	}

	// The provider of the in-cluster layer. It is created once every pool is
	// up and may pull its images, so nothing in-cluster is applied to a
	// cluster with no nodes to run it.
	prov, err := kubernetes.NewProvider(ctx, name+"-gke", &kubernetes.ProviderArgs{
		Kubeconfig:            cluster.Kubeconfig,
		EnableServerSideApply: pulumi.BoolPtr(true),
	}, parent, pulumi.DependsOn(append(pools, grants...)))
	if err != nil {
		return nil, err
	}
	p.KubernetesProvider = prov
	inCluster := []pulumi.ResourceOption{parent, pulumi.Providers(prov)}

	if len(a.PoolsOf(gcpinputs.IsolationKVM)) > 0 {
		ka := a.KataArgs()
		k, err := kata.NewInstall(ctx, name+"-kata", &ka, inCluster...)
		if err != nil {
			return nil, err
		}
		p.Kata = k
		p.InClusterReady = append(p.InClusterReady, k.Ready...)
	}

	if needsNetworkLogging(a) {
		// GKE already has this object: server-side apply takes it over, and
		// destroying the stack leaves it to GKE.
		nlOpts := append(append([]pulumi.ResourceOption{}, inCluster...), pulumi.RetainOnDelete(true))
		if _, err := k8sres.RegisterUnstructured(ctx, NetworkLogging(a.Name), nlOpts...); err != nil {
			return nil, err
		}
	}

	identities := pulumi.StringMap{}
	for i := range a.WorkloadIdentities {
		wi := a.WorkloadIdentities[i]
		key := wi.Namespace + "/" + wi.KSA
		w, err := NewWorkloadIdentity(ctx, key, cluster, &wi, parent)
		if err != nil {
			return nil, err
		}
		p.WorkloadIdentities = append(p.WorkloadIdentities, w)
		p.InClusterReady = append(p.InClusterReady, w.Ready...)
		identities[key] = w.Email
	}

	for i := range a.AuditSinks {
		s := a.AuditSinks[i]
		if s.Labels == nil {
			s.Labels = a.Cluster.Labels
		}
		sink, err := NewAuditSink(ctx, s.Name, &s, parent)
		if err != nil {
			return nil, err
		}
		p.AuditSinks = append(p.AuditSinks, sink)
	}

	if a.Alerts != nil {
		if _, err := NewAlerts(ctx, name+"-alerts", a.Alerts, parent); err != nil {
			return nil, err
		}
	}

	var rcNames pulumi.StringArray
	for _, rc := range p.RuntimeClasses {
		rcNames = append(rcNames, pulumi.String(rc.Name))
	}
	p.ClusterName = cluster.Name
	p.Kubeconfig = cluster.Kubeconfig
	p.WorkloadPool = cluster.WorkloadPool
	p.RuntimeClassNames = rcNames.ToStringArrayOutput()
	p.Identities = identities.ToStringMapOutput()
	return p, ctx.RegisterResourceOutputs(p, pulumi.Map{
		"clusterName": p.ClusterName, "kubeconfig": p.Kubeconfig, "workloadPool": p.WorkloadPool,
		"runtimeClasses": p.RuntimeClassNames, "identities": p.Identities,
		"pullPrerequisites": pulumi.ToStringArray(p.PullPrerequisites),
	})
}

func needsNetworkLogging(a PlatformArgs) bool {
	for _, s := range a.AuditSinks {
		for _, e := range s.Filter.Events {
			if e == gcpinputs.EventNetworkDrops {
				return true
			}
		}
	}
	return false
}

// NetworkLogging is GKE Dataplane V2's cluster-wide network policy logging
// configuration (there is exactly one, named "default"): log denied
// connections, not allowed ones. It feeds the network_drops audit event.
func NetworkLogging(platform string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.gke.io/v1alpha1",
		"kind":       "NetworkLogging",
		"metadata":   map[string]any{"name": "default"},
		"spec": map[string]any{
			"cluster": map[string]any{
				"allow": map[string]any{"log": false, "delegate": false},
				"deny":  map[string]any{"log": true, "delegate": false},
			},
		},
	}}
	labels := map[string]string{}
	for k, v := range gcpinputs.OwnershipLabels(platform) {
		labels[k] = v
	}
	u.SetLabels(labels)
	u.SetAnnotations(map[string]string{"pulumi.com/patchForce": "true"})
	return u
}
