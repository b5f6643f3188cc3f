package manifests

import (
	"reflect"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/paddock-platform/paddock/internal/gcpinputs"
	"github.com/paddock-platform/paddock/internal/gcpinputs/frommodel"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/schemas"
)

func loadGKE(t *testing.T, tenantBody, cluster string) *model.Platform {
	t.Helper()
	src := `platform { name = "demo" }
target "gke" {
  project  = "my-project"
  location = "europe-west4"
}
cluster {` + cluster + `}
agent_sandbox { version = "v0.5.6" }
node_pool "gv" {}
runtime_class "gvisor" {
  handler   = "gvisor"
  node_pool = "gv"
}
tenant "t" {
` + tenantBody + `
  template "x" {
    image         = "python:3.12"
    runtime_class = "gvisor"
  }
}
`
	p, diags := schemas.LoadSource("spec.hcl", []byte(src), schemas.LoadOptions{Environ: []string{}})
	if diags.HasErrors() {
		t.Fatalf("spec does not load: %s", diags.Error())
	}
	return p
}

const bothIdentities = `  identity {
    workload_identity "orchestrator" { roles = ["roles/storage.objectViewer"] }
    workload_identity "agent" { roles = ["roles/aiplatform.user"] }
  }`

// The KSA annotation names exactly the Google service account the GCP layer
// creates for that KSA: the same id (from the same mapping of the model), in
// the target's project.
func TestWorkloadIdentityAnnotationMatchesGCPLayer(t *testing.T) {
	p := loadGKE(t, bothIdentities, "")
	tn := p.Tenants[0]
	args := frommodel.Args(p).WithDefaults()
	if len(args.WorkloadIdentities) != 2 {
		t.Fatalf("GCP layer identities: %+v", args.WorkloadIdentities)
	}
	sa, _, _ := Orchestrator(p, tn)
	agent := AgentRuntimeServiceAccount(p, tn)
	for _, wi := range args.WorkloadIdentities {
		want := gcpinputs.ServiceAccountEmail(wi.AccountID, wi.Project)
		var got string
		switch wi.KSA {
		case model.AgentOrchestratorServiceAccount:
			got = sa.Annotations[gcpinputs.KSAAnnotation]
		case model.AgentRuntimeServiceAccount:
			got = agent.Annotations[gcpinputs.KSAAnnotation]
		}
		if got != want || wi.Namespace != tn.Namespace {
			t.Errorf("%s/%s: annotation %q, GCP layer account %q", wi.Namespace, wi.KSA, got, want)
		}
	}
	if got := sa.Annotations[gcpinputs.KSAAnnotation]; got != "demo-t-agent-orchestrator@my-project.iam.gserviceaccount.com" {
		t.Errorf("orchestrator annotation %q", got)
	}

	// Only the KSA that asks for cloud access is annotated.
	p = loadGKE(t, `  identity {
    workload_identity "orchestrator" { roles = ["roles/storage.objectViewer"] }
  }`, "")
	if a := AgentRuntimeServiceAccount(p, p.Tenants[0]).Annotations; a != nil {
		t.Errorf("agent-runtime annotated without a workload identity: %v", a)
	}

	// Off GKE nothing is annotated, whatever the model holds.
	p.Target.Kind = model.TargetKubeconfig
	if sa, _, _ := Orchestrator(p, p.Tenants[0]); sa.Annotations != nil {
		t.Errorf("annotated off GKE: %v", sa.Annotations)
	}
}

func metadataPolicy(t *testing.T, p *model.Platform) *networkingv1.NetworkPolicy {
	t.Helper()
	pols, err := NetworkPolicies(p, p.Tenants[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, np := range pols {
		if np.Name == AllowMetadataServerPolicy {
			return np
		}
	}
	return nil
}

// The GKE metadata server hole exists only for a workload identity of the
// agent on a cluster with Workload Identity and Dataplane V2, and is exactly
// TCP 80 to 169.254.169.254/32, in the namespace policy and the template's.
func TestMetadataServerHole(t *testing.T) {
	p := loadGKE(t, bothIdentities, "")
	np := metadataPolicy(t, p)
	if np == nil {
		t.Fatal("no metadata server policy for an agent with a workload identity")
	}
	want := []networkingv1.NetworkPolicyEgressRule{{
		To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "169.254.169.254/32"}}},
		Ports: []networkingv1.NetworkPolicyPort{port("TCP", 80)},
	}}
	if !reflect.DeepEqual(np.Spec.Egress, want) || len(np.Spec.Ingress) != 0 ||
		!reflect.DeepEqual(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}) {
		t.Errorf("metadata policy = %+v", np.Spec)
	}
	st, err := SandboxTemplate(p, p.Tenants[0], p.Tenants[0].Templates[0])
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range st.Spec.NetworkPolicy.Egress {
		found = found || reflect.DeepEqual([]networkingv1.NetworkPolicyEgressRule{r}, want)
	}
	if !found {
		t.Errorf("the template's managed policy lacks the hole: %+v", st.Spec.NetworkPolicy.Egress)
	}

	for name, c := range map[string]struct{ tenant, cluster string }{
		"orchestrator only": {`  identity {
    workload_identity "orchestrator" { roles = ["roles/storage.objectViewer"] }
  }`, ""},
		"no identity":         {"", ""},
		"no dataplane v2":     {bothIdentities, "dataplane_v2 = false"},
		"no workload pool":    {bothIdentities, "workload_identity = false"},
		"default deny waived": {bothIdentities + "\n  egress { default_deny = false }", ""},
	} {
		p := loadGKE(t, c.tenant, c.cluster)
		if np := metadataPolicy(t, p); np != nil {
			t.Errorf("%s: metadata policy %+v", name, np.Spec)
		}
		st, err := SandboxTemplate(p, p.Tenants[0], p.Tenants[0].Templates[0])
		if err != nil {
			t.Fatal(err)
		}
		if st.Spec.NetworkPolicy != nil {
			for _, r := range st.Spec.NetworkPolicy.Egress {
				for _, to := range r.To {
					if to.IPBlock != nil && to.IPBlock.CIDR == "169.254.169.254/32" {
						t.Errorf("%s: the template's policy opens the metadata server", name)
					}
				}
			}
		}
	}
}
