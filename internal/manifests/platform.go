package manifests

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
)

// Group is the objects of one concept, in apply order.
type Group struct {
	// Name is the concept: "agent-sandbox", "runtime-classes", "tenant-team-a".
	Name    string
	Objects []*unstructured.Unstructured
}

// RefillArgs are the controller flags of the spec's refill shaping, none when
// it is off (the controller's defaults then hold). The local cluster's
// supervisor passes the same flags, read from the installed Deployment, to
// the controller it runs (localcluster.RefillArgsOf).
func RefillArgs(r model.AgentSandboxRelease) []string {
	var out []string
	if r.RefillDelay > 0 {
		out = append(out, "--sandbox-warm-pool-replenish-delay="+r.RefillDelay.String())
	}
	if r.RefillPerMinute > 0 {
		out = append(out, "--sandbox-warm-pool-max-refill-rate="+strconv.FormatFloat(float64(r.RefillPerMinute)/60, 'g', -1, 64))
	}
	return out
}

// ReleaseOptions shapes the pinned Agent Sandbox release for the platform's target.
func ReleaseOptions(p *model.Platform) agentsandbox.Options {
	image := p.AgentSandbox.Image
	if d := p.AgentSandbox.Digest; d != "" && !strings.Contains(image, "@") {
		image += "@" + d
	}
	o := agentsandbox.Options{Image: image, Labels: p.Labels(""), ControllerArgs: RefillArgs(p.AgentSandbox)}
	if p.Target.Kind == model.TargetLocal {
		// Nothing on the local target can run the controller image; the real
		// controller runs outside the cluster against the same API server.
		zero := int64(0)
		o.ControllerReplicas = &zero
	}
	return o
}

// Objects are every object the platform owns, by concept, in apply order:
// the one walk of the object tree. `render` writes them as Groups; the
// components register each part as its own component, in this order, so
// order and membership live here only.
type Objects struct {
	// Release is the pinned Agent Sandbox release, in the release's order.
	Release []*unstructured.Unstructured
	// RuntimeClasses are the RuntimeClasses Paddock manages (not GKE's own),
	// in spec order.
	RuntimeClasses []RuntimeClassPart
	// Tenants are the tenants' objects, in spec order.
	Tenants []TenantParts
	// Observability is the opt-in ServiceMonitor and PrometheusRule (none
	// without an observability block).
	Observability []*unstructured.Unstructured
}

// RuntimeClassPart is one managed RuntimeClass and the spec block it comes from.
type RuntimeClassPart struct {
	RuntimeClass model.RuntimeClass
	Object       *unstructured.Unstructured
}

// TemplatePart is one SandboxTemplate and the spec block it comes from.
type TemplatePart struct {
	Template model.Template
	Object   *unstructured.Unstructured
}

// WarmPoolPart is one SandboxWarmPool and the spec block it comes from.
type WarmPoolPart struct {
	WarmPool model.WarmPool
	Object   *unstructured.Unstructured
}

// Build walks the model once and returns every object of the platform.
func Build(p *model.Platform) (*Objects, error) {
	rel, err := agentsandbox.Objects(p.AgentSandbox.Version, ReleaseOptions(p))
	if err != nil {
		return nil, err
	}
	o := &Objects{Release: rel}
	for _, rc := range p.RuntimeClasses {
		if !ManagesRuntimeClass(p, rc) {
			continue // GKE creates and owns it; templates just reference it
		}
		u, err := ToUnstructured(RuntimeClass(p, rc))
		if err != nil {
			return nil, err
		}
		o.RuntimeClasses = append(o.RuntimeClasses, RuntimeClassPart{RuntimeClass: rc, Object: u})
	}
	for _, t := range p.Tenants {
		parts, err := Tenant(p, t)
		if err != nil {
			return nil, err
		}
		o.Tenants = append(o.Tenants, parts)
	}
	if o.Observability, err = ObservabilityObjects(p); err != nil {
		return nil, err
	}
	return o, nil
}

