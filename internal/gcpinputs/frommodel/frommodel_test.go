package frommodel

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/paddock-platform/paddock/internal/gcpinputs"
	"github.com/paddock-platform/paddock/internal/gcpinputs/rules"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/schemas"
)

// load decodes a GKE spec from source through the real loader.
func load(t *testing.T, src string) *model.Platform {
	t.Helper()
	p, diags := schemas.LoadSource("spec.hcl", []byte(src), schemas.LoadOptions{Environ: []string{}})
	if diags.HasErrors() {
		t.Fatalf("spec does not load: %s", diags.Error())
	}
	return p
}

const gkeHead = `platform { name = "demo" }
target "gke" {
  project  = "my-project"
  location = "europe-west4"
}
agent_sandbox { version = "v0.5.6" }
`

func TestArgsCluster(t *testing.T) {
	p := load(t, gkeHead+`
cluster {
  release_channel     = "stable"
  authorized_networks = ["203.0.113.0/24", "198.51.100.7/32"]
  fqdn_network_policy = true
}
tenant "a" {
  egress { fqdns = ["api.example.com"] }
}
`)
	a := Args(p)
	want := gcpinputs.ClusterArgs{
		Project: "my-project", Location: "europe-west4", Name: "demo", ReleaseChannel: "STABLE",
		AuthorizedNetworks: []gcpinputs.AuthorizedNetwork{{CIDR: "203.0.113.0/24"}, {CIDR: "198.51.100.7/32"}},
		FQDNNetworkPolicy:  true,
	}
	if !reflect.DeepEqual(a.Cluster, want) {
		t.Errorf("cluster = %+v\nwant      %+v", a.Cluster, want)
	}
	if !reflect.DeepEqual(a.FQDNNamespaces, []string{"agents-a"}) {
		t.Errorf("FQDN namespaces %v", a.FQDNNamespaces)
	}

	// Loosened: every knob maps to the GCP layer's loosening field; FQDN
	// network policy stays off unless the spec turns it on.
	p = load(t, gkeHead+`
cluster {
  private_nodes       = false
  dataplane_v2        = false
  workload_identity   = false
  deletion_protection = false
}
`)
	c := Args(p).Cluster
	if !c.PublicNodes || !c.DisableDataplaneV2 || !c.DisableWorkloadIdentity || c.FQDNNetworkPolicy || !c.AllowDeletion {
		t.Errorf("loosened cluster = %+v", c)
	}
	if c.ReleaseChannel != "REGULAR" {
		t.Errorf("default release channel %q", c.ReleaseChannel)
	}
}

// FQDN network policy is explicit and sticky: removing the last tenant's
// fqdns leaves it on (GKE would replace the cluster to turn it off), and
// fqdns without it are refused by GCP-018 at the cluster block.
func TestArgsFQDNNetworkPolicyIsExplicit(t *testing.T) {
	p := load(t, gkeHead+`
cluster { fqdn_network_policy = true }
tenant "a" {}
`)
	if a := Args(p); !a.Cluster.FQDNNetworkPolicy || len(a.FQDNNamespaces) != 0 {
		t.Errorf("without fqdns: policy %v, namespaces %v; want on and none", a.Cluster.FQDNNetworkPolicy, a.FQDNNamespaces)
	}
	p = load(t, gkeHead+`
tenant "a" {
  egress { fqdns = ["api.example.com"] }
}
`)
	a := Args(p)
	if a.Cluster.FQDNNetworkPolicy {
		t.Error("FQDN network policy derived from the tenants' fqdns")
	}
	var found bool
	for _, v := range rules.Validate(a) {
		if v.Rule == "GCP-018" {
			found = true
			if obj, src := Source(p, v); obj != "cluster" || src != p.Target.Src {
				t.Errorf("GCP-018 reported at %s %v, want the target block (there is no cluster block)", obj, src)
			}
		}
	}
	if !found {
		t.Error("fqdns without fqdn_network_policy pass the GCP rules")
	}
}

