package pools_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kubefake "k8s.io/client-go/kubernetes/fake"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"

	"github.com/paddock-platform/paddock/internal/pools"
	"github.com/paddock-platform/paddock/internal/pools/poolstest"
)

const ns = "agents-team-a"

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func states(p pools.Pool) map[string]pools.State {
	m := map[string]pools.State{}
	for _, s := range p.Sandboxes {
		m[s.Name] = s.State
	}
	return m
}

func TestClassify(t *testing.T) {
	v1 := poolstest.Template(t, "agent", "localhost/paddock/busybox:v1")
	v2 := poolstest.Template(t, "agent", "localhost/paddock/busybox:v2")
	pool := poolstest.WarmPool(t, ns, "agent", "agent", "Recreate", 2)
	a := poolstest.Sandbox(t, pool, v1, "agent-aaaaa", t0, true)
	b := poolstest.Sandbox(t, pool, v1, "agent-bbbbb", t0.Add(time.Minute), true)
	pods := []corev1.Pod{poolstest.Pod(ns, "agent-aaaaa", true), poolstest.Pod(ns, "agent-bbbbb", true)}

	t.Run("built from the template in use", func(t *testing.T) {
		p := pools.Classify(pool, poolstest.U(t, v1), []unstructured.Unstructured{a, b}, nil, pods, nil)
		if p.Problem != "" || p.Current != 2 || p.Ready != 2 || p.Stale != 0 || !p.Fresh() || p.UpdateStrategy != "Recreate" || p.Desired != 2 {
			t.Fatalf("got %+v", p)
		}
		if !p.Oldest.Equal(t0) || p.OldestAge(t0.Add(time.Hour)) != time.Hour {
			t.Errorf("oldest %v, want %v", p.Oldest, t0)
		}
		if p.TemplateHash == "" || p.TemplateHash != a.GetLabels()[sandboxv1beta1.SandboxTemplateHashLabel] {
			t.Errorf("template hash %q, sandbox label %q", p.TemplateHash, a.GetLabels()[sandboxv1beta1.SandboxTemplateHashLabel])
		}
	})
	t.Run("the template's image changed", func(t *testing.T) {
		p := pools.Classify(pool, poolstest.U(t, v2), []unstructured.Unstructured{a, b}, nil, pods, nil)
		if p.Stale != 2 || p.Current != 0 || p.Ready != 0 || p.Fresh() {
			t.Fatalf("got %+v", p)
		}
		if got := strings.Join(p.StaleNames(), ","); got != "agent-aaaaa,agent-bbbbb" {
			t.Errorf("stale names %s", got)
		}
		if why := p.Sandboxes[0].Why; !strings.Contains(why, "pod spec") || !strings.Contains(why, p.TemplateHash) {
			t.Errorf("why %q", why)
		}
	})
	t.Run("one replaced, one not yet", func(t *testing.T) {
		c := poolstest.Sandbox(t, pool, v2, "agent-ccccc", t0.Add(2*time.Minute), false)
		p := pools.Classify(pool, poolstest.U(t, v2), []unstructured.Unstructured{a, c}, nil, append(pods, poolstest.Pod(ns, "agent-ccccc", false)), nil)
		if p.Stale != 1 || p.Current != 1 || p.Ready != 0 || p.Fresh() {
			t.Fatalf("got %+v", p)
		}
		if s := states(p); s["agent-aaaaa"] != pools.Stale || s["agent-ccccc"] != pools.Current {
			t.Errorf("states %v", s)
		}
	})
	t.Run("only the pod template's labels changed", func(t *testing.T) {
		relabelled := v1.DeepCopy()
		relabelled.Spec.PodTemplate.ObjectMeta.Labels = map[string]string{"example.com/team": "a"}
		p := pools.Classify(pool, poolstest.U(t, relabelled), []unstructured.Unstructured{a, b}, nil, pods, nil)
		if p.TemplateHash == a.GetLabels()[sandboxv1beta1.SandboxTemplateHashLabel] {
			t.Fatal("relabelling did not change the blueprint hash: the case is not tested")
		}
		if p.Stale != 0 || !p.Fresh() {
			t.Errorf("labels alone made sandboxes stale (the controller does not replace them): %+v", p)
		}
	})
	t.Run("the pool moved to another template", func(t *testing.T) {
		other := poolstest.Template(t, "agent-v2", "localhost/paddock/busybox:v1")
		moved := poolstest.WarmPool(t, ns, "agent", "agent-v2", "Recreate", 2)
		moved.SetUID(pool.GetUID())
		p := pools.Classify(moved, poolstest.U(t, other), []unstructured.Unstructured{a, b}, nil, pods, nil)
		if p.Stale != 2 || !strings.Contains(p.Sandboxes[0].Why, "another template") {
			t.Fatalf("got %+v", p)
		}
	})
	t.Run("claimed sandboxes are counted, never judged", func(t *testing.T) {
		taken := poolstest.Adopt(poolstest.Sandbox(t, pool, v1, "agent-taken", t0.Add(-time.Hour), true), "session-1")
		elsewhere := poolstest.Adopt(poolstest.Sandbox(t, pool, v1, "agent-other", t0.Add(-time.Hour), true), "session-2")
		claims := []unstructured.Unstructured{poolstest.Claim(ns, "session-1", "agent"), poolstest.Claim(ns, "session-2", "another-pool")}
		p := pools.Classify(pool, poolstest.U(t, v2), []unstructured.Unstructured{a, taken, elsewhere}, claims, append(pods, poolstest.Pod(ns, "agent-taken", true)), nil)
		if p.Claimed != 1 || p.Stale != 1 {
			t.Fatalf("got %+v", p)
		}
		if s := states(p); s["agent-taken"] != pools.Claimed || s["agent-other"] != "" {
			t.Errorf("states %v", s)
		}
		if !p.Oldest.Equal(t0) {
			t.Errorf("oldest %v counts a claimed sandbox", p.Oldest)
		}
		if p.Sandboxes[0].Claim != "session-1" {
			t.Errorf("claim %q", p.Sandboxes[0].Claim)
		}
	})
	t.Run("being deleted", func(t *testing.T) {
		gone := a.DeepCopy()
		gone.SetDeletionTimestamp(&metav1.Time{Time: t0.Add(time.Hour)})
		p := pools.Classify(pool, poolstest.U(t, v2), []unstructured.Unstructured{*gone, b}, nil, pods, nil)
		if p.Terminating != 1 || p.Stale != 1 {
			t.Fatalf("got %+v", p)
		}
	})
	t.Run("not ready", func(t *testing.T) {
		p := pools.Classify(pool, poolstest.U(t, v1), []unstructured.Unstructured{a, b}, nil, []corev1.Pod{poolstest.Pod(ns, "agent-aaaaa", true), poolstest.Pod(ns, "agent-bbbbb", false)}, nil)
		if p.Ready != 1 || p.Current != 2 || p.Fresh() {
			t.Fatalf("got %+v", p)
		}
		// A pod being deleted is not ready, whatever it says.
		dying := poolstest.Pod(ns, "agent-bbbbb", true)
		dying.DeletionTimestamp = &metav1.Time{Time: t0}
		if p := pools.Classify(pool, poolstest.U(t, v1), []unstructured.Unstructured{a, b}, nil, []corev1.Pod{poolstest.Pod(ns, "agent-aaaaa", true), dying}, nil); p.Ready != 1 {
			t.Errorf("a dying pod counted ready: %+v", p)
		}
	})
	t.Run("other pools and orphans", func(t *testing.T) {
		otherPool := poolstest.WarmPool(t, ns, "other", "agent", "Recreate", 1)
		foreign := poolstest.Sandbox(t, otherPool, v1, "other-xxxxx", t0, true)
		orphan := poolstest.Sandbox(t, pool, v1, "agent-orphn", t0, true)
		orphan.SetOwnerReferences(nil)
		p := pools.Classify(pool, poolstest.U(t, v1), []unstructured.Unstructured{a, foreign, orphan}, nil, append(pods, poolstest.Pod(ns, "agent-orphn", true)), nil)
		if s := states(p); s["other-xxxxx"] != "" || s["agent-orphn"] != pools.Current || p.Current != 2 {
			t.Errorf("states %v (%+v)", s, p)
		}
		// Owned by an earlier pool of the same name (another uid): not this pool's.
		stolen := a.DeepCopy()
		refs := stolen.GetOwnerReferences()
		refs[0].UID = "an-earlier-pool"
		stolen.SetOwnerReferences(refs)
		if p := pools.Classify(pool, poolstest.U(t, v1), []unstructured.Unstructured{*stolen}, nil, pods, nil); len(p.Sandboxes) != 0 {
			t.Errorf("a sandbox of an earlier pool counted: %+v", p)
		}
	})
	t.Run("when the template was last written", func(t *testing.T) {
		written := poolstest.U(t, v2)
		written.SetCreationTimestamp(metav1.Time{Time: t0})
		written.SetManagedFields([]metav1.ManagedFieldsEntry{
			{Manager: "pulumi-kubernetes", Time: &metav1.Time{Time: t0.Add(time.Hour)}},
			{Manager: "agent-sandbox-controller", Time: &metav1.Time{Time: t0.Add(time.Minute)}},
			{Manager: "no-time"},
		})
		if p := pools.Classify(pool, written, nil, nil, nil, nil); !p.TemplateWritten.Equal(t0.Add(time.Hour)) {
			t.Errorf("template written %v, want its newest managedFields time %v", p.TemplateWritten, t0.Add(time.Hour))
		}
		written.SetManagedFields(nil)
		if p := pools.Classify(pool, written, nil, nil, nil, nil); !p.TemplateWritten.Equal(t0) {
			t.Errorf("template written %v, want its creation %v", p.TemplateWritten, t0)
		}
	})
	t.Run("template missing", func(t *testing.T) {
		p := pools.Classify(pool, nil, []unstructured.Unstructured{a, b}, nil, pods, nil)
		if p.Problem == "" || p.Fresh() || !strings.Contains(p.Problem, `"agent"`) {
			t.Fatalf("got %+v", p)
		}
	})
	t.Run("update strategy left to the CRD", func(t *testing.T) {
		p := pools.Classify(poolstest.WarmPool(t, ns, "agent", "agent", "", 2), poolstest.U(t, v1), nil, nil, nil, nil)
		if p.UpdateStrategy != "OnReplenish" || p.Fresh() || !p.Oldest.IsZero() || p.OldestAge(t0) != 0 {
			t.Errorf("got %+v", p)
		}
	})
}

