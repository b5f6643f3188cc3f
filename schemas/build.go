package schemas

import (
	"math"
	"slices"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/paddock-platform/paddock/internal/model"
)

// This file is step 3 of a load: nodes become the model. Every expression is
// evaluated here, values are checked and references resolved, and whatever
// the spec leaves unset keeps the default of the internal/model/defaults.go
// constructor the block starts from.

// Bounds of numeric arguments.
const (
	// Kubernetes accepts runAsUser in [0, 2^31-1]; 0 is root, only allowed
	// with run_as_non_root = false.
	minRunAsUser  = 1
	maxRunAsUser  = math.MaxInt32
	minReplicas   = 0
	maxReplicas   = 100
	maxCount      = 100000
	maxNodes      = 1000
	minTokenLife  = 10 * time.Minute
	maxTokenLife  = 24 * time.Hour
	minClaimTTL   = time.Second
	maxClaimTTL   = 365 * 24 * time.Hour
	minSessionTTL = time.Minute
)

// MaxTenants bounds the tenants of a platform, however they are written
// (tenant blocks, for_each, both): each is some twenty objects, and a
// thousand are twenty thousand objects for one stack.
const MaxTenants = 1000

type builder struct {
	evaluator
	p *model.Platform
	// runtimeClasses are the declared runtime class names, for references.
	runtimeClasses []string
	// nodePools are the built node pools, by name.
	nodePools map[string]model.NodePool
	// templateOwner maps a template name to the tenants declaring it, to
	// explain a warm pool that reaches across tenants.
	templateOwner map[string][]string
}

// newBuilder starts a build with the evaluation context of the variables and
// locals already evaluated.
func newBuilder(ctx *hcl.EvalContext) *builder {
	return &builder{
		evaluator:     evaluator{ctx: ctx},
		p:             &model.Platform{},
		nodePools:     map[string]model.NodePool{},
		templateOwner: map[string][]string{},
	}
}

// build evaluates cfg into the model, after variables and locals. It always
// returns a platform; the caller discards it when diagnostics hold errors.
func (b *builder) build(cfg *config) *model.Platform {
	p := b.p
	for _, rc := range cfg.RuntimeClasses {
		b.runtimeClasses = append(b.runtimeClasses, rc.Label)
	}
	for _, t := range cfg.Tenants {
		for _, tpl := range t.all(blockTemplate) {
			b.templateOwner[tpl.Label] = append(b.templateOwner[tpl.Label], t.Label)
		}
	}

	if pc := cfg.Platform; pc != nil {
		p.Src, p.Attrs = pc.src(), pc.attrs()
		name, st := b.str(pc.attr(argName))
		if b.required(st, pc.attr(argName), pc.blockMeta, argName, "a name", `name = "my-platform"`) == set {
			b.checkLabel(pc.attr(argName), name, "platform name")
			p.Name = name
		}
	}
	if tc := cfg.Target; tc != nil {
		p.Target = b.target(tc)
	}
	b.cluster(cfg)
	for _, np := range cfg.NodePools {
		if pool, ok := b.nodePool(np); ok {
			p.NodePools = append(p.NodePools, pool)
			b.nodePools[pool.Name] = pool
		}
	}
	if ac := cfg.AgentSandbox; ac != nil {
		p.AgentSandbox = b.agentSandbox(ac)
	}
	for _, rc := range cfg.RuntimeClasses {
		p.RuntimeClasses = append(p.RuntimeClasses, b.runtimeClass(rc))
	}
	b.tenants(cfg.Tenants)
	for _, as := range cfg.AuditSinks {
		p.AuditSinks = append(p.AuditSinks, b.auditSink(as))
	}
	if oc := cfg.Observability; oc != nil {
		o := b.observability(oc)
		p.Observability = &o
	}
	for _, wc := range cfg.Waivers {
		p.Waivers = append(p.Waivers, b.waiver(wc))
	}
	b.trustAdmission(cfg.TrustAdmission)
	for s := range b.sensitive {
		p.MarkSensitive(s)
	}
	return p
}

// checkLabel reports an evaluated value that must be a DNS-1123 label.
func (b *builder) checkLabel(attr *hcl.Attribute, v, what string) bool {
	if problem := dnsLabelProblem(v); problem != "" {
		b.errorf(attr.Expr.Range(), "Invalid "+what,
			"%q %s It names Kubernetes objects, so it must be a DNS-1123 label.%s", v, problem, suggestLabelSentence(v))
		return false
	}
	return true
}

// enum evaluates attr as one of allowed, reporting anything else with a
// "Did you mean". It returns the value and whether it may be used.
func (b *builder) enum(attr *hcl.Attribute, allowed []string, what string) (string, state) {
	v, st := b.str(attr)
	if st != set {
		return "", st
	}
	if !slices.Contains(allowed, v) {
		b.errorf(attr.Expr.Range(), "Invalid "+what,
			"%q is not a valid %s.%s Use one of %s.", v, attr.Name, didYouMeanSentence(v, allowed), quotedList(allowed))
		return "", invalid
	}
	return v, set
}
