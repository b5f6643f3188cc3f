package schemas

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/paddock-platform/paddock/internal/model"
)

func loadDir(t *testing.T, dir string) *model.Platform {
	t.Helper()
	return mustLoad(t, func(l *Loader) (*model.Platform, hcl.Diagnostics) {
		return l.LoadDir(dir, LoadOptions{Environ: []string{}})
	})
}

func check(t *testing.T, name string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", name, got, want)
	}
}

func TestLoadGKEGVisorExample(t *testing.T) {
	p := loadDir(t, "../examples/gke-gvisor")
	check(t, "target", []any{p.Target.Kind, p.Target.Project, p.Target.Location, p.Target.ClusterName},
		[]any{model.TargetGKE, "paddock-example-prod", "europe-west1", "agents-gvisor"})
	check(t, "cluster", *p.Cluster, model.Cluster{ReleaseChannel: "regular", AuthorizedNetworks: []string{"203.0.113.0/24"}, FQDNNetworkPolicy: true, Src: p.Cluster.Src, Attrs: p.Cluster.Attrs})
	check(t, "node pools", p.NodePools, []model.NodePool{{Name: "sandboxes", Isolation: "gvisor", MachineType: "e2-standard-8", MinNodes: 1, MaxNodes: 10, Src: p.NodePools[0].Src, Attrs: p.NodePools[0].Attrs}})
	rc := p.RuntimeClasses[0]
	check(t, "runtime class", []any{rc.Handler, rc.NodePool, rc.NodeSelector, rc.Tolerations}, []any{"gvisor", "sandboxes",
		map[string]string{"sandbox.gke.io/runtime": "gvisor"},
		[]model.Toleration{{Key: "sandbox.gke.io/runtime", Operator: "Equal", Value: "gvisor", Effect: "NoSchedule"}}})

	// for_each over var.teams, with optional attributes defaulted.
	var names []string
	for _, tn := range p.Tenants {
		names = append(names, tn.Name+":"+tn.Namespace+":"+strings.Join(tn.Egress.FQDNs, ","))
	}
	check(t, "tenants", names, []string{
		"research:agents-research:api.example-llm-provider.com",
		"support:agents-support:api.example-llm-provider.com,tickets.example.com",
	})
	check(t, "replicas", []int32{p.Tenants[0].WarmPools[0].Replicas, p.Tenants[1].WarmPools[0].Replicas}, []int32{2, 1})
	tpl := p.Tenants[0].Templates[0]
	check(t, "image from a local", tpl.Image, "us-docker.pkg.dev/paddock-example-prod/agents/runtime:1.4.2")
	check(t, "workspace", *tpl.Workspace, model.Workspace{Kind: "ephemeral", Size: "5Gi", MountPath: "/workspace", Src: tpl.Workspace.Src, Attrs: tpl.Workspace.Attrs})
	check(t, "secret env", []any{tpl.SecretEnv[0].Name, tpl.SecretEnv[0].Secret, tpl.SecretEnv[0].Key, tpl.SecretEnv[0].Optional}, []any{"LLM_API_KEY", "llm-credentials", "api-key", false})
	check(t, "audit", []any{p.AuditSinks[0].Kind, p.AuditSinks[0].Destination, p.AuditSinks[0].Filters}, []any{"bigquery", "paddock-example-prod.agent_audit", model.DefaultAuditFilters()})
	for _, tn := range p.Tenants {
		wis := tn.Identity.WorkloadIdentities
		if len(wis) != 1 {
			t.Fatalf("tenant %s: %d workload identities, want 1", tn.Name, len(wis))
		}
		check(t, "workload identity", []any{wis[0].ServiceAccount, wis[0].Roles}, []any{model.AgentOrchestratorServiceAccount, []string{"roles/storage.objectViewer"}})
		if !wis[0].Src.Known() || !wis[0].Attrs["roles"].Known() {
			t.Errorf("workload identity of %s has no source range: %+v", tn.Name, wis[0])
		}
	}
}

