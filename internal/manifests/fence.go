package manifests

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/paddock-platform/paddock/internal/model"
)

// Names of the per-tenant fence objects (stable: verify and drift look them up).
const (
	QuotaName      = "tenant-quota"
	LimitRangeName = "tenant-defaults"
)

// ResourceQuota caps the tenant's whole fleet: pods, CPU, memory, ephemeral
// storage, PVC count and requested storage. nil when the spec disables it.
func ResourceQuota(p *model.Platform, t model.Tenant) (*corev1.ResourceQuota, error) {
	q := t.Quota
	if q.Disabled {
		return nil, nil
	}
	hard := corev1.ResourceList{}
	set := func(name corev1.ResourceName, v string) error {
		if v == "" {
			return nil
		}
		qty, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("tenant %s quota %s %q: %w", t.Name, name, v, err)
		}
		hard[name] = qty
		return nil
	}
	for _, e := range []struct {
		name corev1.ResourceName
		v    string
	}{
		{corev1.ResourceLimitsCPU, q.LimitsCPU},
		{corev1.ResourceLimitsMemory, q.LimitsMemory},
		{corev1.ResourceLimitsEphemeralStorage, q.LimitsEphemeralStorage},
		{corev1.ResourceRequestsStorage, q.RequestsStorage},
	} {
		if err := set(e.name, e.v); err != nil {
			return nil, err
		}
	}
	if q.Pods > 0 {
		hard[corev1.ResourcePods] = *resource.NewQuantity(int64(q.Pods), resource.DecimalSI)
	}
	if q.PersistentVolumeClaims > 0 {
		hard["count/persistentvolumeclaims"] = *resource.NewQuantity(int64(q.PersistentVolumeClaims), resource.DecimalSI)
	}
	return &corev1.ResourceQuota{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
		ObjectMeta: meta(QuotaName, t.Namespace, p.Labels(t.Name)),
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
	}, nil
}

// LimitRange gives every container in the namespace default requests and limits,
// so nothing runs unbounded even if it bypasses the templates. nil when disabled.
func LimitRange(p *model.Platform, t model.Tenant) (*corev1.LimitRange, error) {
	if t.LimitRange.Disabled {
		return nil, nil
	}
	res, err := resources(t.LimitRange.Defaults)
	if err != nil {
		return nil, fmt.Errorf("tenant %s limit range: %w", t.Name, err)
	}
	return &corev1.LimitRange{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "LimitRange"},
		ObjectMeta: meta(LimitRangeName, t.Namespace, p.Labels(t.Name)),
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:           corev1.LimitTypeContainer,
			Default:        res.Limits,
			DefaultRequest: res.Requests,
		}}},
	}, nil
}
