package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/specload"
	"github.com/paddock-platform/paddock/internal/targets"
)

// The provider's canonical quantities are the same input; a changed label,
// or a value that stopped being secret, is not.
func TestInputsEqual(t *testing.T) {
	if !inputsEqual(map[string]any{"hard": map[string]any{"cpu": "1000m"}}, map[string]any{"hard": map[string]any{"cpu": "1"}}) {
		t.Error("the provider's canonical quantity taken for a spec change")
	}
	if inputsEqual(map[string]any{"labels": map[string]any{"v": "1.0"}}, map[string]any{"labels": map[string]any{"v": "1"}}) {
		t.Error("a changed label taken for the same input")
	}
	if inputsEqual(map[string]any{"a": secret{"x"}}, map[string]any{"a": "x"}) {
		t.Error("a value that stopped being secret taken for the same input")
	}
}

func TestDecryptSecrets(t *testing.T) {
	ctx := context.Background()
	c := config.NewSymmetricCrypter(bytes.Repeat([]byte{7}, config.SymmetricCrypterKeyBytes))
	ct, err := c.EncryptValue(ctx, `"hunter2"`)
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]any{"a": []any{map[string]any{sig.Key: sig.Secret, "ciphertext": ct}}, "b": "plain"}
	calls := 0
	out, err := decryptSecrets(ctx, in, func() (config.Crypter, error) { calls++; return c, nil })
	if err != nil {
		t.Fatal(err)
	}
	got := out.(map[string]any)["a"].([]any)[0]
	if got != (secret{"hunter2"}) || calls != 1 {
		t.Fatalf("decrypted %#v with %d key derivations", got, calls)
	}
	// Nothing secret: the slow key derivation never runs.
	if _, err := decryptSecrets(ctx, map[string]any{"b": "plain"}, func() (config.Crypter, error) { calls++; return c, nil }); err != nil || calls != 1 {
		t.Fatalf("key derived for a state without secrets (%v)", err)
	}
	other := config.NewSymmetricCrypter(bytes.Repeat([]byte{8}, config.SymmetricCrypterKeyBytes))
	if _, err := decryptSecrets(ctx, in, func() (config.Crypter, error) { return other, nil }); err == nil {
		t.Fatal("a secret decrypted with the wrong key")
	}
}

func TestPassphraseCrypter(t *testing.T) {
	ctx := context.Background()
	salt := []byte("0123456789abcdef")
	check, _ := config.NewSymmetricCrypterFromPassphrase("right", salt).EncryptValue(ctx, "pulumi")
	state, _ := json.Marshal(map[string]string{"salt": "v1:" + base64Std(salt) + ":" + check})
	if _, err := passphraseCrypter(ctx, "passphrase", state, "right"); err != nil {
		t.Fatalf("the right passphrase: %v", err)
	}
	if _, err := passphraseCrypter(ctx, "passphrase", state, "wrong"); err == nil {
		t.Fatal("a wrong passphrase opened the secrets")
	}
	if _, err := passphraseCrypter(ctx, "awskms", state, "right"); err == nil {
		t.Fatal("a KMS provider taken for a passphrase")
	}
}

// --- the live comparison, on a fake cluster ---

var (
	nsGVR      = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	npGVR      = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}
	cmGVR      = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	testLabels = map[string]any{model.PlatformLabel: "demo"}
)

func obj(apiVersion, kind, ns, name string, extra map[string]any) *unstructured.Unstructured {
	md := map[string]any{"name": name, "labels": testLabels}
	if ns != "" {
		md["namespace"] = ns
	}
	o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md}
	for k, v := range extra {
		o[k] = v
	}
	return &unstructured.Unstructured{Object: o}
}

func fastObj(u *unstructured.Unstructured) *fastObject {
	return &fastObject{desired: u, gvr: gvrOf(u), state: &stateResource{
		URN:  "urn:pulumi:s::paddock::" + typeToken(u.GetAPIVersion(), u.GetKind()) + "::" + objectKey(u),
		Type: typeToken(u.GetAPIVersion(), u.GetKind()), Inputs: u.Object,
		Outputs: map[string]any{"__fieldManager": "pulumi-kubernetes-abc"},
	}}
}

