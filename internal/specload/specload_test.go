package specload

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/model"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func TestLoadSecrets(t *testing.T) {
	root := repoRoot(t)
	secret := "https://otel.example.com/ingest/7d1e0b3c8f9c2a77"
	var out bytes.Buffer
	p, err := Load(filepath.Join(root, "examples", "team-platform"), Options{
		Vars:      map[string]string{"platform_name": "team-a", "telemetry_url": secret, "image": "x"},
		Sensitive: []string{secret},
	}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !p.IsSensitive(secret) {
		t.Fatal("a value from a secret is not marked sensitive in the model")
	}
	if strings.Contains(out.String(), secret) {
		t.Fatalf("the report shows the secret:\n%s", out.String())
	}
}

func TestRetarget(t *testing.T) {
	p := &model.Platform{Target: model.Target{Kind: model.TargetLocal}}
	if err := retarget(p, &Target{Context: "x"}); err == nil {
		t.Fatal("a local target moved to a context without a kubeconfig")
	}
	if err := retarget(p, &Target{Kubeconfig: "/k", Context: "c"}); err != nil || p.Target.Kind != model.TargetKubeconfig || p.Target.Kubeconfig != "/k" || p.Target.Context != "c" {
		t.Fatalf("retarget: %v %+v", err, p.Target)
	}
	g := &model.Platform{Target: model.Target{Kind: model.TargetGKE}}
	if err := retarget(g, &Target{Kubeconfig: "/k"}); err == nil {
		t.Fatal("a gke target was retargeted")
	}
}