// Groups are the objects grouped by concept, in apply order: the Agent
// Sandbox release, the runtime classes (when Paddock manages any), one group
// per tenant, then the monitoring objects (when the spec asks for them).
func (o *Objects) Groups() []Group {
	groups := []Group{{Name: "agent-sandbox", Objects: o.Release}}
	if len(o.RuntimeClasses) > 0 {
		var rcs []*unstructured.Unstructured
		for _, rc := range o.RuntimeClasses {
			rcs = append(rcs, rc.Object)
		}
		groups = append(groups, Group{Name: "runtime-classes", Objects: rcs})
	}
	for _, tp := range o.Tenants {
		groups = append(groups, Group{Name: "tenant-" + tp.Tenant.Name, Objects: tp.All()})
	}
	if len(o.Observability) > 0 {
		groups = append(groups, Group{Name: ObservabilityGroup, Objects: o.Observability})
	}
	return groups
}

// ObservabilityGroup names the monitoring objects' group; no tenant can take
// it ("tenant-" prefixes theirs).
const ObservabilityGroup = "observability"

// Platform is every object the platform owns, grouped by concept in the order
// the components register them (Build, then Groups). `render` writes exactly
// this; the components register exactly these objects.
func Platform(p *model.Platform) ([]Group, error) {
	o, err := Build(p)
	if err != nil {
		return nil, err
	}
	return o.Groups(), nil
}

// TenantParts are one tenant's objects by concept, in apply order.
type TenantParts struct {
	// Tenant is the spec block the objects come from.
	Tenant    model.Tenant
	Namespace *unstructured.Unstructured
	// Fence is the ResourceQuota and LimitRange.
	Fence []*unstructured.Unstructured
	// Identity is agent-runtime and the orchestrator's account, Role and binding.
	Identity []*unstructured.Unstructured
	// Egress is the NetworkPolicies and the FQDN policy.
	Egress []*unstructured.Unstructured
	// Gateway is the egress gateway's workload (its NetworkPolicies are in
	// Egress); empty without one.
	Gateway []*unstructured.Unstructured
	// Guardrails are ValidatingAdmissionPolicies and bindings (cluster-scoped).
	Guardrails []*unstructured.Unstructured
	// Templates and WarmPools, in spec order.
	Templates []TemplatePart
	WarmPools []WarmPoolPart
}

// All flattens the parts in apply order.
func (tp TenantParts) All() []*unstructured.Unstructured {
	out := []*unstructured.Unstructured{tp.Namespace}
	for _, part := range [][]*unstructured.Unstructured{tp.Fence, tp.Identity, tp.Egress, tp.Guardrails, tp.Gateway} {
		out = append(out, part...)
	}
	for _, tpl := range tp.Templates {
		out = append(out, tpl.Object)
	}
	for _, wp := range tp.WarmPools {
		out = append(out, wp.Object)
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

// EgressObjects are the tenant's NetworkPolicies (the egress gateway's
// included) and FQDN policy.
func EgressObjects(p *model.Platform, t model.Tenant) ([]*unstructured.Unstructured, error) {
	pols, err := NetworkPolicies(p, t)
	if err != nil {
		return nil, err
	}
	gw, err := gatewayPolicies(p, t)
	if err != nil {
		return nil, err
	}
	out, err := egressObjects(p, t, append(pols, gw...))
	if api := GatewayAPIServerRule(p, t); api != nil && err == nil {
		out = append(out, api)
	}
	return out, err
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
	tp := TenantParts{Tenant: t}
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
	if tp.Gateway, err = GatewayObjects(p, t); err != nil {
		return tp, err
	}
	for _, tpl := range t.Templates {
		u, err := TemplateObject(p, t, tpl)
		if err != nil {
			return tp, err
		}
		tp.Templates = append(tp.Templates, TemplatePart{Template: tpl, Object: u})
	}
	for _, wp := range t.WarmPools {
		u, err := WarmPoolObject(p, t, wp)
		if err != nil {
			return tp, err
		}
		tp.WarmPools = append(tp.WarmPools, WarmPoolPart{WarmPool: wp, Object: u})
	}
	return tp, nil
}
