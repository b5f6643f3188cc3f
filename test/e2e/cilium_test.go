//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
)

var cnpGVR = schema.GroupVersionResource{Group: "cilium.io", Version: "v2", Resource: "ciliumnetworkpolicies"}

// The CiliumNetworkPolicies Paddock renders are accepted by the real API server
// validating them against Cilium's own CRD schema (installed by `local up`,
// CILIUM_VERSION), and that schema really is enforced: a malformed policy is
// refused. TestNamedEgressEnforced shows the agent enforcing it.
func TestCiliumFQDNPolicyAcceptedByCiliumSchema(t *testing.T) {
	e := live
	const ns = "e2e-cilium"
	if _, err := e.kube.CoreV1().Namespaces().Create(ctxT(t, 10*time.Second), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.kube.CoreV1().Namespaces().Delete(ctxTimeout(10*time.Second), ns, metav1.DeleteOptions{})
	})
	p := &model.Platform{Name: "cilium-check", Target: model.Target{Kind: model.TargetLocal, FQDNPolicy: model.FQDNPolicyCilium}}
	tenant := model.DefaultTenant("cilium")
	tenant.Namespace = ns
	tenant.Egress.FQDNs = []string{"api.example-llm-provider.com", "*.githubusercontent.com"}
	cnp := manifests.FQDNPolicy(p, tenant)
	if cnp == nil || cnp.GetKind() != "CiliumNetworkPolicy" {
		t.Fatalf("no CiliumNetworkPolicy rendered: %v", cnp)
	}
	created, err := e.dyn.Resource(cnpGVR).Namespace(ns).Create(ctxT(t, 10*time.Second), cnp, metav1.CreateOptions{FieldValidation: "Strict"})
	if err != nil {
		t.Fatalf("the API server refused Paddock's CiliumNetworkPolicy: %v", err)
	}
	if created.GetUID() == "" {
		t.Fatal("created policy has no UID")
	}

	bad := cnp.DeepCopy()
	bad.SetName("malformed")
	bad.Object["spec"].(map[string]any)["egress"] = []any{map[string]any{"toPorts": []any{map[string]any{"ports": []any{map[string]any{"port": "443", "protocol": "NOT-A-PROTOCOL"}}}}}}
	_, err = e.dyn.Resource(cnpGVR).Namespace(ns).Create(ctxT(t, 10*time.Second), bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil {
		t.Fatal("a CiliumNetworkPolicy with protocol NOT-A-PROTOCOL was accepted: Cilium's CRD schema is not being enforced")
	}
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "protocol") {
		t.Fatalf("want a schema validation error on protocol, got: %v", err)
	}
}
