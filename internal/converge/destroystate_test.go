package converge

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// A field of an unexpected shape reads as absent, as the plan's type
// assertions on decoded maps read it: the stack goes to Pulumi's destroy
// rather than the plan failing or guessing.
func TestPlanDirectDestroyReadsOddShapesAsAbsent(t *testing.T) {
	secret := map[string]any{"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "ciphertext": "v1:abc"}
	t.Run("a secret name", func(t *testing.T) {
		s := platformState().object(tenantT, "v1", "ConfigMap", "agents-team-a", "x", func(r map[string]any) {
			r["outputs"].(map[string]any)["metadata"] = map[string]any{"name": secret, "namespace": "agents-team-a"}
		})
		_, why, err := PlanDirectDestroy(s.json(t), minimalLocalPlatform(), nil)
		if err != nil || !strings.Contains(why, "records no apiVersion, kind and name") {
			t.Fatalf("why %q, err %v: want the stack left to Pulumi for an object it cannot name", why, err)
		}
	})
	t.Run("a secret kubeconfig", func(t *testing.T) {
		s := platformState()
		s.resources[1]["inputs"] = map[string]any{"kubeconfig": secret}
		_, why, err := PlanDirectDestroy(s.json(t), minimalLocalPlatform(), nil)
		if err != nil || !strings.Contains(why, "reaches another kubeconfig") {
			t.Fatalf("why %q, err %v: want a provider whose kubeconfig cannot be read taken as another cluster's", why, err)
		}
	})
	t.Run("odd specs, metadata and nulls", func(t *testing.T) {
		s := platformState().
			object(releaseT, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "odd.agents.x-k8s.io", func(r map[string]any) {
				r["outputs"].(map[string]any)["spec"] = "[secret]"
			}).
			object(releaseT, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "odder.agents.x-k8s.io", func(r map[string]any) {
				r["outputs"].(map[string]any)["spec"] = map[string]any{"group": 7, "scope": "Namespaced", "names": []any{"Sandbox"}}
			}).
			object(tenantT, "v1", "ConfigMap", "shared", "from-inputs", func(r map[string]any) {
				r["inputs"] = r["outputs"]
				r["outputs"] = map[string]any{"apiVersion": nil, "kind": 3, "metadata": "x"}
			})
		plan, why, err := PlanDirectDestroy(s.json(t), minimalLocalPlatform(), nil)
		if err != nil || why != "" {
			t.Fatalf("why %q, err %v", why, err)
		}
		var kinds []string
		for _, gk := range plan.SandboxKinds {
			kinds = append(kinds, gk.String())
		}
		if got := strings.Join(kinds, ","); got != "Sandbox.agents.x-k8s.io" {
			t.Errorf("sandbox kinds %q: want only the well-formed CRD's", got)
		}
		if got := fmt.Sprint(names(plan.Tenants.Objects)); !strings.Contains(got, "from-inputs") {
			t.Errorf("tenant objects %s: want the object named by its inputs when its outputs are odd", got)
		}
	})
	t.Run("not a deployment", func(t *testing.T) {
		if _, _, err := PlanDirectDestroy(json.RawMessage(`{"resources": {}}`), minimalLocalPlatform(), nil); err == nil {
			t.Fatal("resources that are no list: want an error")
		}
	})
}

// largeState is a stack of tenants platforms' size: each tenant 27 objects,
// each object's inputs and outputs about 2.5 KiB, close to the 5.5 KiB a
// resource of the 1,000-tenant benchmark's checkpoint takes (148 MiB).
func largeState(tb testing.TB, tenants int) []byte {
	tb.Helper()
	spec := map[string]any{}
	for i := range 40 {
		spec[fmt.Sprintf("field%02d", i)] = strings.Repeat("v", 24)
	}
	var items []any
	for i := range 10 {
		items = append(items, map[string]any{"name": fmt.Sprintf("item-%d", i), "value": "some value", "limit": "500m"})
	}
	spec["items"] = items
	labels := map[string]any{"paddock.dev/platform": "demo", "paddock.dev/tenant": "t", "app.kubernetes.io/managed-by": "paddock"}
	s := platformState()
	for t := range tenants {
		ns := fmt.Sprintf("agents-t%04d", t)
		s.object(tenantT, "v1", "Namespace", "", ns)
		for k := range 26 {
			s.object(tenantT+"$paddock:tenant:Identity", "v1", "ConfigMap", ns, fmt.Sprintf("obj-%02d", k), func(r map[string]any) {
				out := r["outputs"].(map[string]any)
				out["metadata"].(map[string]any)["labels"] = labels
				out["spec"] = spec
				r["inputs"] = map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": out["metadata"], "spec": spec}
			})
		}
	}
	raw, err := json.Marshal(map[string]any{"manifest": map[string]any{"version": "v3.274.1"}, "resources": s.resources})
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// BenchmarkPlanDirectDestroy plans the direct destroy of a 1,000-tenant
// stack: B/op is what reading its state costs in memory.
func BenchmarkPlanDirectDestroy(b *testing.B) {
	state := largeState(b, 1000)
	b.SetBytes(int64(len(state)))
	b.ReportAllocs()
	for b.Loop() {
		plan, why, err := PlanDirectDestroy(state, minimalLocalPlatform(), nil)
		if err != nil || why != "" || plan.Resources < 27000 {
			b.Fatalf("plan %v, why %q, err %v", plan, why, err)
		}
	}
}

func TestDeploymentOf(t *testing.T) {
	dep, ok, err := DeploymentOf([]byte(`{"version":3,"checkpoint":{"stack":"s","latest":{"resources":[{"urn":"u"}]}}}`))
	if err != nil || !ok || dep.Version != 3 || string(dep.Deployment) != `{"resources":[{"urn":"u"}]}` {
		t.Errorf("current schema: %+v %v %v", dep, ok, err)
	}
	dep, ok, err = DeploymentOf([]byte(`{"version":3,"checkpoint":{"stack":"s"}}`))
	if err != nil || !ok || string(dep.Deployment) != `{}` {
		t.Errorf("never updated: %s %v %v, want an empty deployment", dep.Deployment, ok, err)
	}
	if _, ok, err := DeploymentOf([]byte(`{"version":4,"features":["x"],"checkpoint":{"latest":{}}}`)); err != nil || ok {
		t.Errorf("another schema: ok %v err %v, want it left to the CLI", ok, err)
	}
	if _, _, err := DeploymentOf([]byte(`{"version":`)); err == nil {
		t.Error("a damaged checkpoint: want an error")
	}
}
