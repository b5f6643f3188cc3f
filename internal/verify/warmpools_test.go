package verify

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/pools/poolstest"
)

// V07 fails while a pool holds an unclaimed sandbox of an older template:
// under Recreate the controller owes the replacement; under a waived
// OnReplenish the result names the waiver. Claimed sandboxes are a
// session's and never count.
func TestV07FailsWhileAPoolHoldsStaleSandboxes(t *testing.T) {
	before := time.Now().Add(-time.Hour)
	const reason = "Sessions keep a warm cache; the pool drains within the hour."
	for _, tc := range []struct {
		name      string
		strategy  string
		sandboxes []string // "old:NAME", "new:NAME", "claimed:NAME"
		want      Status
		words     []string
	}{
		{"current", "Recreate", []string{"new:agent-a", "new:agent-b"}, Pass, []string{"2/2", "all of the current template"}},
		{"one stale under Recreate", "Recreate", []string{"old:agent-old1", "new:agent-b"}, Fail,
			[]string{"1 unclaimed sandbox(es) built from an older template: agent-old1", "its pod spec changed", "update strategy Recreate: the controller has not replaced them"}},
		{"stale but claimed", "Recreate", []string{"claimed:agent-taken", "new:agent-a", "new:agent-b"}, Pass, []string{"2/2"}},
		{"stale kept under a waived OnReplenish", "OnReplenish", []string{"old:agent-old1", "old:agent-old2"}, Fail,
			[]string{"2 unclaimed sandbox(es) built from an older template: agent-old1, agent-old2", "update strategy OnReplenish keeps them until claims take them (waived: " + reason + ")"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := localPlatform(t)
			tn := &p.Tenants[0]
			ns := tn.Namespace
			if tc.strategy == model.UpdateOnReplenish {
				tn.WarmPools[0].UpdateStrategy = model.UpdateOnReplenish
				p.Waivers = append(p.Waivers, model.Waiver{Rule: "PDK-410", Reason: reason, Scope: "tenant.team-a.warm_pool.agent"})
			}
			pool := poolstest.WarmPool(t, ns, "agent", "agent", tc.strategy, 2)
			v1 := poolstest.Template(t, "agent", "localhost/paddock/busybox:v1")
			v2 := poolstest.Template(t, "agent", "localhost/paddock/busybox:v2")
			dyn := []*unstructured.Unstructured{pool}
			var kube []runtime.Object
			for _, s := range tc.sandboxes {
				var sb unstructured.Unstructured
				switch kind, name, _ := strings.Cut(s, ":"); kind {
				case "old":
					sb = poolstest.Sandbox(t, pool, v1, name, before, true)
				case "new":
					sb = poolstest.Sandbox(t, pool, v2, name, before, true)
				case "claimed":
					sb = poolstest.Adopt(poolstest.Sandbox(t, pool, v1, name, before, true), "session-1")
					claim := poolstest.Claim(ns, "session-1", "agent")
					dyn = append(dyn, &claim)
				}
				dyn = append(dyn, &sb)
				pod := poolstest.Pod(ns, sb.GetName(), true)
				kube = append(kube, &pod)
			}
			v, _, d := fakeVerifier(t, p, kube, dyn...)
			if err := d.Tracker().Create(agentsandbox.SandboxTemplates, poolstest.U(t, v2), ns); err != nil {
				t.Fatal(err)
			}
			wantStatus(t, only(t, v, "V07"), tc.want, tc.words...)
		})
	}
}
