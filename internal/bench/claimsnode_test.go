package bench

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// A pod counts its containers' requests summed, at least its largest init
// container's, plus the runtime's overhead; its limits are the containers'
// plus the overhead.
func TestPodRequestsAndLimits(t *testing.T) {
	q := resource.MustParse
	p := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{
			{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("100m")}, Limits: corev1.ResourceList{"cpu": q("200m"), "ephemeral-storage": q("1Gi")}}},
			{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("150m")}, Limits: corev1.ResourceList{"cpu": q("300m"), "ephemeral-storage": q("1Gi")}}},
		},
		InitContainers: []corev1.Container{
			{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("400m"), "memory": q("64Mi")}}},
		},
		Overhead: corev1.ResourceList{"cpu": q("50m"), "memory": q("16Mi")},
	}}
	req := podRequests(p)
	if got := req["cpu"]; got.Cmp(q("450m")) != 0 {
		t.Errorf("cpu request %s, want 450m (the init container's 400m over the containers' 250m, plus 50m)", got.String())
	}
	if got := req["memory"]; got.Cmp(q("80Mi")) != 0 {
		t.Errorf("memory request %s, want 80Mi", got.String())
	}
	lim := podLimits(p)
	if got := lim["cpu"]; got.Cmp(q("550m")) != 0 {
		t.Errorf("cpu limit %s, want 550m", got.String())
	}
	if got := lim["ephemeral-storage"]; got.Cmp(q("2Gi")) != 0 {
		t.Errorf("ephemeral-storage limit %s, want 2Gi", got.String())
	}
}
