package drift

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"

	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
)

var lifetimeNow = time.Date(2030, 1, 2, 12, 0, 0, 0, time.UTC)

func claimLive(name string, created time.Time, policy, shutdown string) *unstructured.Unstructured {
	l := map[string]any{"ttlSecondsAfterFinished": int64(600), "shutdownPolicy": policy}
	if shutdown != "" {
		l["shutdownTime"] = shutdown
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": agentsandbox.SandboxClaims.GroupVersion().String(), "kind": "SandboxClaim",
		"spec": map[string]any{"warmPoolRef": map[string]any{"name": "agent"}, "lifecycle": l},
	}}
	u.SetNamespace("agents-a")
	u.SetName(name)
	u.SetUID(types.UID("uid-" + name))
	u.SetCreationTimestamp(metav1.NewTime(created))
	return u
}

func sandboxLive(name string, created time.Time, shutdown string, ownerKind, ownerUID string, expired bool) *unstructured.Unstructured {
	spec := map[string]any{"podTemplate": map[string]any{"spec": map[string]any{}}}
	if shutdown != "" {
		spec["shutdownTime"] = shutdown
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": agentsandbox.Sandboxes.GroupVersion().String(), "kind": "Sandbox", "spec": spec,
	}}
	if expired {
		u.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": string(sandboxv1beta1.SandboxConditionReady), "status": "False", "reason": sandboxv1beta1.SandboxReasonExpired}}}
	}
	u.SetNamespace("agents-a")
	u.SetName(name)
	u.SetCreationTimestamp(metav1.NewTime(created))
	if ownerKind != "" {
		yes := true
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: agentsandbox.SandboxClaims.GroupVersion().String(), Kind: ownerKind, Name: "o", UID: types.UID(ownerUID), Controller: &yes}})
	}
	return u
}

// lifetimeClient serves objs by their resource: the fake's guess from the
// kind would file a Sandbox under "sandboxs".
func lifetimeClient(t testing.TB, objs ...*unstructured.Unstructured) *dynamicfake.FakeDynamicClient {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		agentsandbox.SandboxClaims: "SandboxClaimList",
		agentsandbox.Sandboxes:     "SandboxList",
	})
	for _, o := range objs {
		gvr := agentsandbox.SandboxClaims
		if o.GetKind() == "Sandbox" {
			gvr = agentsandbox.Sandboxes
		}
		if err := dyn.Tracker().Create(gvr, o, o.GetNamespace()); err != nil {
			t.Fatal(err)
		}
	}
	return dyn
}

