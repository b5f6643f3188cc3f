//go:build gke

// Real-GKE end-to-end test of the spec path (terratest): an HCL spec of target
// "gke" goes through the loader and the policy gate (specload.Load) and
// program.New runs it with the Automation API against a real GCP project:
// cloud and cluster in one `up`, then the in-cluster layer on the new cluster.
// It checks the result with kubectl and destroys everything. It costs money
// and takes 20-40 minutes. components/gcp/e2e_gke_test.go tests the GCP layer
// itself more deeply (node pools, Kata, pods under each runtime).
//
// Compiled only with -tags gke; it never skips: with anything missing it
// fails and says what. It has never been run from this repository's
// machines, which cannot reach GCP.
//
//	PADDOCK_GKE_PROJECT=my-project PADDOCK_GKE_AUTHORIZED_CIDR=203.0.113.7/32 \
//	  go test -tags gke -run TestGKESpecEndToEnd -timeout 90m -v ./internal/program/
package program_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gruntwork-io/terratest/modules/k8s"
	"github.com/gruntwork-io/terratest/modules/random"
	"github.com/gruntwork-io/terratest/modules/retry"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"

	"github.com/paddock-platform/paddock/internal/gcpinputs"
	"github.com/paddock-platform/paddock/internal/program"
	"github.com/paddock-platform/paddock/internal/specload"
	"github.com/paddock-platform/paddock/internal/targets"
)

// e2eSpec is the spec the test provisions: one gVisor pool, one tenant whose
// orchestrator has a workload identity, a Pub/Sub audit sink, deletion
// protection off so the test can destroy it.
const e2eSpec = `platform {
  name = %[1]q
}

target "gke" {
  project  = %[2]q
  location = %[3]q
}

cluster {
  authorized_networks = [%[4]q]
  deletion_protection = false
}

node_pool "gvisor" {
  isolation    = "gvisor"
  machine_type = "e2-standard-4"
  autoscaling {
    min = 1
    max = 1
  }
}

agent_sandbox {
  version = "v0.5.6"
}

runtime_class "gvisor" {
  handler   = "gvisor"
  node_pool = "gvisor"
}

tenant "e2e" {
  identity {
    workload_identity "orchestrator" {
      roles = ["roles/logging.viewer"]
    }
  }

  template "agent" {
    image         = "busybox:1.36"
    command       = ["sleep", "3600"]
    runtime_class = "gvisor"
  }

  warm_pool "agent" {
    template = "agent"
    replicas = 1
  }
}

audit_sink "audit" {
  kind        = "pubsub"
  destination = "projects/%[2]s/topics/%[1]s-audit"
}
`

