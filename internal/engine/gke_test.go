package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/paddock-platform/paddock/components/pulumitest"
	"github.com/paddock-platform/paddock/internal/converge"
	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/program"
	"github.com/paddock-platform/paddock/internal/specload"
)

// This file shows the whole-object comparison and its repair on a GKE
// target against a synthetic stack: the state is what the program of a GKE
// example registers under Pulumi's mocks (pulumitest.Mocks, no GCP API is
// called and no cluster is created), written as an up would leave it, and
// its kubernetes provider's kubeconfig points at an API server the test
// serves on loopback. It is not a run against a real GKE cluster.

const testPassphrase = "test-passphrase"

// mockGKEStack runs the program of the GKE example in dir under Pulumi's
// mocks and writes the file-backend state an up of it would leave: every
// registration with its URN, inputs (secrets encrypted with the stack's
// passphrase), parent and provider; the cloud layer's kubernetes provider
// given kubeconfig (kept secret when secretKubeconfig). edit may change the
// resources before they are written.
func mockGKEStack(t *testing.T, dir, kubeconfig string, secretKubeconfig bool, edit func(res []map[string]any) []map[string]any) (*Engine, *model.Platform, string) {
	t.Helper()
	ctx := context.Background()
	var report bytes.Buffer
	p, err := specload.Load(dir, specload.Options{}, &report)
	if err != nil {
		t.Fatalf("%v\n%s", err, report.String())
	}
	if p.Target.Kind != model.TargetGKE {
		t.Fatalf("%s targets %s, not GKE", dir, p.Target.Kind)
	}
	m := &pulumitest.Mocks{Outputs: pulumitest.GCPOutputs}
	if err := pulumi.RunErr(program.New(p), pulumi.WithMocks("paddock", "s", m)); err != nil {
		t.Fatalf("the program under mocks: %v", err)
	}

	salt := []byte("0123456789abcdef")
	crypter := config.NewSymmetricCrypterFromPassphrase(testPassphrase, salt)
	check, err := crypter.EncryptValue(ctx, "pulumi")
	if err != nil {
		t.Fatal(err)
	}
	encrypt := func(v any) map[string]any {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		ct, err := crypter.EncryptValue(ctx, string(b))
		if err != nil {
			t.Fatal(err)
		}
		return map[string]any{sig.Key: sig.Secret, "ciphertext": ct}
	}
	var toState func(v resource.PropertyValue) any
	toState = func(v resource.PropertyValue) any {
		switch {
		case v.IsSecret():
			return encrypt(toState(v.SecretValue().Element))
		case v.IsOutput():
			o := v.OutputValue()
			if !o.Known {
				t.Fatalf("an unknown value under mocks: %v", v)
			}
			if o.Secret {
				return encrypt(toState(o.Element))
			}
			return toState(o.Element)
		case v.IsComputed():
			t.Fatalf("an unknown value under mocks: %v", v)
		case v.IsObject():
			out := map[string]any{}
			for k, e := range v.ObjectValue() {
				out[string(k)] = toState(e)
			}
			return out
		case v.IsArray():
			out := []any{}
			for _, e := range v.ArrayValue() {
				out = append(out, toState(e))
			}
			return out
		case v.IsNull():
			return nil
		}
		return v.V
	}

	all := m.All()
	byID := map[string]pulumitest.Resource{}
	for _, r := range all {
		byID[r.ID()] = r
	}
	// A URN's type is its parents' types, outermost first, then its own.
	var qualified func(r pulumitest.Resource) string
	qualified = func(r pulumitest.Resource) string {
		if parent, ok := byID[r.Parent]; ok && parent.Type != "pulumi:pulumi:Stack" {
			return qualified(parent) + "$" + r.Type
		}
		return r.Type
	}
	urn := func(r pulumitest.Resource) string { return "urn:pulumi:s::paddock::" + qualified(r) + "::" + r.Name }
	res := []map[string]any{{"urn": "urn:pulumi:s::paddock::pulumi:pulumi:Stack::paddock-s", "type": "pulumi:pulumi:Stack", "outputs": map[string]any{"platform": p.Name}}}
	for _, r := range all {
		if r.Type == "pulumi:pulumi:Stack" {
			continue
		}
		in := toState(resource.NewObjectProperty(r.Inputs)).(map[string]any)
		if r.Type == "pulumi:providers:kubernetes" {
			in["kubeconfig"] = kubeconfig
			if secretKubeconfig {
				in["kubeconfig"] = encrypt(kubeconfig)
			}
			in["version"] = "4.25.0"
		}
		sr := map[string]any{"urn": urn(r), "type": r.Type, "custom": r.Custom, "inputs": in}
		if r.Custom {
			sr["id"], sr["outputs"] = r.Name+"_id", in
		}
		if prov, ok := byID[r.Provider]; ok {
			sr["provider"] = urn(prov) + "::" + prov.Name + "_id"
		}
		if parent, ok := byID[r.Parent]; ok {
			sr["parent"] = urn(parent)
		}
		res = append(res, sr)
	}
	if edit != nil {
		res = edit(res)
	}

	root := t.TempDir()
	t.Setenv("PULUMI_CONFIG_PASSPHRASE", testPassphrase)
	t.Setenv("PADDOCK_HOME", t.TempDir())
	e := New(Options{Backend: "file://" + root, Stack: "s", Out: &bytes.Buffer{}})
	cp := map[string]any{"version": 3, "checkpoint": map[string]any{"stack": "s", "latest": map[string]any{
		"manifest":          map[string]any{},
		"secrets_providers": map[string]any{"type": "passphrase", "state": map[string]any{"salt": "v1:" + base64Std(salt) + ":" + check}},
		"resources":         res,
	}}}
	b, err := json.Marshal(cp)
	if err != nil {
		t.Fatal(err)
	}
	stacks := filepath.Join(root, ".pulumi", "stacks", "paddock")
	if err := os.MkdirAll(stacks, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(stacks, "s.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return e, p, file
}

// loopbackAPIServer is an API server for the GKE tests, served on
// 127.0.0.1 over HTTP: what the whole-object comparison and the repair ask
// (the version, LIST by label, GET, dry-run and real PUTs under the live
// resourceVersion) on objects kept in memory. The server's one default:
// a NetworkPolicy with no policyTypes is stored with ["Ingress"].
type loopbackAPIServer struct {
	srv *httptest.Server

	mu      sync.Mutex
	objs    map[string]*unstructured.Unstructured // group/resource/namespace/name
	rv      int
	dryRuns int
	updates []string // kind namespace/name of each real PUT
}

func newLoopbackAPIServer(t *testing.T, objs ...*unstructured.Unstructured) *loopbackAPIServer {
	t.Helper()
	s := &loopbackAPIServer{objs: map[string]*unstructured.Unstructured{}}
	for _, u := range objs {
		s.store(u.DeepCopy())
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// kubeconfig reaches the server as a kubeconfig the state could hold.
func (s *loopbackAPIServer) kubeconfig() string {
	return "apiVersion: v1\nkind: Config\nclusters:\n- name: gke\n  cluster:\n    server: " + s.srv.URL +
		"\ncontexts:\n- name: gke\n  context: {cluster: gke, user: gke}\ncurrent-context: gke\nusers:\n- name: gke\n  user: {token: test-token}\n"
}

func storeKey(group, resource, ns, name string) string {
	return group + "/" + resource + "/" + ns + "/" + name
}

// store keeps u (the server's default applied) under a new resourceVersion.
func (s *loopbackAPIServer) store(u *unstructured.Unstructured) {
	defaults(u)
	s.rv++
	u.SetResourceVersion(strconv.Itoa(s.rv))
	if u.GetUID() == "" {
		u.SetUID(types.UID("uid-" + u.GetName()))
	}
	gvr := converge.GVROf(u)
	s.objs[storeKey(gvr.Group, gvr.Resource, u.GetNamespace(), u.GetName())] = u
}

func defaults(u *unstructured.Unstructured) {
	if u.GetKind() == "NetworkPolicy" {
		if _, ok, _ := unstructured.NestedSlice(u.Object, "spec", "policyTypes"); !ok {
			_ = unstructured.SetNestedStringSlice(u.Object, []string{"Ingress"}, "spec", "policyTypes")
		}
	}
}

// get is the stored object of a kind and namespace/name, for assertions.
func (s *loopbackAPIServer) get(kind, key string) *unstructured.Unstructured {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.objs {
		if u.GetKind() == kind && converge.ObjectKey(u) == key {
			return u.DeepCopy()
		}
	}
	return nil
}

func (s *loopbackAPIServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	reply := func(code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	fail := func(code int, reason metav1.StatusReason, msg string) {
		reply(code, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg})
	}
	if r.URL.Path == "/version" {
		reply(http.StatusOK, map[string]string{"major": "1", "minor": "33", "gitVersion": "v1.33.5-gke.1200000"})
		return
	}
	// /api/v1/... or /apis/GROUP/VERSION/...
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var group string
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		segs = segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		group, segs = segs[1], segs[3:]
	default:
		fail(http.StatusNotFound, metav1.StatusReasonNotFound, "no such path")
		return
	}
	var ns, res, name string
	switch {
	case len(segs) == 1:
		res = segs[0]
	case len(segs) == 2:
		res, name = segs[0], segs[1]
	case len(segs) == 3 && segs[0] == "namespaces":
		ns, res = segs[1], segs[2]
	case len(segs) == 4 && segs[0] == "namespaces":
		ns, res, name = segs[1], segs[2], segs[3]
	default:
		fail(http.StatusNotFound, metav1.StatusReasonNotFound, "no such path")
		return
	}
	switch {
	case r.Method == http.MethodGet && name == "":
		want := map[string]string{}
		for _, kv := range strings.Split(r.URL.Query().Get("labelSelector"), ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				want[k] = v
			}
		}
		items := []any{}
		for _, u := range s.objs {
			gvr := converge.GVROf(u)
			if gvr.Group != group || gvr.Resource != res || (ns != "" && u.GetNamespace() != ns) {
				continue
			}
			labels, match := u.GetLabels(), true
			for k, v := range want {
				match = match && labels[k] == v
			}
			if match {
				items = append(items, u.Object)
			}
		}
		reply(http.StatusOK, map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": strconv.Itoa(s.rv)}, "items": items})
	case r.Method == http.MethodGet:
		u, ok := s.objs[storeKey(group, res, ns, name)]
		if !ok {
			fail(http.StatusNotFound, metav1.StatusReasonNotFound, res+" "+name+" not found")
			return
		}
		reply(http.StatusOK, u.Object)
	case r.Method == http.MethodPut && name != "":
		live, ok := s.objs[storeKey(group, res, ns, name)]
		if !ok {
			fail(http.StatusNotFound, metav1.StatusReasonNotFound, res+" "+name+" not found")
			return
		}
		body := &unstructured.Unstructured{}
		if err := json.NewDecoder(r.Body).Decode(&body.Object); err != nil {
			fail(http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
			return
		}
		if body.GetResourceVersion() != live.GetResourceVersion() {
			fail(http.StatusConflict, metav1.StatusReasonConflict, "the object has been modified")
			return
		}
		body.SetUID(live.GetUID())
		body.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: r.URL.Query().Get("fieldManager"), Operation: metav1.ManagedFieldsOperationUpdate}})
		if r.URL.Query().Get("dryRun") != "" {
			s.dryRuns++
			defaults(body)
			reply(http.StatusOK, body.Object)
			return
		}
		s.updates = append(s.updates, body.GetKind()+" "+converge.ObjectKey(body))
		s.store(body)
		reply(http.StatusOK, body.Object)
	default:
		fail(http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, r.Method+" is not served")
	}
}

// liveGKEObjects are the spec's objects as an up leaves them on the cluster:
// built by manifests.Build, applied by the kubernetes provider.
func liveGKEObjects(t *testing.T, p *model.Platform) []*unstructured.Unstructured {
	t.Helper()
	built, err := manifests.Build(p)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, g := range built.Groups() {
		for _, u := range g.Objects {
			u = u.DeepCopy()
			u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "pulumi-kubernetes-5e3f", Operation: metav1.ManagedFieldsOperationApply,
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{},"f:spec":{}}`)}}})
			out = append(out, u)
		}
	}
	return out
}

// loosen adds, under manager, a field the spec does not declare to the
// object of that kind and namespace/name.
func loosen(t *testing.T, objs []*unstructured.Unstructured, kind, key, manager string, value any, path ...string) {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() != kind || converge.ObjectKey(u) != key {
			continue
		}
		if err := unstructured.SetNestedField(u.Object, value, path...); err != nil {
			t.Fatal(err)
		}
		tree := map[string]any{}
		node := tree
		for _, p := range path {
			next := map[string]any{}
			node["f:"+p] = next
			node = next
		}
		raw, _ := json.Marshal(tree)
		when := metav1.NewTime(time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC))
		u.SetManagedFields(append(u.GetManagedFields(), metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate,
			Time: &when, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: raw}}))
		return
	}
	t.Fatalf("no %s %s among the spec's objects", kind, key)
}

// On GKE the fast paths still refuse; the plan of the engine's path pairs
// the spec's objects with what the GKE program registered for them (under
// mocks), on the GCP layer's kubernetes provider, and leaves the GCP
// resources and the cloud layer's own objects to the engine.
func TestGKEPlanOnTheProgramsState(t *testing.T) {
	ctx := context.Background()
	for _, dir := range []string{"../../examples/gke-kata", "../../examples/gke-gvisor"} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			e, p, file := mockGKEStack(t, dir, gkeKubeconfig, true, nil)
			if _, _, reason := e.fastPlan(ctx, p, "s"); !strings.Contains(reason, "the target is GKE") {
				t.Fatalf("the fast path does not refuse GKE: %q", reason)
			}
			plan, reason := e.stackClusterPlan(ctx, p, "s")
			if reason != "" {
				t.Fatalf("the GKE plan fell back: %s", reason)
			}
			if plan.Kubeconfig != gkeKubeconfig {
				t.Error("the plan does not carry the kubeconfig the GKE provider recorded")
			}

			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			cp, err := converge.ParseCheckpoint(data)
			if err != nil {
				t.Fatal(err)
			}
			paired := map[string]bool{}
			for _, o := range plan.Objects {
				if o.State == nil {
					t.Fatalf("%s %s has no state", o.Desired.GetKind(), converge.ObjectKey(o.Desired))
				}
				if !strings.Contains(o.State.Provider, "paddock:gcp:Platform$pulumi:providers:kubernetes::"+p.Name+"-gke::") {
					t.Errorf("%s is paired on provider %s, not the GKE layer's", o.State.URN, o.State.Provider)
				}
				paired[o.State.URN] = true
			}
			var gcp, cloudLayer int
			for _, r := range cp.Checkpoint.Latest.Resources {
				switch {
				case strings.HasPrefix(r.Type, "gcp:") || r.Type == "pulumi:providers:gcp":
					gcp++
				case !strings.HasPrefix(r.Type, "kubernetes:"):
				case converge.CloudLayerURN(r.URN):
					cloudLayer++
					if paired[r.URN] {
						t.Errorf("the cloud layer's %s is compared; only the engine compares it", r.URN)
					}
				case !paired[r.URN]:
					t.Errorf("the spec's %s is not compared", r.URN)
				}
			}
			if gcp == 0 || len(plan.Objects) < 30 {
				t.Fatalf("%d GCP resources, %d objects paired: not a GKE stack", gcp, len(plan.Objects))
			}
			if dir == "../../examples/gke-kata" && cloudLayer == 0 {
				t.Error("the Kata example registers no object in the cloud layer (kata-deploy, network logging)")
			}
		})
	}
}

// When the spec, the state or the provider is not what the last up left,
// the GKE plan refuses, saying why.
func TestGKEPlanRefuses(t *testing.T) {
	ctx := context.Background()
	type edit func(res []map[string]any) []map[string]any
	byURN := func(res []map[string]any, suffix string) map[string]any {
		for _, r := range res {
			if strings.HasSuffix(r["urn"].(string), suffix) {
				return r
			}
		}
		t.Fatalf("no resource %s", suffix)
		return nil
	}
	for _, tc := range []struct {
		name, want string
		kubeconfig string
		edit       edit
		setup      func(t *testing.T, p *model.Platform, file string)
	}{
		{name: "spec changed", want: "the spec changed NetworkPolicy agents-builds/default-deny", edit: func(res []map[string]any) []map[string]any {
			r := byURN(res, "NetworkPolicy::agents-builds/default-deny")
			r["inputs"].(map[string]any)["metadata"].(map[string]any)["labels"].(map[string]any)["extra"] = "x"
			return res
		}},
		{name: "spec changed in the platform", want: "the spec changed", setup: func(t *testing.T, p *model.Platform, file string) {
			p.Tenants[0].Quota.Pods++
		}},
		{name: "spec drops an object", want: "the spec no longer declares ConfigMap agents-builds/old", edit: func(res []map[string]any) []map[string]any {
			r := byURN(res, "NetworkPolicy::agents-builds/default-deny")
			return append(res, map[string]any{"urn": "urn:pulumi:s::paddock::paddock:index:Platform$kubernetes:core/v1:ConfigMap::agents-builds/old",
				"type": "kubernetes:core/v1:ConfigMap", "custom": true, "inputs": map[string]any{}, "provider": r["provider"]})
		}},
		{name: "another kubernetes provider", want: "not its GKE cluster's", edit: func(res []map[string]any) []map[string]any {
			r := byURN(res, "pulumi:providers:kubernetes::agents-kata-gke")
			r["urn"] = "urn:pulumi:s::paddock::pulumi:providers:kubernetes::kubernetes"
			return res
		}},
		{name: "no kubeconfig recorded", want: "records no kubeconfig", kubeconfig: "-"},
		{name: "pending operations", want: "never finished", setup: func(t *testing.T, p *model.Platform, file string) {
			rewrite(t, file, func(cp map[string]any) {
				cp["checkpoint"].(map[string]any)["latest"].(map[string]any)["pending_operations"] = []any{map[string]any{"type": "creating"}}
			})
		}},
		{name: "a resource waiting to be deleted", want: "waiting to be deleted", edit: func(res []map[string]any) []map[string]any {
			byURN(res, "gcp:container/cluster:Cluster::agents-kata")["delete"] = true
			return res
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc := gkeKubeconfig
			if tc.kubeconfig == "-" {
				kc = ""
			}
			e, p, file := mockGKEStack(t, "../../examples/gke-kata", kc, false, tc.edit)
			if tc.setup != nil {
				tc.setup(t, p, file)
			}
			if _, reason := e.stackClusterPlan(ctx, p, "s"); !strings.Contains(reason, tc.want) {
				t.Fatalf("reason %q, want it to say %q", reason, tc.want)
			}
		})
	}
}

// After the engine's refresh on GKE, drift compares the spec's objects
// whole on the cluster the recorded kubeconfig reaches: a rule added to a
// tenant's default deny and a matchCondition switching a guardrail off,
// fields the spec does not declare, are reported with who wrote them; up
// puts both back, and drift is clean again.
func TestGKEWholeObjectDriftAndRepair(t *testing.T) {
	ctx := context.Background()
	var report bytes.Buffer
	p, err := specload.Load("../../examples/gke-kata", specload.Options{}, &report)
	if err != nil {
		t.Fatalf("%v\n%s", err, report.String())
	}
	live := liveGKEObjects(t, p)
	loosen(t, live, "NetworkPolicy", "agents-builds/default-deny", "kubectl-patch", []any{map[string]any{}}, "spec", "ingress")
	loosen(t, live, "ValidatingAdmissionPolicy", "paddock-agents-kata-builds-claims", "kubectl-edit",
		[]any{map[string]any{"name": "off", "expression": "false"}}, "spec", "matchConditions")
	srv := newLoopbackAPIServer(t, live...)

	e, p, _ := mockGKEStack(t, "../../examples/gke-kata", srv.kubeconfig(), true, nil)
	var out bytes.Buffer
	e.opts.Out = &out
	rep := &drift.Report{}
	e.addWholeObjectDrift(ctx, p, "s", rep)
	if strings.Contains(out.String(), "not compared") {
		t.Fatalf("the whole-object comparison did not run: %s", out.String())
	}
	got := map[string]drift.Resource{}
	for _, r := range rep.Resources {
		got[r.Kind+" "+r.Name] = r
	}
	if len(got) != 2 {
		t.Fatalf("reported %+v, want the opened policy and the switched-off guardrail (the cloud layer's objects, absent here, are not compared)", rep.Resources)
	}
	for key, want := range map[string]struct{ path, by string }{
		"NetworkPolicy agents-builds/default-deny":                    {"spec.ingress", "kubectl-patch (update at 2026-12-02T06:00:00Z)"},
		"ValidatingAdmissionPolicy paddock-agents-kata-builds-claims": {"spec.matchConditions", "kubectl-edit (update at 2026-12-02T06:00:00Z)"},
	} {
		r := got[key]
		if r.Change != drift.Modified || r.Cause != drift.CauseCluster || !strings.Contains(r.URN, "paddock:index:Platform") ||
			len(r.Fields) != 1 || r.Fields[0].Path != want.path || r.Fields[0].Declared != nil || r.Fields[0].By() != want.by {
			t.Errorf("%s: %+v", key, r)
		}
	}

	n, err := e.repairAfterUp(ctx, p, "s", nil)
	if err != nil || n != 2 {
		t.Fatalf("repaired %d (%v), want 2\n%s", n, err, out.String())
	}
	for _, want := range []string{
		"paddock up: repaired NetworkPolicy agents-builds/default-deny, changed out of band",
		"removed spec.ingress: [{}] (written by kubectl-patch",
		"paddock up: repaired ValidatingAdmissionPolicy paddock-agents-kata-builds-claims",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the repair does not say %q:\n%s", want, out.String())
		}
	}
	if np := srv.get("NetworkPolicy", "agents-builds/default-deny"); np == nil || np.Object["spec"].(map[string]any)["ingress"] != nil {
		t.Errorf("the rule is still in the live policy: %v", np)
	}
	if vap := srv.get("ValidatingAdmissionPolicy", "paddock-agents-kata-builds-claims"); vap == nil || vap.Object["spec"].(map[string]any)["matchConditions"] != nil {
		t.Errorf("the matchCondition is still on the live guardrail: %v", vap)
	}
	if len(srv.updates) != 2 {
		t.Errorf("updates %v, want the two drifted objects only", srv.updates)
	}

	rep = &drift.Report{}
	e.addWholeObjectDrift(ctx, p, "s", rep)
	if len(rep.Resources) != 0 {
		t.Errorf("still drifted after the repair: %+v", rep.Resources)
	}
	// The kubeconfig and its credential are never printed.
	if s := out.String(); strings.Contains(s, srv.srv.URL) || strings.Contains(s, "test-token") {
		t.Errorf("the output quotes the kubeconfig:\n%s", s)
	}
}

// With no kubeconfig recorded yet (a first up that never reached the
// cluster), drift and up say in one line why fields outside the spec are
// not compared, and go on.
func TestGKEWholeObjectNotCompared(t *testing.T) {
	ctx := context.Background()
	e, p, _ := mockGKEStack(t, "../../examples/gke-kata", "", false, nil)
	var out bytes.Buffer
	e.opts.Out = &out
	rep := &drift.Report{Resources: []drift.Resource{{Kind: "Namespace", Name: "agents-builds", Change: drift.Modified}}}
	e.addWholeObjectDrift(ctx, p, "s", rep)
	if n, err := e.repairAfterUp(ctx, p, "s", nil); n != 0 || err != nil {
		t.Fatalf("repair without a cluster: %d, %v", n, err)
	}
	want := "paddock drift: fields outside the spec not compared: the stack's kubernetes provider records no kubeconfig yet\n" +
		"paddock up: fields written out of band by other managers are not compared: the stack's kubernetes provider records no kubeconfig yet\n"
	if out.String() != want {
		t.Errorf("said %q, want %q", out.String(), want)
	}
	if len(rep.Resources) != 1 {
		t.Errorf("the engine's report was changed: %+v", rep.Resources)
	}
}

// On GKE the checks an up makes beside Pulumi before anything is applied
// reach the cluster the stack created, through the kubeconfig its provider
// recorded: a CRD that still stores a version the release no longer lists
// is refused as on any other target. Before the stack's first up there is
// no cluster, and nothing to check.
func TestGKEPreflightsReachTheStacksCluster(t *testing.T) {
	ctx := context.Background()
	const name = "sandboxes.agents.x-k8s.io"
	srv := newLoopbackAPIServer(t, crd(name, []string{"v1beta1", "v1alpha1"}, []string{"v0alpha9", "v1beta1"}))

	var report bytes.Buffer
	p, err := specload.Load("../../examples/gke-gvisor", specload.Options{}, &report)
	if err != nil {
		t.Fatalf("%v\n%s", err, report.String())
	}
	fresh := New(Options{Backend: "file://" + t.TempDir(), Stack: "s"})
	if _, err := fresh.liveClients(ctx, p); !errors.Is(err, converge.ErrNoKubeconfig) {
		t.Fatalf("before the first up the stack's cluster was reached: %v", err)
	}
	if err := fresh.guardStoredVersions(ctx, "up", p); err != nil {
		t.Fatalf("before the first up: %v", err)
	}

	e, p, _ := mockGKEStack(t, "../../examples/gke-gvisor", srv.kubeconfig(), true, nil)
	err = e.guardStoredVersions(ctx, "up", p)
	if err == nil || !strings.Contains(err.Error(), "CRD "+name+": status.storedVersions is [v0alpha9 v1beta1]") {
		t.Fatalf("the stored-versions preflight did not read the stack's GKE cluster: %v", err)
	}
	c, err := e.liveClients(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Dyn.Resource(converge.CRDResource).Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Fatalf("the clients of the checks beside Pulumi do not reach the stack's cluster: %v", err)
	}
}
