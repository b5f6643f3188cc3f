package manifests

import (
	"testing"
	"time"

	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/vaptest"
)

// sandboxAt is a Sandbox as the sandbox-lifetime guardrail sees it: created
// at created, with shutdownTime when it is not "" and the owner references
// given.
func sandboxAt(created, shutdownTime string, owners ...map[string]any) map[string]any {
	meta := map[string]any{"name": "direct", "namespace": "agents-a", "creationTimestamp": created}
	if len(owners) > 0 {
		refs := make([]any, len(owners))
		for i, o := range owners {
			refs[i] = o
		}
		meta["ownerReferences"] = refs
	}
	spec := map[string]any{"podTemplate": map[string]any{"spec": map[string]any{"runtimeClassName": "gvisor"}}}
	if shutdownTime != "" {
		spec["shutdownTime"] = shutdownTime
	}
	return map[string]any{"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox", "metadata": meta, "spec": spec}
}

func owner(apiVersion, kind string, controller bool) map[string]any {
	return map[string]any{"apiVersion": apiVersion, "kind": kind, "name": "x", "uid": "u", "controller": controller}
}

// A Sandbox no claim or warm pool controls is a session opened without a
// claim: it is held to max_ttl by a shutdownTime of its own, however the
// owner is spelled, and its later updates (the controller's status, a
// finalizer's removal, an earlier end) are never blocked.
func TestSandboxLifetimeGuardrail(t *testing.T) {
	p := &model.Platform{Name: "p"}
	tn := model.DefaultTenant("a")
	tn.Claims.MaxTTL = 4 * time.Hour
	g, ok := sandboxLifetimeGuardrail(p, tn)
	if !ok {
		t.Fatal("no sandbox-lifetime guardrail with max_ttl 4h")
	}
	msg := SandboxLifetimeMessage(tn)
	const created = "2030-01-02T10:00:00Z"
	claim := owner("extensions.agents.x-k8s.io/v1beta1", "SandboxClaim", true)
	pool := owner("extensions.agents.x-k8s.io/v1beta1", "SandboxWarmPool", true)
	withFinalizer := func(o map[string]any) map[string]any {
		o["metadata"].(map[string]any)["finalizers"] = []any{"example.com/hold"}
		return o
	}
	for _, c := range []struct {
		name     string
		old, obj map[string]any
		refused  bool
	}{
		{"direct, no shutdownTime", nil, sandboxAt(created, ""), true},
		{"direct, exactly max_ttl", nil, sandboxAt(created, "2030-01-02T14:00:00Z"), false},
		{"direct, one second beyond", nil, sandboxAt(created, "2030-01-02T14:00:01Z"), true},
		{"direct, a shutdownTime that is no RFC 3339 time", nil, sandboxAt(created, "tomorrow"), true},
		{"a claim's", nil, sandboxAt(created, "", claim), false},
		{"a warm pool's", nil, sandboxAt(created, "", pool), false},
		{"a claim named, not as controller", nil, sandboxAt(created, "", owner("extensions.agents.x-k8s.io/v1beta1", "SandboxClaim", false)), true},
		{"a claim of another group", nil, sandboxAt(created, "", owner("example.com/v1", "SandboxClaim", true)), true},
		{"a ReplicaSet's", nil, sandboxAt(created, "", owner("apps/v1", "ReplicaSet", true)), true},
		{"update of a direct sandbox made before the rule, shutdownTime untouched",
			sandboxAt(created, ""), withFinalizer(sandboxAt(created, "")), false},
		{"update of a direct sandbox made under a longer max_ttl moves its end earlier",
			sandboxAt(created, "2030-01-03T10:00:00Z"), sandboxAt(created, "2030-01-03T09:00:00Z"), false},
		{"update moves a direct sandbox's end beyond max_ttl",
			sandboxAt(created, "2030-01-02T12:00:00Z"), sandboxAt(created, "2030-01-02T18:00:00Z"), true},
		{"update removes a direct sandbox's shutdownTime",
			sandboxAt(created, "2030-01-02T12:00:00Z"), sandboxAt(created, ""), true},
		{"update takes a warm pool's sandbox out of the pool, with no end",
			sandboxAt(created, "", pool), sandboxAt(created, ""), true},
		{"update takes a warm pool's sandbox out of the pool, with an end within",
			sandboxAt(created, "", pool), sandboxAt(created, "2030-01-02T12:00:00Z"), false},
		{"a claim adopts a warm pool's sandbox",
			sandboxAt(created, "", pool), sandboxAt(created, "", claim), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := vaptest.Admit(g.Policy, c.obj, c.old)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case c.refused && r == nil:
				t.Error("admitted, want refused")
			case c.refused && r.Message != msg:
				t.Errorf("refused with %q, want %q", r.Message, msg)
			case !c.refused && r != nil:
				t.Errorf("refused: %s", r.Message)
			}
		})
	}
}
