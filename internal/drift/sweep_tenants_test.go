package drift

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/paddock-platform/paddock/internal/model"
)

// manyTenants is platform() with n tenants, each in its own namespace.
func manyTenants(n int) *model.Platform {
	p := platform()
	base := p.Tenants[0]
	p.Tenants = nil
	for i := 0; i < n; i++ {
		t := base
		t.Name, t.Namespace = fmt.Sprintf("t%03d", i), fmt.Sprintf("agents-t%03d", i)
		p.Tenants = append(p.Tenants, t)
	}
	return p
}

// The tenants are swept several at a time, and their findings still come
// in the tenants' order; a tenant whose pods cannot be listed fails the
// sweep.
func TestSweepTenantsInTheirOrder(t *testing.T) {
	p := manyTenants(3 * sweepWorkers)
	var objs []runtime.Object
	for _, tn := range p.Tenants {
		objs = append(objs, &corev1.Pod{ObjectMeta: om(tn.Namespace, "stray", nil), Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	}
	got, err := sweepTenants(context.Background(), p, fake.NewClientset(objs...), nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(p.Tenants) {
		t.Fatalf("%d findings, want one per tenant:%s", len(got), describe(got))
	}
	for i, f := range got {
		if f.Rule != RuleRuntimeMissing || f.Tenant != p.Tenants[i].Name || f.Namespace != p.Tenants[i].Namespace {
			t.Errorf("finding %d: %s %s/%s of tenant %s, want S04 of tenant %s", i, f.Rule, f.Namespace, f.Name, f.Tenant, p.Tenants[i].Name)
		}
	}

	kube := fake.NewClientset(objs...)
	kube.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == p.Tenants[len(p.Tenants)-1].Namespace {
			return true, nil, errors.New("the server is on fire")
		}
		return false, nil, nil
	})
	if _, err := sweepTenants(context.Background(), p, kube, nil, time.Now()); err == nil || !strings.Contains(err.Error(), "on fire") {
		t.Errorf("a failed list gave %v", err)
	}
}
