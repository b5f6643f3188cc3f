package schemas

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/paddock-platform/paddock/internal/model"
)

// Building templates (resources, workspace) and warm pools.

var (
	capabilityRe = regexp.MustCompile(`^[A-Z][A-Z_]*$`)
	secretKeyRe  = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)
)

// template builds a template block onto model.DefaultTemplate: image,
// command, runtime class, security context, resources, workspace and
// environment.
func (b *builder) template(tc *node) model.Template {
	t := model.DefaultTemplate(tc.Label)
	t.Src, t.Attrs = tc.src(), tc.attrs()
	image, st := b.str(tc.attr(argImage))
	if b.required(st, tc.attr(argImage), tc.blockMeta, argImage, "a container image", `image = "python:3.12-slim"`) == set {
		if problem := imageProblem(image); problem != "" {
			b.errorf(tc.attr(argImage).Expr.Range(), "Invalid image", "The image %s %s", clipValue(image), problem)
		}
		t.Image = image
	}
	t.Command, _ = b.strList(tc.attr(argCommand))
	t.Args, _ = b.strList(tc.attr(argArgs))

	if rc, st := b.str(tc.attr(argRuntimeClass)); st == set {
		if !slices.Contains(b.runtimeClasses, rc) {
			b.unknownRuntimeClass(tc.attr(argRuntimeClass).Expr.Range(), rc)
		}
		t.RuntimeClass = rc
	}

	// Loosening knobs first: run_as_non_root decides whether UID 0 is allowed.
	if v, st := b.boolean(tc.attr(argRunAsNonRoot)); st == set {
		t.AllowRoot = !v
	}
	if v, st := b.boolean(tc.attr(argAllowPrivilegeEscalation)); st == set {
		t.AllowPrivilegeEscalation = v
	}
	if v, st := b.boolean(tc.attr(argPrivileged)); st == set {
		t.Privileged = v
	}
	if v, st := b.boolean(tc.attr(argReadOnlyRoot)); st == set {
		t.WritableRootFilesystem = !v
	}
	if v, st := b.boolean(tc.attr(argAutomountToken)); st == set {
		t.AutomountServiceAccountToken = v
	}
	if caps, st := b.strList(tc.attr(argAddCapabilities)); st == set {
		for _, c := range caps {
			if !capabilityRe.MatchString(c) {
				b.errorf(tc.attr(argAddCapabilities).Expr.Range(), "Invalid capability",
					"%q is not a Linux capability name such as \"NET_BIND_SERVICE\" (upper case, without the CAP_ prefix).", c)
			}
		}
		t.AddCapabilities = caps
	}
	if v, st := b.str(tc.attr(argSeccompProfile)); st == set {
		if v != model.SeccompRuntimeDefault && v != model.SeccompUnconfined && !(strings.HasPrefix(v, "Localhost/") && len(v) > len("Localhost/")) {
			b.errorf(tc.attr(argSeccompProfile).Expr.Range(), "Invalid seccomp profile",
				"%q is not a seccomp profile.%s Use \"RuntimeDefault\", or \"Localhost/<profile>\" for a profile installed on the nodes.",
				v, didYouMeanSentence(v, []string{model.SeccompRuntimeDefault, model.SeccompUnconfined}))
		}
		t.Seccomp = v
	}

	minUID := int64(minRunAsUser)
	if t.AllowRoot {
		minUID = 0
	}
	if uid, st := b.integer(tc.attr(argRunAsUser), minUID, maxRunAsUser); st == set {
		t.RunAsUser = uid
	}

	if size, st := b.str(tc.attr(argTmpSize)); st == set {
		if q, ok := b.quantity(tc.attr(argTmpSize).Expr.Range(), "tmp_size", size); ok && q.Sign() == 0 {
			b.errorf(tc.attr(argTmpSize).Expr.Range(), "Invalid tmp_size",
				"tmp_size is zero. The root filesystem is read-only, so /tmp is the sandbox's only scratch space: give it a size such as %q.", model.DefaultTmpSize)
		}
		t.TmpSize = size
	}

	t.Resources = b.resources(tc.one(blockResources))
	if rn := tc.one(blockResources); rn != nil {
		// The resources block's arguments, for findings: "resources.unbounded".
		for name, r := range rn.attrs() {
			if t.Attrs == nil {
				t.Attrs = model.Attrs{}
			}
			t.Attrs[blockResources+"."+name] = r
		}
	}
	t.Workspace = b.workspace(tc.one(blockWorkspace))

	envRanges := map[string]hcl.Range{}
	if entries, st := b.strMap(tc.attr(argEnv)); st == set {
		t.Env = map[string]string{}
		for _, en := range entries {
			if !envVarRe.MatchString(en.Key) {
				b.errorf(en.KeyRange, "Invalid environment variable name",
					"%q is not a valid environment variable name: use letters, digits and '_', not starting with a digit.", en.Key)
			}
			t.Env[en.Key] = en.Value
			envRanges[en.Key] = en.KeyRange
		}
	}
	for _, sn := range tc.all(blockSecretEnv) {
		se := model.SecretEnv{Name: sn.Label, Src: sn.src(), Attrs: sn.attrs()}
		if first, dup := envRanges[sn.Label]; dup {
			b.errorf(sn.LabelRange, "Duplicate environment variable",
				"%s is also set in env at %s. Set each variable once.", sn.Label, pos(first))
		}
		secret, st := b.str(sn.attr(argSecret))
		if b.required(st, sn.attr(argSecret), sn.blockMeta, argSecret, "the name of the Secret", `secret = "llm-credentials"`) == set {
			if problem := dnsSubdomainProblem(secret); problem != "" {
				b.errorf(sn.attr(argSecret).Expr.Range(), "Invalid Secret name", "The Secret name %q %s", secret, problem)
			}
			se.Secret = secret
		}
		key, st := b.str(sn.attr(argKey))
		if b.required(st, sn.attr(argKey), sn.blockMeta, argKey, "the key in the Secret", `key = "api-key"`) == set {
			if !secretKeyRe.MatchString(key) {
				b.errorf(sn.attr(argKey).Expr.Range(), "Invalid Secret key", "%q is not a Secret key: use letters, digits, '-', '_' and '.'.", key)
			}
			se.Key = key
		}
		if v, st := b.boolean(sn.attr(argOptional)); st == set {
			se.Optional = v
		}
		t.SecretEnv = append(t.SecretEnv, se)
	}
	return t
}

