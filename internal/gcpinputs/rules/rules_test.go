package rules

import (
	"strings"
	"testing"
	"time"

	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

// valid is a platform every rule accepts: a gVisor pool, a KVM pool, an
// identity, a sink of each kind and both alerts.
func valid() gcpinputs.PlatformArgs {
	return gcpinputs.PlatformArgs{
		Name: "demo",
		Cluster: gcpinputs.ClusterArgs{
			Project: "paddock-test", Location: "europe-west4",
			AuthorizedNetworks: []gcpinputs.AuthorizedNetwork{{CIDR: "203.0.113.0/24"}},
			FQDNNetworkPolicy:  true,
		},
		FQDNNamespaces: []string{"agents-team-a"},
		NodePools: []gcpinputs.NodePoolArgs{
			{Name: "gvisor", Isolation: gcpinputs.IsolationGVisor, MachineType: "e2-standard-4", MinNodes: 1, MaxNodes: 3, Labels: map[string]string{"team": "a"}},
			{Name: "kata", Isolation: gcpinputs.IsolationKVM, MachineType: "n2-standard-4", MinNodes: 0, MaxNodes: 2},
		},
		WorkloadIdentities: []gcpinputs.WorkloadIdentityArgs{
			{Tenant: "team-a", Namespace: "agents-team-a", KSA: "tool-gateway", Roles: []string{"roles/storage.objectViewer"}},
		},
		AuditSinks: []gcpinputs.AuditSinkArgs{
			{Name: "bq", Kind: gcpinputs.AuditBigQuery, Destination: "paddock_audit", Filter: gcpinputs.AuditFilterArgs{Namespaces: []string{"agents-team-a"}}},
			{Name: "gcs", Kind: gcpinputs.AuditStorage, Destination: "paddock-test-audit"},
			{Name: "ps", Kind: gcpinputs.AuditPubSub, Destination: "paddock-audit", RetentionDays: 7, Filter: gcpinputs.AuditFilterArgs{Events: gcpinputs.AuditEvents()}},
		},
		Alerts: &gcpinputs.AlertArgs{QuotaSaturation: true, SandboxMaxLifetime: 5 * time.Hour},
	}
}

func TestValidPlatformPassesEveryRule(t *testing.T) {
	if vs := Validate(valid()); len(vs) > 0 {
		t.Fatalf("valid platform rejected:\n%v", Err(vs))
	}
}

func TestRulesHaveIDsTitlesHints(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range All() {
		if r.ID == "" || r.Title == "" || r.Hint == "" || r.check == nil {
			t.Errorf("rule %+v incomplete", r)
		}
		if seen[r.ID] {
			t.Errorf("duplicate rule %s", r.ID)
		}
		seen[r.ID] = true
		if _, ok := Lookup(r.ID); !ok {
			t.Errorf("Lookup(%s) failed", r.ID)
		}
	}
}

// Each case breaks one thing and names the rule and field that must report it.
func TestEachRuleRejectsWhatItGuards(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(p *gcpinputs.PlatformArgs)
		rule   string
		field  string
		msg    string
	}{
		{"bad project", func(p *gcpinputs.PlatformArgs) { p.Cluster.Project = "My Project" }, "GCP-001", "cluster.project", "not a GCP project id"},
		{"bad location", func(p *gcpinputs.PlatformArgs) { p.Cluster.Location = "europe" }, "GCP-001", "cluster.location", "neither a region nor a zone"},
		{"bad cluster name", func(p *gcpinputs.PlatformArgs) { p.Cluster.Name = "Demo_Cluster" }, "GCP-001", "cluster.name", "not a valid GKE cluster name"},
		{"bad channel", func(p *gcpinputs.PlatformArgs) { p.Cluster.ReleaseChannel = "nightly" }, "GCP-002", "cluster.release_channel", "NIGHTLY"},
		{"world-open control plane", func(p *gcpinputs.PlatformArgs) {
			p.Cluster.AuthorizedNetworks = []gcpinputs.AuthorizedNetwork{{CIDR: "10.0.0.0/8"}, {CIDR: "0.0.0.0/0"}}
		}, "GCP-003", "cluster.authorized_networks[1]", "whole internet"},
		{"not a cidr", func(p *gcpinputs.PlatformArgs) {
			p.Cluster.AuthorizedNetworks = []gcpinputs.AuthorizedNetwork{{CIDR: "office"}}
		}, "GCP-003", "cluster.authorized_networks[0]", "not a CIDR"},
		{"host bits", func(p *gcpinputs.PlatformArgs) {
			p.Cluster.AuthorizedNetworks = []gcpinputs.AuthorizedNetwork{{CIDR: "203.0.113.7/24"}}
		}, "GCP-003", "cluster.authorized_networks[0]", "203.0.113.0/24"},
		{"master cidr /24", func(p *gcpinputs.PlatformArgs) { p.Cluster.MasterCIDR = "172.16.0.0/24" }, "GCP-003", "cluster.master_cidr", "private IPv4 /28"},
		{"master cidr public", func(p *gcpinputs.PlatformArgs) { p.Cluster.MasterCIDR = "8.8.8.0/28" }, "GCP-003", "cluster.master_cidr", "private IPv4 /28"},
		{"private endpoint public nodes", func(p *gcpinputs.PlatformArgs) { p.Cluster.PrivateEndpoint, p.Cluster.PublicNodes = true, true }, "GCP-003", "cluster.private_endpoint", "needs private nodes"},
		{"fqdn without dpv2", func(p *gcpinputs.PlatformArgs) { p.Cluster.DisableDataplaneV2 = true }, "GCP-004", "cluster.dataplane_v2", "Dataplane V2"},
		{"fqdns without fqdn policy", func(p *gcpinputs.PlatformArgs) { p.Cluster.FQDNNetworkPolicy = false }, "GCP-018", "cluster.fqdn_network_policy", "agents-team-a allow egress by host name"},
		{"identity without pool", func(p *gcpinputs.PlatformArgs) { p.Cluster.DisableWorkloadIdentity = true }, "GCP-005", "workload_identity.agents-team-a/tool-gateway", "paddock-test.svc.id.goog"},
		{"bad pool name", func(p *gcpinputs.PlatformArgs) { p.NodePools[0].Name = "GVisor" }, "GCP-006", "node_pool.GVisor.name", "not a valid node pool name"},
		{"duplicate pool", func(p *gcpinputs.PlatformArgs) { p.NodePools[1].Name = "gvisor" }, "GCP-006", "node_pool.gvisor.name", "declared twice"},
		{"pool named system", func(p *gcpinputs.PlatformArgs) { p.NodePools[1].Name = "system" }, "GCP-006", "node_pool.system.name", "declared twice"},
		{"min above max", func(p *gcpinputs.PlatformArgs) { p.NodePools[0].MinNodes = 5 }, "GCP-006", "node_pool.gvisor.autoscaling", "min 5, max 3"},
		{"max zero", func(p *gcpinputs.PlatformArgs) { p.NodePools[0].MinNodes, p.NodePools[0].MaxNodes = 0, 0 }, "GCP-006", "node_pool.gvisor.autoscaling", "max >= 1"},
		{"system pool may scale to zero", func(p *gcpinputs.PlatformArgs) {
			p.SystemPool = gcpinputs.DefaultSystemPool()
			p.SystemPool.MinNodes = 0
		}, "GCP-006", "system_pool.autoscaling", "at least one node"},
		{"no machine type", func(p *gcpinputs.PlatformArgs) { p.NodePools[0].MachineType = "" }, "GCP-006", "node_pool.gvisor.machine_type", "not a Compute Engine machine type"},
		{"tiny disk", func(p *gcpinputs.PlatformArgs) { p.NodePools[0].DiskSizeGB = 5 }, "GCP-006", "node_pool.gvisor.disk_size_gb", "10 GB"},
		{"sandboxed system pool", func(p *gcpinputs.PlatformArgs) {
			p.SystemPool = gcpinputs.DefaultSystemPool()
			p.SystemPool.Isolation = gcpinputs.IsolationGVisor
		}, "GCP-007", "system_pool.isolation", "must not be sandboxed"},
		{"unknown isolation", func(p *gcpinputs.PlatformArgs) { p.NodePools[0].Isolation = "firecracker" }, "GCP-007", "node_pool.gvisor.isolation", "not gvisor or kvm"},
		{"shared gvisor", func(p *gcpinputs.PlatformArgs) { p.NodePools[0].Shared = true }, "GCP-007", "node_pool.gvisor.isolation", "only apply to kvm"},
		{"gvisor on ubuntu", func(p *gcpinputs.PlatformArgs) { p.NodePools[0].ImageType = "ubuntu_containerd" }, "GCP-008", "node_pool.gvisor.image_type", "only on COS_CONTAINERD"},
		{"duplicate gke taint", func(p *gcpinputs.PlatformArgs) {
			p.NodePools[0].Taints = []gcpinputs.Taint{{Key: gcpinputs.GKESandboxKey, Value: "gvisor", Effect: gcpinputs.EffectNoSchedule}}
		}, "GCP-009", "node_pool.gvisor.taints[0]", "GKE applies"},
		{"gke label on kvm pool", func(p *gcpinputs.PlatformArgs) {
			p.NodePools[1].Labels = map[string]string{gcpinputs.GKESandboxKey: "gvisor"}
		}, "GCP-009", "node_pool.kata.labels", "GKE applies"},
		{"own isolation label", func(p *gcpinputs.PlatformArgs) {
			p.NodePools[0].Labels = map[string]string{gcpinputs.IsolationKey: "kvm"}
		}, "GCP-009", "node_pool.gvisor.labels", "derives"},
		{"kvm on e2", func(p *gcpinputs.PlatformArgs) { p.NodePools[1].MachineType = "e2-standard-4" }, "GCP-010", "node_pool.kata.machine_type", "E2 machines do not support nested virtualisation"},
		{"kvm on amd", func(p *gcpinputs.PlatformArgs) { p.NodePools[1].MachineType = "n2d-standard-4" }, "GCP-010", "node_pool.kata.machine_type", "AMD"},
		{"kvm on arm", func(p *gcpinputs.PlatformArgs) { p.NodePools[1].MachineType = "t2a-standard-4" }, "GCP-010", "node_pool.kata.machine_type", "Arm"},
		{"kvm on memory-optimised", func(p *gcpinputs.PlatformArgs) { p.NodePools[1].MachineType = "m3-ultramem-32" }, "GCP-010", "node_pool.kata.machine_type", "memory-optimised"},
		{"kvm on unknown series", func(p *gcpinputs.PlatformArgs) { p.NodePools[1].MachineType = "z9-standard-4" }, "GCP-010", "node_pool.kata.machine_type", "not known to support"},
		{"kvm on cos", func(p *gcpinputs.PlatformArgs) { p.NodePools[1].ImageType = gcpinputs.ImageCOSContainerd }, "GCP-011", "node_pool.kata.image_type", "UBUNTU_CONTAINERD"},
		{"bad label key", func(p *gcpinputs.PlatformArgs) { p.NodePools[0].Labels = map[string]string{"bad key": "x"} }, "GCP-012", "node_pool.gvisor.labels", "label key"},
		{"bad taint effect", func(p *gcpinputs.PlatformArgs) {
			p.NodePools[1].Taints = []gcpinputs.Taint{{Key: "a", Value: "b", Effect: "NO_SCHEDULE"}}
		}, "GCP-012", "node_pool.kata.taints[0]", "taint effect"},
		{"tainted system pool", func(p *gcpinputs.PlatformArgs) {
			p.SystemPool = gcpinputs.DefaultSystemPool()
			p.SystemPool.Taints = []gcpinputs.Taint{{Key: "a", Value: "b", Effect: gcpinputs.EffectNoSchedule}}
		}, "GCP-012", "system_pool.taints[0]", "nowhere to run"},
		{"bad gcp label", func(p *gcpinputs.PlatformArgs) { p.Cluster.Labels = map[string]string{"Team/Name": "x"} }, "GCP-012", "cluster.labels", "GCP label"},
		{"unknown shim", func(p *gcpinputs.PlatformArgs) { p.Kata.Shims = []string{"qemu", "fc"} }, "GCP-013", "kata.shims[1]", "unknown Kata shim"},
		{"kata without kvm", func(p *gcpinputs.PlatformArgs) {
			p.NodePools = p.NodePools[:1]
			p.Kata.Shims = []string{"qemu"}
		}, "GCP-013", "kata", "no node pool has isolation kvm"},
		{"owner role", func(p *gcpinputs.PlatformArgs) { p.WorkloadIdentities[0].Roles = []string{"roles/owner"} }, "GCP-014", "workload_identity.agents-team-a/tool-gateway.roles[0]", "basic role"},
		{"key admin role", func(p *gcpinputs.PlatformArgs) {
			p.WorkloadIdentities[0].Roles = []string{"roles/storage.objectViewer", "roles/iam.serviceAccountKeyAdmin"}
		}, "GCP-014", "workload_identity.agents-team-a/tool-gateway.roles[1]", "key"},
		{"not a role", func(p *gcpinputs.PlatformArgs) { p.WorkloadIdentities[0].Roles = []string{"storage.objectViewer"} }, "GCP-014", "workload_identity.agents-team-a/tool-gateway.roles[0]", "not an IAM role"},
		{"no roles", func(p *gcpinputs.PlatformArgs) { p.WorkloadIdentities[0].Roles = nil }, "GCP-014", "workload_identity.agents-team-a/tool-gateway.roles", "grants no role"},
		{"bad namespace", func(p *gcpinputs.PlatformArgs) { p.WorkloadIdentities[0].Namespace = "Agents" }, "GCP-014", "workload_identity.Agents/tool-gateway.namespace", "namespace"},
		{"duplicate ksa", func(p *gcpinputs.PlatformArgs) {
			p.WorkloadIdentities = append(p.WorkloadIdentities, p.WorkloadIdentities[0])
		}, "GCP-014", "workload_identity.agents-team-a/tool-gateway", "bound twice"},
		{"bad account id", func(p *gcpinputs.PlatformArgs) { p.WorkloadIdentities[0].AccountID = "x" }, "GCP-014", "workload_identity.agents-team-a/tool-gateway.account_id", "not a Google service account id"},
		{"bad dataset", func(p *gcpinputs.PlatformArgs) { p.AuditSinks[0].Destination = "paddock-audit" }, "GCP-015", "audit_sink.bq.destination", "BigQuery dataset id"},
		{"bad bucket", func(p *gcpinputs.PlatformArgs) { p.AuditSinks[1].Destination = "Paddock_Audit" }, "GCP-015", "audit_sink.gcs.destination", "bucket name"},
		{"negative bucket retention", func(p *gcpinputs.PlatformArgs) { p.AuditSinks[1].RetentionDays = -1 }, "GCP-015", "audit_sink.gcs.retention_days", "at least one day"},
		{"pubsub retention", func(p *gcpinputs.PlatformArgs) { p.AuditSinks[2].RetentionDays = 60 }, "GCP-015", "audit_sink.ps.retention_days", "31 days"},
		{"unknown kind", func(p *gcpinputs.PlatformArgs) { p.AuditSinks[0].Kind = "splunk" }, "GCP-015", "audit_sink.bq.kind", "unknown sink kind"},
		{"unknown event", func(p *gcpinputs.PlatformArgs) { p.AuditSinks[0].Filter.Events = []string{"everything"} }, "GCP-015", "audit_sink.bq.filters", "unknown event"},
		{"duplicate sink", func(p *gcpinputs.PlatformArgs) { p.AuditSinks[1].Name = "bq" }, "GCP-015", "audit_sink.bq.name", "declared twice"},
		{"shared destination", func(p *gcpinputs.PlatformArgs) {
			p.AuditSinks = append(p.AuditSinks, gcpinputs.AuditSinkArgs{Name: "bq2", Kind: gcpinputs.AuditBigQuery, Destination: "paddock_audit"})
		}, "GCP-015", "audit_sink.bq2.destination", "used by two sinks"},
		{"lock on bigquery", func(p *gcpinputs.PlatformArgs) { p.AuditSinks[0].LockRetention = true }, "GCP-015", "audit_sink.bq.lock_retention", "only a storage sink"},
		{"drops without dpv2", func(p *gcpinputs.PlatformArgs) {
			p.Cluster.FQDNNetworkPolicy = false
			p.Cluster.DisableDataplaneV2 = true
		}, "GCP-016", "audit_sink.ps.filters", "network_drops"},
		{"lifetime too short", func(p *gcpinputs.PlatformArgs) { p.Alerts.SandboxMaxLifetime = time.Second }, "GCP-017", "alerts.sandbox_max_lifetime", "below a minute"},
		{"no alert", func(p *gcpinputs.PlatformArgs) { p.Alerts = &gcpinputs.AlertArgs{} }, "GCP-017", "alerts", "no alert selected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := valid()
			tc.mutate(&p)
			vs := Validate(p)
			for _, v := range vs {
				if v.Rule == tc.rule && v.Field() == tc.field && strings.Contains(v.Message, tc.msg) {
					if v.Hint == "" {
						t.Errorf("%s has no hint", v.Rule)
					}
					if !strings.Contains(v.Error(), tc.field) || !strings.Contains(v.Error(), tc.rule) {
						t.Errorf("Error() %q must name the field and the rule", v.Error())
					}
					return
				}
			}
			t.Errorf("want %s at %s (%q); got:\n%v", tc.rule, tc.field, tc.msg, Err(vs))
		})
	}
}

func TestEveryRuleIsExercised(t *testing.T) {
	// Guard against a rule without a case above: run each rule alone on the
	// valid platform (must pass) — the table covers the failing side.
	p := valid().WithDefaults()
	for _, r := range All() {
		if vs := r.Check(p); len(vs) > 0 {
			t.Errorf("%s rejects the valid platform: %v", r.ID, Err(vs))
		}
	}
}

func TestSupportsNestedVirtualization(t *testing.T) {
	for mt, want := range map[string]bool{
		"n1-standard-4": true, "n2-standard-8": true, "N2-HIGHMEM-4": true, "c2-standard-8": true, "c3-standard-4": true,
		"e2-standard-4": false, "e2-medium": false, "n2d-standard-4": false, "t2a-standard-4": false, "m2-ultramem-208": false, "": false,
	} {
		if got, _ := SupportsNestedVirtualization(mt); got != want {
			t.Errorf("SupportsNestedVirtualization(%q) = %v, want %v", mt, got, want)
		}
	}
}
