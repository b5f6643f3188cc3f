package components

import (
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/components/pulumitest"
	"github.com/paddock-platform/paddock/internal/model"
)

// A sandbox starts only inside its finished fence. The template and warm pool
// components must name, among their dependencies, every object of the
// tenant's namespace, identity, network policy and guardrails, and every
// object of the Agent Sandbox release and the managed RuntimeClasses; a
// dependency on a component alone is not enough (the Go SDK expands it into
// the children registered so far). Run many times: the failure this guards
// against was a race.
func TestSandboxesWaitForEveryFenceObject(t *testing.T) {
	for i := 0; i < 25; i++ {
		m := &pulumitest.Mocks{}
		p := testPlatform(model.TargetLocal)
		if err := pulumi.RunErr(func(ctx *pulumi.Context) error {
			_, err := NewPlatform(ctx, p.Name, &PlatformArgs{Platform: p})
			return err
		}, pulumi.WithMocks("paddock", "test", m)); err != nil {
			t.Fatal(err)
		}
		// fence: every Kubernetes object that is not itself a sandbox object.
		var fence []string
		for _, r := range m.All() {
			if !r.Custom || !strings.HasPrefix(r.Type, "kubernetes:") || strings.Contains(r.Type, "agents.x-k8s.io") {
				continue
			}
			fence = append(fence, r.ID())
		}
		if len(fence) < 15 {
			t.Fatalf("only %d fence objects registered:\n%s", len(fence), m.List())
		}
		for _, typ := range []string{"paddock:sandbox:Template", "paddock:sandbox:WarmPool"} {
			rs := m.OfType(typ)
			if len(rs) == 0 {
				t.Fatalf("no %s registered", typ)
			}
			for _, r := range rs {
				for _, f := range fence {
					if !slices.Contains(r.Deps, f) {
						t.Fatalf("run %d: %s does not wait for %s (deps %v)", i, r.ID(), f, r.Deps)
					}
				}
			}
		}
		// A warm pool also waits for its own template's object.
		for _, r := range m.OfType("paddock:sandbox:WarmPool") {
			if !slices.ContainsFunc(r.Deps, func(d string) bool { return strings.Contains(d, "SandboxTemplate") }) {
				t.Fatalf("run %d: %s does not wait for its template (deps %v)", i, r.ID(), r.Deps)
			}
		}
	}
}
