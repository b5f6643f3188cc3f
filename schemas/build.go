package schemas

import (
	"fmt"
	"math"
	"net/url"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/paddock-platform/paddock/model"
	"github.com/paddock-platform/paddock/pins"
)

// This file is step 3 of a load: nodes become the model. Every expression is
// evaluated here, values are checked and references resolved, and whatever
// the spec leaves unset keeps the default of the model/defaults.go
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
		p.Src = pc.src()
		name, st := b.str(pc.attr("name"))
		if b.required(st, pc.attr("name"), pc.blockMeta, "name", "a name", `name = "my-platform"`) == set {
			b.checkLabel(pc.attr("name"), name, "platform name")
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
	for _, wc := range cfg.Waivers {
		p.Waivers = append(p.Waivers, b.waiver(wc))
	}
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

// --- target, cluster, node pools ---------------------------------------------

var (
	gcpProjectRe  = regexp.MustCompile(`^[a-z][-a-z0-9]{4,28}[a-z0-9]$`)
	gcpLocationRe = regexp.MustCompile(`^[a-z]+-[a-z]+[0-9]+(-[a-z])?$`)
	gkeClusterRe  = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$`)
	machineTypeRe = regexp.MustCompile(`^[a-z][a-z0-9]*-[a-z0-9-]+$`)
)

func (b *builder) target(tc *node) model.Target {
	t := model.Target{Kind: model.TargetKind(tc.Label), Src: tc.src(), Attrs: tc.attrs()}
	switch tc.Label {
	case targetLocal:
		t.FQDNPolicy = model.FQDNPolicyCilium
	case targetGKE:
		t.FQDNPolicy = model.FQDNPolicyGKE
	case targetKubeconfig:
		t.FQDNPolicy = model.FQDNPolicyNone
		if v, st := b.str(tc.attr("fqdn_policy")); st == set {
			t.FQDNPolicy = v
		}
	}
	switch tc.Label {
	case targetKubeconfig:
		// An empty path means $KUBECONFIG or ~/.kube/config, resolved at use time.
		if p, st := b.str(tc.attr("path")); st == set {
			if strings.TrimSpace(p) == "" {
				b.errorf(tc.attr("path").Expr.Range(), "Invalid kubeconfig path",
					"path is empty. Remove the argument to use $KUBECONFIG or ~/.kube/config, or set the path of a kubeconfig file.")
			}
			t.Kubeconfig = p
		}
		if kctx, st := b.str(tc.attr("context")); st == set {
			if strings.TrimSpace(kctx) == "" {
				b.errorf(tc.attr("context").Expr.Range(), "Invalid kubeconfig context",
					"context is empty. Remove the argument to use the kubeconfig's current context, or name one of its contexts.")
			}
			t.Context = kctx
		}
	case targetGKE:
		project, st := b.str(tc.attr("project"))
		if b.required(st, tc.attr("project"), tc.blockMeta, "project", "the Google Cloud project ID", `project = "my-project"`) == set {
			if !gcpProjectRe.MatchString(project) {
				b.errorf(tc.attr("project").Expr.Range(), "Invalid project ID",
					"%q is not a Google Cloud project ID: 6 to 30 lower case letters, digits and '-', starting with a letter. Use the ID, not the display name or number.", project)
			}
			t.Project = project
		}
		loc, st := b.str(tc.attr("location"))
		if b.required(st, tc.attr("location"), tc.blockMeta, "location", "a region or zone", `location = "europe-west1"`) == set {
			if !gcpLocationRe.MatchString(loc) {
				b.errorf(tc.attr("location").Expr.Range(), "Invalid location",
					"%q is not a Google Cloud region (\"europe-west1\") or zone (\"europe-west1-b\").", loc)
			}
			t.Location = loc
		}
		t.ClusterName = b.p.Name
		if name, st := b.str(tc.attr("cluster_name")); st == set {
			if !gkeClusterRe.MatchString(name) {
				b.errorf(tc.attr("cluster_name").Expr.Range(), "Invalid cluster name",
					"%q is not a GKE cluster name: at most 40 lower case letters, digits and '-', starting with a letter.", name)
			}
			t.ClusterName = name
		}
	}
	return t
}

func (b *builder) cluster(cfg *config) {
	gke := cfg.Target != nil && cfg.Target.Label == targetGKE
	if !gke {
		// Cluster settings and node pools belong to a cluster Paddock creates.
		if cfg.Target != nil && slices.Contains(targetKinds, cfg.Target.Label) {
			for _, n := range append([]*node{cfg.Cluster}, cfg.NodePools...) {
				if n == nil {
					continue
				}
				b.errorf(n.DefRange, fmt.Sprintf("%s block needs target \"gke\"", n.Type),
					"The %s block configures the GKE cluster Paddock creates, but this spec's target is %q, a cluster Paddock does not create. Remove the block, or use target \"gke\".",
					n.what(), cfg.Target.Label)
			}
		}
		return
	}
	c := model.DefaultCluster()
	c.Src = b.p.Target.Src
	n := cfg.Cluster
	if n != nil {
		c.Src, c.Attrs = n.src(), n.attrs()
	}
	if v, st := b.enum(n.attr("release_channel"), releaseChannels, "release channel"); st == set {
		c.ReleaseChannel = v
	}
	if v, st := b.boolean(n.attr("private_nodes")); st == set {
		c.PublicNodes = !v
	}
	if v, st := b.boolean(n.attr("dataplane_v2")); st == set {
		c.NoDataplaneV2 = !v
	}
	if v, st := b.boolean(n.attr("workload_identity")); st == set {
		c.NoWorkloadIdentity = !v
	}
	if v, st := b.boolean(n.attr("deletion_protection")); st == set {
		c.AllowDeletion = !v
	}
	if v, st := b.boolean(n.attr("fqdn_network_policy")); st == set {
		c.FQDNNetworkPolicy = v
	}
	if v, st := b.boolean(n.attr("allow_replacement")); st == set {
		c.AllowReplacement = v
	}
	if nets, st := b.strList(n.attr("authorized_networks")); st == set {
		for _, cidr := range nets {
			b.cidr(n.attr("authorized_networks"), cidr)
		}
		c.AuthorizedNetworks = nets
	}
	b.p.Cluster = &c
}

// cidr reports a value of attr that is not a CIDR. It reads it with
// model.ParseCIDR, the parser every later stage uses, so a range that passes
// here never fails later.
func (b *builder) cidr(attr *hcl.Attribute, s string) bool {
	if _, err := model.ParseCIDR(s); err != nil {
		b.errorf(attr.Expr.Range(), "Invalid CIDR",
			"%q is not an address range in CIDR notation, such as \"10.0.0.0/8\" or \"203.0.113.7/32\" (%s).", s, cidrReason(err))
		return false
	}
	return true
}

// cidrReason is the parser's complaint without the repeated input.
func cidrReason(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, "): "); i >= 0 && strings.HasPrefix(msg, "netip.ParsePrefix(") {
		return msg[i+3:]
	}
	return msg
}

func (b *builder) nodePool(n *node) (model.NodePool, bool) {
	isolation := model.DefaultNodePoolIsolation
	if v, st := b.enum(n.attr("isolation"), isolations, "isolation"); st == set {
		isolation = v
	}
	np := model.DefaultNodePool(n.Label, isolation)
	np.Src, np.Attrs = n.src(), n.attrs()
	if mt, st := b.str(n.attr("machine_type")); st == set {
		// Whether the series has nested virtualization (isolation "kvm") is
		// the GCP layer's rule GCP-010, which policy runs with this argument's
		// range: one list of series, in gcpinputs/rules.
		if !machineTypeRe.MatchString(mt) {
			b.errorf(n.attr("machine_type").Expr.Range(), "Invalid machine type",
				"%q is not a Compute Engine machine type such as \"e2-standard-4\".", mt)
		}
		np.MachineType = mt
	}
	if as := n.one(blockAutoscaling); as != nil {
		if v, st := b.integer(as.attr("min"), 0, maxNodes); st == set {
			np.MinNodes = int32(v)
		}
		if v, st := b.integer(as.attr("max"), 1, maxNodes); st == set {
			np.MaxNodes = int32(v)
		}
		if np.MinNodes > np.MaxNodes {
			at := as.DefRange
			if a := as.attr("min"); a != nil {
				at = a.Expr.Range()
			}
			b.errorf(at, "Invalid autoscaling bounds", "min (%d) is above max (%d).", np.MinNodes, np.MaxNodes)
		}
	}
	if entries, st := b.strMap(n.attr("labels")); st == set {
		np.Labels = b.labels(entries, "node label")
	}
	for _, tn := range n.all(blockTaint) {
		t := model.Taint{Effect: "NoSchedule"}
		key, st := b.str(tn.attr("key"))
		if b.required(st, tn.attr("key"), tn.blockMeta, "key", "the taint key", `key = "example.com/dedicated"`) == set {
			if problem := labelKeyProblem(key); problem != "" {
				b.errorf(tn.attr("key").Expr.Range(), "Invalid taint key", "The taint key %q %s", key, problem)
			}
			t.Key = key
		}
		if v, st := b.str(tn.attr("value")); st == set {
			if problem := labelValueProblem(v); problem != "" {
				b.errorf(tn.attr("value").Expr.Range(), "Invalid taint value", "The taint value %q %s", v, problem)
			}
			t.Value = v
		}
		if v, st := b.enum(tn.attr("effect"), taintEffects, "taint effect"); st == set {
			t.Effect = v
		}
		np.Taints = append(np.Taints, t)
	}
	if v, st := b.boolean(n.attr("dedicated")); st == set {
		np.Shared = !v
	}
	return np, true
}

// labels checks label keys and values and returns them as a map.
func (b *builder) labels(entries []entry, what string) map[string]string {
	out := map[string]string{}
	for _, en := range entries {
		if problem := labelKeyProblem(en.Key); problem != "" {
			b.errorf(en.KeyRange, "Invalid "+what+" key", "The label key %q %s", en.Key, problem)
		}
		if problem := labelValueProblem(en.Value); problem != "" {
			b.errorf(en.ValueRange, "Invalid "+what+" value", "The label value %q %s", en.Value, problem)
		}
		out[en.Key] = en.Value
	}
	return out
}

// --- agent sandbox, runtime classes ------------------------------------------

var digestRe = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)

// exampleHandler names a RuntimeClass handler of each isolation, for messages.
var exampleHandler = map[string]string{model.IsolationGVisor: "runsc", model.IsolationKVM: "kata-qemu"}

func (b *builder) agentSandbox(ac *node) model.AgentSandboxRelease {
	r := model.AgentSandboxRelease{Src: ac.src(), Attrs: ac.attrs()}
	version, st := b.str(ac.attr("version"))
	example := fmt.Sprintf("version = %q", pinnedOr(pins.AgentSandbox, "v0.5.6"))
	if b.required(st, ac.attr("version"), ac.blockMeta, "version", "a pinned release version", example) == set {
		if !versionRe.MatchString(version) {
			b.errorf(ac.attr("version").Expr.Range(), "Invalid agent_sandbox version",
				"%q is not a release version. Pin an exact release tag of the form vMAJOR.MINOR.PATCH, for example: %s", version, example)
		}
		r.Version = version
	}
	image, st := b.str(ac.attr("image"))
	switch st {
	case set:
		if problem := imageProblem(image); problem != "" {
			b.errorf(ac.attr("image").Expr.Range(), "Invalid image", "The controller image %s %s Remove image to use the pinned release image.", clipValue(image), problem)
		}
		r.Image = image
	case unset:
		if r.Version != "" {
			r.Image = pins.AgentSandboxImage + ":" + r.Version
		}
	}
	if d, st := b.str(ac.attr("digest")); st == set {
		if !digestRe.MatchString(d) {
			b.errorf(ac.attr("digest").Expr.Range(), "Invalid digest",
				"%q is not an image digest. Write \"sha256:\" and 64 lower case hex digits, as `crane digest` or `docker buildx imagetools inspect` print it.", d)
		}
		r.Digest = d
	}
	return r
}

func pinnedOr(v, fallback string) string {
	if v != "" {
		return v
	}
	return fallback
}

func (b *builder) runtimeClass(rc *node) model.RuntimeClass {
	out := model.RuntimeClass{Name: rc.Label, Src: rc.src(), Attrs: rc.attrs()}
	handler, st := b.str(rc.attr("handler"))
	if b.required(st, rc.attr("handler"), rc.blockMeta, "handler", "the handler configured in the node's container runtime", `handler = "runsc"`) == set {
		if problem := dnsLabelProblem(handler); problem != "" {
			b.errorf(rc.attr("handler").Expr.Range(), "Invalid runtime handler",
				"%q %s A handler is the name of a runtime configured in containerd on the nodes (gVisor: \"runsc\", Kata: \"kata\"), a DNS-1123 label.", handler, problem)
		}
		out.Handler = handler
	}
	if entries, st := b.strMap(rc.attr("node_selector")); st == set {
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
	for _, tc := range rc.all(blockToleration) {
		out.Tolerations = append(out.Tolerations, b.toleration(tc))
	}
	if over, ok := b.resourceMap(rc.attr("overhead"), []string{resourceCPU, resourceMemory}); ok {
		if s, ok := over[resourceCPU]; ok {
			out.OverheadCPU = s.Value
		}
		if s, ok := over[resourceMemory]; ok {
			out.OverheadMemory = s.Value
		}
	}
	if rc.attr("overhead") == nil {
		// A Kata pod is a VM: its VMM and guest kernel are counted unless the
		// spec says otherwise.
		if cpu, mem, ok := model.DefaultKataOverhead(out.Handler); ok {
			out.OverheadCPU, out.OverheadMemory = cpu, mem
		}
	}
	if b.p.Target.Kind == model.TargetGKE {
		b.gkeRuntimeClass(rc, out)
	}
	if name, st := b.str(rc.attr("node_pool")); st == set {
		out.NodePool = name
		pool, ok := b.nodePools[name]
		switch {
		case !ok:
			names := make([]string, 0, len(b.nodePools))
			for n := range b.nodePools {
				names = append(names, n)
			}
			sort.Strings(names)
			hint := "The spec declares no node pools."
			if len(names) > 0 {
				hint = fmt.Sprintf("Declared node pools: %s.", quotedList(names))
			}
			b.errorf(rc.attr("node_pool").Expr.Range(), "Unknown node pool",
				"No node_pool %q is declared.%s %s", name, didYouMeanSentence(name, names), hint)
		case out.Handler != "" && model.HandlerIsolation(out.Handler) != "" && model.HandlerIsolation(out.Handler) != pool.Isolation:
			b.errorf(rc.attr("node_pool").Expr.Range(), "Runtime class and node pool disagree",
				"Handler %q needs %s nodes, but node pool %q has isolation %q. Use a node pool with isolation %q, or a handler for %s nodes such as %q.",
				out.Handler, model.HandlerIsolation(out.Handler), name, pool.Isolation, model.HandlerIsolation(out.Handler), pool.Isolation, exampleHandler[pool.Isolation])
		default:
			// Scheduling defaults to the pool's nodes.
			if out.NodeSelector == nil {
				out.NodeSelector = pool.NodeLabels()
			}
			if out.Tolerations == nil {
				for _, t := range pool.NodeTaints() {
					out.Tolerations = append(out.Tolerations, model.Toleration{Key: t.Key, Operator: "Equal", Value: t.Value, Effect: t.Effect})
				}
			}
		}
	}
	return out
}

// gkeRuntimeClass checks a runtime class against what GKE provides: GKE
// Sandbox configures gVisor as handler "gvisor" (never "runsc") and creates
// and owns the RuntimeClass "gvisor" itself, which Paddock uses as it is.
func (b *builder) gkeRuntimeClass(rc *node, out model.RuntimeClass) {
	h := rc.attr("handler")
	if h == nil {
		return
	}
	switch {
	case model.HandlerIsolation(out.Handler) == model.IsolationGVisor && out.Handler != "gvisor":
		b.errorf(h.Expr.Range(), "Runtime handler not on GKE nodes",
			"GKE Sandbox configures gVisor on its nodes as handler \"gvisor\"; no GKE node has a %q handler, so every sandbox of runtime class %q would fail to start. Use handler = \"gvisor\".", out.Handler, out.Name)
	case out.Name == "gvisor" && out.Handler != "gvisor":
		b.errorf(h.Expr.Range(), "RuntimeClass gvisor belongs to GKE",
			"On GKE, GKE Sandbox creates and owns the RuntimeClass \"gvisor\" (handler \"gvisor\"), so runtime class \"gvisor\" cannot have handler %q. Set handler = \"gvisor\", or give this runtime class another name.", out.Handler)
	case out.Name == "gvisor":
		for _, name := range []string{"node_selector", "overhead"} {
			if a := rc.attr(name); a != nil {
				b.errorf(a.Range, "RuntimeClass gvisor belongs to GKE",
					"On GKE, GKE Sandbox creates and owns the RuntimeClass \"gvisor\" with its own scheduling (node selector and toleration sandbox.gke.io/runtime=gvisor); Paddock uses it as it is, so %s here would be ignored. Remove %s (node_pool is enough).", name, name)
			}
		}
		for _, tn := range rc.all(blockToleration) {
			b.errorf(tn.DefRange, "RuntimeClass gvisor belongs to GKE",
				"On GKE, GKE Sandbox creates and owns the RuntimeClass \"gvisor\" with its own toleration (sandbox.gke.io/runtime=gvisor:NoSchedule); Paddock uses it as it is, so this toleration would be ignored. Remove it (node_pool is enough).")
		}
	}
}

func (b *builder) toleration(tc *node) model.Toleration {
	var t model.Toleration
	t.Operator = "Equal"
	if op, st := b.str(tc.attr("operator")); st == set {
		if !slices.Contains(tolerationOperators, op) {
			b.errorf(tc.attr("operator").Expr.Range(), "Invalid toleration operator",
				"%q is not a toleration operator.%s Use \"Equal\" (the default) to match a taint's value, or \"Exists\" to match any value.",
				op, didYouMeanSentence(op, tolerationOperators))
		}
		t.Operator = op
	}
	key, kst := b.str(tc.attr("key"))
	if kst == set {
		if problem := labelKeyProblem(key); problem != "" {
			b.errorf(tc.attr("key").Expr.Range(), "Invalid toleration key", "The taint key %q %s", key, problem)
		}
		t.Key = key
	}
	if kst == unset && t.Operator == "Equal" {
		b.required(kst, tc.attr("key"), tc.blockMeta, "key", "the key of the taint it tolerates", `key = "sandbox.gke.io/runtime"`)
	}
	if value, st := b.str(tc.attr("value")); st == set {
		switch {
		case t.Operator == "Exists" && value != "":
			b.errorf(tc.attr("value").Expr.Range(), "Invalid toleration value",
				"A toleration with operator \"Exists\" matches any value of the taint, so it must not set one. Remove value, or use operator \"Equal\".")
		default:
			if problem := labelValueProblem(value); problem != "" {
				b.errorf(tc.attr("value").Expr.Range(), "Invalid toleration value", "The taint value %q %s", value, problem)
			}
		}
		t.Value = value
	}
	if effect, st := b.str(tc.attr("effect")); st == set {
		if effect != "" && !slices.Contains(taintEffects, effect) {
			b.errorf(tc.attr("effect").Expr.Range(), "Invalid toleration effect",
				"%q is not a taint effect.%s Use one of %s, or leave effect out to tolerate every effect.",
				effect, didYouMeanSentence(effect, taintEffects), quotedList(taintEffects))
		}
		t.Effect = effect
	}
	return t
}

// --- tenants -----------------------------------------------------------------

// tenants builds every tenant block, stamping one tenant per for_each element.
func (b *builder) tenants(tenants []*node) {
	namespaces := map[string]hcl.Range{}
	names := map[string]hcl.Range{}
	for _, tn := range tenants {
		if tn.attr("for_each") == nil {
			names[tn.Label] = tn.LabelRange
		}
	}
	// full reports, once, a tenant past MaxTenants at at.
	reported := false
	full := func(at hcl.Range, how string) bool {
		if len(b.p.Tenants) < MaxTenants {
			return false
		}
		if !reported {
			reported = true
			b.errorf(at, "Too many tenants",
				"%s makes tenant number %d; a platform has at most %d tenants, however they are written (tenant blocks and for_each together). Split the tenants over several platforms (each its own stack).",
				how, MaxTenants+1, MaxTenants)
		}
		return true
	}
	for _, tn := range tenants {
		fe := tn.attr("for_each")
		if fe == nil {
			if full(tn.DefRange, fmt.Sprintf("The tenant block %q", tn.Label)) {
				continue
			}
			b.p.Tenants = append(b.p.Tenants, b.tenant(tn, tn.Label, namespaces))
			continue
		}
		for _, inst := range b.forEach(fe) {
			if full(fe.Expr.Range(), "for_each") {
				break
			}
			if problem := dnsLabelProblem(inst.key); problem != "" {
				b.errorf(fe.Expr.Range(), "Invalid tenant name",
					"The for_each key %q names a tenant, but it %s It names Kubernetes objects, so it must be a DNS-1123 label.%s",
					inst.key, problem, suggestLabelSentence(inst.key))
				continue
			}
			if first, dup := names[inst.key]; dup {
				b.errorf(fe.Expr.Range(), fmt.Sprintf("Duplicate tenant %q", inst.key),
					"for_each makes a tenant named %q, but one was already declared at %s. Names must be unique across all files of the spec: rename or remove one of them.",
					inst.key, pos(first))
				continue
			}
			names[inst.key] = fe.Expr.Range()
			outer := b.ctx
			b.ctx = outer.NewChild()
			b.ctx.Variables = map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{
				"key": cty.StringVal(inst.key), "value": inst.value,
			})}
			b.p.Tenants = append(b.p.Tenants, b.tenant(tn, inst.key, namespaces))
			b.ctx = outer
		}
	}
}

// instance is one element of a for_each.
type instance struct {
	key   string
	value cty.Value
}

// forEach evaluates a for_each: a map or object (each.key is the key), or a
// set, list or tuple of strings (each.key and each.value are the string).
func (b *builder) forEach(attr *hcl.Attribute) []instance {
	val, diags := attr.Expr.Value(b.ctx)
	b.refine(diags)
	b.diags = append(b.diags, diags...)
	if diags.HasErrors() {
		return nil
	}
	if val.HasMark(brokenMark) || val.ContainsMarked() && hasMarkDeep(val, brokenMark) {
		return nil
	}
	if hasMarkDeep(val, sensitiveMark) {
		b.errorf(attr.Expr.Range(), "Sensitive for_each",
			"for_each uses a sensitive value, but its keys name tenants, which appear in every report and object. Use a value that is not sensitive.")
		return nil
	}
	val, _ = val.UnmarkDeep()
	bad := func(why string) []instance {
		b.errorf(attr.Expr.Range(), "Invalid for_each", "%s for_each takes a map (one tenant per key) or a set or list of strings (one tenant per string), such as toset([\"team-a\", \"team-b\"]).", why)
		return nil
	}
	switch {
	case val.IsNull():
		return bad("for_each is null.")
	case !val.IsWhollyKnown():
		return bad("for_each is not known at load time.")
	}
	ty := val.Type()
	var out []instance
	switch {
	case ty.IsMapType() || ty.IsObjectType():
		for it := val.ElementIterator(); it.Next(); {
			k, v := it.Element()
			out = append(out, instance{key: k.AsString(), value: v})
		}
	case ty.IsSetType() || ty.IsListType() || ty.IsTupleType():
		seen := map[string]bool{}
		for it := val.ElementIterator(); it.Next(); {
			_, v := it.Element()
			if v.IsNull() || !v.Type().Equals(cty.String) {
				if conv, err := convertString(v); err == nil {
					v = conv
				} else {
					return bad("Every element of for_each must be a string.")
				}
			}
			s := v.AsString()
			if seen[s] {
				b.errorf(attr.Expr.Range(), "Duplicate for_each element", "%q appears twice in for_each; each element makes one tenant.", s)
				continue
			}
			seen[s] = true
			out = append(out, instance{key: s, value: v})
		}
	default:
		return bad(fmt.Sprintf("for_each is %s.", ty.FriendlyName()))
	}
	if len(out) > MaxTenants {
		b.errorf(attr.Expr.Range(), "Too many tenants", "for_each makes %d tenants; a platform has at most %d tenants, however they are written (tenant blocks and for_each together). Split the tenants over several platforms (each its own stack).", len(out), MaxTenants)
		return nil
	}
	return out
}

func convertString(v cty.Value) (cty.Value, error) {
	if v.IsNull() {
		return cty.NilVal, fmt.Errorf("null")
	}
	switch v.Type() {
	case cty.String:
		return v, nil
	case cty.Number:
		if hugeNumber(v) {
			return cty.NilVal, fmt.Errorf("number out of range")
		}
		return cty.StringVal(v.AsBigFloat().Text('f', -1)), nil
	}
	return cty.NilVal, fmt.Errorf("not a string")
}

func hasMarkDeep(v cty.Value, mark valueMark) bool {
	_, marks := v.UnmarkDeep()
	_, ok := marks[mark]
	return ok
}

func (b *builder) tenant(tc *node, name string, namespaces map[string]hcl.Range) model.Tenant {
	t := model.DefaultTenant(name)
	t.Src, t.Attrs = tc.src(), tc.attrs()
	ns, st := b.str(tc.attr("namespace"))
	nsRange := tc.LabelRange
	switch st {
	case set:
		nsRange = tc.attr("namespace").Expr.Range()
		b.checkLabel(tc.attr("namespace"), ns, "namespace")
	case unset:
		ns = model.DefaultNamespacePrefix + name
		// Only worth saying when the tenant name itself is valid (otherwise
		// the name already has its own diagnostic).
		if dnsLabelProblem(name) == "" && dnsLabelProblem(ns) != "" {
			b.errorf(tc.LabelRange, "Invalid namespace",
				"The default namespace of tenant %q, %q, %s Set namespace explicitly, or shorten the tenant name.", name, ns, dnsLabelProblem(ns))
		}
	}
	if st != invalid {
		if first, dup := namespaces[ns]; dup {
			b.errorf(nsRange, "Namespace shared by two tenants",
				"Namespace %q is already used by the tenant declared at %s. A tenant is a trust boundary with a namespace of its own: set a different namespace. (Policy rule PDK-107.)",
				ns, pos(first))
		} else {
			namespaces[ns] = tc.DefRange
		}
	}
	t.Namespace = ns
	if v, st := b.str(tc.attr("pod_security")); st == set && v == "privileged" {
		// Privileged enforces nothing: the namespace would lose the one fence
		// that holds whoever writes its pods.
		b.errorf(tc.attr("pod_security").Expr.Range(), "Pod Security privileged refused",
			"pod_security = \"privileged\" turns Pod Security admission off for namespace %q: any pod, privileged or on the host's namespaces, would be admitted. Use \"restricted\" (the default), or \"baseline\" with a waiver of PDK-101 that says why.", t.Namespace)
	} else if v, st := b.enum(tc.attr("pod_security"), podSecurityLevels, "Pod Security level"); st == set {
		t.PodSecurity = v
	}
	t.Quota = b.quota(tc.one(blockQuota), t.Quota)
	t.LimitRange = b.limitRange(tc.one(blockLimitRange), t.LimitRange)
	t.Identity = b.identity(tc.one(blockIdentity), name, t.Identity)
	t.Egress = b.egress(tc.one(blockEgress), t.Egress)
	t.Claims = b.claims(tc.one(blockClaims), t.Claims)

	var templates []string
	for _, tpl := range tc.all(blockTemplate) {
		templates = append(templates, tpl.Label)
		t.Templates = append(t.Templates, b.template(tpl))
	}
	for _, wp := range tc.all(blockWarmPool) {
		t.WarmPools = append(t.WarmPools, b.warmPool(tc, name, wp, templates))
	}
	return t
}

func (b *builder) quota(n *node, q model.Quota) model.Quota {
	if n == nil {
		return q
	}
	q.Src, q.Attrs = n.src(), n.attrs()
	if v, st := b.integer(n.attr("pods"), 0, maxCount); st == set {
		q.Pods = int32(v)
	}
	if v, st := b.integer(n.attr("pvcs"), 0, maxCount); st == set {
		q.PersistentVolumeClaims = int32(v)
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"cpu", &q.LimitsCPU}, {"memory", &q.LimitsMemory}, {"ephemeral_storage", &q.LimitsEphemeralStorage}, {"storage", &q.RequestsStorage}} {
		if s, st := b.str(n.attr(f.name)); st == set {
			if _, ok := b.quantity(n.attr(f.name).Expr.Range(), "quota "+f.name, s); ok {
				*f.dst = s
			}
		}
	}
	if v, st := b.boolean(n.attr("enabled")); st == set {
		q.Disabled = !v
	}
	return q
}

func (b *builder) limitRange(n *node, lr model.LimitRange) model.LimitRange {
	if n == nil {
		return lr
	}
	lr.Src, lr.Attrs = n.src(), n.attrs()
	var r model.Resources
	def, dok := b.resourceMap(n.attr("default"), resourceKeys)
	req, rok := b.resourceMap(n.attr("default_request"), resourceKeys)
	fields := resourceFields(&r)
	for key, s := range req {
		*fields[key][0] = s.Value
	}
	for key, s := range def {
		*fields[key][1] = s.Value
	}
	r.ApplyResourceDefaults()
	if dok && rok {
		b.checkRequestsWithinLimits(req, def, fields, "default_request", "default")
	}
	lr.Defaults = r
	if v, st := b.boolean(n.attr("enabled")); st == set {
		lr.Disabled = !v
	}
	return lr
}

func (b *builder) identity(n *node, tenant string, id model.Identity) model.Identity {
	if n == nil {
		return id
	}
	id.Src, id.Attrs = n.src(), n.attrs()
	if v, st := b.boolean(n.attr("orchestrator")); st == set {
		id.Orchestrator = v
	}
	for _, wn := range n.all(blockWorkloadIdentity) {
		if wi, ok := b.workloadIdentity(n, wn, tenant, id.Orchestrator); ok {
			id.WorkloadIdentities = append(id.WorkloadIdentities, wi)
		}
	}
	if tn := n.one(blockToolGatewayToken); tn != nil {
		tok := &model.ProjectedToken{
			Audience: model.DefaultToolGatewayAudience, Expiration: model.DefaultToolGatewayExpiration,
			MountPath: model.DefaultToolGatewayMountPath, Src: tn.src(), Attrs: tn.attrs(),
		}
		if v, st := b.str(tn.attr("audience")); st == set {
			if strings.TrimSpace(v) == "" {
				b.errorf(tn.attr("audience").Expr.Range(), "Invalid audience", "audience is empty. Name the one service that accepts the token, such as %q.", model.DefaultToolGatewayAudience)
			}
			tok.Audience = v
		}
		if d, st := b.duration(tn.attr("expiration"), minTokenLife, maxTokenLife, false); st == set {
			tok.Expiration = d
		}
		if v, st := b.str(tn.attr("path")); st == set {
			b.mountPath(tn.attr("path"), v)
			tok.MountPath = v
		}
		id.ToolGatewayToken = tok
	}
	return id
}

// workloadIdentityKSA maps a workload_identity label to the Kubernetes
// service account it binds.
var workloadIdentityKSA = map[string]string{
	wiOrchestrator: model.AgentOrchestratorServiceAccount,
	wiAgent:        model.AgentRuntimeServiceAccount,
}

var (
	// iamRoleRe is an IAM role name: predefined, or custom of a project or
	// an organization.
	iamRoleRe = regexp.MustCompile(`^(roles/[A-Za-z0-9_.]+|(projects|organizations)/[^/\s]+/roles/[A-Za-z0-9_.]+)$`)
	// basicRoles grant (or read) nearly everything in a project.
	basicRoles = []string{"roles/owner", "roles/editor", "roles/viewer"}
)

// workloadIdentity builds one workload_identity block of tenant's identity
// block idn. What GKE itself needs (the cluster's workload pool, roles that
// hand out keys or impersonation) is checked by policy (GCP-005, GCP-014).
func (b *builder) workloadIdentity(idn, wn *node, tenant string, orchestrator bool) (model.WorkloadIdentity, bool) {
	ksa, known := workloadIdentityKSA[wn.Label]
	if !known {
		return model.WorkloadIdentity{}, false // the decoder reported the label
	}
	wi := model.WorkloadIdentity{ServiceAccount: ksa, Src: wn.src(), Attrs: wn.attrs()}
	ok := true
	if kind := b.p.Target.Kind; kind != "" && kind != model.TargetGKE {
		b.errorf(wn.DefRange, "workload_identity needs target \"gke\"",
			"GKE Workload Identity binds a Kubernetes service account to a Google service account on a GKE cluster Paddock creates, but this spec's target is %q. Remove the workload_identity block and give the workload its cloud access another way (never a key file), or use target \"gke\".", kind)
		ok = false
	}
	if ksa == model.AgentOrchestratorServiceAccount && !orchestrator {
		at := idn.DefRange
		if a := idn.attr("orchestrator"); a != nil {
			at = a.Range
		}
		b.errorf(wn.LabelRange, "No orchestrator identity to bind",
			"Tenant %q turns the agent-orchestrator service account off (orchestrator = false at %s), so there is nothing to give cloud access to. Remove this workload_identity block, or set orchestrator = true.", tenant, pos(at))
		ok = false
	}
	roles, st := b.strList(wn.attr("roles"))
	if b.required(st, wn.attr("roles"), wn.blockMeta, "roles", "the roles it grants", `roles = ["roles/storage.objectViewer"]`) != set {
		return wi, false
	}
	at := wn.attr("roles").Expr.Range()
	if len(roles) == 0 {
		b.errorf(at, "No roles", "roles is empty. A service account that needs no cloud access needs no workload identity: remove the block, or list the roles it needs, such as [\"roles/storage.objectViewer\"].")
		ok = false
	}
	seen := map[string]bool{}
	for _, r := range roles {
		switch {
		case slices.Contains(basicRoles, r):
			b.errorf(at, "Basic role refused",
				"%s is a basic role: it grants nearly everything in the project to %s of tenant %q. List the predefined roles the workload needs instead, such as \"roles/storage.objectViewer\" or \"roles/aiplatform.user\".", r, ksa, tenant)
			ok = false
		case !iamRoleRe.MatchString(r):
			b.errorf(at, "Invalid IAM role",
				"%q is not an IAM role. Write a predefined role as \"roles/<name>\" (such as \"roles/storage.objectViewer\"), or a custom one as \"projects/<project>/roles/<name>\" or \"organizations/<org>/roles/<name>\".", r)
			ok = false
		case seen[r]:
			b.errorf(at, "Duplicate role", "%s is listed twice. List each role once.", r)
			ok = false
		}
		seen[r] = true
	}
	wi.Roles = roles
	return wi, ok
}

// mountPath reports a mount path that is not absolute and clean.
func (b *builder) mountPath(attr *hcl.Attribute, p string) bool {
	if !strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "/" {
		b.errorf(attr.Expr.Range(), "Invalid mount path",
			"%q is not a mount path: write a clean absolute directory other than \"/\", such as \"/workspace\".", p)
		return false
	}
	return true
}

var fqdnRe = regexp.MustCompile(`^(\*\.)?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)+[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)

func (b *builder) egress(n *node, eg model.Egress) model.Egress {
	if n == nil {
		return eg
	}
	eg.Src, eg.Attrs = n.src(), n.attrs()
	if v, st := b.boolean(n.attr("dns")); st == set {
		eg.DNS = v
	}
	if v, st := b.boolean(n.attr("default_deny")); st == set {
		eg.Unrestricted = !v
	}
	if names, st := b.strList(n.attr("fqdns")); st == set {
		for _, name := range names {
			switch {
			case !fqdnRe.MatchString(name):
				b.errorf(n.attr("fqdns").Expr.Range(), "Invalid host name",
					"%q is not a host name such as \"api.example.com\" or \"*.example.com\" (lower case, no scheme, port or path).", name)
			case model.PublicSuffixWildcard(name):
				b.errorf(n.attr("fqdns").Expr.Range(), "Wildcard over a public suffix",
					"%q matches every host under %q, a public suffix where anyone can register a name (the public suffix list), so an agent could reach hosts an attacker controls. List the hosts, or a wildcard under a domain you control such as \"*.example.com\". (Policy rule PDK-504.)",
					name, strings.TrimPrefix(name, "*."))
			}
		}
		eg.FQDNs = names
		if len(names) > 0 && b.p.Target.FQDNPolicy == model.FQDNPolicyNone {
			b.errorf(n.attr("fqdns").Expr.Range(), "FQDN egress cannot be enforced on this target",
				"target %q declares no FQDN-aware CNI, so an allow-list by host name would be a comment, not a boundary. Set fqdn_policy = \"cilium\" on the target if the cluster runs Cilium, or remove fqdns and route egress through egress { proxy { ... } }.", b.p.Target.Kind)
		}
	}
	for _, an := range n.all(blockAllow) {
		a := model.EgressAllow{Protocol: "TCP", Src: an.src(), Attrs: an.attrs()}
		cidr, st := b.str(an.attr("cidr"))
		if b.required(st, an.attr("cidr"), an.blockMeta, "cidr", "the destination range", `cidr = "10.20.0.0/16"`) == set {
			b.cidr(an.attr("cidr"), cidr)
			a.CIDR = cidr
		}
		ports, st := b.intList(an.attr("ports"), 1, 65535)
		if b.required(st, an.attr("ports"), an.blockMeta, "ports", "the destination ports", `ports = [443]`) == set {
			if len(ports) == 0 {
				b.errorf(an.attr("ports").Expr.Range(), "Invalid ports", "ports is empty. List the destination ports, such as [443]; an allow never opens every port.")
			}
			for _, p := range ports {
				a.Ports = append(a.Ports, int32(p))
			}
		}
		if v, st := b.enum(an.attr("protocol"), protocols, "protocol"); st == set {
			a.Protocol = v
		}
		eg.Allows = append(eg.Allows, a)
	}
	if pn := n.one(blockProxy); pn != nil {
		eg.Proxy = b.proxy(pn)
	}
	return eg
}

func (b *builder) proxy(n *node) *model.EgressProxy {
	px := &model.EgressProxy{Src: n.src(), Attrs: n.attrs()}
	raw, st := b.str(n.attr("url"))
	if b.required(st, n.attr("url"), n.blockMeta, "url", "the proxy URL", `url = "http://squid.egress.svc.cluster.local:3128"`) == set {
		px.URL = raw
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || (u.Path != "" && u.Path != "/") || u.User != nil {
			b.errorf(n.attr("url").Expr.Range(), "Invalid proxy URL",
				"%q is not a proxy URL such as \"http://squid.egress.svc.cluster.local:3128\": scheme http or https, a host, an optional port, no path and no credentials.", raw)
		} else {
			px.Host = u.Hostname()
			port := 80
			if u.Scheme == "https" {
				port = 443
			}
			if p := u.Port(); p != "" {
				port, _ = strconv.Atoi(p)
			}
			if port < 1 || port > 65535 {
				b.errorf(n.attr("url").Expr.Range(), "Invalid proxy URL", "The port of %q is not between 1 and 65535.", raw)
			}
			px.Port = int32(port)
		}
	}
	ns, nsSt := b.str(n.attr("namespace"))
	if nsSt == set {
		b.checkLabel(n.attr("namespace"), ns, "namespace")
		px.Namespace = ns
	}
	cidr, cSt := b.str(n.attr("cidr"))
	if cSt == set {
		b.cidr(n.attr("cidr"), cidr)
		px.CIDR = cidr
	}
	if entries, st := b.strMap(n.attr("pod_labels")); st == set {
		px.PodLabels = b.labels(entries, "pod label")
		if nsSt == unset {
			b.errorf(n.attr("pod_labels").Expr.Range(), "pod_labels needs namespace", "pod_labels select the proxy pods within namespace; set namespace too.")
		}
	}
	switch {
	case nsSt == unset && cSt == unset:
		b.errorf(n.DefRange, "Missing required argument",
			"The proxy block needs where the proxy runs, so the NetworkPolicy can allow exactly it: namespace = \"egress\" for a proxy in the cluster, or cidr = \"10.0.0.5/32\" for one outside.")
	case nsSt == set && cSt == set:
		b.errorf(n.attr("cidr").Expr.Range(), "Conflicting proxy location", "Set namespace (a proxy in the cluster) or cidr (one outside it), not both.")
	}
	return px
}

func (b *builder) claims(n *node, c model.ClaimPolicy) model.ClaimPolicy {
	if n == nil {
		return c
	}
	c.Src, c.Attrs = n.src(), n.attrs()
	if d, st := b.duration(n.attr("ttl"), minClaimTTL, maxClaimTTL, true); st == set {
		c.TTL = d
	}
	if d, st := b.duration(n.attr("max_ttl"), minSessionTTL, maxClaimTTL, true); st == set {
		c.MaxTTL = d
	}
	if v, st := b.enum(n.attr("shutdown_policy"), shutdownPolicies, "shutdown policy"); st == set {
		c.ShutdownPolicy = v
	}
	return c
}

// --- templates ---------------------------------------------------------------

var (
	capabilityRe = regexp.MustCompile(`^[A-Z][A-Z_]*$`)
	secretKeyRe  = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)
)

