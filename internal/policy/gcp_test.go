package policy_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/policy"
	"github.com/paddock-platform/paddock/schemas"
)

// loadFile loads one spec file through the real loader.
func loadFile(t *testing.T, path string) *model.Platform {
	t.Helper()
	l := schemas.NewLoader()
	p, diags := l.LoadFiles([]string{path}, schemas.LoadOptions{Environ: []string{}})
	if diags.HasErrors() {
		var b strings.Builder
		l.WriteDiagnostics(&b, diags)
		t.Fatalf("%s does not load:\n%s", path, b.String())
	}
	return p
}

// gcpFindings are the validity findings of a report, as "RULE file:line:col".
func gcpFindings(r *policy.Report) []string {
	var out []string
	for _, f := range append(append([]policy.Finding{}, r.Findings...), r.Waived...) {
		if f.Rule().Kind == policy.Validity {
			out = append(out, f.RuleID+" "+f.Src.String())
		}
	}
	sort.Strings(out)
	return out
}

// Every GCP rule a spec can break is refused from the spec, before anything
// is applied, at the argument that breaks it: one fixture per rule under
// testdata/gcp, each breaking exactly that rule.
func TestGCPRulesFromSpec(t *testing.T) {
	for _, c := range []struct {
		file, want, object, message, fix string
	}{
		{"gcp001-cluster-name.hcl", "GCP-001 testdata/gcp/gcp001-cluster-name.hcl:2:1", "platform", "is not a valid GKE cluster name", "cluster name"},
		{"gcp003-authorized-networks.hcl", "GCP-003 testdata/gcp/gcp003-authorized-networks.hcl:16:3", "cluster", "0.0.0.0/0 opens the control plane to the whole internet", "never 0.0.0.0/0"},
		{"gcp004-fqdn-without-dataplane-v2.hcl", "GCP-004 testdata/gcp/gcp004-fqdn-without-dataplane-v2.hcl:16:3", "cluster", "only enforced by GKE Dataplane V2", "Keep dataplane_v2 on"},
		{"gcp018-fqdns-without-fqdn-policy.hcl", "GCP-018 testdata/gcp/gcp018-fqdns-without-fqdn-policy.hcl:17:1", "cluster", "agents-research allow egress by host name", "fqdn_network_policy = true"},
		{"gcp005-workload-identity-without-pool.hcl", "GCP-005 testdata/gcp/gcp005-workload-identity-without-pool.hcl:21:5", "tenant.research.workload_identity.orchestrator", "fixture-project.svc.id.goog pool", "Keep workload_identity on"},
		{"gcp006-system-pool-name.hcl", "GCP-006 testdata/gcp/gcp006-system-pool-name.hcl:15:1", "node_pool.system", `node pool "system" is declared twice`, "each once"},
		{"gcp007-dedicated-gvisor.hcl", "GCP-007 testdata/gcp/gcp007-dedicated-gvisor.hcl:17:3", "node_pool.sandboxes", "only apply to kvm pools", "gvisor"},
		{"gcp009-gke-sandbox-label.hcl", "GCP-009 testdata/gcp/gcp009-gke-sandbox-label.hcl:18:3", "node_pool.vm", "sandbox.gke.io/runtime", "GKE puts it on gVisor nodes itself"},
		{"gcp010-kvm-on-e2.hcl", "GCP-010 testdata/gcp/gcp010-kvm-on-e2.hcl:17:3", "node_pool.vm", "e2-standard-8 cannot run Kata: E2 machines do not support nested virtualisation", "N1, N2, C2, C3"},
		{"gcp013-kata-shim.hcl", "GCP-013 testdata/gcp/gcp013-kata-shim.hcl:20:3", "runtime_class.firecracker", `unknown Kata shim "fc"`, `"qemu" and/or "clh"`},
		{"gcp014-impersonation-role.hcl", "GCP-014 testdata/gcp/gcp014-impersonation-role.hcl:18:7", "tenant.research.workload_identity.orchestrator", "roles/iam.serviceAccountTokenCreator may not be granted", "never basic or IAM-admin roles"},
		{"gcp015-bucket-name.hcl", "GCP-015 testdata/gcp/gcp015-bucket-name.hcl:17:3", "audit_sink.archive", "not a valid Cloud Storage bucket name", "bucket name"},
		{"gcp016-drops-without-dataplane-v2.hcl", "GCP-016 testdata/gcp/gcp016-drops-without-dataplane-v2.hcl:22:3", "audit_sink.drops", "network_drops", "drop the network_drops filter"},
	} {
		t.Run(c.file, func(t *testing.T) {
			r := policy.Check(loadFile(t, filepath.Join("testdata", "gcp", c.file)), testNow)
			if got := gcpFindings(r); strings.Join(got, "; ") != c.want {
				t.Fatalf("validity findings %v, want exactly [%s]", got, c.want)
			}
			if !r.Blocking() {
				t.Error("a GCP finding does not block up")
			}
			for _, f := range r.Findings {
				if f.Rule().Kind != policy.Validity {
					continue
				}
				if f.Object != c.object || !strings.Contains(strings.ToLower(f.Message), strings.ToLower(c.message)) || !strings.Contains(f.Fix, c.fix) || f.Severity != policy.Error {
					t.Errorf("finding %+v\nwant object %s, message ~%q, fix ~%q", f, c.object, c.message, c.fix)
				}
			}
		})
	}

	// The fixtures cover every rule a spec can break; the rest are marked as
	// beyond the spec language (and are covered in internal/gcpinputs/rules).
	files, err := filepath.Glob("testdata/gcp/gcp*.hcl")
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, f := range files {
		covered["GCP-"+filepath.Base(f)[3:6]] = true
	}
	for _, r := range policy.Rules() {
		if r.Kind == policy.Validity && !r.Language && !covered[r.ID] {
			t.Errorf("%s (%s) can be broken from a spec but has no fixture in testdata/gcp", r.ID, r.Title)
		}
		if r.Kind == policy.Validity && r.Language && covered[r.ID] {
			t.Errorf("%s is marked beyond the spec language but has a fixture", r.ID)
		}
	}
}