// fakeServer is a dynamic fake whose updates behave as the API server's: a
// dry-run persists nothing and returns the object as it would be stored
// (here with a defaulted field), a real update stores the body.
type fakeServer struct {
	dyn     *dynamicfake.FakeDynamicClient
	dryRuns []string
	updates []string
}

func newFakeServer(objects ...runtime.Object) *fakeServer {
	f := &fakeServer{dyn: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{nsGVR: "NamespaceList", npGVR: "NetworkPolicyList", cmGVR: "ConfigMapList"}, objects...)}
	f.dyn.PrependReactor("update", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ua := a.(k8stesting.UpdateActionImpl)
		body := ua.GetObject().(*unstructured.Unstructured).DeepCopy()
		if body.GetKind() == "NetworkPolicy" {
			// A server default the desired object does not spell.
			_ = unstructured.SetNestedStringSlice(body.Object, []string{"Ingress"}, "spec", "policyTypes")
		}
		if len(ua.GetUpdateOptions().DryRun) > 0 {
			f.dryRuns = append(f.dryRuns, body.GetName())
			return true, body, nil
		}
		f.updates = append(f.updates, body.GetName())
		return true, body, f.dyn.Tracker().Update(ua.GetResource(), body, ua.GetNamespace())
	})
	return f
}

// testEngine is an engine whose caches live in a throwaway PADDOCK_HOME.
func testEngine(t *testing.T) *Engine {
	t.Setenv("PADDOCK_HOME", t.TempDir())
	return New(Options{Backend: "file://" + t.TempDir(), Stack: "s", Out: io.Discard})
}

