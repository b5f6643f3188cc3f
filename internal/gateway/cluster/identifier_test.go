package cluster

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	extensionsv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"

	"github.com/paddock-platform/paddock/internal/gateway"
	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
)

const ns = "agents-team-a"

func ctrlRef(apiVersion, kind, name, uid string) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: &yes}
}

// sandboxPod is a running pod at ip that Sandbox sandbox (UID "uid-"+sandbox) controls.
func sandboxPod(name, sandbox, ip string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns, UID: types.UID("pod-" + name),
			OwnerReferences: []metav1.OwnerReference{ctrlRef(sandboxv1beta1.GroupVersion.String(), sandboxv1beta1.SandboxKind, sandbox, "uid-"+sandbox)},
		},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "busybox"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}},
	}
}

// sandbox is a Sandbox controlled by a claim ("" : by the warm pool).
func sandbox(name, claim string) *unstructured.Unstructured {
	owner := ctrlRef(extensionsv1beta1.GroupVersion.String(), extensionsv1beta1.SandboxWarmPoolKind, "agent", "uid-pool")
	if claim != "" {
		owner = ctrlRef(extensionsv1beta1.GroupVersion.String(), extensionsv1beta1.SandboxClaimKind, claim, "uid-"+claim)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": agentsandbox.Sandboxes.GroupVersion().String(),
		"kind":       sandboxv1beta1.SandboxKind,
		"spec":       map[string]any{"podTemplate": map[string]any{"spec": map[string]any{"containers": []any{}}}},
	}}
	u.SetName(name)
	u.SetNamespace(ns)
	u.SetUID(types.UID("uid-" + name))
	u.SetOwnerReferences([]metav1.OwnerReference{owner})
	return u
}

type fixture struct {
	kube *fake.Clientset
	dyn  *dynfake.FakeDynamicClient
	id   *Identifier
}