// The default audit filters are the guide's control-plane events and more.
func TestDefaultAuditFiltersIncludeLifecycleAndRBAC(t *testing.T) {
	f := model.DefaultAuditFilters()
	for _, want := range []string{model.AuditSandboxLifecycle, model.AuditRBAC} {
		found := false
		for _, x := range f {
			found = found || x == want
		}
		if !found {
			t.Errorf("default filters %v lack %s", f, want)
		}
	}
	for _, x := range f {
		found := false
		for _, y := range auditFilters {
			found = found || x == y
		}
		if !found {
			t.Errorf("default filter %s is not in the language's enum %v", x, auditFilters)
		}
	}
}

// A Kata runtime class without overhead gets kata-deploy's; one that sets it
// keeps its own; gVisor gets none.
func TestKataOverheadDefault(t *testing.T) {
	src := head + `runtime_class "kata" { handler = "kata-clh" }
runtime_class "mine" {
  handler  = "kata"
  overhead = { cpu = "1", memory = "1Gi" }
}
`
	p := mustLoad(t, func(l *Loader) (*model.Platform, hcl.Diagnostics) {
		return l.LoadSource("spec.hcl", []byte(src), LoadOptions{Environ: []string{}})
	})
	got := map[string][2]string{}
	for _, rc := range p.RuntimeClasses {
		got[rc.Name] = [2]string{rc.OverheadCPU, rc.OverheadMemory}
	}
	check(t, "overheads", got, map[string][2]string{"gvisor": {"", ""}, "kata": {"250m", "130Mi"}, "mine": {"1", "1Gi"}})
}

func TestLoadGKEKataExample(t *testing.T) {
	p := loadDir(t, "../examples/gke-kata")
	np := p.NodePools[0]
	check(t, "pool", []any{np.Isolation, np.MachineType, np.MinNodes, np.MaxNodes, np.Labels}, []any{"kvm", "n2-standard-8", int32(1), int32(6), map[string]string{"example.com/team": "platform"}})
	rc := p.RuntimeClasses[0]
	check(t, "derived node selector", rc.NodeSelector, map[string]string{"paddock.dev/isolation": "kvm", "example.com/team": "platform"})
	check(t, "derived tolerations", rc.Tolerations, []model.Toleration{{Key: "paddock.dev/isolation", Operator: "Equal", Value: "kvm", Effect: "NoSchedule"}})
	check(t, "default Kata overhead", []string{rc.OverheadCPU, rc.OverheadMemory}, []string{"250m", "320Mi"})
	tn := p.Tenants[0]
	check(t, "quota", []any{tn.Quota.Pods, tn.Quota.LimitsCPU, tn.Quota.LimitsMemory, tn.Quota.LimitsEphemeralStorage, tn.Quota.PersistentVolumeClaims, tn.Quota.RequestsStorage},
		[]any{int32(40), "64", "128Gi", "200Gi", int32(40), "400Gi"})
	px := tn.Egress.Proxy
	check(t, "proxy", []any{px.URL, px.Host, px.Port, px.Namespace, px.PodLabels}, []any{"http://squid.egress-proxy.svc.cluster.local:3128", "squid.egress-proxy.svc.cluster.local", int32(3128), "egress-proxy", map[string]string{"app.kubernetes.io/name": "squid"}})
	check(t, "claims", []any{tn.Claims.TTL, tn.Claims.MaxTTL, tn.Claims.ShutdownPolicy}, []any{5 * time.Minute, 8 * time.Hour, "Delete"})
	w := tn.Templates[0].Workspace
	check(t, "workspace", []string{w.Kind, w.Size, w.StorageClass}, []string{"persistent", "20Gi", "premium-rwo"})
	check(t, "env", tn.Templates[0].Env, map[string]string{"BUILD_CACHE_DIR": "/workspace/.cache"})
}

