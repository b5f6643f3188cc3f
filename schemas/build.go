package schemas

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/paddock-platform/paddock/model"
	"github.com/paddock-platform/paddock/pins"
)

// This file is step 3 of a load: config structs become the model. Every
// expression is evaluated here, values are checked and references resolved,
// and whatever the spec leaves unset takes its default from model/defaults.go.

// Bounds of numeric arguments.
const (
	// Kubernetes accepts runAsUser in [0, 2^31-1]; 0 is root, never allowed.
	minRunAsUser = 1
	maxRunAsUser = math.MaxInt32
	minReplicas  = 0
	maxReplicas  = 100
)

// defaultNamespacePrefix makes a tenant's namespace when the spec sets none.
const defaultNamespacePrefix = "agents-"

var (
	tolerationOperators = []string{"Equal", "Exists"}
	taintEffects        = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}
)

type builder struct {
	evaluator
	// runtimeClasses are the declared runtime class names, for references.
	runtimeClasses []string
	// templateOwner maps a template name to the tenants declaring it, to
	// explain a warm pool that reaches across tenants.
	templateOwner map[string][]string
}

// build evaluates cfg into the model. It always returns a platform; the
// caller discards it when diagnostics hold errors.
func build(cfg *config, ctx *hcl.EvalContext) (*model.Platform, hcl.Diagnostics) {
	b := &builder{evaluator: evaluator{ctx: ctx}, templateOwner: map[string][]string{}}
	for _, rc := range cfg.RuntimeClasses {
		b.runtimeClasses = append(b.runtimeClasses, rc.Label)
	}
	for _, t := range cfg.Tenants {
		for _, tpl := range t.Templates {
			b.templateOwner[tpl.Label] = append(b.templateOwner[tpl.Label], t.Label)
		}
	}

	p := &model.Platform{}
	if pc := cfg.Platform; pc != nil {
		name, st := b.str(pc.Name)
		if b.required(st, pc.Name, pc.blockMeta, "name", "a name", `name = "my-platform"`) == set {
			b.checkLabel(pc.Name, name, "platform name")
			p.Name = name
		}
	}
	if tc := cfg.Target; tc != nil {
		p.Target = b.target(tc)
	}
	if ac := cfg.AgentSandbox; ac != nil {
		p.AgentSandbox = b.agentSandbox(ac)
	}
	for _, rc := range cfg.RuntimeClasses {
		p.RuntimeClasses = append(p.RuntimeClasses, b.runtimeClass(rc))
	}
	namespaces := map[string]hcl.Range{}
	for _, tc := range cfg.Tenants {
		p.Tenants = append(p.Tenants, b.tenant(tc, namespaces))
	}
	for _, wc := range cfg.Waivers {
		p.Waivers = append(p.Waivers, b.waiver(wc))
	}
	return p, b.diags
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

func (b *builder) target(tc *targetConfig) model.Target {
	t := model.Target{Kind: model.TargetKind(tc.Label), Src: tc.src()}
	if tc.Label != targetKubeconfig {
		return t
	}
	// An empty path means $KUBECONFIG or ~/.kube/config, resolved at use time.
	if path, st := b.str(tc.Path); st == set {
		if strings.TrimSpace(path) == "" {
			b.errorf(tc.Path.Expr.Range(), "Invalid kubeconfig path",
				"path is empty. Remove the argument to use $KUBECONFIG or ~/.kube/config, or set the path of a kubeconfig file.")
		}
		t.Kubeconfig = path
	}
	if kctx, st := b.str(tc.Context); st == set {
		if strings.TrimSpace(kctx) == "" {
			b.errorf(tc.Context.Expr.Range(), "Invalid kubeconfig context",
				"context is empty. Remove the argument to use the kubeconfig's current context, or name one of its contexts.")
		}
		t.Context = kctx
	}
	return t
}

func (b *builder) agentSandbox(ac *agentSandboxConfig) model.AgentSandboxRelease {
	r := model.AgentSandboxRelease{Src: ac.src()}
	version, st := b.str(ac.Version)
	example := fmt.Sprintf("version = %q", pinnedOr(pins.AgentSandbox, "v0.5.6"))
	if b.required(st, ac.Version, ac.blockMeta, "version", "a pinned release version", example) == set {
		if !versionRe.MatchString(version) {
			b.errorf(ac.Version.Expr.Range(), "Invalid agent_sandbox version",
				"%q is not a release version. Pin an exact release tag of the form vMAJOR.MINOR.PATCH, for example: %s", version, example)
		}
		r.Version = version
	}
	image, st := b.str(ac.Image)
	switch st {
	case set:
		if problem := imageProblem(image); problem != "" {
			b.errorf(ac.Image.Expr.Range(), "Invalid image", "The controller image %q %s Remove image to use the pinned release image.", image, problem)
		}
		r.Image = image
	case unset:
		if r.Version != "" {
			r.Image = pins.AgentSandboxImage + ":" + r.Version
		}
	}
	return r
}

func pinnedOr(v, fallback string) string {
	if v != "" {
		return v
	}
	return fallback
}

func (b *builder) runtimeClass(rc *runtimeClassConfig) model.RuntimeClass {
	out := model.RuntimeClass{Name: rc.Label, Src: rc.src()}
	handler, st := b.str(rc.Handler)
	if b.required(st, rc.Handler, rc.blockMeta, "handler", "the handler configured in the node's container runtime", `handler = "runsc"`) == set {
		if problem := dnsLabelProblem(handler); problem != "" {
			b.errorf(rc.Handler.Expr.Range(), "Invalid runtime handler",
				"%q %s A handler is the name of a runtime configured in containerd on the nodes (gVisor: \"runsc\", Kata: \"kata\"), a DNS-1123 label.", handler, problem)
		}
		out.Handler = handler
	}
	if entries, st := b.strMap(rc.NodeSelector); st == set {
		for _, en := range entries {
			if problem := labelKeyProblem(en.Key); problem != "" {
				b.errorf(en.KeyRange, "Invalid node selector key", "The node label key %q %s", en.Key, problem)
			}
			if problem := labelValueProblem(en.Value); problem != "" {
				b.errorf(en.ValueRange, "Invalid node selector value", "The node label value %q %s", en.Value, problem)
			}
			if out.NodeSelector == nil {
				out.NodeSelector = map[string]string{}
			}
			out.NodeSelector[en.Key] = en.Value
		}
	}
	for _, tc := range rc.Tolerations {
		out.Tolerations = append(out.Tolerations, b.toleration(tc))
	}
	return out
}

func (b *builder) toleration(tc *tolerationConfig) model.Toleration {
	var t model.Toleration
	t.Operator = "Equal"
	if op, st := b.str(tc.Operator); st == set {
		if !slices.Contains(tolerationOperators, op) {
			b.errorf(tc.Operator.Expr.Range(), "Invalid toleration operator",
				"%q is not a toleration operator.%s Use \"Equal\" (the default) to match a taint's value, or \"Exists\" to match any value.",
				op, didYouMeanSentence(op, tolerationOperators))
		}
		t.Operator = op
	}
	key, kst := b.str(tc.Key)
	if kst == set {
		if problem := labelKeyProblem(key); problem != "" {
			b.errorf(tc.Key.Expr.Range(), "Invalid toleration key", "The taint key %q %s", key, problem)
		}
		t.Key = key
	}
	if kst == unset && t.Operator == "Equal" {
		b.required(kst, tc.Key, tc.blockMeta, "key", "the key of the taint it tolerates", `key = "sandbox.gke.io/runtime"`)
	}
	if value, st := b.str(tc.Value); st == set {
		switch {
		case t.Operator == "Exists" && value != "":
			b.errorf(tc.Value.Expr.Range(), "Invalid toleration value",
				"A toleration with operator \"Exists\" matches any value of the taint, so it must not set one. Remove value, or use operator \"Equal\".")
		default:
			if problem := labelValueProblem(value); problem != "" {
				b.errorf(tc.Value.Expr.Range(), "Invalid toleration value", "The taint value %q %s", value, problem)
			}
		}
		t.Value = value
	}
	if effect, st := b.str(tc.Effect); st == set {
		if effect != "" && !slices.Contains(taintEffects, effect) {
			b.errorf(tc.Effect.Expr.Range(), "Invalid toleration effect",
				"%q is not a taint effect.%s Use one of %s, or leave effect out to tolerate every effect.",
				effect, didYouMeanSentence(effect, taintEffects), quotedList(taintEffects))
		}
		t.Effect = effect
	}
	return t
}

func (b *builder) tenant(tc *tenantConfig, namespaces map[string]hcl.Range) model.Tenant {
	t := model.Tenant{Name: tc.Label, Src: tc.src()}
	ns, st := b.str(tc.Namespace)
	nsRange := tc.LabelRange
	switch st {
	case set:
		nsRange = tc.Namespace.Expr.Range()
		b.checkLabel(tc.Namespace, ns, "namespace")
	case unset:
		ns = defaultNamespacePrefix + tc.Label
		// Only worth saying when the tenant name itself is valid (otherwise
		// the name already has its own diagnostic).
		if dnsLabelProblem(tc.Label) == "" && dnsLabelProblem(ns) != "" {
			b.errorf(tc.LabelRange, "Invalid namespace",
				"The default namespace of %s, %q, %s Set namespace explicitly, or shorten the tenant name.", tc.what(), ns, dnsLabelProblem(ns))
		}
	}
	if st != invalid {
		if first, dup := namespaces[ns]; dup {
			b.errorf(nsRange, "Namespace shared by two tenants",
				"Namespace %q is already used by the tenant declared at %s. A tenant is a trust boundary with a namespace of its own: set a different namespace.",
				ns, pos(first))
		} else {
			namespaces[ns] = tc.DefRange
		}
	}
	t.Namespace = ns

	var templates []string
	for _, tpl := range tc.Templates {
		templates = append(templates, tpl.Label)
		t.Templates = append(t.Templates, b.template(tpl))
	}
	for _, wp := range tc.WarmPools {
		t.WarmPools = append(t.WarmPools, b.warmPool(tc, wp, templates))
	}
	return t
}

func (b *builder) template(tc *templateConfig) model.Template {
	t := model.Template{Name: tc.Label, Src: tc.src()}
	image, st := b.str(tc.Image)
	if b.required(st, tc.Image, tc.blockMeta, "image", "a container image", `image = "python:3.12-slim"`) == set {
		if problem := imageProblem(image); problem != "" {
			b.errorf(tc.Image.Expr.Range(), "Invalid image", "The image %q %s", image, problem)
		}
		t.Image = image
	}
	t.Command, _ = b.strList(tc.Command)
	t.Args, _ = b.strList(tc.Args)

	if rc, st := b.str(tc.RuntimeClass); st == set {
		if !slices.Contains(b.runtimeClasses, rc) {
			b.unknownRuntimeClass(tc.RuntimeClass.Expr.Range(), rc)
		}
		t.RuntimeClass = rc
	}

	t.RunAsUser = model.DefaultRunAsUser
	if uid, st := b.integer(tc.RunAsUser, minRunAsUser, maxRunAsUser); st == set {
		t.RunAsUser = uid
	}

	t.TmpSize = model.DefaultTmpSize
	if size, st := b.str(tc.TmpSize); st == set {
		if q, ok := b.quantity(tc.TmpSize.Expr.Range(), "tmp_size", size); ok && q.Sign() == 0 {
			b.errorf(tc.TmpSize.Expr.Range(), "Invalid tmp_size",
				"tmp_size is zero. The root filesystem is read-only, so /tmp is the sandbox's only scratch space: give it a size such as %q.", model.DefaultTmpSize)
		}
		t.TmpSize = size
	}

	t.Resources = b.resources(tc.Resources)
	return t
}

func (b *builder) unknownRuntimeClass(at hcl.Range, name string) {
	var hint string
	switch {
	case len(b.runtimeClasses) == 0:
		hint = fmt.Sprintf("The spec declares no runtime classes. Declare one with a runtime_class %q { handler = \"...\" } block, or remove runtime_class.", name)
	default:
		hint = fmt.Sprintf("Declared runtime classes: %s. Declare runtime_class %q, or use one of them.", quotedList(b.runtimeClasses), name)
	}
	b.errorf(at, "Unknown runtime class", "No runtime_class %q is declared.%s %s", name, didYouMeanSentence(name, b.runtimeClasses), hint)
}

// quantity parses a Kubernetes quantity, reporting a bad one.
func (b *builder) quantity(at hcl.Range, name, s string) (resource.Quantity, bool) {
	q, problem := quantityProblem(s)
	if problem != "" {
		b.errorf(at, "Invalid quantity", "The %s %q %s", name, s, problem)
		return q, false
	}
	return q, true
}

// resourceSetting is one request or limit as the spec wrote it.
type resourceSetting struct {
	entry
	q resource.Quantity
}

func (b *builder) resources(rc *resourcesConfig) model.Resources {
	var r model.Resources
	if rc == nil {
		r.ApplyResourceDefaults()
		return r
	}
	requests, rok := b.resourceMap(rc.Requests)
	limits, lok := b.resourceMap(rc.Limits)
	fields := map[string][2]*string{
		resourceCPU:              {&r.RequestsCPU, &r.LimitsCPU},
		resourceMemory:           {&r.RequestsMemory, &r.LimitsMemory},
		resourceEphemeralStorage: {&r.RequestsEphemeralStorage, &r.LimitsEphemeralStorage},
	}
	for key, s := range requests {
		*fields[key][0] = s.Value
	}
	for key, s := range limits {
		*fields[key][1] = s.Value
	}
	r.ApplyResourceDefaults()
	if !rok || !lok {
		return r
	}

	// Kubernetes rejects a container whose request exceeds its limit. With
	// defaults filled in, point at whichever side the spec set.
	for _, key := range resourceKeys {
		req, reqSet := requests[key]
		lim, limSet := limits[key]
		if !reqSet && !limSet {
			continue
		}
		reqQ, _ := resource.ParseQuantity(*fields[key][0])
		limQ, _ := resource.ParseQuantity(*fields[key][1])
		if reqSet {
			reqQ = req.q
		}
		if limSet {
			limQ = lim.q
		}
		if reqQ.Cmp(limQ) <= 0 {
			continue
		}
		at, limitWord := req.ValueRange, "limit"
		if !reqSet {
			at = lim.ValueRange
		}
		if !limSet {
			limitWord = "default limit"
		}
		b.errorf(at, "Request above limit",
			"The %s request (%s) is above its %s (%s); Kubernetes would reject the sandbox. Raise limits.%s to at least %s, or lower the request.",
			key, reqQ.String(), limitWord, limQ.String(), key, reqQ.String())
	}
	return r
}

// resourceMap evaluates requests or limits: keys among resourceKeys, values
// quantities. ok is false when anything in it was invalid.
func (b *builder) resourceMap(attr *hcl.Attribute) (map[string]resourceSetting, bool) {
	entries, st := b.strMap(attr)
	if st == invalid {
		return nil, false
	}
	out := map[string]resourceSetting{}
	ok := true
	for _, en := range entries {
		if !slices.Contains(resourceKeys, en.Key) {
			b.errorf(en.KeyRange, "Unsupported resource",
				"%q is not a resource Paddock sets.%s %s takes %s.",
				en.Key, didYouMeanSentence(en.Key, resourceKeys), attr.Name, quotedList(resourceKeys))
			ok = false
			continue
		}
		q, qok := b.quantity(en.ValueRange, attr.Name+"."+en.Key, en.Value)
		if !qok {
			ok = false
			continue
		}
		out[en.Key] = resourceSetting{entry: en, q: q}
	}
	return out, ok
}

func (b *builder) warmPool(tc *tenantConfig, wc *warmPoolConfig, templates []string) model.WarmPool {
	wp := model.WarmPool{Name: wc.Label, Src: wc.src()}
	tpl, st := b.str(wc.Template)
	if b.required(st, wc.Template, wc.blockMeta, "template", "the template it keeps warm", fmt.Sprintf("template = %q", firstOr(templates, wc.Label))) == set {
		if !slices.Contains(templates, tpl) {
			b.unknownTemplate(tc, wc.Template.Expr.Range(), tpl, templates)
		}
		wp.Template = tpl
	}
	wp.Replicas = model.DefaultWarmPoolReplicas
	if n, st := b.integer(wc.Replicas, minReplicas, maxReplicas); st == set {
		wp.Replicas = int32(n)
	}
	return wp
}

func (b *builder) unknownTemplate(tc *tenantConfig, at hcl.Range, name string, templates []string) {
	var others []string
	for _, owner := range b.templateOwner[name] {
		if owner != tc.Label {
			others = append(others, owner)
		}
	}
	if len(others) > 0 {
		b.errorf(at, "Template of another tenant",
			"Template %q belongs to tenant %s, not to %s. Warm pools never cross trust boundaries: declare the template in tenant %q, or move the pool to its tenant.",
			name, quotedList(others), tc.what(), tc.Label)
		return
	}
	hint := fmt.Sprintf("Declare a template %q block in tenant %q.", name, tc.Label)
	if len(templates) > 0 {
		hint = fmt.Sprintf("Templates of tenant %q: %s.", tc.Label, quotedList(templates))
	}
	b.errorf(at, "Unknown template",
		"Tenant %q declares no template %q.%s %s", tc.Label, name, didYouMeanSentence(name, templates), hint)
}

func (b *builder) waiver(wc *waiverConfig) model.Waiver {
	w := model.Waiver{Src: wc.src()}
	rule, st := b.str(wc.Rule)
	if b.required(st, wc.Rule, wc.blockMeta, "rule", "the ID of the rule it waives", `rule = "PDK-001"`) == set {
		if strings.TrimSpace(rule) == "" {
			b.errorf(wc.Rule.Expr.Range(), "Invalid waiver rule", "rule is empty. Set the ID of the policy rule this waiver is for, as printed with the finding.")
		}
		w.Rule = rule
	}
	reason, st := b.str(wc.Reason)
	if b.required(st, wc.Reason, wc.blockMeta, "reason", "a reason", `reason = "why this exception is acceptable, and until when"`) == set {
		if strings.TrimSpace(reason) == "" {
			b.errorf(wc.Reason.Expr.Range(), "Invalid waiver reason", "reason is empty. A waiver is an explicit exception: say why it is acceptable.")
		}
		w.Reason = reason
	}
	if expires, st := b.str(wc.Expires); st == set {
		if _, err := time.Parse(time.DateOnly, expires); err != nil || !dateRe.MatchString(expires) {
			b.errorf(wc.Expires.Expr.Range(), "Invalid expiry date",
				"%q is not a date of the form YYYY-MM-DD, such as \"2026-12-31\".", expires)
		}
		w.Expires = expires
	}
	return w
}

func firstOr(list []string, fallback string) string {
	if len(list) > 0 {
		return list[0]
	}
	return fallback
}