func newFixture(t *testing.T, pods []*corev1.Pod, sandboxes ...*unstructured.Unstructured) *fixture {
	t.Helper()
	var objs []runtime.Object
	for _, p := range pods {
		objs = append(objs, p)
	}
	kube := fake.NewClientset(objs...)
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{agentsandbox.Sandboxes: "SandboxList"})
	for _, s := range sandboxes {
		if _, err := dyn.Resource(agentsandbox.Sandboxes).Namespace(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	id, err := NewIdentifier(kube, dyn, ns)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	id.Start(ctx)
	if err := id.WaitForSync(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	return &fixture{kube: kube, dyn: dyn, id: id}
}

func (f *fixture) identify(ip string) (gateway.Caller, error) {
	return f.id.Identify(context.Background(), netip.MustParseAddr(ip))
}

// eventually waits for the informers to show a change.
func (f *fixture) eventually(t *testing.T, what, ip string, ok func(gateway.Caller, error) bool) {
	t.Helper()
	var c gateway.Caller
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err = f.identify(ip); ok(c, err) {
			return
		}
	}
	t.Fatalf("%s: %s is still %+v, %v", what, ip, c, err)
}

func refused(_ gateway.Caller, err error) bool { return errors.Is(err, gateway.ErrUnknownCaller) }

func TestIdentifyNamesPodSandboxAndClaim(t *testing.T) {
	f := newFixture(t,
		[]*corev1.Pod{sandboxPod("sb-claimed", "sb-claimed", "10.214.0.5"), sandboxPod("sb-warm", "sb-warm", "10.214.0.6")},
		sandbox("sb-claimed", "session-1"), sandbox("sb-warm", ""))
	c, err := f.identify("10.214.0.5")
	if want := (gateway.Caller{Namespace: ns, Pod: "sb-claimed", Sandbox: "sb-claimed", Claim: "session-1"}); err != nil || c != want {
		t.Errorf("a claimed sandbox's pod: %+v, %v; want %+v", c, err, want)
	}
	c, err = f.identify("10.214.0.6")
	if want := (gateway.Caller{Namespace: ns, Pod: "sb-warm", Sandbox: "sb-warm"}); err != nil || c != want {
		t.Errorf("a warm sandbox's pod (no claim): %+v, %v; want %+v", c, err, want)
	}
	// An IPv4-mapped IPv6 peer address is the same pod.
	if c, err := f.id.Identify(context.Background(), netip.MustParseAddr("::ffff:10.214.0.5")); err != nil || c.Sandbox != "sb-claimed" {
		t.Errorf("the mapped form of a pod address: %+v, %v", c, err)
	}
}

// A claim adopting a warm sandbox takes the Sandbox's controller reference
// (the pod keeps pointing at its Sandbox): the next request names the claim.
func TestIdentifyFollowsAdoption(t *testing.T) {
	f := newFixture(t, []*corev1.Pod{sandboxPod("sb-1", "sb-1", "10.214.0.5")}, sandbox("sb-1", ""))
	if c, err := f.identify("10.214.0.5"); err != nil || c.Claim != "" || c.Sandbox != "sb-1" {
		t.Fatalf("warm: %+v, %v", c, err)
	}
	adopted := sandbox("sb-1", "session-7")
	adopted.SetLabels(map[string]string{extensionsv1beta1.SandboxIDLabel: "uid-session-7"})
	if _, err := f.dyn.Resource(agentsandbox.Sandboxes).Namespace(ns).Update(context.Background(), adopted, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually(t, "after adoption", "10.214.0.5", func(c gateway.Caller, err error) bool {
		return err == nil && c.Claim == "session-7" && c.Sandbox == "sb-1" && c.Pod == "sb-1"
	})
}

func TestIdentifyRefuses(t *testing.T) {
	notSandbox := sandboxPod("orchestrator", "x", "10.214.0.7")
	notSandbox.OwnerReferences = []metav1.OwnerReference{ctrlRef("apps/v1", "ReplicaSet", "orchestrator-1", "uid-rs")}
	otherGroup := sandboxPod("impostor", "sb-1", "10.214.0.8")
	otherGroup.OwnerReferences = []metav1.OwnerReference{ctrlRef("evil.example/v1", sandboxv1beta1.SandboxKind, "sb-1", "uid-sb-1")}
	notController := sandboxPod("bystander", "sb-1", "10.214.0.9")
	notController.OwnerReferences[0].Controller = nil
	staleUID := sandboxPod("stale", "sb-1", "10.214.0.10")
	staleUID.OwnerReferences[0].UID = "uid-an-earlier-sb-1"
	orphan := sandboxPod("orphan", "sb-gone", "10.214.0.11")
	elsewhere := sandboxPod("sb-1", "sb-1", "10.214.0.12")
	elsewhere.Namespace = "agents-team-b"
	finished := sandboxPod("finished", "sb-1", "10.214.0.13")
	finished.Status.Phase = corev1.PodSucceeded
	f := newFixture(t, []*corev1.Pod{notSandbox, otherGroup, notController, staleUID, orphan, elsewhere, finished}, sandbox("sb-1", "session-1"))
	for ip, what := range map[string]string{
		"10.214.0.99": "no pod",
		"10.214.0.7":  "a pod no Sandbox controls",
		"10.214.0.8":  "a pod controlled by a Sandbox kind of another group",
		"10.214.0.9":  "a pod the Sandbox owns but does not control",
		"10.214.0.10": "a pod of an earlier Sandbox of the same name",
		"10.214.0.11": "a pod whose Sandbox is gone",
		"10.214.0.12": "a sandbox pod of another namespace",
		"10.214.0.13": "a finished pod",
	} {
		if c, err := f.identify(ip); !errors.Is(err, gateway.ErrUnknownCaller) {
			t.Errorf("%s (%s): %+v, %v; want ErrUnknownCaller", what, ip, c, err)
		}
	}
}

func TestIdentifyPodDeletedAndAddressReused(t *testing.T) {
	f := newFixture(t, []*corev1.Pod{sandboxPod("sb-1", "sb-1", "10.214.0.5")}, sandbox("sb-1", "session-1"), sandbox("sb-2", "session-2"))
	if c, err := f.identify("10.214.0.5"); err != nil || c.Pod != "sb-1" {
		t.Fatalf("before: %+v, %v", c, err)
	}
	pods := f.kube.CoreV1().Pods(ns)
	if err := pods.Delete(context.Background(), "sb-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually(t, "the pod deleted", "10.214.0.5", refused)

	if _, err := pods.Create(context.Background(), sandboxPod("sb-2", "sb-2", "10.214.0.5"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually(t, "the address reused by another sandbox's pod", "10.214.0.5", func(c gateway.Caller, err error) bool {
		return err == nil && c == gateway.Caller{Namespace: ns, Pod: "sb-2", Sandbox: "sb-2", Claim: "session-2"}
	})
}

// The informer may still hold a pod that is going away when its address
// is given to a new pod: the live one is the caller; two live pods on one
// address are refused.
func TestIdentifyPrefersTheLivePod(t *testing.T) {
	leaving := sandboxPod("sb-1", "sb-1", "10.214.0.5")
	now := metav1.Now()
	leaving.DeletionTimestamp = &now
	leaving.Finalizers = []string{"test/hold"}
	f := newFixture(t, []*corev1.Pod{leaving, sandboxPod("sb-2", "sb-2", "10.214.0.5")}, sandbox("sb-1", ""), sandbox("sb-2", "session-2"))
	if c, err := f.identify("10.214.0.5"); err != nil || c.Pod != "sb-2" {
		t.Errorf("a terminating and a live pod on one address: %+v, %v; want sb-2", c, err)
	}
	if _, err := f.kube.CoreV1().Pods(ns).Create(context.Background(), sandboxPod("sb-3", "sb-1", "10.214.0.5"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually(t, "two live pods on one address", "10.214.0.5", refused)
}

// A pod the sandbox recreates (a new address) is the same sandbox: the
// gateway's budget key, Namespace/Sandbox, does not change.
func TestRecreatedPodKeepsItsSandbox(t *testing.T) {
	f := newFixture(t, []*corev1.Pod{sandboxPod("sb-1", "sb-1", "10.214.0.5")}, sandbox("sb-1", "session-1"))
	before, _ := f.identify("10.214.0.5")
	pods := f.kube.CoreV1().Pods(ns)
	if err := pods.Delete(context.Background(), "sb-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(context.Background(), sandboxPod("sb-1", "sb-1", "10.214.0.40"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually(t, "the recreated pod", "10.214.0.40", func(c gateway.Caller, err error) bool { return err == nil && c == before })
	f.eventually(t, "the old address", "10.214.0.5", refused)
}

// The cache keeps only what the mapping reads.
func TestInformerKeepsSlimObjects(t *testing.T) {
	p := sandboxPod("sb-1", "sb-1", "10.214.0.5")
	p.Annotations = map[string]string{"big": strings.Repeat("x", 4096)}
	f := newFixture(t, []*corev1.Pod{p}, sandbox("sb-1", ""))
	o, ok, _ := f.id.pods.GetIndexer().GetByKey(ns + "/sb-1")
	cached, _ := o.(*corev1.Pod)
	if !ok || cached == nil || len(cached.Annotations) != 0 || len(cached.Spec.Containers) != 0 || cached.Status.PodIP != "10.214.0.5" {
		t.Errorf("cached pod: %+v", cached)
	}
	o, ok, _ = f.id.sandboxes.GetIndexer().GetByKey(ns + "/sb-1")
	sb, _ := o.(*unstructured.Unstructured)
	if !ok || sb == nil || sb.Object["spec"] != nil || len(sb.GetOwnerReferences()) != 1 {
		t.Errorf("cached sandbox: %+v", sb)
	}
}

// A gateway that cannot list Sandboxes says so within its timeout.
func TestWaitForSyncTimesOut(t *testing.T) {
	kube := fake.NewClientset()
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{agentsandbox.Sandboxes: "SandboxList"})
	dyn.PrependReactor("list", "sandboxes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("sandboxes.agents.x-k8s.io is forbidden")
	})
	id, err := NewIdentifier(kube, dyn, ns)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	id.Start(ctx)
	start := time.Now()
	err = id.WaitForSync(ctx, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "sandboxes.agents.x-k8s.io") || strings.Contains(err.Error(), "[pods") || !strings.Contains(err.Error(), ns) {
		t.Errorf("WaitForSync: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("WaitForSync took %s for a 300ms timeout", d)
	}
	if _, err := NewIdentifier(kube, dyn, ""); err == nil {
		t.Error("an Identifier without a namespace was made")
	}
}
