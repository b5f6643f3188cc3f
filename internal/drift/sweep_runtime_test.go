package drift

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// A pod of a declared runtime class is judged by the handler the class
// resolves to: swapped to runc, deleted, or recreated after the pod started
// (a swap put back since), it is reported; one started under the class as it
// stands is not.
func TestSweepPodsJudgeTheHandler(t *testing.T) {
	p := platform()
	ns := p.Tenants[0].Namespace
	classMade := time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC)
	pod := func(name string, created time.Time) *corev1.Pod {
		o := om(ns, name, nil)
		o.CreationTimestamp = metav1.NewTime(created)
		return &corev1.Pod{ObjectMeta: o, Spec: corev1.PodSpec{RuntimeClassName: ptr("gvisor")}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	class := func(handler string, created time.Time) *nodev1.RuntimeClass {
		return &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor", CreationTimestamp: metav1.NewTime(created)}, Handler: handler}
	}
	for _, c := range []struct {
		name  string
		class *nodev1.RuntimeClass
		pod   *corev1.Pod
		want  string // "" no finding
	}{
		{"as declared", class("runsc", classMade), pod("started-after", classMade.Add(time.Hour)), ""},
		{"swapped to runc", class("runc", classMade), pod("started-after", classMade.Add(time.Hour)), "now resolves to handler runc, not runsc as declared"},
		{"deleted", nil, pod("started-after", classMade.Add(time.Hour)), "runtime class gvisor no longer exists"},
		{"put back after the pod started", class("runsc", classMade.Add(2*time.Hour)), pod("started-during-swap", classMade.Add(time.Hour)), "before runtime class gvisor was last created"},
	} {
		t.Run(c.name, func(t *testing.T) {
			objs := []runtime.Object{c.pod}
			if c.class != nil {
				objs = append(objs, c.class)
			}
			got, err := sweepPods(context.Background(), p, p.Tenants[0], fake.NewClientset(objs...))
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case c.want == "" && len(got) != 0:
				t.Errorf("reported:%s", describe(got))
			case c.want != "" && (len(got) != 1 || got[0].Rule != RuleRuntimeMissing || !strings.Contains(got[0].Reason, c.want) ||
				!strings.Contains(got[0].Fix, "kubectl delete pod -n "+ns+" "+c.pod.Name)):
				t.Errorf("want one S04 finding with %q:%s", c.want, describe(got))
			}
		})
	}
}