// Every loosening knob lands in the model, and its argument's range with it.
func TestLoadLooseningKnobs(t *testing.T) {
	p := loadDir(t, "../examples/insecure")
	cl := p.Cluster
	check(t, "cluster", []bool{cl.PublicNodes, cl.NoDataplaneV2, cl.NoWorkloadIdentity}, []bool{true, true, true})
	check(t, "shared pool", p.NodePools[0].Shared, true)
	a := p.Tenants[0]
	check(t, "tenant", []any{a.Namespace, a.PodSecurity, a.Quota.Disabled, a.LimitRange.Disabled, a.Identity.Orchestrator, a.Egress.Unrestricted},
		[]any{"default", "baseline", true, true, false, true})
	check(t, "token", []any{a.Identity.ToolGatewayToken.Audience, a.Identity.ToolGatewayToken.Expiration, a.Identity.ToolGatewayToken.MountPath}, []any{"tool-gateway", 12 * time.Hour, "/var/run/secrets/tokens"})
	b := p.Tenants[1]
	check(t, "allow", []any{b.Egress.Allows[0].CIDR, b.Egress.Allows[0].Ports, b.Egress.Allows[0].Protocol}, []any{"0.0.0.0/0", []int32{80, 443, 53}, "TCP"})
	check(t, "proxy", []any{b.Egress.Proxy.CIDR, b.Egress.Proxy.Port}, []any{"169.254.169.254/32", int32(80)})
	check(t, "claims", []any{a.Claims.TTL, a.Claims.MaxTTL, a.Claims.ShutdownPolicy}, []any{time.Duration(0), time.Duration(0), "Retain"})
	tpl := a.Templates[0]
	check(t, "knobs", []any{tpl.AllowRoot, tpl.RunAsUser, tpl.Seccomp, tpl.AllowPrivilegeEscalation, tpl.Privileged, tpl.WritableRootFilesystem, tpl.AddCapabilities, tpl.AutomountServiceAccountToken},
		[]any{true, int64(0), "Unconfined", true, true, true, []string{"SYS_ADMIN", "NET_ADMIN"}, true})
	check(t, "unbounded", []string{tpl.Resources.LimitsCPU, tpl.Resources.LimitsMemory, tpl.Resources.LimitsEphemeralStorage, tpl.Resources.RequestsCPU}, []string{"", "", "", "250m"})
	check(t, "optional secret", tpl.SecretEnv[1].Optional, true)
	check(t, "payloads", p.AuditSinks[0].IncludePayloads, true)
	check(t, "update strategy", b.WarmPools[0].UpdateStrategy, "OnReplenish")

	file := "../examples/insecure/platform.hcl"
	for _, c := range []struct {
		attrs model.Attrs
		name  string
		line  string
	}{
		{tpl.Attrs, "read_only_root", "read_only_root "},
		{tpl.Attrs, "resources.unbounded", "unbounded = "},
		{a.Attrs, "pod_security", "pod_security "},
		{a.Quota.Attrs, "enabled", "enabled = false # PDK-103"},
		{a.Claims.Attrs, "shutdown_policy", "shutdown_policy "},
		{b.Egress.Proxy.Attrs, "cidr", "cidr = \"169.254.169.254/32\""},
		{cl.Attrs, "dataplane_v2", "dataplane_v2 "},
		{p.AgentSandbox.Attrs, "image", "image   = \"registry.k8s.io"},
		{b.WarmPools[0].Attrs, "update_strategy", "update_strategy = \"OnReplenish\""},
	} {
		if got, want := c.attrs[c.name], srcOf(t, file, c.line); got != want {
			t.Errorf("range of %s = %v, want %v", c.name, got, want)
		}
	}
}