// The GCP rules run for target "gke" only, and the GKE examples pass them.
func TestGCPRulesOnlyForGKE(t *testing.T) {
	p := mustLoad(t, "../../examples/gke-kata")
	if got := gcpFindings(policy.Check(p, testNow)); len(got) != 0 {
		t.Fatalf("the gke-kata example breaks GCP rules: %v", got)
	}
	// The same broken pool on a model of another target is none of their business.
	p.NodePools[0].MachineType = "e2-standard-8"
	if got := gcpFindings(policy.Check(p, testNow)); len(got) != 1 || !strings.HasPrefix(got[0], "GCP-010 ") {
		t.Errorf("gke: %v, want GCP-010", got)
	}
	p.Target.Kind = model.TargetKubeconfig
	if got := gcpFindings(policy.Check(p, testNow)); len(got) != 0 {
		t.Errorf("kubeconfig target: %v", got)
	}
}

// A waiver cannot silence a validity rule: it is refused (PDK-002) and the
// finding stays.
func TestGCPRulesCannotBeWaived(t *testing.T) {
	src := `
waiver {
  rule   = "GCP-010"
  reason = "We know better."
}
`
	p := mustLoadSource(t, readFile(t, "testdata/gcp/gcp010-kvm-on-e2.hcl")+src)
	r := policy.Check(p, testNow)
	if got := gcpFindings(r); len(got) != 1 || len(r.Waived) != 0 {
		t.Errorf("validity findings %v, waived %d", got, len(r.Waived))
	}
	if len(r.Waivers) != 1 || r.Waivers[0].State != policy.WaiverInvalid {
		t.Fatalf("waivers %+v", r.Waivers)
	}
	found := false
	for _, f := range r.Findings {
		found = found || f.RuleID == "PDK-002" && strings.Contains(f.Message, "checks what the GCP layer can create")
	}
	if !found {
		t.Error("no PDK-002 for a waiver of a validity rule")
	}
}

