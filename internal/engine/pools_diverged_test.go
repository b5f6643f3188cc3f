package engine

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"

	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/pools"
	"github.com/paddock-platform/paddock/internal/pools/poolstest"
)

// divergedCluster is pool "agent" at template v2 holding sandboxes built
// from v2 whose pods run it as the template says, but for what edit does to
// each pod; runtime class gvisor was created at classCreated.
type divergedCluster struct {
	tpl     *extv1beta1.SandboxTemplate
	pool    *unstructured.Unstructured
	clients pools.Clients
	kube    *kubefake.Clientset
}

func newDivergedCluster(t *testing.T, strategy string, classCreated time.Time, sandboxes []string, edit func(name string, pod *corev1.Pod)) *divergedCluster {
	t.Helper()
	c := &divergedCluster{tpl: poolstest.Template(t, "agent", "localhost/paddock/busybox:v2"), pool: poolstest.WarmPool(t, poolNS, "agent", "agent", strategy, 2)}
	objs := []*unstructured.Unstructured{c.pool, poolstest.U(t, c.tpl)}
	kubeObjs := []runtime.Object{&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor", CreationTimestamp: metav1.NewTime(classCreated)}, Handler: "runsc"}}
	started := time.Now().Add(-time.Hour)
	for _, name := range sandboxes {
		sb := poolstest.Sandbox(t, c.pool, c.tpl, name, started, true)
		objs = append(objs, &sb)
		pod := c.pod(name, started)
		if edit != nil {
			edit(name, &pod)
		}
		kubeObjs = append(kubeObjs, &pod)
	}
	dyn := poolstest.Dynamic(t, objs...)
	c.kube = kubefake.NewClientset(kubeObjs...)
	c.clients = pools.Clients{Dyn: dyn, Kube: c.kube}
	return c
}

func (c *divergedCluster) pod(name string, created time.Time) corev1.Pod {
	pod := poolstest.Pod(poolNS, name, true)
	pod.Spec = *c.tpl.Spec.PodTemplate.Spec.DeepCopy()
	pod.CreationTimestamp = metav1.NewTime(created)
	return pod
}

// controllerRefills plays the controller: once a sandbox is deleted, the
// next read finds a current replacement with its pod.
func (c *divergedCluster) controllerRefills(t *testing.T) {
	dyn := c.clients.Dyn.(interface {
		PrependReactor(verb, resource string, fn k8stesting.ReactionFunc)
		Tracker() k8stesting.ObjectTracker
	})
	var mu sync.Mutex
	n := 0
	dyn.PrependReactor("delete", "sandboxes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		name := "agent-new" + string(rune('0'+n))
		sb := poolstest.Sandbox(t, c.pool, c.tpl, name, time.Now(), true)
		if err := dyn.Tracker().Create(agentsandbox.Sandboxes, &sb, poolNS); err != nil {
			t.Error(err)
		}
		pod := c.pod(name, time.Now())
		if err := c.kube.Tracker().Add(&pod); err != nil {
			t.Error(err)
		}
		return false, nil, nil // the tracker deletes the old one
	})
}

func deletes(c *divergedCluster) []k8stesting.DeleteActionImpl {
	var out []k8stesting.DeleteActionImpl
	for _, a := range c.clients.Dyn.(interface{ Actions() []k8stesting.Action }).Actions() {
		if d, ok := a.(k8stesting.DeleteActionImpl); ok {
			out = append(out, d)
		}
	}
	return out
}

// An unclaimed sandbox whose pod runs another image, or started under a
// runtime class recreated since, reads current to the controller: up
// deletes it (naming its UID), says why, and waits for the replacement,
// under OnReplenish too. A claimed one is left alone.
func TestSettlePoolsDeletesDivergedSandboxes(t *testing.T) {
	fastPoll(t)
	for _, tc := range []struct {
		name, strategy string
		classCreated   time.Time
		edit           func(string, *corev1.Pod)
		says           string
	}{
		{"image set on a warm pod", "Recreate", time.Now().Add(-48 * time.Hour), func(name string, p *corev1.Pod) {
			if name == "agent-a" {
				p.Spec.Containers[0].Image = "attacker/box:latest"
			}
		}, "runs image attacker/box:latest"},
		{"runtime class recreated after the pods started, OnReplenish", "OnReplenish", time.Now().Add(-time.Minute), nil, `started before runtime class "gvisor" was last created`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newDivergedCluster(t, tc.strategy, tc.classCreated, []string{"agent-a", "agent-b"}, tc.edit)
			c.controllerRefills(t)
			var out bytes.Buffer
			if err := settlePools(context.Background(), c.clients, &out, poolSpec(t, tc.strategy, ""), time.Now(), time.Minute); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			got := out.String()
			if !strings.Contains(got, "paddock up: deleted sandbox agent-a of warm pool agents-team-a/agent: ") || !strings.Contains(got, tc.says) {
				t.Errorf("output does not name the deletion and why (%q):\n%s", tc.says, got)
			}
			if !strings.Contains(got, "holds only current sandboxes, 2/2 ready") {
				t.Errorf("up did not wait for the replacement:\n%s", got)
			}
			ds := deletes(c)
			if len(ds) == 0 {
				t.Fatal("nothing deleted")
			}
			for _, d := range ds {
				pre := d.GetDeleteOptions().Preconditions
				if pre == nil || pre.UID == nil || string(*pre.UID) != "sb-"+d.GetName() {
					t.Errorf("delete of %s without its UID as precondition: %+v", d.GetName(), pre)
				}
			}
		})
	}

	t.Run("claimed: left alone", func(t *testing.T) {
		c := newDivergedCluster(t, "Recreate", time.Now().Add(-48*time.Hour), nil, nil)
		sb := poolstest.Adopt(poolstest.Sandbox(t, c.pool, c.tpl, "agent-taken", time.Now().Add(-time.Hour), true), "session-1")
		claim := poolstest.Claim(poolNS, "session-1", "agent")
		dyn := c.clients.Dyn.(interface {
			Tracker() k8stesting.ObjectTracker
		})
		if err := dyn.Tracker().Create(agentsandbox.Sandboxes, &sb, poolNS); err != nil {
			t.Fatal(err)
		}
		if err := dyn.Tracker().Create(agentsandbox.SandboxClaims, &claim, poolNS); err != nil {
			t.Fatal(err)
		}
		pod := c.pod("agent-taken", time.Now().Add(-time.Hour))
		pod.Spec.Containers[0].Image = "attacker/box:latest"
		if err := c.kube.Tracker().Add(&pod); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		_ = settlePools(context.Background(), c.clients, &out, poolSpec(t, "Recreate", ""), time.Now(), -1)
		if len(deletes(c)) != 0 {
			t.Errorf("up deleted a claimed sandbox:\n%s", out.String())
		}
	})
}

// A pool up cannot judge (its template missing) fails up, naming it.
func TestSettlePoolsFailsOnAPoolItCannotJudge(t *testing.T) {
	c := newDivergedCluster(t, "Recreate", time.Now().Add(-48*time.Hour), []string{"agent-a"}, nil)
	dyn := c.clients.Dyn.(interface {
		Tracker() k8stesting.ObjectTracker
	})
	if err := dyn.Tracker().Delete(agentsandbox.SandboxTemplates, poolNS, "agent"); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := settlePools(context.Background(), c.clients, &out, poolSpec(t, "Recreate", ""), time.Now(), time.Minute)
	if err == nil || !strings.Contains(err.Error(), `warm pool agents-team-a/agent cannot be judged: its template "agent" does not exist`) {
		t.Fatalf("err = %v, want up to fail naming the pool and why", err)
	}
}