func TestCompareLive(t *testing.T) {
	ns := obj("v1", "Namespace", "", "agents-a", nil)
	ns.SetLabels(map[string]string{model.PlatformLabel: "demo", "pod-security.kubernetes.io/enforce": "restricted"})
	deny := obj("networking.k8s.io/v1", "NetworkPolicy", "agents-a", "default-deny", map[string]any{"spec": map[string]any{"podSelector": map[string]any{}}})
	open := obj("networking.k8s.io/v1", "NetworkPolicy", "agents-a", "dns", map[string]any{"spec": map[string]any{"podSelector": map[string]any{}}})
	same := obj("v1", "ConfigMap", "agents-a", "same", map[string]any{"data": map[string]any{"k": "v"}})
	// An object the spec does not label is found by a GET.
	unlabelled := obj("v1", "ConfigMap", "agents-a", "unlabelled", map[string]any{"data": map[string]any{"k": "v"}})
	unlabelled.SetLabels(nil)
	going := obj("v1", "ConfigMap", "agents-a", "going", map[string]any{"data": map[string]any{"k": "v"}})

	liveNS := ns.DeepCopy()
	liveNS.SetLabels(map[string]string{model.PlatformLabel: "demo"}) // the PSS label removed
	liveGoing := going.DeepCopy()
	now := metav1.NewTime(time.Now())
	liveGoing.SetDeletionTimestamp(&now)
	liveGoing.SetFinalizers([]string{"example.com/hold"})
	// Stored with the server's default, and an ingress rule nobody declared.
	liveOpen := open.DeepCopy()
	_ = unstructured.SetNestedStringSlice(liveOpen.Object, []string{"Ingress"}, "spec", "policyTypes")
	_ = unstructured.SetNestedSlice(liveOpen.Object, []any{map[string]any{}}, "spec", "ingress")

	srv := newFakeServer(liveNS, liveOpen, same.DeepCopy(), unlabelled.DeepCopy(), liveGoing)
	e := testEngine(t)
	objs := []*fastObject{fastObj(ns), fastObj(deny), fastObj(open), fastObj(same), fastObj(unlabelled), fastObj(going)}
	forms := e.loadStoredForms("s", "v1.35.4", false, true)
	res, err := compareLive(context.Background(), srv.dyn, "demo", objs, forms, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Lists != 3 {
		t.Errorf("%d lists, want one per kind (3)", res.Lists)
	}
	// default-deny (gone), unlabelled (found by GET); going is listed.
	if res.Gets != 2 {
		t.Errorf("%d gets, want 2 (only objects missing from their list)", res.Gets)
	}
	if res.DryRuns != 4 {
		t.Errorf("%d dry-runs (%v), want one per live object (4) on an empty cache", res.DryRuns, srv.dryRuns)
	}
	got := map[string]drift.Resource{}
	for _, r := range res.Report.Resources {
		got[r.Kind+" "+r.Name] = r
	}
	if len(got) != 4 {
		t.Fatalf("reported %+v, want the namespace, default-deny, dns and the terminating config map", res.Report.Resources)
	}
	r := got["Namespace agents-a"]
	if r.Change != drift.Modified || r.Cause != drift.CauseCluster || r.Repair == "" || len(r.Fields) != 1 ||
		r.Fields[0].Path != `metadata.labels["pod-security.kubernetes.io/enforce"]` || r.Fields[0].Declared != "restricted" || r.Fields[0].Live != nil {
		t.Errorf("namespace: %+v", r)
	}
	if r.URN == "" || r.Type != "kubernetes:core/v1:Namespace" {
		t.Errorf("namespace URN/type: %q %q", r.URN, r.Type)
	}
	// The defaulted policyTypes is no drift; the added ingress is.
	if r := got["NetworkPolicy agents-a/dns"]; r.Change != drift.Modified || len(r.Fields) != 1 || r.Fields[0].Path != "spec.ingress" || r.Fields[0].Declared != nil {
		t.Errorf("opened policy: %+v", r)
	}
	if r := got["NetworkPolicy agents-a/default-deny"]; r.Change != drift.Missing || r.Repair != "`paddock up` recreates it" {
		t.Errorf("deleted policy: %+v", r)
	}
	if r := got["ConfigMap agents-a/going"]; r.Change != drift.Missing {
		t.Errorf("terminating object: %+v", r)
	}
	if err := forms.save(); err != nil {
		t.Fatal(err)
	}

	// The next comparison answers from the cache: an object that matches
	// costs no dry-run; one that differs is confirmed with a fresh one.
	forms = e.loadStoredForms("s", "v1.35.4", false, true)
	res, err = compareLive(context.Background(), srv.dyn, "demo", objs, forms, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.DryRuns != 2 || len(res.Report.Resources) != 4 {
		t.Errorf("from the cache: %d dry-runs, %d resources; want 2 (the drifted namespace and dns) and the same 4", res.DryRuns, len(res.Report.Resources))
	}
	// Another server version starts afresh.
	forms = e.loadStoredForms("s", "v1.36.0", false, true)
	if res, _ = compareLive(context.Background(), srv.dyn, "demo", objs, forms, nil); res.DryRuns != 4 {
		t.Errorf("another server version reused the cache: %d dry-runs", res.DryRuns)
	}
}

// The repair writes each drifted object whole over the live one: the rule
// nobody declared is gone, the removed label is back, and a second
// comparison is clean.
func TestRepairLive(t *testing.T) {
	ns := obj("v1", "Namespace", "", "agents-a", nil)
	ns.SetLabels(map[string]string{model.PlatformLabel: "demo", "pod-security.kubernetes.io/enforce": "restricted"})
	open := obj("networking.k8s.io/v1", "NetworkPolicy", "agents-a", "dns", map[string]any{"spec": map[string]any{"podSelector": map[string]any{}}})
	liveNS := ns.DeepCopy()
	liveNS.SetLabels(map[string]string{model.PlatformLabel: "demo", "pod-security.kubernetes.io/enforce": "privileged"})
	liveOpen := open.DeepCopy()
	_ = unstructured.SetNestedStringSlice(liveOpen.Object, []string{"Ingress"}, "spec", "policyTypes")
	_ = unstructured.SetNestedSlice(liveOpen.Object, []any{map[string]any{}}, "spec", "ingress")
	srv := newFakeServer(liveNS, liveOpen)

	e := testEngine(t)
	var out bytes.Buffer
	e.opts.Out = &out
	objs := []*fastObject{fastObj(ns), fastObj(open)}
	res, err := compareLive(context.Background(), srv.dyn, "demo", objs, e.loadStoredForms("s", "v", false, true), nil)
	if err != nil {
		t.Fatal(err)
	}
	res.objs, res.clients = objs, &clusterClients{dyn: srv.dyn}
	n, err := e.repairLive(context.Background(), "up", res)
	if err != nil || n != 2 {
		t.Fatalf("repaired %d (%v), want 2", n, err)
	}
	for _, want := range []string{"repaired NetworkPolicy agents-a/dns", "removed spec.ingress", "repaired Namespace agents-a", `set metadata.labels["pod-security.kubernetes.io/enforce"] back: "privileged" → "restricted"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the repair does not say %q:\n%s", want, out.String())
		}
	}
	after, err := compareLive(context.Background(), srv.dyn, "demo", []*fastObject{fastObj(ns), fastObj(open)}, e.loadStoredForms("s", "v", false, true), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Report.Resources) != 0 {
		t.Fatalf("still drifted after the repair: %+v", after.Report.Resources)
	}
}

func TestProviderManager(t *testing.T) {
	o := fastObj(obj("v1", "ConfigMap", "a", "b", nil))
	if m := providerManager(o); m != "pulumi-kubernetes-abc" {
		t.Fatalf("from the state: %q", m)
	}
	o.state.Outputs = nil
	o.live = obj("v1", "ConfigMap", "a", "b", nil)
	o.live.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate},
		{Manager: "pulumi-kubernetes-xyz", Operation: metav1.ManagedFieldsOperationApply},
	})
	if m := providerManager(o); m != "pulumi-kubernetes-xyz" {
		t.Fatalf("from the live object: %q", m)
	}
}

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
			typ := typeToken(u.GetAPIVersion(), u.GetKind())
			in := normalizeInputs(u.DeepCopy().Object)
			res = append(res, map[string]any{
				"urn": "urn:pulumi:s::paddock::paddock:index:Platform$" + typ + "::" + objectKey(u), "custom": true, "type": typ,
				"id": objectKey(u), "inputs": in, "outputs": in, "provider": prov + "::id-1",
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
		if o.state == nil {
			t.Fatalf("%s has no state", objectKey(o.desired))
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
	if plan.kubeconfig != gkeKubeconfig {
		t.Errorf("kubeconfig %q, want the provider's", plan.kubeconfig)
	}
	if len(plan.objs) < 30 {
		t.Fatalf("%d objects paired", len(plan.objs))
	}
	for _, o := range plan.objs {
		if o.state == nil {
			t.Errorf("%s has no state", objectKey(o.desired))
		}
		if o.desired.GetKind() == "DaemonSet" {
			t.Errorf("the cloud layer's %s is compared; only the engine compares it", objectKey(o.desired))
		}
	}
	c, err := clientsFromKubeconfig(plan.kubeconfig)
	if err != nil || c == nil {
		t.Fatalf("clients from the recorded kubeconfig: %v", err)
	}

	// A kubeconfig the state keeps as a secret is read decrypted.
	crypter := config.NewSymmetricCrypter(bytes.Repeat([]byte{7}, config.SymmetricCrypterKeyBytes))
	ct, err := crypter.EncryptValue(ctx, strconv.Quote(gkeKubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	prov := &stateResource{Inputs: map[string]any{"kubeconfig": map[string]any{sig.Key: sig.Secret, "ciphertext": ct}}}
	if kc, err := recordedKubeconfig(ctx, prov, func() (config.Crypter, error) { return crypter, nil }); err != nil || kc != gkeKubeconfig {
		t.Errorf("secret kubeconfig: %v", err)
	}

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
	if _, err := clientsFromKubeconfig("not: [a kubeconfig"); err == nil || strings.Contains(err.Error(), "kubeconfig\"") {
		t.Errorf("a broken kubeconfig: %v", err)
	}
}

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
	provider := &stateResource{Inputs: map[string]any{"kubeconfig": runnerA, "enableServerSideApply": "true", "version": "4.0.0"}}
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