func (b *builder) template(tc *node) model.Template {
	t := model.DefaultTemplate(tc.Label)
	t.Src, t.Attrs = tc.src(), tc.attrs()
	image, st := b.str(tc.attr("image"))
	if b.required(st, tc.attr("image"), tc.blockMeta, "image", "a container image", `image = "python:3.12-slim"`) == set {
		if problem := imageProblem(image); problem != "" {
			b.errorf(tc.attr("image").Expr.Range(), "Invalid image", "The image %s %s", clipValue(image), problem)
		}
		t.Image = image
	}
	t.Command, _ = b.strList(tc.attr("command"))
	t.Args, _ = b.strList(tc.attr("args"))

	if rc, st := b.str(tc.attr("runtime_class")); st == set {
		if !slices.Contains(b.runtimeClasses, rc) {
			b.unknownRuntimeClass(tc.attr("runtime_class").Expr.Range(), rc)
		}
		t.RuntimeClass = rc
	}

	// Loosening knobs first: run_as_non_root decides whether UID 0 is allowed.
	if v, st := b.boolean(tc.attr("run_as_non_root")); st == set {
		t.AllowRoot = !v
	}
	if v, st := b.boolean(tc.attr("allow_privilege_escalation")); st == set {
		t.AllowPrivilegeEscalation = v
	}
	if v, st := b.boolean(tc.attr("privileged")); st == set {
		t.Privileged = v
	}
	if v, st := b.boolean(tc.attr("read_only_root")); st == set {
		t.WritableRootFilesystem = !v
	}
	if v, st := b.boolean(tc.attr("automount_token")); st == set {
		t.AutomountServiceAccountToken = v
	}
	if caps, st := b.strList(tc.attr("add_capabilities")); st == set {
		for _, c := range caps {
			if !capabilityRe.MatchString(c) {
				b.errorf(tc.attr("add_capabilities").Expr.Range(), "Invalid capability",
					"%q is not a Linux capability name such as \"NET_BIND_SERVICE\" (upper case, without the CAP_ prefix).", c)
			}
		}
		t.AddCapabilities = caps
	}
	if v, st := b.str(tc.attr("seccomp_profile")); st == set {
		if v != model.SeccompRuntimeDefault && v != model.SeccompUnconfined && !(strings.HasPrefix(v, "Localhost/") && len(v) > len("Localhost/")) {
			b.errorf(tc.attr("seccomp_profile").Expr.Range(), "Invalid seccomp profile",
				"%q is not a seccomp profile.%s Use \"RuntimeDefault\", or \"Localhost/<profile>\" for a profile installed on the nodes.",
				v, didYouMeanSentence(v, []string{model.SeccompRuntimeDefault, model.SeccompUnconfined}))
		}
		t.Seccomp = v
	}

	minUID := int64(minRunAsUser)
	if t.AllowRoot {
		minUID = 0
	}
	if uid, st := b.integer(tc.attr("run_as_user"), minUID, maxRunAsUser); st == set {
		t.RunAsUser = uid
	}

	if size, st := b.str(tc.attr("tmp_size")); st == set {
		if q, ok := b.quantity(tc.attr("tmp_size").Expr.Range(), "tmp_size", size); ok && q.Sign() == 0 {
			b.errorf(tc.attr("tmp_size").Expr.Range(), "Invalid tmp_size",
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
	if entries, st := b.strMap(tc.attr("env")); st == set {
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
		secret, st := b.str(sn.attr("secret"))
		if b.required(st, sn.attr("secret"), sn.blockMeta, "secret", "the name of the Secret", `secret = "llm-credentials"`) == set {
			if problem := dnsSubdomainProblem(secret); problem != "" {
				b.errorf(sn.attr("secret").Expr.Range(), "Invalid Secret name", "The Secret name %q %s", secret, problem)
			}
			se.Secret = secret
		}
		key, st := b.str(sn.attr("key"))
		if b.required(st, sn.attr("key"), sn.blockMeta, "key", "the key in the Secret", `key = "api-key"`) == set {
			if !secretKeyRe.MatchString(key) {
				b.errorf(sn.attr("key").Expr.Range(), "Invalid Secret key", "%q is not a Secret key: use letters, digits, '-', '_' and '.'.", key)
			}
			se.Key = key
		}
		if v, st := b.boolean(sn.attr("optional")); st == set {
			se.Optional = v
		}
		t.SecretEnv = append(t.SecretEnv, se)
	}
	return t
}

func (b *builder) workspace(n *node) *model.Workspace {
	if n == nil {
		return nil
	}
	w := &model.Workspace{Kind: model.DefaultWorkspaceKind, Size: model.DefaultWorkspaceSize, MountPath: model.DefaultWorkspaceMountPath, Src: n.src(), Attrs: n.attrs()}
	kind, st := b.enum(n.attr("kind"), workspaceKinds, "workspace kind")
	// Retention must be a decision, not an accident: kind has no default.
	if b.required(st, n.attr("kind"), n.blockMeta, "kind", "its kind, so what survives a sandbox is explicit", `kind = "ephemeral" (gone with the pod) or kind = "persistent" (a volume per sandbox, deleted with it)`) == set {
		w.Kind = kind
	}
	if s, st := b.str(n.attr("size")); st == set {
		if q, ok := b.quantity(n.attr("size").Expr.Range(), "workspace size", s); ok && q.Sign() == 0 {
			b.errorf(n.attr("size").Expr.Range(), "Invalid workspace size", "size is zero. Give the workspace a size such as %q.", model.DefaultWorkspaceSize)
		}
		w.Size = s
	}
	if p, st := b.str(n.attr("mount_path")); st == set {
		if b.mountPath(n.attr("mount_path"), p) && (p == "/tmp" || strings.HasPrefix(p, "/tmp/")) {
			b.errorf(n.attr("mount_path").Expr.Range(), "Invalid mount path", "%q is inside /tmp, which is the sandbox's own scratch volume. Use a path such as %q.", p, model.DefaultWorkspaceMountPath)
		}
		w.MountPath = p
	}
	if sc, st := b.str(n.attr("storage_class")); st == set {
		if w.Kind != model.WorkspacePersistent {
			b.errorf(n.attr("storage_class").Expr.Range(), "storage_class needs a persistent workspace",
				"An ephemeral workspace is an emptyDir and has no storage class. Remove storage_class, or set kind = \"persistent\".")
		} else if problem := dnsSubdomainProblem(sc); problem != "" {
			b.errorf(n.attr("storage_class").Expr.Range(), "Invalid storage class", "The storage class %q %s", sc, problem)
		}
		w.StorageClass = sc
	}
	return w
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

// resourceFields maps a resource key to its request and limit fields.
func resourceFields(r *model.Resources) map[string][2]*string {
	return map[string][2]*string{
		resourceCPU:              {&r.RequestsCPU, &r.LimitsCPU},
		resourceMemory:           {&r.RequestsMemory, &r.LimitsMemory},
		resourceEphemeralStorage: {&r.RequestsEphemeralStorage, &r.LimitsEphemeralStorage},
	}
}

func (b *builder) resources(rc *node) model.Resources {
	var r model.Resources
	if rc == nil {
		r.ApplyResourceDefaults()
		return r
	}
	requests, rok := b.resourceMap(rc.attr("requests"), resourceKeys)
	limits, lok := b.resourceMap(rc.attr("limits"), resourceKeys)
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
	if keys, st := b.strList(rc.attr("unbounded")); st == set {
		for _, k := range keys {
			if !slices.Contains(resourceKeys, k) {
				b.errorf(rc.attr("unbounded").Expr.Range(), "Unsupported resource",
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

func (b *builder) warmPool(tc *node, tenant string, wc *node, templates []string) model.WarmPool {
	wp := model.WarmPool{Name: wc.Label, Src: wc.src()}
	tpl, st := b.str(wc.attr("template"))
	if b.required(st, wc.attr("template"), wc.blockMeta, "template", "the template it keeps warm", fmt.Sprintf("template = %q", firstOr(templates, wc.Label))) == set {
		if !slices.Contains(templates, tpl) {
			b.unknownTemplate(tc, tenant, wc.attr("template").Expr.Range(), tpl, templates)
		}
		wp.Template = tpl
	}
	wp.Replicas = model.DefaultWarmPoolReplicas
	if n, st := b.integer(wc.attr("replicas"), minReplicas, maxReplicas); st == set {
		wp.Replicas = int32(n)
	}
	return wp
}

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

// --- audit sinks, waivers ----------------------------------------------------

var (
	bigQueryRe = regexp.MustCompile(`^[a-z][-a-z0-9]{4,28}[a-z0-9]\.[A-Za-z0-9_]{1,1000}$`)
	bucketRe   = regexp.MustCompile(`^gs://[a-z0-9][-a-z0-9_.]{1,220}[a-z0-9](/.*)?$`)
	topicRe    = regexp.MustCompile(`^projects/[a-z][-a-z0-9]{4,28}[a-z0-9]/topics/[A-Za-z][-A-Za-z0-9_.~+%]{2,254}$`)
	scopeRe    = regexp.MustCompile(`^[a-z_]+(\.[a-z0-9]([-a-z0-9_]*[a-z0-9])?)?(\.[a-z_]+\.[a-z0-9]([-a-z0-9_]*[a-z0-9])?)*$`)
)

func (b *builder) auditSink(n *node) model.AuditSink {
	s := model.AuditSink{Name: n.Label, Filters: model.DefaultAuditFilters(), Src: n.src(), Attrs: n.attrs()}
	kind, st := b.enum(n.attr("kind"), auditKinds, "audit sink kind")
	b.required(st, n.attr("kind"), n.blockMeta, "kind", "its kind", `kind = "bigquery" (or "storage", "pubsub")`)
	s.Kind = kind
	dest, st := b.str(n.attr("destination"))
	if b.required(st, n.attr("destination"), n.blockMeta, "destination", "where records go", `destination = "my-project.agent_audit"`) == set {
		var re *regexp.Regexp
		var example string
		switch kind {
		case model.AuditBigQuery:
			re, example = bigQueryRe, `"my-project.agent_audit" (project.dataset)`
		case model.AuditStorage:
			re, example = bucketRe, `"gs://my-audit-bucket"`
		case model.AuditPubSub:
			re, example = topicRe, `"projects/my-project/topics/agent-audit"`
		}
		if re != nil && !re.MatchString(dest) {
			b.errorf(n.attr("destination").Expr.Range(), "Invalid audit destination",
				"%q is not a %s destination. Write it as %s.", dest, kind, example)
		} else if project := model.AuditDestinationProject(kind, dest); b.p.Target.Kind == model.TargetGKE && project != "" && b.p.Target.Project != "" && project != b.p.Target.Project {
			// The sink reads the cluster project's audit logs, so it lives
			// there, and Paddock creates its destination next to it.
			b.errorf(n.attr("destination").Expr.Range(), "Audit destination in another project",
				"%q is in project %q, but the cluster's project is %q: Paddock creates the log sink and its %s in the cluster's project. Write %q.",
				dest, project, b.p.Target.Project, kind, model.AuditDestinationIn(kind, dest, b.p.Target.Project))
		}
		s.Destination = dest
	}
	if filters, st := b.strList(n.attr("filters")); st == set {
		if len(filters) == 0 {
			b.errorf(n.attr("filters").Expr.Range(), "Invalid filters", "filters is empty, so the sink would receive nothing. List what it receives: %s.", quotedList(auditFilters))
		}
		for _, f := range filters {
			if !slices.Contains(auditFilters, f) {
				b.errorf(n.attr("filters").Expr.Range(), "Invalid audit filter",
					"%q is not an audit filter.%s Use %s.", f, didYouMeanSentence(f, auditFilters), quotedList(auditFilters))
			}
		}
		s.Filters = filters
	}
	if v, st := b.boolean(n.attr("include_payloads")); st == set {
		s.IncludePayloads = v
	}
	return s
}

func (b *builder) waiver(wc *node) model.Waiver {
	w := model.Waiver{Src: wc.src()}
	rule, st := b.str(wc.attr("rule"))
	if b.required(st, wc.attr("rule"), wc.blockMeta, "rule", "the ID of the rule it waives", `rule = "PDK-306"`) == set {
		if strings.TrimSpace(rule) == "" {
			b.errorf(wc.attr("rule").Expr.Range(), "Invalid waiver rule", "rule is empty. Set the ID of the policy rule this waiver is for, as printed with the finding.")
		}
		w.Rule = rule
	}
	reason, st := b.str(wc.attr("reason"))
	if b.required(st, wc.attr("reason"), wc.blockMeta, "reason", "a reason", `reason = "why this exception is acceptable, and until when"`) == set {
		if strings.TrimSpace(reason) == "" {
			b.errorf(wc.attr("reason").Expr.Range(), "Invalid waiver reason", "reason is empty. A waiver is an explicit exception: say why it is acceptable.")
		}
		w.Reason = reason
	}
	if expires, st := b.str(wc.attr("expires")); st == set {
		if _, err := time.Parse(time.DateOnly, expires); err != nil || !dateRe.MatchString(expires) {
			b.errorf(wc.attr("expires").Expr.Range(), "Invalid expiry date",
				"%q is not a date of the form YYYY-MM-DD, such as \"2026-12-31\".", expires)
		}
		w.Expires = expires
	}
	if scope, st := b.str(wc.attr("scope")); st == set {
		if !scopeRe.MatchString(scope) {
			b.errorf(wc.attr("scope").Expr.Range(), "Invalid waiver scope",
				"%q is not an object address. Write it as the findings show it, such as \"tenant.team-a\" or \"tenant.team-a.template.python\".", scope)
		}
		w.Scope = scope
	}
	return w
}

func firstOr(list []string, fallback string) string {
	if len(list) > 0 {
		return list[0]
	}
	return fallback
}