// The controller's hash of a name, spelled out: FNV-1a over its bytes.
func TestNameHash(t *testing.T) {
	for in, want := range map[string]string{"": "811c9dc5", "a": "e40c292c", "agent": pools.NameHash("agent")} {
		if got := pools.NameHash(in); got != want || len(got) != 8 {
			t.Errorf("pools.NameHash(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRead(t *testing.T) {
	v1 := poolstest.Template(t, "agent", "localhost/paddock/busybox:v1")
	v1.Namespace = ns
	pool := poolstest.WarmPool(t, ns, "agent", "agent", "Recreate", 1)
	sb := poolstest.Sandbox(t, pool, v1, "agent-aaaaa", t0, true)
	// A second tenant's pool in another namespace, with nothing in it.
	otherTpl := poolstest.Template(t, "agent", "localhost/paddock/busybox:v1")
	otherTpl.Namespace = "agents-team-b"
	other := poolstest.WarmPool(t, "agents-team-b", "agent", "agent", "OnReplenish", 1)
	tplU, otherU := poolstest.U(t, v1), poolstest.U(t, otherTpl)
	tplU.SetNamespace(ns)
	otherU.SetNamespace("agents-team-b")

	dyn := poolstest.Dynamic(t, pool, other, tplU, otherU, &sb)
	p := poolstest.Pod(ns, "agent-aaaaa", true)
	kube := kubefake.NewClientset(&p)

	all, err := pools.Read(context.Background(), pools.Clients{Dyn: dyn, Kube: kube}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Key() != "agents-team-a/agent" || all[1].Key() != "agents-team-b/agent" {
		t.Fatalf("got %+v", all)
	}
	if all[0].Current != 1 || all[0].Ready != 1 || !all[0].Fresh() || all[1].Current != 0 || all[1].UpdateStrategy != "OnReplenish" {
		t.Errorf("got %+v", all)
	}
	one, err := pools.Read(context.Background(), pools.Clients{Dyn: dyn, Kube: kube}, "agents-team-b")
	if err != nil || len(one) != 1 || one[0].Namespace != "agents-team-b" {
		t.Errorf("one namespace: %+v, %v", one, err)
	}
}

// A pod that runs other than its sandbox says is stale however its labels
// read, and marked diverged: the controller's hash test cannot see it.
func TestClassifyPodDivergence(t *testing.T) {
	tpl := poolstest.Template(t, "agent", "localhost/paddock/busybox:v1")
	pool := poolstest.WarmPool(t, ns, "agent", "agent", "OnReplenish", 1)
	sb := poolstest.Sandbox(t, pool, tpl, "agent-aaaaa", t0, true)
	podAt := func(edit func(*corev1.Pod)) corev1.Pod {
		pod := poolstest.Pod(ns, "agent-aaaaa", true)
		pod.Spec = *tpl.Spec.PodTemplate.Spec.DeepCopy()
		pod.CreationTimestamp = metav1.NewTime(t0)
		if edit != nil {
			edit(&pod)
		}
		return pod
	}
	before := pools.RuntimeClasses{"gvisor": t0.Add(-time.Hour)}
	for _, tc := range []struct {
		name    string
		pod     corev1.Pod
		classes pools.RuntimeClasses
		why     string // "" = current
	}{
		{"as the template says", podAt(nil), before, ""},
		{"classes unknown", podAt(nil), nil, ""},
		{"image set on the pod", podAt(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "attacker/box:latest" }), before, "runs image attacker/box:latest"},
		{"class recreated after the pod started", podAt(nil), pools.RuntimeClasses{"gvisor": t0.Add(time.Second)}, `started before runtime class "gvisor" was last created`},
		{"class gone", podAt(nil), pools.RuntimeClasses{}, `runtime class "gvisor" no longer exists`},
		{"another class on the pod", podAt(func(p *corev1.Pod) { p.Spec.RuntimeClassName = new("runc") }), before, `runtime class "runc", the template says "gvisor"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pools.Classify(pool, poolstest.U(t, tpl), []unstructured.Unstructured{sb}, nil, []corev1.Pod{tc.pod}, tc.classes)
			if len(p.Sandboxes) != 1 {
				t.Fatalf("sandboxes %+v", p.Sandboxes)
			}
			s := p.Sandboxes[0]
			if tc.why == "" {
				if s.State != pools.Current || s.Diverged || p.Diverged != 0 || !p.Fresh() {
					t.Fatalf("got %+v (pool %+v), want current", s, p)
				}
				return
			}
			if s.State != pools.Stale || !s.Diverged || p.Diverged != 1 || p.Stale != 1 || p.Fresh() || !strings.Contains(s.Why, tc.why) {
				t.Fatalf("got %+v, want stale and diverged saying %q", s, tc.why)
			}
			if s.UID != sb.GetUID() || len(p.DivergedNames()) != 1 {
				t.Errorf("uid %q, diverged %v", s.UID, p.DivergedNames())
			}
		})
	}
	t.Run("a claimed sandbox is never judged here", func(t *testing.T) {
		claimed := poolstest.Adopt(sb, "session-1")
		pod := podAt(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "attacker/box:latest" })
		p := pools.Classify(pool, poolstest.U(t, tpl), []unstructured.Unstructured{claimed}, []unstructured.Unstructured{poolstest.Claim(ns, "session-1", "agent")}, []corev1.Pod{pod}, before)
		if p.Claimed != 1 || p.Diverged != 0 {
			t.Fatalf("got %+v", p)
		}
	})
}
