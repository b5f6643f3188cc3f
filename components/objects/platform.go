package objects

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddock-platform/paddock/components/agentsandbox"
	"github.com/paddock-platform/paddock/model"
)

// Group is the objects of one concept, in apply order.
type Group struct {
	// Name is the concept: "agent-sandbox", "runtime-classes", "tenant-team-a".
	Name    string
	Objects []*unstructured.Unstructured
}

// ReleaseOptions shapes the pinned Agent Sandbox release for the platform's target.
func ReleaseOptions(p *model.Platform) agentsandbox.Options {
	o := agentsandbox.Options{Image: p.AgentSandbox.Image, Labels: p.Labels("")}
	if p.Target.Kind == model.TargetLocal {
		// Nothing on the local target can run the controller image; the real
		// controller runs outside the cluster against the same API server.
		zero := int64(0)
		o.ControllerReplicas = &zero
	}
	return o
}

// Platform is every object the platform owns, grouped by concept in the order
// the components register them. `render` writes exactly this; the components
// register exactly these objects (a test holds them to it).
func Platform(p *model.Platform) ([]Group, error) {
	rel, err := agentsandbox.Objects(p.AgentSandbox.Version, ReleaseOptions(p))
	if err != nil {
		return nil, err
	}
	groups := []Group{{Name: "agent-sandbox", Objects: rel}}
	var rcs []*unstructured.Unstructured
	for _, rc := range p.RuntimeClasses {
		u, err := ToUnstructured(RuntimeClass(p, rc))
		if err != nil {
			return nil, err
		}
		rcs = append(rcs, u)
	}
	if len(rcs) > 0 {
		groups = append(groups, Group{Name: "runtime-classes", Objects: rcs})
	}
	for _, t := range p.Tenants {
		objs, err := Tenant(p, t)
		if err != nil {
			return nil, err
		}
		groups = append(groups, Group{Name: "tenant-" + t.Name, Objects: objs})
	}
	return groups, nil
}

// Tenant is every object of one tenant, namespace first.
func Tenant(p *model.Platform, t model.Tenant) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	ns, err := ToUnstructured(Namespace(p, t))
	if err != nil {
		return nil, err
	}
	sa, err := ToUnstructured(AgentRuntimeServiceAccount(p, t))
	if err != nil {
		return nil, err
	}
	out = append(out, ns, sa)
	for _, tpl := range t.Templates {
		st, err := SandboxTemplate(p, t, tpl)
		if err != nil {
			return nil, err
		}
		u, err := ToUnstructured(st)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	for _, wp := range t.WarmPools {
		u, err := ToUnstructured(WarmPool(p, t, wp))
		if err != nil {
			return nil, fmt.Errorf("warm pool %s/%s: %w", t.Name, wp.Name, err)
		}
		out = append(out, u)
	}
	return out, nil
}
