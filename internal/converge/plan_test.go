package converge

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"

	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/targets"
)

// A runner whose kubeconfig lies at another path reaches the same cluster
// when the server and CA the last up recorded agree: the fast path stays
// open. Another cluster, no record, or another context closes it.
func TestProviderChangedByClusterNotPath(t *testing.T) {
	dir := t.TempDir()
	write := func(name, server, ca string) string {
		path := filepath.Join(dir, name)
		kc := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + server +
			"\n    certificate-authority-data: " + base64.StdEncoding.EncodeToString([]byte(ca)) +
			"\ncontexts:\n- name: x\n  context:\n    cluster: c\ncurrent-context: x\n"
		if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	runnerA := write("a", "https://127.0.0.1:6443", "ca-1")
	runnerB := write("b", "https://127.0.0.1:6443", "ca-1")
	elsewhere := write("c", "https://127.0.0.1:6443", "ca-2")
	recorded, err := targets.KubeconfigCluster(runnerA, "")
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]any{targets.ClusterOutput: map[string]any{"server": recorded.Server, "caSHA256": recorded.CASHA256}}
	provider := &StateResource{Inputs: map[string]any{"kubeconfig": runnerA, "enableServerSideApply": "true", "version": "4.0.0"}}
	platform := func(kubeconfig, context string) *model.Platform {
		return &model.Platform{Target: model.Target{Kind: model.TargetKubeconfig, Kubeconfig: kubeconfig, Context: context}}
	}
	ctx := context.Background()
	if why := providerChanged(ctx, provider, platform(runnerA, ""), nil, nil); why != "" {
		t.Errorf("same path: %s", why)
	}
	if why := providerChanged(ctx, provider, platform(runnerB, ""), outputs, nil); why != "" {
		t.Errorf("another path to the same cluster: %s", why)
	}
	for name, c := range map[string]struct {
		p       *model.Platform
		outputs map[string]any
		want    string
	}{
		"another cluster": {platform(elsewhere, ""), outputs, "another cluster than the last up"},
		"no record":       {platform(runnerB, ""), nil, "records no cluster identity"},
		"another context": {platform(runnerB, "x"), outputs, "settings (kubeconfig, context) changed"},
		"missing file":    {platform(filepath.Join(dir, "gone"), ""), outputs, "cannot be told"},
	} {
		if why := providerChanged(ctx, provider, c.p, c.outputs, nil); !strings.Contains(why, c.want) {
			t.Errorf("%s: %q, want it to say %q", name, why, c.want)
		}
	}
}

// A kubeconfig the state keeps as a secret is read decrypted (the GKE
// layer's provider records the cluster's: the engine's
// TestStackClusterPlanOnGKE).
func TestRecordedKubeconfigDecrypts(t *testing.T) {
	ctx := context.Background()
	const kubeconfig = "apiVersion: v1\nkind: Config\nclusters:\n- name: gke\n  cluster:\n    server: https://127.0.0.1:1\n"
	crypter := config.NewSymmetricCrypter(bytes.Repeat([]byte{7}, config.SymmetricCrypterKeyBytes))
	ct, err := crypter.EncryptValue(ctx, strconv.Quote(kubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	prov := &StateResource{Inputs: map[string]any{"kubeconfig": map[string]any{sig.Key: sig.Secret, "ciphertext": ct}}}
	if kc, err := recordedKubeconfig(ctx, prov, func() (config.Crypter, error) { return crypter, nil }); err != nil || kc != kubeconfig {
		t.Errorf("secret kubeconfig: %v", err)
	}
}
