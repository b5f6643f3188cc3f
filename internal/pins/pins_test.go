package pins

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// requires returns module -> version of the go.mod at path (replacements applied).
func requires(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(path, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range f.Require {
		out[r.Mod.Path] = r.Mod.Version
	}
	for _, r := range f.Replace {
		if r.New.Version != "" {
			out[r.Old.Path] = r.New.Version
		}
	}
	return out
}

// Every tools module and the main module must build exactly the versions
// versions.env pins: that file is the one place a version changes.
func TestModulesAgreeWithVersionsEnv(t *testing.T) {
	for _, tc := range []struct {
		gomod, module, want string
	}{
		{"../../tools/pulumi/go.mod", "github.com/pulumi/pulumi/pkg/v3", Pulumi},
		{"../../tools/pulumi/go.mod", "github.com/pulumi/pulumi/sdk/v3", Pulumi},
		{"../../tools/pulumi-language-go/go.mod", "github.com/pulumi/pulumi/sdk/v3", Get("PULUMI_LANGUAGE_GO_VERSION")},
		{"../../tools/pulumi-kubernetes/go.mod", "github.com/pulumi/pulumi-kubernetes/provider/v4", Get("PULUMI_KUBERNETES_PROVIDER_MODULE")},
		{"../../tools/kubernetes/go.mod", "k8s.io/kubernetes", Kubernetes},
		{"../../tools/kubernetes/go.mod", "k8s.io/api", Get("KUBERNETES_STAGING_VERSION")},
		{"../../tools/kubernetes/go.mod", "k8s.io/apiserver", Get("KUBERNETES_STAGING_VERSION")},
		{"../../tools/etcd/go.mod", "go.etcd.io/etcd/server/v3", Etcd},
		{"../../tools/kwok/go.mod", "sigs.k8s.io/kwok", Kwok},
		{"../../tools/agent-sandbox/go.mod", "sigs.k8s.io/agent-sandbox", AgentSandbox},
		{"../../tools/agent-sandbox-previous/go.mod", "sigs.k8s.io/agent-sandbox", AgentSandboxPrevious},
		{"../../tools/cilium/go.mod", "github.com/cilium/cilium", Cilium},
		{"../../tools/containerd/go.mod", "github.com/containerd/containerd/v2", Get("CONTAINERD_VERSION")},
		{"../../tools/gvisor/go.mod", "gvisor.dev/gvisor", Get("GVISOR_VERSION")},
		{"../../tools/coredns/go.mod", "github.com/coredns/coredns", Get("COREDNS_VERSION")},
		{"../../tools/seaweedfs/go.mod", "github.com/seaweedfs/seaweedfs", SeaweedFS},
		{"../../tools/prometheus/go.mod", "github.com/prometheus/prometheus", Prometheus},
		{"../../tools/kube-state-metrics/go.mod", "k8s.io/kube-state-metrics/v2", KubeStateMetrics},
		{"../../go.mod", "sigs.k8s.io/agent-sandbox", AgentSandbox},
		{"../../go.mod", "github.com/pulumi/pulumi/sdk/v3", Pulumi},
		{"../../go.mod", "github.com/pulumi/pulumi-kubernetes/sdk/v4", "v" + PulumiKubernetes},
		{"../../go.mod", "github.com/pulumi/pulumi-gcp/sdk/v7", "v" + PulumiGCP},
	} {
		got := requires(t, filepath.FromSlash(tc.gomod))[tc.module]
		if got != tc.want {
			t.Errorf("%s requires %s %q; internal/pins/versions.env says %q", tc.gomod, tc.module, got, tc.want)
		}
	}
}

// Every staging module of k8s.io/kubernetes is replaced with the pinned staging version.
func TestKubernetesStagingReplacesArePinned(t *testing.T) {
	data, err := os.ReadFile("../../tools/kubernetes/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Replace) < 25 {
		t.Fatalf("only %d replace lines; k8s.io/kubernetes has ~30 staging modules", len(f.Replace))
	}
	for _, r := range f.Replace {
		if !strings.HasPrefix(r.Old.Path, "k8s.io/") || r.New.Version != Get("KUBERNETES_STAGING_VERSION") {
			t.Errorf("replace %s => %s %s: want %s", r.Old.Path, r.New.Path, r.New.Version, Get("KUBERNETES_STAGING_VERSION"))
		}
	}
}

func TestParseIgnoresCommentsAndBlankLines(t *testing.T) {
	m := parse("# c\n\nA=1\n B = two \nbroken\n")
	if len(m) != 2 || m["A"] != "1" || m["B"] != "two" {
		t.Fatalf("parse = %v", m)
	}
	for _, k := range []string{"PULUMI_VERSION", "KUBERNETES_VERSION", "AGENT_SANDBOX_VERSION", "KWOK_VERSION", "ETCD_VERSION"} {
		if Get(k) == "" {
			t.Errorf("versions.env has no %s", k)
		}
	}
}

// kata-deploy is pinned by tag and digest, in versions.env only.
func TestKataDeployPinned(t *testing.T) {
	if KataDeploy == "" || KataDeployImage == "" {
		t.Fatalf("versions.env lacks KATA_DEPLOY_VERSION or KATA_DEPLOY_IMAGE")
	}
	d, ok := strings.CutPrefix(KataDeployDigest, "sha256:")
	if !ok || len(d) != 64 || strings.Trim(d, "0123456789abcdef") != "" {
		t.Errorf("KATA_DEPLOY_DIGEST %q is not sha256:<64 hex digits>", KataDeployDigest)
	}
	if strings.ContainsAny(KataDeployImage, ":@") {
		t.Errorf("KATA_DEPLOY_IMAGE %q must be the repository only (the tag and digest have their own lines)", KataDeployImage)
	}
}

// The engine reads s3:// backends through gocloud.dev's s3blob, which is how
// the Pulumi CLI opens them: the same version, so every URL parameter means
// the same to both.
func TestEngineOpensBucketsWithPulumisGoCloud(t *testing.T) {
	want := requires(t, filepath.FromSlash("../../tools/pulumi/go.mod"))["gocloud.dev"]
	if want == "" {
		t.Fatal("tools/pulumi/go.mod does not require gocloud.dev")
	}
	if got := requires(t, filepath.FromSlash("../../go.mod"))["gocloud.dev"]; got != want {
		t.Errorf("go.mod requires gocloud.dev %q; the pinned Pulumi CLI is built with %q (tools/pulumi/go.mod)", got, want)
	}
}