// Live sessions are held to their end whoever admitted them: a claim or a
// direct sandbox past its shutdownTime or max_ttl that the controller did
// not end is named with how long it is over, one that nothing ends is named
// too, and what the controller ended, a claim's running sandbox and an idle
// pool member are left alone.
func TestLifetimesReportSessionsPastTheirEnd(t *testing.T) {
	tn := model.DefaultTenant("a")
	tn.Namespace = "agents-a"
	tn.Claims.MaxTTL = 4 * time.Hour
	h := func(d time.Duration) time.Time { return lifetimeNow.Add(-d) }
	rfc := func(at time.Time) string { return at.UTC().Format(time.RFC3339) }

	dying := claimLive("deleting", h(5*time.Hour), "Delete", rfc(h(time.Hour)))
	dying.SetFinalizers([]string{"example.com/hold"})
	dt := metav1.NewTime(h(30 * time.Minute))
	dying.SetDeletionTimestamp(&dt)

	dyn := lifetimeClient(t,
		claimLive("in-time", h(time.Hour), "Delete", rfc(lifetimeNow.Add(time.Hour))),
		claimLive("overdue", h(2*time.Hour), "Delete", rfc(h(10*time.Minute))),
		claimLive("in-grace", h(2*time.Hour), "Delete", rfc(h(30*time.Second))),
		claimLive("no-end", h(time.Hour), "Delete", ""),
		claimLive("beyond-max", h(time.Hour), "Delete", rfc(lifetimeNow.Add(10*time.Hour))),
		claimLive("retained-ended", h(3*time.Hour), "Retain", rfc(h(2*time.Hour))),
		claimLive("retained-running", h(3*time.Hour), "Retain", rfc(h(2*time.Hour))),
		dying,
		sandboxLive("of-retained-running", h(3*time.Hour), "", "SandboxClaim", "uid-retained-running", false),
		sandboxLive("of-in-time", h(time.Hour), "", "SandboxClaim", "uid-in-time", false),
		sandboxLive("pool-member", h(48*time.Hour), "", "SandboxWarmPool", "pool", false),
		sandboxLive("direct-overdue", h(6*time.Hour), rfc(h(2*time.Hour)), "", "", false),
		sandboxLive("direct-expired", h(6*time.Hour), rfc(h(2*time.Hour)), "", "", true),
		sandboxLive("direct-forever", h(5*time.Hour), "", "", "", false),
		sandboxLive("direct-in-time", h(time.Hour), rfc(lifetimeNow.Add(time.Hour)), "", "", false),
		sandboxLive("replicaset-owned", h(time.Hour), "", "ReplicaSet", "rs", false),
	)
	got, err := Lifetimes(context.Background(), tn, dyn, lifetimeNow)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"Sandbox agents-a/direct-forever":        {"opened without a claim", "no spec.shutdownTime", "1h0m0s past its end (max_ttl 4h0m0s after its creation)"},
		"Sandbox agents-a/direct-overdue":        {"opened without a claim", "2h0m0s past its end (its spec.shutdownTime"},
		"Sandbox agents-a/replicaset-owned":      {"no spec.shutdownTime"},
		"SandboxClaim agents-a/beyond-max":       {"spec.lifecycle.shutdownTime is 7h0m0s beyond max_ttl"},
		"SandboxClaim agents-a/deleting":         {"1h0m0s past its end", "deletion has waited 30m0s on finalizers example.com/hold"},
		"SandboxClaim agents-a/no-end":           {"no spec.lifecycle.shutdownTime"},
		"SandboxClaim agents-a/overdue":          {"10m0s past its end (its spec.lifecycle.shutdownTime 2030-01-02T11:50:00Z)"},
		"SandboxClaim agents-a/retained-running": {"2h0m0s past its end", "its sandbox of-retained-running still runs"},
	}
	seen := map[string]bool{}
	for _, f := range got {
		seen[f.Object()] = true
		parts, ok := want[f.Object()]
		if !ok {
			t.Errorf("reported %s: %s", f.Object(), f.Reason)
			continue
		}
		if f.Rule != RuleSessionOverdue || f.Tenant != "a" || f.Fix == "" {
			t.Errorf("%s: rule %s tenant %q fix %q", f.Object(), f.Rule, f.Tenant, f.Fix)
		}
		for _, p := range parts {
			if !strings.Contains(f.Reason, p) {
				t.Errorf("%s: reason %q lacks %q", f.Object(), f.Reason, p)
			}
		}
	}
	for o := range want {
		if !seen[o] {
			t.Errorf("%s not reported", o)
		}
	}
	for _, f := range got {
		if f.Object() == "SandboxClaim agents-a/deleting" && !strings.Contains(f.Fix, "finalizers example.com/hold") {
			t.Errorf("the fix for a held deletion names no finalizer: %s", f.Fix)
		}
	}

	// With max_ttl none, only a session past its own shutdownTime is over.
	tn.Claims.MaxTTL = 0
	got, err = Lifetimes(context.Background(), tn, dyn, lifetimeNow)
	if err != nil {
		t.Fatal(err)
	}
	var objs []string
	for _, f := range got {
		objs = append(objs, f.Object())
	}
	if w := "Sandbox agents-a/direct-overdue,SandboxClaim agents-a/deleting,SandboxClaim agents-a/overdue,SandboxClaim agents-a/retained-running"; strings.Join(objs, ",") != w {
		t.Errorf("without max_ttl: %s\nwant %s", strings.Join(objs, ","), w)
	}
	if got, err := Lifetimes(context.Background(), tn, nil, lifetimeNow); err != nil || got != nil {
		t.Errorf("no dynamic client: %v, %v", got, err)
	}
}