func TestArgsNodePoolsAndKata(t *testing.T) {
	p := load(t, gkeHead+`
node_pool "vm" {
  isolation    = "kvm"
  machine_type = "n2-standard-8"
  labels       = { "example.com/team" = "a" }
  dedicated    = false
  autoscaling {
    min = 0
    max = 4
  }
  taint {
    key   = "example.com/tenant"
    value = "a"
  }
}
node_pool "gv" {}
runtime_class "kata" {
  handler   = "kata-qemu"
  node_pool = "vm"
}
runtime_class "kata-default" {
  handler   = "kata"
  node_pool = "vm"
}
runtime_class "fast" {
  handler   = "kata-clh"
  node_pool = "vm"
}
runtime_class "gvisor" {
  handler   = "gvisor"
  node_pool = "gv"
}
`)
	a := Args(p)
	want := []gcpinputs.NodePoolArgs{
		{Name: "vm", Isolation: "kvm", MachineType: "n2-standard-8", MinNodes: 0, MaxNodes: 4, Shared: true,
			Labels: map[string]string{"example.com/team": "a"},
			Taints: []gcpinputs.Taint{{Key: "example.com/tenant", Value: "a", Effect: "NoSchedule"}}},
		{Name: "gv", Isolation: "gvisor", MachineType: "e2-standard-4", MinNodes: 1, MaxNodes: 3},
	}
	if !reflect.DeepEqual(a.NodePools, want) {
		t.Errorf("pools = %+v\nwant    %+v", a.NodePools, want)
	}
	// "kata" and "kata-qemu" are the same shim: listed once, in order.
	if !reflect.DeepEqual(a.Kata.Shims, []string{"qemu", "clh"}) || !a.Kata.ExternalRuntimeClasses {
		t.Errorf("kata = %+v", a.Kata)
	}

	// Without Kata runtime classes, the install keeps its own.
	if k := Args(load(t, gkeHead+`node_pool "vm" { isolation = "kvm" }`)).Kata; len(k.Shims) != 0 || k.ExternalRuntimeClasses {
		t.Errorf("kata without runtime classes = %+v", k)
	}
}

func TestArgsWorkloadIdentities(t *testing.T) {
	p := load(t, gkeHead+`
tenant "research" {
  identity {
    workload_identity "orchestrator" { roles = ["roles/storage.objectViewer", "roles/pubsub.publisher"] }
    workload_identity "agent" { roles = ["roles/aiplatform.user"] }
  }
}
tenant "ops" { namespace = "ops-agents" }
`)
	a := Args(p)
	want := []gcpinputs.WorkloadIdentityArgs{
		{Platform: "demo", Tenant: "research", Namespace: "agents-research", KSA: "agent-orchestrator", Roles: []string{"roles/storage.objectViewer", "roles/pubsub.publisher"}},
		{Platform: "demo", Tenant: "research", Namespace: "agents-research", KSA: "agent-runtime", Roles: []string{"roles/aiplatform.user"}},
	}
	if !reflect.DeepEqual(a.WorkloadIdentities, want) {
		t.Fatalf("identities = %+v\nwant         %+v", a.WorkloadIdentities, want)
	}
	d := a.WithDefaults()
	for i, wi := range d.WorkloadIdentities {
		if wi.Project != "my-project" || wi.AccountID != gcpinputs.ServiceAccountID("demo", "research", want[i].KSA) {
			t.Errorf("defaulted identity %d = %+v", i, wi)
		}
	}
	if vs := rules.Validate(a); len(vs) != 0 {
		t.Errorf("a valid spec breaks GCP rules: %v", vs)
	}
}

