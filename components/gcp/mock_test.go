package gcp

// Mock tests: the GCP layer's programs run against pulumi.WithMocks, which
// records every resource registration and returns the inputs (plus the few
// outputs GCP would compute: endpoint, CA, emails, writer identities) as the
// resource's state. Nothing here talks to GCP or a cluster; these tests prove
// what Paddock *asks* GCP for, not what GCP does with it. The real-GKE path is
// e2e_gke_test.go (build tag gke).

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/components/pulumitest"
	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

// mockPrivateEndpoint is the private endpoint gcpOutputs gives a cluster.
const mockPrivateEndpoint = "172.16.0.2"

// gcpOutputs is pulumitest.GCPOutputs plus a cluster's private endpoint,
// which only this layer's tests read (the kubeconfig of a private-only
// control plane).
func gcpOutputs(typ string, inputs, state resource.PropertyMap) {
	pulumitest.GCPOutputs(typ, inputs, state)
	if typ != "gcp:container/cluster:Cluster" {
		return
	}
	pcc := resource.PropertyMap{}
	if v, ok := inputs["privateClusterConfig"]; ok && v.IsObject() {
		pcc = v.ObjectValue().Copy()
	}
	pcc["privateEndpoint"] = resource.NewStringProperty(mockPrivateEndpoint)
	state["privateClusterConfig"] = resource.NewObjectProperty(pcc)
}

// captured are the Platform's outputs, read once the mock run has finished.
type captured struct {
	mu         sync.Mutex
	platform   *Platform
	kubeconfig string
	identities map[string]string
	rcs        []string
	// ksaAnnotations by NAMESPACE/KSA.
	ksaAnnotations map[string]map[string]string
}

func runPlatform(t *testing.T, args PlatformArgs) (*pulumitest.Mocks, *captured) {
	t.Helper()
	m, c, err := tryPlatform(args)
	if err != nil {
		t.Fatal(err)
	}
	return m, c
}

func tryPlatform(args PlatformArgs) (*pulumitest.Mocks, *captured, error) {
	m := &pulumitest.Mocks{Outputs: gcpOutputs}
	c := &captured{}
	rcsCh := make(chan []string, 1)
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		p, err := NewPlatform(ctx, args.Name, &args)
		if err != nil {
			return err
		}
		c.platform = p
		p.Kubeconfig.ApplyT(func(s string) string {
			c.mu.Lock()
			c.kubeconfig = s
			c.mu.Unlock()
			return s
		})
		p.Identities.ApplyT(func(ids map[string]string) map[string]string {
			c.mu.Lock()
			c.identities = ids
			c.mu.Unlock()
			return ids
		})
		c.ksaAnnotations = map[string]map[string]string{}
		for _, w := range p.WorkloadIdentities {
			key := w.Args.Namespace + "/" + w.Args.KSA
			w.KSAAnnotations.ApplyT(func(a map[string]string) map[string]string {
				c.mu.Lock()
				c.ksaAnnotations[key] = a
				c.mu.Unlock()
				return a
			})
		}
		// Outputs of plain values are not tied to the run: wait for them below.
		p.RuntimeClassNames.ApplyT(func(rcs []string) []string {
			rcsCh <- rcs
			return rcs
		})
		return nil
	}, pulumi.WithMocks("paddock", "test", m))
	if err == nil {
		select {
		case c.rcs = <-rcsCh:
		case <-time.After(2 * time.Minute): // a hang guard: the output resolves at once, on a starved machine in seconds
			return m, c, fmt.Errorf("runtimeClasses output never resolved")
		}
	}
	return m, c, err
}

// gvisorPlatform is the example GKE Sandbox platform: one gVisor pool, a tenant
// identity with cloud access, a Cloud Storage audit sink and both alerts.
func gvisorPlatform() PlatformArgs {
	return PlatformArgs{
		Name: "demo",
		Cluster: ClusterArgs{
			Project: "paddock-demo", Location: "europe-west4",
			AuthorizedNetworks: []gcpinputs.AuthorizedNetwork{{CIDR: "203.0.113.0/24", DisplayName: "office"}},
		},
		NodePools: []NodePoolArgs{{
			Name: "gvisor", Isolation: gcpinputs.IsolationGVisor, MachineType: "e2-standard-4", MinNodes: 1, MaxNodes: 3,
			Labels: map[string]string{"paddock.dev/pool": "gvisor"},
		}},
		WorkloadIdentities: []WorkloadIdentityArgs{{
			Tenant: "team-a", Namespace: "agents-team-a", KSA: "tool-gateway",
			Roles: []string{"roles/storage.objectViewer", "roles/aiplatform.user"},
		}},
		AuditSinks: []AuditSinkArgs{{
			Name: "demo-audit", Kind: gcpinputs.AuditStorage, Destination: "paddock-demo-audit", Location: "EU",
			Filter: gcpinputs.AuditFilterArgs{Namespaces: []string{"agents-team-a"}},
		}},
		Alerts: &AlertArgs{QuotaSaturation: true, SandboxMaxLifetime: 5 * time.Hour, Namespaces: []string{"agents-team-a"}},
	}
}

// kataPlatform is the example KVM/Kata platform: one KVM pool with an extra
// taint, FQDN policy, BigQuery and Pub/Sub sinks (every event, so network
// policy logging is switched on), no alerts.
func kataPlatform() PlatformArgs {
	return PlatformArgs{
		Name: "vmdemo",
		Cluster: ClusterArgs{
			Project: "paddock-demo", Location: "us-central1-a", ReleaseChannel: "stable",
			AuthorizedNetworks: []gcpinputs.AuthorizedNetwork{{CIDR: "198.51.100.0/24"}},
			FQDNNetworkPolicy:  true,
		},
		NodePools: []NodePoolArgs{{
			Name: "kata", Isolation: gcpinputs.IsolationKVM, MachineType: "n2-standard-8", MinNodes: 0, MaxNodes: 4, DiskSizeGB: 100,
			Taints: []gcpinputs.Taint{{Key: "paddock.dev/tenant", Value: "team-b", Effect: gcpinputs.EffectNoSchedule}},
		}},
		WorkloadIdentities: []WorkloadIdentityArgs{{
			Tenant: "team-b", Namespace: "agents-team-b", KSA: "agent-orchestrator", Roles: []string{"roles/pubsub.subscriber"},
		}},
		AuditSinks: []AuditSinkArgs{
			{Name: "vmdemo-bq", Kind: gcpinputs.AuditBigQuery, Destination: "paddock_audit", RetentionDays: 400,
				Filter: gcpinputs.AuditFilterArgs{Namespaces: []string{"agents-team-b"}}},
			{Name: "vmdemo-stream", Kind: gcpinputs.AuditPubSub, Destination: "paddock-audit", RetentionDays: 7,
				Filter: gcpinputs.AuditFilterArgs{Namespaces: []string{"agents-team-b"}, Events: gcpinputs.AuditEvents()}},
		},
	}
}