func TestGKESpecEndToEnd(t *testing.T) {
	project_, location, cidr := os.Getenv("PADDOCK_GKE_PROJECT"), os.Getenv("PADDOCK_GKE_LOCATION"), os.Getenv("PADDOCK_GKE_AUTHORIZED_CIDR")
	if location == "" {
		location = "us-central1-a"
	}
	var missing []string
	if project_ == "" {
		missing = append(missing, "PADDOCK_GKE_PROJECT (a GCP project to create the platform in)")
	}
	if cidr == "" {
		missing = append(missing, "PADDOCK_GKE_AUTHORIZED_CIDR (this runner's egress CIDR; the control plane admits only it)")
	}
	if os.Getenv("GOOGLE_APPLICATION_CREDENTIALS") == "" {
		if home, _ := os.UserHomeDir(); home == "" || !exists(filepath.Join(home, ".config", "gcloud", "application_default_credentials.json")) {
			missing = append(missing, "Google credentials (GOOGLE_APPLICATION_CREDENTIALS or `gcloud auth application-default login`)")
		}
	}
	for _, tool := range []string{"kubectl", "gke-gcloud-auth-plugin"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool+" on PATH")
		}
	}
	root := os.Getenv("PADDOCK_PULUMI_ROOT")
	if _, err := exec.LookPath("pulumi"); err != nil && root == "" {
		missing = append(missing, "the pulumi CLI on PATH, or PADDOCK_PULUMI_ROOT")
	}
	if len(missing) > 0 {
		t.Fatalf("the real-GKE test needs:\n  %s", strings.Join(missing, "\n  "))
	}

	ctx := context.Background()
	id := strings.ToLower(random.UniqueId())
	name := "pdk-spec-" + id
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "platform.hcl"), []byte(fmt.Sprintf(e2eSpec, name, project_, location, cidr)), 0o600); err != nil {
		t.Fatal(err)
	}
	var report bytes.Buffer
	p, err := specload.Load(dir, specload.Options{}, &report)
	if err != nil {
		t.Fatalf("%v\n%s", err, report.String())
	}
	if err := targets.Resolve(ctx, p); err != nil {
		t.Fatal(err)
	}

	state := t.TempDir()
	opts := []auto.LocalWorkspaceOption{
		auto.Project(workspace.Project{Name: tokens.PackageName("paddock-gke-spec-e2e"), Runtime: workspace.NewProjectRuntimeInfo("go", nil)}),
		auto.EnvVars(map[string]string{
			"PULUMI_BACKEND_URL":       "file://" + state,
			"PULUMI_CONFIG_PASSPHRASE": "paddock-gke-spec-e2e-" + id,
			"PULUMI_SKIP_UPDATE_CHECK": "true",
		}),
		auto.SecretsProvider("passphrase"),
	}
	if root != "" {
		cmd, err := auto.NewPulumiCommand(&auto.PulumiCommandOptions{Root: root, SkipVersionCheck: true})
		if err != nil {
			t.Fatalf("pulumi CLI in %s: %v", root, err)
		}
		opts = append(opts, auto.Pulumi(cmd))
	}
	stack, err := auto.UpsertStackInlineSource(ctx, "e2e-"+id, "paddock-gke-spec-e2e", program.New(p), opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if os.Getenv("PADDOCK_GKE_KEEP") == "1" {
			t.Logf("PADDOCK_GKE_KEEP=1: stack e2e-%s left up (state in %s)", id, state)
			return
		}
		if _, err := stack.Destroy(ctx, optdestroy.ProgressStreams(os.Stdout)); err != nil {
			t.Errorf("DESTROY FAILED, clean up by hand: cluster %s in %s/%s, topic and log sink %s-audit, service accounts %s-*: %v",
				name, project_, location, name, name, err)
		}
	}()
	up, err := stack.Up(ctx, optup.ProgressStreams(os.Stdout))
	if err != nil {
		t.Fatalf("pulumi up: %v", err)
	}
	if _, err := stack.Preview(ctx, optpreview.ExpectNoChanges()); err != nil {
		t.Errorf("preview after up is not empty (perpetual diff): %v", err)
	}
	out := up.Outputs["kubeconfig"]
	kubeconfig, _ := out.Value.(string)
	if !out.Secret || kubeconfig == "" {
		t.Fatalf("kubeconfig output: secret %v, %d bytes", out.Secret, len(kubeconfig))
	}
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	ns := p.Tenants[0].Namespace
	kube := k8s.NewKubectlOptions("", kc, ns)

	// The orchestrator's KSA names the Google service account the GCP layer
	// created, and nothing annotates the agent's.
	ids, _ := up.Outputs["identities"].Value.(map[string]any)
	gsa, _ := ids[ns+"/agent-orchestrator"].(string)
	if gsa == "" || !strings.HasSuffix(gsa, "@"+project_+".iam.gserviceaccount.com") {
		t.Errorf("identities output %v", ids)
	}
	ann, err := k8s.RunKubectlAndGetOutputE(t, kube, "get", "serviceaccount", "agent-orchestrator", "-o", "jsonpath={.metadata.annotations.iam\\.gke\\.io/gcp-service-account}")
	if err != nil || ann != gsa {
		t.Errorf("agent-orchestrator annotation %q (%v), want %q", ann, err, gsa)
	}
	if ann, _ := k8s.RunKubectlAndGetOutputE(t, kube, "get", "serviceaccount", "agent-runtime", "-o", "jsonpath={.metadata.annotations}"); strings.Contains(ann, gcpinputs.KSAAnnotation) {
		t.Errorf("agent-runtime annotated: %s", ann)
	}
	// GKE's own gvisor RuntimeClass serves the template; the warm pool's
	// sandbox runs on a gVisor node (up waited for the pool to be ready).
	if h, err := k8s.RunKubectlAndGetOutputE(t, kube, "get", "runtimeclass", "gvisor", "-o", "jsonpath={.handler}"); err != nil || h != "gvisor" {
		t.Errorf("RuntimeClass gvisor handler %q (%v)", h, err)
	}
	retry.DoWithRetry(t, "a warm sandbox pod on a gVisor node", 30, 10*time.Second, func() (string, error) {
		node, err := k8s.RunKubectlAndGetOutputE(t, kube, "get", "pods", "-o", "jsonpath={.items[0].spec.nodeName}")
		if err != nil || node == "" {
			return "", fmt.Errorf("no sandbox pod scheduled yet: %v", err)
		}
		label, err := k8s.RunKubectlAndGetOutputE(t, k8s.NewKubectlOptions("", kc, ""), "get", "node", node, "-o", "jsonpath={.metadata.labels.sandbox\\.gke\\.io/runtime}")
		if err != nil || label != "gvisor" {
			return "", fmt.Errorf("pod on node %s with sandbox label %q", node, label)
		}
		return node, nil
	})
	// Default deny holds: no NetworkPolicy of the tenant reaches the metadata
	// server (the orchestrator's identity needs no hole in the sandboxes).
	pols, _ := k8s.RunKubectlAndGetOutputE(t, kube, "get", "networkpolicies", "-o", "name")
	if !strings.Contains(pols, "default-deny") || strings.Contains(pols, "allow-gke-metadata-server") {
		t.Errorf("network policies of %s: %s", ns, pols)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