func TestArgsAuditSinks(t *testing.T) {
	p := load(t, gkeHead+`
tenant "b" {}
tenant "a" {}
audit_sink "bq" {
  kind        = "bigquery"
  destination = "my-project.agent_audit"
}
audit_sink "gcs" {
  kind        = "storage"
  destination = "gs://my-audit-bucket"
  filters     = ["sandbox_lifecycle"]
}
audit_sink "ps" {
  kind        = "pubsub"
  destination = "projects/my-project/topics/agent-audit"
  filters     = ["rbac", "network_drops"]
}
`)
	got := Args(p).AuditSinks
	ns := []string{"agents-a", "agents-b"}
	want := []gcpinputs.AuditSinkArgs{
		{Project: "my-project", Name: "demo-bq", Kind: "bigquery", Destination: "agent_audit",
			Filter: gcpinputs.AuditFilterArgs{Namespaces: ns, Events: []string{"sandbox_lifecycle", "rbac", "pod_logs", "network_drops", "admission"}}},
		{Name: "demo-gcs", Kind: "storage", Destination: "my-audit-bucket",
			Filter: gcpinputs.AuditFilterArgs{Namespaces: ns, Events: []string{"sandbox_lifecycle"}}},
		{Project: "my-project", Name: "demo-ps", Kind: "pubsub", Destination: "agent-audit",
			Filter: gcpinputs.AuditFilterArgs{Namespaces: ns, Events: []string{"rbac", "network_drops"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sinks = %+v\nwant    %+v", got, want)
	}
	// The default sink's filter holds the events the seed names: Sandbox and
	// SandboxClaim create/delete, and RBAC changes in the tenant namespaces.
	f, err := gcpinputs.AuditFilter(Args(p).WithDefaults().AuditSinks[0].Filter)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`sandboxes[.](create|delete|deletecollection)$`,
		`sandboxclaims[.](create|delete|deletecollection)$`,
		`(roles|rolebindings)[.](create|update|patch|delete|deletecollection)$" AND protoPayload.resourceName=~"^rbac[.]authorization[.]k8s[.]io/v1/namespaces/(agents-a|agents-b)/"`,
	} {
		if !strings.Contains(f, want) {
			t.Errorf("default filter lacks %s:\n%s", want, f)
		}
	}
}

func TestSource(t *testing.T) {
	src := gkeHead + `
cluster {
  authorized_networks = ["0.0.0.0/0"]
  dataplane_v2        = false
}
node_pool "vm" {
  isolation    = "kvm"
  machine_type = "e2-standard-8"
}
node_pool "gv" {
  dedicated = false
}
runtime_class "kata" {
  handler   = "kata-fc"
  node_pool = "vm"
}
tenant "t" {
  identity {
    workload_identity "agent" {
      roles = ["roles/iam.serviceAccountTokenCreator"]
    }
  }
}
audit_sink "gcs" {
  kind        = "storage"
  destination = "gs://google-audit"
}
`
	p := load(t, src)
	line := func(sub string) int {
		return strings.Count(src[:strings.Index(src, sub)], "\n") + 1
	}
	for _, c := range []struct {
		v       rules.Violation
		object  string
		line    int
		columns int
	}{
		{rules.Violation{Object: "cluster", Attr: "authorized_networks[0]"}, "cluster", line("authorized_networks"), 3},
		{rules.Violation{Object: "cluster", Attr: "dataplane_v2"}, "cluster", line("dataplane_v2"), 3},
		{rules.Violation{Object: "cluster", Attr: "project"}, "target", line("project"), 3},
		{rules.Violation{Object: "cluster", Attr: "name"}, "platform", 1, 1},
		{rules.Violation{Object: "node_pool.vm", Attr: "machine_type"}, "node_pool.vm", line(`machine_type = "e2`), 3},
		{rules.Violation{Object: "node_pool.gv", Attr: "isolation"}, "node_pool.gv", line("dedicated"), 3},
		{rules.Violation{Object: "node_pool.gv", Attr: "taints[0]"}, "node_pool.gv", line(`node_pool "gv"`), 1},
		{rules.Violation{Object: "kata", Attr: "shims[0]"}, "runtime_class.kata", line(`handler   = "kata-fc"`), 3},
		{rules.Violation{Object: "workload_identity.agents-t/agent-runtime", Attr: "roles[0]"}, "tenant.t.workload_identity.agent", line(`roles = ["roles/iam`), 7},
		{rules.Violation{Object: "workload_identity.agents-t/agent-runtime"}, "tenant.t.workload_identity.agent", line(`workload_identity "agent"`), 5},
		{rules.Violation{Object: "audit_sink.demo-gcs", Attr: "destination"}, "audit_sink.gcs", line(`destination = "gs://google`), 3},
		{rules.Violation{Object: "alerts"}, "platform", 1, 1},
	} {
		obj, r := Source(p, c.v)
		if obj != c.object || r.Filename != "spec.hcl" || r.Line != c.line || r.Column != c.columns {
			t.Errorf("Source(%s) = %s at %s, want %s at spec.hcl:%d:%d", c.v.Field(), obj, r, c.object, c.line, c.columns)
		}
	}

	// Every violation of this spec maps into it.
	for _, v := range rules.Validate(Args(p)) {
		if _, r := Source(p, v); r.Filename != "spec.hcl" {
			t.Errorf("%s [%s] has no source", v.Field(), v.Rule)
		}
	}
}

// The images the nodes pull are every template's and the Agent Sandbox
// controller's, pinned as the in-cluster layer pins it.
func TestArgsImages(t *testing.T) {
	p := load(t, gkeHead+`
tenant "a" {
  template "t1" { image = "europe-docker.pkg.dev/my-project/agents/a:1" }
  template "t2" { image = "python:3.12-slim" }
}
tenant "b" {
  template "t" { image = "europe-docker.pkg.dev/my-project/agents/b:2" }
}
`)
	got := Args(p).Images
	want := []string{"europe-docker.pkg.dev/my-project/agents/a:1", "python:3.12-slim", "europe-docker.pkg.dev/my-project/agents/b:2", p.AgentSandbox.Image}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("images %v, want %v", got, want)
	}
}

// On GKE the observability block also makes the matching Cloud Monitoring
// policies: quota refusals in the tenant namespaces, and sandboxes living
// longer than lifetime_factor × the longest max_ttl. Without the block, none.
func TestArgsAlertsFromObservability(t *testing.T) {
	tenants := `
tenant "a" {}
tenant "b" {
  claims { max_ttl = "6h" }
}
`
	if a := Args(load(t, gkeHead+tenants)).Alerts; a != nil {
		t.Errorf("alerts without an observability block: %+v", a)
	}
	a := Args(load(t, gkeHead+tenants+"observability {\n  lifetime_factor = 1.5\n}\n")).Alerts
	if a == nil {
		t.Fatal("no alerts with an observability block")
	}
	want := gcpinputs.AlertArgs{Namespaces: []string{"agents-a", "agents-b"}, QuotaSaturation: true, SandboxMaxLifetime: 9 * time.Hour}
	if !reflect.DeepEqual(*a, want) {
		t.Errorf("alerts %+v, want %+v", *a, want)
	}
	for _, v := range rules.Validate(gcpinputs.PlatformArgs{Alerts: a}) {
		if v.Object == "alerts" {
			t.Errorf("the GCP rules refuse the derived alerts: %+v", v)
		}
	}
}