// Where a GCP finding and a cluster hardening finding point at the same
// argument, only the GCP one is shown; elsewhere both rules report.
func TestGCPFindingsSupersedeClusterRules(t *testing.T) {
	for _, c := range []struct {
		name, cluster, tenant string
		want, gone            []string
	}{
		{"0.0.0.0/0", `authorized_networks = ["0.0.0.0/0"]`, "", []string{"GCP-003"}, []string{"PDK-703"}},
		{"0.0.0.0/1", `authorized_networks = ["0.0.0.0/1"]`, "", []string{"PDK-703"}, []string{"GCP-003"}},
		{"fqdns without dataplane v2", `dataplane_v2 = false
  fqdn_network_policy = true`, `egress {
    fqdns = ["api.example.com"]
  }`, []string{"GCP-004"}, []string{"PDK-704"}},
		{"no dataplane v2", `dataplane_v2 = false`, "", []string{"PDK-704"}, []string{"GCP-004"}},
		{"workload identity without pool", `workload_identity = false`, `identity {
    workload_identity "orchestrator" {
      roles = ["roles/storage.objectViewer"]
    }
  }`, []string{"GCP-005", "PDK-705"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := `platform {
  name = "s"
}
target "gke" {
  project  = "fixture-project"
  location = "europe-west4"
}
agent_sandbox {
  version = "v0.5.6"
}
cluster {
  ` + c.cluster + `
}
tenant "t" {
  ` + c.tenant + `
}
`
			r := policy.Check(mustLoadSource(t, src), testNow)
			fired := map[string]bool{}
			for _, f := range r.Findings {
				fired[f.RuleID] = true
			}
			for _, id := range c.want {
				if !fired[id] {
					t.Errorf("%s does not fire", id)
				}
			}
			for _, id := range c.gone {
				if fired[id] {
					t.Errorf("%s fires", id)
				}
			}
		})
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func gkeTenant(cluster, tenant string) string {
	return `platform {
  name = "s"
}
target "gke" {
  project  = "fixture-project"
  location = "europe-west4"
}
agent_sandbox {
  version = "v0.5.6"
}
cluster {
  ` + cluster + `
}
tenant "t" {
` + tenant + `
}
`
}

func fired(r *policy.Report, id string) []policy.Finding {
	var out []policy.Finding
	for _, f := range r.Findings {
		if f.RuleID == id {
			out = append(out, f)
		}
	}
	return out
}

const agentIdentity = `  identity {
    workload_identity "agent" {
      roles = ["roles/aiplatform.user"]
    }
  }
`

// Cloud roles for the agent runtime identity contradict its zero permissions:
// an error finding at the block, which a scoped waiver can accept.
func TestAgentWorkloadIdentityFinding(t *testing.T) {
	src := gkeTenant("", agentIdentity)
	r := policy.Check(mustLoadSource(t, src), testNow)
	fs := fired(r, "PDK-207")
	if len(fs) != 1 {
		t.Fatalf("PDK-207 fired %d times", len(fs))
	}
	f := fs[0]
	if f.Src.String() != "spec.hcl:16:5" || f.Object != "tenant.t.workload_identity.agent" || f.Severity != policy.Error ||
		!strings.Contains(f.Message, "roles/aiplatform.user") || !strings.Contains(f.Message, "GKE metadata server") {
		t.Errorf("finding %+v", f)
	}
	waived := policy.Check(mustLoadSource(t, src+`
waiver {
  rule   = "PDK-207"
  scope  = "tenant.t"
  reason = "The agent calls Vertex AI itself."
}
`), testNow)
	if len(fired(waived, "PDK-207")) != 0 || len(waived.Waived) != 1 || waived.Waivers[0].State != policy.WaiverActive {
		t.Errorf("scoped waiver: findings %v, waived %v", fired(waived, "PDK-207"), waived.Waived)
	}

	// The orchestrator's cloud access is what identities are for.
	r = policy.Check(mustLoadSource(t, gkeTenant("", `  identity {
    workload_identity "orchestrator" {
      roles = ["roles/aiplatform.user"]
    }
  }
`)), testNow)
	if len(fired(r, "PDK-207")) != 0 {
		t.Error("PDK-207 fires for the orchestrator")
	}
}

// PDK-503 (and PDK-502) accept exactly the GKE metadata server hole a
// workload identity of the agent needs on Dataplane V2, spelled out, and
// nothing wider; without that identity, even the exact hole is refused.
func TestMetadataServerHoleAccepted(t *testing.T) {
	allow := func(cidr, ports string) string {
		return `  egress {
    allow {
      cidr  = "` + cidr + `"
      ports = ` + ports + `
    }
  }
`
	}
	for _, c := range []struct {
		name, cluster, tenant string
		fires                 bool
	}{
		{"exact hole", "", agentIdentity + allow("169.254.169.254/32", "[80]"), false},
		{"link-local range", "", agentIdentity + allow("169.254.0.0/16", "[80]"), true},
		{"other metadata address", "", agentIdentity + allow("169.254.169.252/32", "[988]"), true},
		{"extra port", "", agentIdentity + allow("169.254.169.254/32", "[80, 8080]"), true},
		{"no agent identity", "", allow("169.254.169.254/32", "[80]"), true},
		{"orchestrator identity only", "", `  identity {
    workload_identity "orchestrator" {
      roles = ["roles/aiplatform.user"]
    }
  }
` + allow("169.254.169.254/32", "[80]"), true},
		{"no dataplane v2", "dataplane_v2 = false", agentIdentity + allow("169.254.169.254/32", "[80]"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := policy.Check(mustLoadSource(t, gkeTenant(c.cluster, c.tenant)), testNow)
			if got := len(fired(r, "PDK-503")) > 0; got != c.fires {
				t.Errorf("PDK-503 fires: %v, want %v", got, c.fires)
			}
			if c.name == "exact hole" && len(fired(r, "PDK-502")) != 0 {
				t.Error("PDK-502 fires on the exact metadata server hole")
			}
		})
	}
}

// A rule is superseded only by rules that exist, and never by itself.
func TestSupersededByNamesRegisteredRules(t *testing.T) {
	n := 0
	for _, r := range policy.Rules() {
		for _, by := range r.SupersededBy {
			n++
			if _, ok := policy.Lookup(by); !ok || by == r.ID {
				t.Errorf("%s is superseded by %s, which is not another registered rule", r.ID, by)
			}
		}
	}
	if n == 0 {
		t.Error("no rule declares a supersession")
	}
}