// workspace builds a template's workspace block (nil when there is none);
// its kind has no default, so what survives a sandbox is explicit.
func (b *builder) workspace(n *node) *model.Workspace {
	if n == nil {
		return nil
	}
	w := &model.Workspace{Kind: model.DefaultWorkspaceKind, Size: model.DefaultWorkspaceSize, MountPath: model.DefaultWorkspaceMountPath, Src: n.src(), Attrs: n.attrs()}
	kind, st := b.enum(n.attr(argKind), workspaceKinds, "workspace kind")
	// Retention must be a decision, not an accident: kind has no default.
	if b.required(st, n.attr(argKind), n.blockMeta, argKind, "its kind, so what survives a sandbox is explicit", `kind = "ephemeral" (gone with the pod) or kind = "persistent" (a volume per sandbox, deleted with it)`) == set {
		w.Kind = kind
	}
	if s, st := b.str(n.attr(argSize)); st == set {
		if q, ok := b.quantity(n.attr(argSize).Expr.Range(), "workspace size", s); ok && q.Sign() == 0 {
			b.errorf(n.attr(argSize).Expr.Range(), "Invalid workspace size", "size is zero. Give the workspace a size such as %q.", model.DefaultWorkspaceSize)
		}
		w.Size = s
	}
	if p, st := b.str(n.attr(argMountPath)); st == set {
		if b.mountPath(n.attr(argMountPath), p) && (p == "/tmp" || strings.HasPrefix(p, "/tmp/")) {
			b.errorf(n.attr(argMountPath).Expr.Range(), "Invalid mount path", "%q is inside /tmp, which is the sandbox's own scratch volume. Use a path such as %q.", p, model.DefaultWorkspaceMountPath)
		}
		w.MountPath = p
	}
	if sc, st := b.str(n.attr(argStorageClass)); st == set {
		if w.Kind != model.WorkspacePersistent {
			b.errorf(n.attr(argStorageClass).Expr.Range(), "storage_class needs a persistent workspace",
				"An ephemeral workspace is an emptyDir and has no storage class. Remove storage_class, or set kind = \"persistent\".")
		} else if problem := dnsSubdomainProblem(sc); problem != "" {
			b.errorf(n.attr(argStorageClass).Expr.Range(), "Invalid storage class", "The storage class %q %s", sc, problem)
		}
		w.StorageClass = sc
	}
	return w
}

// unknownRuntimeClass reports a reference to a runtime class the spec does
// not declare.
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

// resourceFields maps a resource key to its request and limit fields.
func resourceFields(r *model.Resources) map[string][2]*string {
	return map[string][2]*string{
		resourceCPU:              {&r.RequestsCPU, &r.LimitsCPU},
		resourceMemory:           {&r.RequestsMemory, &r.LimitsMemory},
		resourceEphemeralStorage: {&r.RequestsEphemeralStorage, &r.LimitsEphemeralStorage},
	}
}

// resources builds a resources block (requests, limits; the defaults when
// there is none) and reports requests above their limits.
func (b *builder) resources(rc *node) model.Resources {
	var r model.Resources
	if rc == nil {
		r.ApplyResourceDefaults()
		return r
	}
	requests, rok := b.resourceMap(rc.attr(argRequests), resourceKeys)
	limits, lok := b.resourceMap(rc.attr(argLimits), resourceKeys)
	fields := resourceFields(&r)
	for key, s := range requests {
		*fields[key][0] = s.Value
	}
	for key, s := range limits {
		*fields[key][1] = s.Value
	}
	r.ApplyResourceDefaults()

	// unbounded removes limits, visibly: policy flags every one.
	unbounded := map[string]bool{}
	if keys, st := b.strList(rc.attr(argUnbounded)); st == set {
		for _, k := range keys {
			if !slices.Contains(resourceKeys, k) {
				b.errorf(rc.attr(argUnbounded).Expr.Range(), "Unsupported resource",
					"%q is not a resource Paddock sets.%s unbounded takes %s.", k, didYouMeanSentence(k, resourceKeys), quotedList(resourceKeys))
				continue
			}
			if l, ok := limits[k]; ok {
				b.errorf(l.ValueRange, "Limit of an unbounded resource",
					"limits.%s is set, but unbounded also lists %q. Remove one of them.", k, k)
			}
			unbounded[k] = true
			*fields[k][1] = ""
			delete(limits, k)
		}
	}
	if !rok || !lok {
		return r
	}
	for k := range unbounded {
		delete(requests, k)
	}
	b.checkRequestsWithinLimits(requests, limits, fields, "requests", "limits")
	return r
}