// Decoding errors of the v1 blocks: each points at the exact argument.
func TestLoadErrorsV1(t *testing.T) {
	gke := func(body string) string {
		return strings.Replace(head, `target "local" {}`, "target \"gke\" {\n  project  = \"my-project\"\n  location = \"europe-west1\"\n}\n"+body, 1)
	}
	ten := func(body string) string { return head + "tenant \"t\" {\n  " + body + "\n}\n" }
	tests := []struct {
		name, src, summary, detail string
	}{
		{"gke without project", strings.Replace(head, `target "local" {}`, `/*@*/target "gke" { location = "europe-west1" }`, 1), "Missing required argument", "needs the Google Cloud project ID"},
		{"gke bad project", strings.Replace(head, `target "local" {}`, `target "gke" {
  project  = /*@*/"My Project"
  location = "europe-west1"
}`, 1), "Invalid project ID", "Use the ID, not the display name"},
		{"gke bad location", strings.Replace(head, `target "local" {}`, `target "gke" {
  project  = "my-project"
  location = /*@*/"Europe"
}`, 1), "Invalid location", "region"},
		{"cluster on local", head + `/*@*/cluster {}`, `cluster block needs target "gke"`, `this spec's target is "local"`},
		{"node pool on local", head + `/*@*/node_pool "p" {}`, `node_pool block needs target "gke"`, "Remove the block"},
		{"release channel", gke(`cluster { release_channel = /*@*/"regualr" }`), "Invalid release channel", `Did you mean "regular"?`},
		{"authorized network", gke(`cluster { authorized_networks = /*@*/["10.0.0.0"] }`), "Invalid CIDR", "CIDR notation"},
		{"isolation", gke(`node_pool "p" { isolation = /*@*/"gvsior" }`), "Invalid isolation", `Did you mean "gvisor"?`},
		{"machine type", gke(`node_pool "p" { machine_type = /*@*/"n2_standard_4" }`), "Invalid machine type", `"e2-standard-4"`},
		{"workload identity on local", ten(`identity {
    /*@*/workload_identity "orchestrator" { roles = ["roles/storage.objectViewer"] }
  }`), `workload_identity needs target "gke"`, `this spec's target is "local"`},
		{"workload identity unknown account", gke(`tenant "t" {
  identity {
    workload_identity /*@*/"orchestrater" { roles = ["roles/storage.objectViewer"] }
  }
}`), "Invalid workload identity label", `Did you mean "orchestrator"?`},
		{"workload identity full account name", gke(`tenant "t" {
  identity {
    workload_identity /*@*/"agent-orchestrator" { roles = ["roles/storage.objectViewer"] }
  }
}`), "Invalid workload identity label", `Did you mean "orchestrator"?`},
		{"workload identity without orchestrator", gke(`tenant "t" {
  identity {
    orchestrator = false
    workload_identity /*@*/"orchestrator" { roles = ["roles/storage.objectViewer"] }
  }
}`), "No orchestrator identity to bind", "orchestrator = false at spec.hcl:8:5"},
		{"workload identity without roles", gke(`tenant "t" {
  identity {
    /*@*/workload_identity "agent" {}
  }
}`), "Missing required argument", "needs the roles it grants"},
		{"workload identity empty roles", gke(`tenant "t" {
  identity {
    workload_identity "agent" { roles = /*@*/[] }
  }
}`), "No roles", "needs no workload identity"},
		{"workload identity malformed role", gke(`tenant "t" {
  identity {
    workload_identity "orchestrator" { roles = /*@*/["storage.objectViewer"] }
  }
}`), "Invalid IAM role", `"roles/<name>"`},
		{"workload identity owner", gke(`tenant "t" {
  identity {
    workload_identity "orchestrator" { roles = /*@*/["roles/owner"] }
  }
}`), "Basic role refused", "roles/owner is a basic role"},
		{"workload identity viewer", gke(`tenant "t" {
  identity {
    workload_identity "orchestrator" { roles = /*@*/["roles/storage.objectViewer", "roles/viewer"] }
  }
}`), "Basic role refused", "roles/viewer is a basic role"},
		{"workload identity duplicate role", gke(`tenant "t" {
  identity {
    workload_identity "orchestrator" { roles = /*@*/["roles/pubsub.subscriber", "roles/pubsub.subscriber"] }
  }
}`), "Duplicate role", "listed twice"},
		{"workload identity twice", gke(`tenant "t" {
  identity {
    workload_identity "agent" { roles = ["roles/pubsub.subscriber"] }
    workload_identity /*@*/"agent" { roles = ["roles/pubsub.viewer"] }
  }
}`), `Duplicate workload_identity "agent"`, "already declared"},
		{"runsc on gke", gke(`runtime_class "sandboxed" { handler = /*@*/"runsc" }`), "Runtime handler not on GKE nodes", `Use handler = "gvisor"`},
		{"gvisor class with kata handler on gke", gke(`runtime_class "gvisor" { handler = /*@*/"kata" }`), "RuntimeClass gvisor belongs to GKE", "give this runtime class another name"},
		{"gvisor class scheduling on gke", gke(`runtime_class "gvisor" {
  handler       = "gvisor"
  /*@*/node_selector = { "a" = "b" }
}`), "RuntimeClass gvisor belongs to GKE", "Remove node_selector"},
		{"gvisor class toleration on gke", gke(`runtime_class "gvisor" {
  handler = "gvisor"
  /*@*/toleration { key = "a" }
}`), "RuntimeClass gvisor belongs to GKE", "this toleration would be ignored"},
		{"bigquery in another project", gke(`audit_sink "a" {
  kind        = "bigquery"
  destination = /*@*/"other-project.audit"
}`), "Audit destination in another project", `Write "my-project.audit"`},
		{"pubsub in another project", gke(`audit_sink "a" {
  kind        = "pubsub"
  destination = /*@*/"projects/other-project/topics/audit"
}`), "Audit destination in another project", `Write "projects/my-project/topics/audit"`},
		{"autoscaling bounds", gke(`node_pool "p" {
  autoscaling {
    min = /*@*/5
    max = 2
  }
}`), "Invalid autoscaling bounds", "min (5) is above max (2)"},
		{"taint effect", gke(`node_pool "p" {
  taint {
    key    = "k"
    effect = /*@*/"NoSchedul"
  }
}`), "Invalid taint effect", `Did you mean "NoSchedule"?`},
		{"unknown node pool", gke(`node_pool "sandboxes" {}
runtime_class "kata" {
  handler   = "kata"
  node_pool = /*@*/"sandboxs"
}`), "Unknown node pool", `Did you mean "sandboxes"? Declared node pools: "sandboxes".`},
		{"runtime and pool disagree", gke(`node_pool "gv" {}
runtime_class "kata" {
  handler   = "kata"
  node_pool = /*@*/"gv"
}`), "Runtime class and node pool disagree", `Handler "kata" needs kvm nodes, but node pool "gv" has isolation "gvisor"`},
		{"overhead resource", head + rc(`overhead = { /*@*/ephemeral_storage = "1Gi" }`), "Unsupported resource", `overhead takes "cpu" and "memory"`},
		{"digest", strings.Replace(head, `agent_sandbox { version = "v0.5.6" }`, `agent_sandbox {
  version = "v0.5.6"
  digest  = /*@*/"sha256:abc"
}`, 1), "Invalid digest", "64 lower case hex digits"},
		{"refill delay", strings.Replace(head, `agent_sandbox { version = "v0.5.6" }`, `agent_sandbox {
  version      = "v0.5.6"
  refill_delay = /*@*/"1h"
}`, 1), "Value out of range", "refill_delay must be between 0s and 10m, not 1h."},
		{"refill rate", strings.Replace(head, `agent_sandbox { version = "v0.5.6" }`, `agent_sandbox {
  version           = "v0.5.6"
  refill_per_minute = /*@*/-3
}`, 1), "Value out of range", "refill_per_minute must be between 0 and 60000"},
		{"pod security", ten(`pod_security = /*@*/"restricte"`), "Invalid Pod Security level", `Did you mean "restricted"?`},
		{"pod security privileged", ten(`pod_security = /*@*/"privileged"`), "Pod Security privileged refused", `"baseline" with a waiver of PDK-101`},
		{"quota quantity", ten(`quota { cpu = /*@*/"8 cores" }`), "Invalid quantity", `The quota cpu "8 cores"`},
		{"quota pods", ten(`quota { pods = /*@*/-1 }`), "Value out of range", "pods must be between 0 and 100000"},
		{"limit range request above default", ten(`limit_range {
    default         = { cpu = "1" }
    default_request = { cpu = /*@*/"2" }
  }`), "Request above limit", "Raise default.cpu to at least 2"},
		{"token expiration", ten(`identity {
    tool_gateway_token { expiration = /*@*/"5m" }
  }`), "Value out of range", "expiration must be between 10m and 24h, not 5m."},
		{"token expiration none", ten(`identity {
    tool_gateway_token { expiration = /*@*/"none" }
  }`), "Invalid duration", `Write a number and a unit`},
		{"token path", ten(`identity {
    tool_gateway_token { path = /*@*/"tokens" }
  }`), "Invalid mount path", "clean absolute directory"},
		{"fqdn", ten(`egress { fqdns = /*@*/["https://api.example.com"] }`), "Invalid host name", "no scheme, port or path"},
		{"fqdn wildcard over an ICANN public suffix", ten(`egress { fqdns = /*@*/["api.example.com", "*.co.uk"] }`), "Wildcard over a public suffix", `"co.uk", a public suffix`},
		{"fqdn wildcard over a private public suffix", ten(`egress { fqdns = /*@*/["*.github.io"] }`), "Wildcard over a public suffix", "List the hosts"},
		{"fqdn wildcard over a whole top-level domain", ten(`egress { fqdns = /*@*/["*.internal"] }`), "Invalid host name", "*.example.com"},
		{"allow without ports", ten(`egress {
    /*@*/allow { cidr = "10.0.0.0/8" }
  }`), "Missing required argument", "needs the destination ports"},
		{"allow empty ports", ten(`egress {
    allow {
      cidr  = "10.0.0.0/8"
      ports = /*@*/[]
    }
  }`), "Invalid ports", "an allow never opens every port"},
		{"allow port range", ten(`egress {
    allow {
      cidr  = "10.0.0.0/8"
      ports = /*@*/[70000]
    }
  }`), "Value out of range", "between 1 and 65535"},
		{"allow cidr with a zero-padded prefix length", ten(`egress {
    allow {
      cidr  = /*@*/"10.40.0.0/016"
      ports = [443]
    }
  }`), "Invalid CIDR", `bad bits after slash: "016"`},
		{"allow cidr IPv4-mapped", ten(`egress {
    allow {
      cidr  = /*@*/"::ffff:169.254.169.254/128"
      ports = [443]
    }
  }`), "Invalid CIDR", "write the IPv4 range it means"},
		{"proxy cidr with a zero-padded prefix length", ten(`egress {
    proxy {
      url  = "http://10.0.0.5:3128"
      cidr = /*@*/"10.0.0.5/032"
    }
  }`), "Invalid CIDR", `bad bits after slash: "032"`},
		{"authorized network zero-padded", gke(`cluster { authorized_networks = /*@*/["203.0.113.0/024"] }`), "Invalid CIDR", "CIDR notation"},
		{"allow protocol", ten(`egress {
    allow {
      cidr     = "10.0.0.0/8"
      ports    = [53]
      protocol = /*@*/"udp"
    }
  }`), "Invalid protocol", `Did you mean "UDP"?`},
		{"proxy url", ten(`egress {
    proxy {
      url       = /*@*/"squid:3128"
      namespace = "egress"
    }
  }`), "Invalid proxy URL", "scheme http or https"},
		{"proxy credentials", ten(`egress {
    proxy {
      url       = /*@*/"http://user:pass@squid:3128"
      namespace = "egress"
    }
  }`), "Invalid proxy URL", "no credentials"},
		{"proxy location", ten(`egress {
    /*@*/proxy { url = "http://squid:3128" }
  }`), "Missing required argument", "namespace = \"egress\" for a proxy in the cluster"},
		{"proxy both locations", ten(`egress {
    proxy {
      url       = "http://squid:3128"
      namespace = "egress"
      cidr      = /*@*/"10.0.0.1/32"
    }
  }`), "Conflicting proxy location", "not both"},
		{"claims ttl", ten(`claims { ttl = /*@*/"ten minutes" }`), "Invalid duration", `or "none" for no limit at all`},
		{"claims ttl zero", ten(`claims { ttl = /*@*/"0s" }`), "Value out of range", "ttl must be between 1s and"},
		{"shutdown policy", ten(`claims { shutdown_policy = /*@*/"delete" }`), "Invalid shutdown policy", `Did you mean "Delete"?`},
		{"update strategy misspelt", head + pool(`update_strategy = /*@*/"recreate"`), "Invalid update strategy", `Did you mean "Recreate"? Use "Recreate" (the default`},
		{"update strategy of a Deployment", head + pool(`update_strategy = /*@*/"RollingUpdate"`), "Invalid update strategy", `or "OnReplenish" (they stay in the pool until claims take them; needs a waiver of PDK-410 with the reason).`},
		{"update strategy not a string", head + pool(`update_strategy = /*@*/["Recreate"]`), "Incorrect value type", "string required"},
		{"run_as_user 0 stays root", head + tpl(`run_as_user = /*@*/0`), "Value out of range", "between 1 and"},
		{"seccomp", head + tpl(`seccomp_profile = /*@*/"unconfined"`), "Invalid seccomp profile", `Did you mean "Unconfined"?`},
		{"capability", head + tpl(`add_capabilities = /*@*/["CAP_NET_ADMIN "]`), "Invalid capability", "without the CAP_ prefix"},
		{"unbounded resource", head + tpl(`resources { unbounded = /*@*/["cpus"] }`), "Unsupported resource", `Did you mean "cpu"?`},
		{"unbounded and limited", head + tpl(`resources {
      limits    = { cpu = /*@*/"1" }
      unbounded = ["cpu"]
    }`), "Limit of an unbounded resource", "Remove one of them."},
		{"workspace kind required", head + tpl(`/*@*/workspace { size = "1Gi" }`), "Missing required argument", "so what survives a sandbox is explicit"},
		{"workspace in tmp", head + tpl(`workspace {
      kind       = "ephemeral"
      mount_path = /*@*/"/tmp/work"
    }`), "Invalid mount path", "inside /tmp"},
		{"storage class on ephemeral", head + tpl(`workspace {
      kind          = "ephemeral"
      storage_class = /*@*/"ssd"
    }`), "storage_class needs a persistent workspace", "has no storage class"},
		{"env name", head + tpl(`env = { /*@*/"1BAD" = "x" }`), "Invalid environment variable name", "not starting with a digit"},
		{"secret env name", head + tpl(`secret_env /*@*/"llm-key" {
      secret = "s"
      key    = "k"
    }`), "Invalid environment variable name", `such as "LLM_API_KEY"`},
		{"secret env twice", head + tpl(`env = { TOKEN = "x" }
    secret_env /*@*/"TOKEN" {
      secret = "s"
      key    = "k"
    }`), "Duplicate environment variable", "is also set in env at"},
		{"secret name", head + tpl(`secret_env "K" {
      secret = /*@*/"LLM_Credentials"
      key    = "k"
    }`), "Invalid Secret name", "lower case letters"},
		{"secret without key", head + tpl(`/*@*/secret_env "K" { secret = "s" }`), "Missing required argument", "needs the key in the Secret"},
		{"audit kind", head + `audit_sink "a" {
  kind        = /*@*/"bigqeury"
  destination = "p.d"
}`, "Invalid audit sink kind", `Did you mean "bigquery"?`},
		{"audit destination", head + `audit_sink "a" {
  kind        = "storage"
  destination = /*@*/"my-bucket"
}`, "Invalid audit destination", `"gs://my-audit-bucket"`},
		{"audit filters", head + `audit_sink "a" {
  kind        = "pubsub"
  destination = "projects/my-project/topics/audit"
  filters     = /*@*/["pod_log"]
}`, "Invalid audit filter", `Did you mean "pod_logs"?`},
		{"waiver scope", head + `waiver {
  rule   = "PDK-306"
  reason = "r"
  scope  = /*@*/"tenant/team-a"
}`, "Invalid waiver scope", `"tenant.team-a"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertDiagnosticAt(t, tt.src, tt.summary, tt.detail)
		})
	}
}

func TestParseDuration(t *testing.T) {
	for s, want := range map[string]time.Duration{"10m": 10 * time.Minute, "1h30m": 90 * time.Minute, "2d": 48 * time.Hour, "1d12h": 36 * time.Hour, "0s": 0} {
		if got, err := parseDuration(s); err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "10", "-1m", "1 m", "d", "99999999d", "1dd"} {
		if _, err := parseDuration(s); err == nil {
			t.Errorf("parseDuration(%q) succeeded", s)
		}
	}
	for d, want := range map[time.Duration]string{10 * time.Minute: "10m", 24 * time.Hour: "24h", time.Second: "1s", 90 * time.Minute: "1h30m"} {
		if got := fmtDuration(d); got != want {
			t.Errorf("fmtDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// assertDiagnosticAt loads src as spec.hcl and wants it refused with a
// diagnostic of summary at the /*@*/ marker whose detail contains detail.
func assertDiagnosticAt(t *testing.T, src, summary, detail string) {
	t.Helper()
	want := markerPos(t, "spec.hcl", src)
	l := NewLoader()
	p, diags := l.LoadSource("spec.hcl", []byte(src), LoadOptions{Environ: []string{}})
	if p != nil || !diags.HasErrors() {
		t.Fatalf("want errors, got %v", diags)
	}
	for _, d := range diags {
		if d.Summary != summary {
			continue
		}
		if got := pos(*d.Subject); got != want {
			t.Errorf("%q at %s, want %s", d.Summary, got, want)
		}
		if !strings.Contains(d.Detail, detail) {
			t.Errorf("detail %q does not contain %q", d.Detail, detail)
		}
		return
	}
	var b strings.Builder
	l.WriteDiagnostics(&b, diags)
	t.Errorf("no %q diagnostic; got:\n%s", summary, b.String())
}
