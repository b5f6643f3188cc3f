package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"

	"github.com/paddock-platform/paddock/internal/converge"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/specload"
)

// --- when the fast path must leave it to the engine ---

// fakeStack writes a file-backend state for p as `up` would leave it, and
// returns an engine on that backend and the state file.
func fakeStack(t testing.TB, p *model.Platform, edit func(res []map[string]any) []map[string]any) (*Engine, string) {
	t.Helper()
	root := t.TempDir()
	t.Setenv("PULUMI_CONFIG_PASSPHRASE", "test-passphrase")
	e := New(Options{Backend: "file://" + root, Stack: "s"})
	prov := "urn:pulumi:s::paddock::pulumi:providers:kubernetes::kubernetes"
	res := []map[string]any{
		{"urn": "urn:pulumi:s::paddock::pulumi:pulumi:Stack::paddock-s", "type": "pulumi:pulumi:Stack", "outputs": map[string]any{"platform": p.Name}},
		{"urn": prov, "custom": true, "id": "id-1", "type": "pulumi:providers:kubernetes",
			"inputs": map[string]any{"__internal": map[string]any{}, "kubeconfig": p.Target.Kubeconfig, "enableServerSideApply": true, "version": "4.25.0"}},
	}
	objs, err := manifests.Build(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range objs.Groups() {
		for _, u := range g.Objects {
			typ := converge.TypeToken(u.GetAPIVersion(), u.GetKind())
			in := converge.NormalizeInputs(u.DeepCopy().Object)
			res = append(res, map[string]any{
				"urn": "urn:pulumi:s::paddock::paddock:index:Platform$" + typ + "::" + converge.ObjectKey(u), "custom": true, "type": typ,
				"id": converge.ObjectKey(u), "inputs": in, "outputs": in, "provider": prov + "::id-1",
			})
		}
	}
	if edit != nil {
		res = edit(res)
	}
	cp := map[string]any{"version": 3, "checkpoint": map[string]any{"stack": "s", "latest": map[string]any{
		"manifest":  map[string]any{},
		"resources": res,
	}}}
	b, _ := json.Marshal(cp)
	dir := filepath.Join(root, ".pulumi", "stacks", "paddock")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "s.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return e, file
}

func localPlatform(t testing.TB) *model.Platform {
	t.Helper()
	var report bytes.Buffer
	p, err := specload.Load("../../examples/local", specload.Options{}, &report)
	if err != nil {
		t.Fatalf("%v\n%s", err, report.String())
	}
	p.Target.Kubeconfig = "/tmp/kubeconfig-of-the-test"
	return p
}

func findKind(res []map[string]any, kind string) map[string]any {
	for _, r := range res {
		if strings.HasSuffix(r["type"].(string), ":"+kind) {
			return r
		}
	}
	return nil
}

func TestFastPlanAcceptsTheStateUpLeft(t *testing.T) {
	p := localPlatform(t)
	e, _ := fakeStack(t, p, nil)
	objs, outputs, reason := e.fastPlan(context.Background(), p, "s")
	if reason != "" {
		t.Fatalf("fell back: %s", reason)
	}
	if len(objs) < 30 || outputs["platform"] != p.Name {
		t.Fatalf("%d objects, outputs %v", len(objs), outputs)
	}
	for _, o := range objs {
		if o.State == nil {
			t.Fatalf("%s has no state", converge.ObjectKey(o.Desired))
		}
	}
}

func TestFastPlanFallsBack(t *testing.T) {
	p := localPlatform(t)
	type edit func(res []map[string]any) []map[string]any
	for _, tc := range []struct {
		name, want string
		edit       edit
		platform   func(p *model.Platform)
		setup      func(t *testing.T, e *Engine, file string)
	}{
		{name: "spec changed", want: "the spec changed NetworkPolicy", edit: func(res []map[string]any) []map[string]any {
			r := findKind(res, "NetworkPolicy")
			r["inputs"].(map[string]any)["metadata"].(map[string]any)["labels"].(map[string]any)["extra"] = "x"
			return res
		}},
		{name: "spec adds an object", want: "the spec adds", edit: func(res []map[string]any) []map[string]any {
			r := findKind(res, "NetworkPolicy")
			out := res[:0]
			for _, x := range res {
				if x["urn"] != r["urn"] {
					out = append(out, x)
				}
			}
			return out
		}},
		{name: "spec drops an object", want: "the spec no longer declares ConfigMap agents-team-a/old", edit: func(res []map[string]any) []map[string]any {
			r := findKind(res, "NetworkPolicy")
			return append(res, map[string]any{"urn": "urn:pulumi:s::paddock::kubernetes:core/v1:ConfigMap::agents-team-a/old",
				"type": "kubernetes:core/v1:ConfigMap", "custom": true, "inputs": map[string]any{}, "provider": r["provider"]})
		}},
		{name: "pending operations", want: "never finished", edit: nil, setup: func(t *testing.T, e *Engine, file string) {
			rewrite(t, file, func(cp map[string]any) {
				cp["checkpoint"].(map[string]any)["latest"].(map[string]any)["pending_operations"] = []any{map[string]any{"type": "creating"}}
			})
		}},
		{name: "locked", want: "locked", setup: func(t *testing.T, e *Engine, file string) {
			root := strings.TrimSuffix(file, filepath.Join(".pulumi", "stacks", "paddock", "s.json"))
			dir := filepath.Join(root, ".pulumi", "locks", "organization", "paddock", "s")
			os.MkdirAll(dir, 0o700)
			os.WriteFile(filepath.Join(dir, "l.json"), []byte(`{"pid":1,"hostname":"elsewhere","timestamp":"2026-12-01T00:00:00Z"}`), 0o600)
		}},
		{name: "provider settings", want: "provider's settings", edit: func(res []map[string]any) []map[string]any {
			findKind(res, "kubernetes")["inputs"].(map[string]any)["context"] = "other"
			return res
		}},
		{name: "GCP resources", want: "GCP", edit: func(res []map[string]any) []map[string]any {
			return append(res, map[string]any{"urn": "urn:pulumi:s::paddock::gcp:container/cluster:Cluster::c", "type": "gcp:container/cluster:Cluster", "custom": true})
		}},
		{name: "secret does not decrypt", want: "does not decrypt", edit: func(res []map[string]any) []map[string]any {
			findKind(res, "Namespace")["inputs"].(map[string]any)["metadata"].(map[string]any)["name"] = map[string]any{sig.Key: sig.Secret, "ciphertext": "v1:AAAA:BBBB"}
			return res
		}, setup: func(t *testing.T, e *Engine, file string) {
			rewrite(t, file, func(cp map[string]any) {
				c := config.NewSymmetricCrypterFromPassphrase("another passphrase", []byte("salt-salt-salt-s"))
				check, _ := c.EncryptValue(context.Background(), "pulumi")
				cp["checkpoint"].(map[string]any)["latest"].(map[string]any)["secrets_providers"] = map[string]any{
					"type": "passphrase", "state": map[string]any{"salt": "v1:" + base64Std([]byte("salt-salt-salt-s")) + ":" + check}}
			})
		}},
		{name: "GKE target", want: "GKE", platform: func(p *model.Platform) { p.Target.Kind = model.TargetGKE }},
		{name: "no kubeconfig", want: "no kubeconfig", platform: func(p *model.Platform) { p.Target.Kubeconfig = "" }},
		{name: "no stack", want: "does not exist", setup: func(t *testing.T, e *Engine, file string) { os.Remove(file) }},
		// s3:// is read (backend_s3_test.go, against a server on loopback).
		{name: "gs bucket", want: "on gs:// it falls back to Pulumi's refresh", setup: func(t *testing.T, e *Engine, file string) {
			e.opts.Backend = "gs://bucket/state"
		}},
		{name: "azblob container", want: "on azblob:// it falls back to Pulumi's refresh", setup: func(t *testing.T, e *Engine, file string) {
			e.opts.Backend = "azblob://container"
		}},
		{name: "Pulumi Cloud", want: "only the engine reads", setup: func(t *testing.T, e *Engine, file string) {
			e.opts.Backend = "https://api.pulumi.com"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pp := *p
			e, file := fakeStack(t, &pp, tc.edit)
			if tc.platform != nil {
				tc.platform(&pp)
			}
			if tc.setup != nil {
				tc.setup(t, e, file)
			}
			_, _, reason := e.fastPlan(context.Background(), &pp, "s")
			if !strings.Contains(reason, tc.want) {
				t.Fatalf("reason %q, want it to say %q", reason, tc.want)
			}
		})
	}
}

func rewrite(t *testing.T, file string, edit func(cp map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var cp map[string]any
	if err := json.Unmarshal(b, &cp); err != nil {
		t.Fatal(err)
	}
	edit(cp)
	b, _ = json.Marshal(cp)
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func base64Std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// BenchmarkFastPlan is the fast path's work before the cluster: read and
// decode the state, build the spec's objects and compare them with the
// recorded inputs (examples/local, one tenant).
func BenchmarkFastPlan(b *testing.B) {
	p := localPlatform(b)
	e, _ := fakeStack(b, p, nil)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, reason := e.fastPlan(context.Background(), p, "s"); reason != "" {
			b.Fatal(reason)
		}
	}
}

// gkeKubeconfig is a kubeconfig as the GKE component records it for its
// kubernetes provider: the cluster's endpoint, exec auth, no credential.
const gkeKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: gke
  cluster:
    server: https://127.0.0.1:1
    insecure-skip-tls-verify: true
contexts:
- name: gke
  context: {cluster: gke, user: gke}
current-context: gke
users:
- name: gke
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: gke-gcloud-auth-plugin
      provideClusterInfo: true
`

// gkeStack is a state shaped as a GKE stack's (a synthetic one: no GKE
// cluster is reachable here): GCP resources, the kubernetes provider the
// GCP component makes from the cluster's kubeconfig, the spec's objects, and
// an object only the cloud layer registers.
func gkeStack(t *testing.T, kubeconfig any) (*Engine, *model.Platform) {
	t.Helper()
	p := localPlatform(t)
	p.Target = model.Target{Kind: model.TargetGKE}
	e, _ := fakeStack(t, p, func(res []map[string]any) []map[string]any {
		// The GCP layer's provider: its URN runs through paddock:gcp:Platform.
		prov := "urn:pulumi:s::paddock::paddock:gcp:Platform$pulumi:providers:kubernetes::demo-gke::id-1"
		for _, r := range res {
			if r["type"] == "pulumi:providers:kubernetes" {
				r["urn"] = strings.TrimSuffix(prov, "::id-1")
				r["inputs"] = map[string]any{"kubeconfig": kubeconfig, "enableServerSideApply": "true", "version": "4.25.0"}
			}
			if r["provider"] != nil {
				r["provider"] = prov
			}
		}
		return append(res,
			map[string]any{"urn": "urn:pulumi:s::paddock::pulumi:providers:gcp::gcp", "custom": true, "id": "gcp-1", "type": "pulumi:providers:gcp", "inputs": map[string]any{"project": "p"}},
			map[string]any{"urn": "urn:pulumi:s::paddock::gcp:container/cluster:Cluster::agents", "custom": true, "id": "c", "type": "gcp:container/cluster:Cluster", "inputs": map[string]any{"name": "agents"}},
			map[string]any{"urn": "urn:pulumi:s::paddock::paddock:gcp:Platform$kubernetes:apps/v1:DaemonSet::kube-system/kata-deploy", "custom": true, "id": "kube-system/kata-deploy",
				"type": "kubernetes:apps/v1:DaemonSet", "inputs": map[string]any{"kind": "DaemonSet"}, "provider": prov},
		)
	})
	return e, p
}

// On GKE the fast path still refuses (the cloud resources need Pulumi's
// refresh), and after the refresh the spec's objects are compared whole on
// the cluster the stack's provider reaches.
func TestStackClusterPlanOnGKE(t *testing.T) {
	ctx := context.Background()
	e, p := gkeStack(t, gkeKubeconfig)
	if _, _, reason := e.fastPlan(ctx, p, "s"); !strings.Contains(reason, "GKE") {
		t.Fatalf("the fast path does not refuse GKE: %q", reason)
	}
	plan, reason := e.stackClusterPlan(ctx, p, "s")
	if reason != "" {
		t.Fatalf("the GKE plan fell back: %s", reason)
	}
	if plan.Kubeconfig != gkeKubeconfig {
		t.Errorf("kubeconfig %q, want the provider's", plan.Kubeconfig)
	}
	if len(plan.Objects) < 30 {
		t.Fatalf("%d objects paired", len(plan.Objects))
	}
	for _, o := range plan.Objects {
		if o.State == nil {
			t.Errorf("%s has no state", converge.ObjectKey(o.Desired))
		}
		if o.Desired.GetKind() == "DaemonSet" {
			t.Errorf("the cloud layer's %s is compared; only the engine compares it", converge.ObjectKey(o.Desired))
		}
	}
	c, err := converge.ClientsFromKubeconfig(plan.Kubeconfig)
	if err != nil || c == nil {
		t.Fatalf("clients from the recorded kubeconfig: %v", err)
	}

	// A kubeconfig the state keeps as a secret is read decrypted: converge's
	// TestRecordedKubeconfigDecrypts.

	// No kubeconfig recorded yet, a spec changed since the last up: the
	// engine's word alone, and why.
	e3, p3 := gkeStack(t, "")
	if _, reason := e3.stackClusterPlan(ctx, p3, "s"); !strings.Contains(reason, "no kubeconfig") {
		t.Errorf("no kubeconfig: reason %q", reason)
	}
	p.Tenants[0].WarmPools[0].Replicas++
	if _, reason := e.stackClusterPlan(ctx, p, "s"); !strings.Contains(reason, "the spec changed") {
		t.Errorf("changed spec: reason %q", reason)
	}

	// A kubeconfig that does not load is refused without quoting it.
	if _, err := converge.ClientsFromKubeconfig("not: [a kubeconfig"); err == nil || strings.Contains(err.Error(), "kubeconfig\"") {
		t.Errorf("a broken kubeconfig: %v", err)
	}
}
