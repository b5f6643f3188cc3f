package manifests

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/paddock-platform/paddock/manifests/agentsandbox"
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
	image := p.AgentSandbox.Image
	if d := p.AgentSandbox.Digest; d != "" && !strings.Contains(image, "@") {
		image += "@" + d
	}
	o := agentsandbox.Options{Image: image, Labels: p.Labels("")}
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
		if !ManagesRuntimeClass(p, rc) {
			continue
		}
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
		parts, err := Tenant(p, t)
		if err != nil {
			return nil, err
		}
		groups = append(groups, Group{Name: "tenant-" + t.Name, Objects: parts.All()})
	}
	return groups, nil
}

// TenantParts are one tenant's objects by concept, in apply order.
type TenantParts struct {
	Namespace *unstructured.Unstructured
	// Fence is the ResourceQuota and LimitRange.
	Fence []*unstructured.Unstructured
	// Identity is agent-runtime and the orchestrator's account, Role and binding.
	Identity []*unstructured.Unstructured
	// Egress is the NetworkPolicies and the FQDN policy.
	Egress []*unstructured.Unstructured
	// Guardrails are ValidatingAdmissionPolicies and bindings (cluster-scoped).
	Guardrails []*unstructured.Unstructured
	// Templates and WarmPools by name, in spec order.
	Templates []*unstructured.Unstructured
	WarmPools []*unstructured.Unstructured
}

// All flattens the parts in apply order.
func (tp TenantParts) All() []*unstructured.Unstructured {
	out := []*unstructured.Unstructured{tp.Namespace}
	for _, part := range [][]*unstructured.Unstructured{tp.Fence, tp.Identity, tp.Egress, tp.Guardrails, tp.Templates, tp.WarmPools} {
		out = append(out, part...)
	}
	return out
}

// typedList converts typed objects (nil entries skipped) to unstructured.
func typedList(objs ...runtime.Object) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o == nil || reflect.ValueOf(o).IsNil() {
			continue
		}
		u, err := ToUnstructured(o)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

// FenceObjects are the tenant's ResourceQuota and LimitRange.
func FenceObjects(p *model.Platform, t model.Tenant) ([]*unstructured.Unstructured, error) {
	quota, err := ResourceQuota(p, t)
	if err != nil {
		return nil, err
	}
	limits, err := LimitRange(p, t)
	if err != nil {
		return nil, err
	}
	return typedList(quota, limits)
}

// IdentityObjects are agent-runtime and the orchestrator's account, Role and binding.
func IdentityObjects(p *model.Platform, t model.Tenant) ([]*unstructured.Unstructured, error) {
	osa, role, rb := Orchestrator(p, t)
	return typedList(AgentRuntimeServiceAccount(p, t), osa, role, rb)
}

// EgressObjects are the tenant's NetworkPolicies and FQDN policy.
func EgressObjects(p *model.Platform, t model.Tenant) ([]*unstructured.Unstructured, error) {
	pols, err := NetworkPolicies(p, t)
	if err != nil {
		return nil, err
	}
	return egressObjects(p, t, pols)
}

// GuardrailObjects are the tenant's admission policies and their bindings.
func GuardrailObjects(p *model.Platform, t model.Tenant) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, g := range Guardrails(p, t) {
		us, err := typedList(g.Policy, g.Binding)
		if err != nil {
			return nil, err
		}
		out = append(out, us...)
	}
	return out, nil
}

// TemplateObject is one hardened SandboxTemplate.
func TemplateObject(p *model.Platform, t model.Tenant, tpl model.Template) (*unstructured.Unstructured, error) {
	st, err := SandboxTemplate(p, t, tpl)
	if err != nil {
		return nil, err
	}
	return ToUnstructured(st)
}

// WarmPoolObject is one SandboxWarmPool.
func WarmPoolObject(p *model.Platform, t model.Tenant, wp model.WarmPool) (*unstructured.Unstructured, error) {
	u, err := ToUnstructured(WarmPool(p, t, wp))
	if err != nil {
		return nil, fmt.Errorf("warm pool %s/%s: %w", t.Name, wp.Name, err)
	}
	return u, nil
}

// Tenant builds every object of one tenant.
func Tenant(p *model.Platform, t model.Tenant) (TenantParts, error) {
	var tp TenantParts
	var err error
	if tp.Namespace, err = ToUnstructured(Namespace(p, t)); err != nil {
		return tp, err
	}
	if tp.Fence, err = FenceObjects(p, t); err != nil {
		return tp, err
	}
	if tp.Identity, err = IdentityObjects(p, t); err != nil {
		return tp, err
	}
	if tp.Egress, err = EgressObjects(p, t); err != nil {
		return tp, err
	}
	if tp.Guardrails, err = GuardrailObjects(p, t); err != nil {
		return tp, err
	}
	for _, tpl := range t.Templates {
		u, err := TemplateObject(p, t, tpl)
		if err != nil {
			return tp, err
		}
		tp.Templates = append(tp.Templates, u)
	}
	for _, wp := range t.WarmPools {
		u, err := WarmPoolObject(p, t, wp)
		if err != nil {
			return tp, err
		}
		tp.WarmPools = append(tp.WarmPools, u)
	}
	return tp, nil
}