// checkRequestsWithinLimits reports a request above its limit, pointing at
// whichever side the spec set. Kubernetes rejects such a container.
func (b *builder) checkRequestsWithinLimits(requests, limits map[string]resourceSetting, fields map[string][2]*string, reqName, limName string) {
	for _, key := range resourceKeys {
		req, reqSet := requests[key]
		lim, limSet := limits[key]
		if !reqSet && !limSet {
			continue
		}
		if *fields[key][1] == "" {
			continue // unbounded
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
		_ = reqName
		b.errorf(at, "Request above limit",
			"The %s request (%s) is above its %s (%s); Kubernetes would reject the sandbox. Raise %s.%s to at least %s, or lower the request.",
			key, reqQ.String(), limitWord, limQ.String(), limName, key, reqQ.String())
	}
}

// resourceMap evaluates a quantity object: keys among keys, values
// quantities. ok is false when anything in it was invalid.
func (b *builder) resourceMap(attr *hcl.Attribute, keys []string) (map[string]resourceSetting, bool) {
	entries, st := b.strMap(attr)
	if st == invalid {
		return nil, false
	}
	out := map[string]resourceSetting{}
	ok := true
	for _, en := range entries {
		if !slices.Contains(keys, en.Key) {
			b.errorf(en.KeyRange, "Unsupported resource",
				"%q is not a resource Paddock sets.%s %s takes %s.",
				en.Key, didYouMeanSentence(en.Key, keys), attr.Name, quotedList(keys))
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

// warmPool builds a warm_pool block of tenant: the template it keeps warm
// (one of the tenant's own templates), its replicas and its update strategy.
func (b *builder) warmPool(tc *node, tenant string, wc *node, templates []string) model.WarmPool {
	wp := model.WarmPool{Name: wc.Label, Src: wc.src(), Attrs: wc.attrs(), UpdateStrategy: model.DefaultWarmPoolUpdateStrategy}
	tpl, st := b.str(wc.attr(argTemplate))
	if b.required(st, wc.attr(argTemplate), wc.blockMeta, argTemplate, "the template it keeps warm", fmt.Sprintf("template = %q", firstOr(templates, wc.Label))) == set {
		if !slices.Contains(templates, tpl) {
			b.unknownTemplate(tc, tenant, wc.attr(argTemplate).Expr.Range(), tpl, templates)
		}
		wp.Template = tpl
	}
	wp.Replicas = model.DefaultWarmPoolReplicas
	if n, st := b.integer(wc.attr(argReplicas), minReplicas, maxReplicas); st == set {
		wp.Replicas = int32(n)
	}
	if v, st := b.str(wc.attr(argUpdateStrategy)); st == set {
		if slices.Contains(model.UpdateStrategies, v) {
			wp.UpdateStrategy = v
		} else {
			b.errorf(wc.attr(argUpdateStrategy).Expr.Range(), "Invalid update strategy",
				"%q is not a valid update_strategy.%s Use %q (the default: unclaimed sandboxes of an older template are replaced at once), or %q (they stay in the pool until claims take them; needs a waiver of PDK-410 with the reason).",
				v, didYouMeanSentence(v, model.UpdateStrategies), model.UpdateRecreate, model.UpdateOnReplenish)
		}
	}
	return wp
}

// unknownTemplate reports a warm pool's template that the tenant does not
// declare, naming the tenants that do when it belongs to another one.
func (b *builder) unknownTemplate(tc *node, tenant string, at hcl.Range, name string, templates []string) {
	var others []string
	for _, owner := range b.templateOwner[name] {
		if owner != tc.Label {
			others = append(others, owner)
		}
	}
	if len(others) > 0 {
		b.errorf(at, "Template of another tenant",
			"Template %q belongs to tenant %s, not to tenant %q. Warm pools never cross trust boundaries: declare the template in tenant %q, or move the pool to its tenant. (Policy rule PDK-405.)",
			name, quotedList(others), tenant, tenant)
		return
	}
	hint := fmt.Sprintf("Declare a template %q block in tenant %q.", name, tenant)
	if len(templates) > 0 {
		hint = fmt.Sprintf("Templates of tenant %q: %s.", tenant, quotedList(templates))
	}
	b.errorf(at, "Unknown template",
		"Tenant %q declares no template %q.%s %s", tenant, name, didYouMeanSentence(name, templates), hint)
}
