package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/paddock-platform/paddock/internal/render"
	"github.com/paddock-platform/paddock/internal/specload"
	"github.com/paddock-platform/paddock/schemas/specgen"
)

func benchObjects(t *testing.T, o specgen.Options) []*unstructured.Unstructured {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "platform.hcl"), []byte(specgen.Generate(o)), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := specload.Load(dir, specload.Options{}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := render.All(p)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// kubectl waits for exactly the condition paddock's pools carry as
// pulumi.com/waitFor, on exactly the pools that carry one.
func TestKubectlWaitsForWhatPaddockWaitsFor(t *testing.T) {
	objs := benchObjects(t, specgen.Options{Platform: "bench", Tenants: 3, Replicas: 2, ColdPool: true})
	waitFor := map[string]bool{}
	for _, o := range objs {
		if w := o.GetAnnotations()["pulumi.com/waitFor"]; w != "" {
			waitFor["--for="+w] = true
		}
	}
	if len(waitFor) != 1 {
		t.Fatalf("paddock's pools wait for %v, want one condition", waitFor)
	}
	waits, err := KubectlWaits(objs)
	if err != nil {
		t.Fatal(err)
	}
	if len(waits) != 1 {
		t.Fatalf("waits %v, want one over all namespaces", waits)
	}
	w := strings.Join(waits[0], " ")
	for cond := range waitFor {
		if !strings.Contains(w, cond) {
			t.Errorf("kubectl %s does not wait for paddock's %s", w, cond)
		}
	}
	for _, part := range []string{"sandboxwarmpools.extensions.agents.x-k8s.io", "--all-namespaces", "-l paddock.dev/platform=bench", "--timeout=" + ReadyTimeout.String()} {
		if !strings.Contains(w, part) {
			t.Errorf("kubectl %s lacks %s", w, part)
		}
	}

	// Pools of different sizes: one wait each, with its own size.
	objs[len(objs)-1] = objs[len(objs)-1].DeepCopy()
	for i := len(objs) - 1; i >= 0; i-- {
		if objs[i].GetKind() == "SandboxWarmPool" && objs[i].GetAnnotations()["pulumi.com/waitFor"] != "" {
			objs[i] = objs[i].DeepCopy()
			if err := unstructured.SetNestedField(objs[i].Object, int64(5), "spec", "replicas"); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	waits, err = KubectlWaits(objs)
	if err != nil {
		t.Fatal(err)
	}
	if len(waits) != 3 {
		t.Fatalf("%d waits for 3 pools of two sizes (cold pools wait for nothing): %v", len(waits), waits)
	}
	fives := 0
	for _, w := range waits {
		if strings.Contains(strings.Join(w, " "), "readyReplicas}=5") {
			fives++
		}
	}
	if fives != 1 {
		t.Errorf("waits %v: want one for the pool of 5", waits)
	}
}

var poolsGVR = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxwarmpools"}

// The floor's create ends when the pools are Ready, not when they are stored.
func TestWaitPoolsReadyWaitsForEveryPool(t *testing.T) {
	objs := benchObjects(t, specgen.Options{Platform: "bench", Tenants: 2, Replicas: 2})
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{poolsGVR: "SandboxWarmPoolList"})
	ctx := context.Background()
	var pools []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "SandboxWarmPool" {
			p := o.DeepCopy()
			_ = unstructured.SetNestedField(p.Object, int64(0), "status", "readyReplicas")
			if _, err := dyn.Resource(poolsGVR).Namespace(p.GetNamespace()).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			pools = append(pools, p)
		}
	}
	if len(pools) != 2 {
		t.Fatalf("%d pools", len(pools))
	}
	// marked counts the pools the goroutine has begun to mark Ready; it is
	// raised before each update, so a wait that returns having seen every
	// pool Ready finds it at len(pools). The pauses only give a wait that
	// returns too early the chance to do so; nothing here reads the clock.
	var marked atomic.Int32
	go func() {
		for i, p := range pools {
			time.Sleep(50 * time.Millisecond)
			marked.Add(1)
			u := p.DeepCopy()
			_ = unstructured.SetNestedField(u.Object, int64(2), "status", "readyReplicas")
			if _, err := dyn.Resource(poolsGVR).Namespace(u.GetNamespace()).Update(ctx, u, metav1.UpdateOptions{}); err != nil {
				t.Errorf("pool %d: %v", i, err)
			}
		}
	}()
	if err := WaitPoolsReady(ctx, dyn, objs, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if n := marked.Load(); n != int32(len(pools)) {
		t.Errorf("returned when %d of %d pools had been marked Ready", n, len(pools))
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	stuck := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{poolsGVR: "SandboxWarmPoolList"})
	if err := WaitPoolsReady(cancelled, stuck, objs, 10*time.Millisecond); err == nil || !strings.Contains(err.Error(), "not Ready") {
		t.Errorf("pools that never fill: %v", err)
	}
}

func TestAppliedAtReadsTheMarker(t *testing.T) {
	at, err := appliedAt("noise\n" + appliedMarker + "1700000000.250000000\n")
	if err != nil || at.UnixMilli() != 1700000000250 {
		t.Errorf("appliedAt = %v, %v", at, err)
	}
	if _, err := appliedAt("no marker"); err == nil {
		t.Error("no marker read as a time")
	}
}
