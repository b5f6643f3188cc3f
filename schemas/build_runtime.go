package schemas

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/pins"
)

// Building the Agent Sandbox release and the runtime classes.

var digestRe = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)

// exampleHandler names a RuntimeClass handler of each isolation, for messages.
var exampleHandler = map[string]string{model.IsolationGVisor: "runsc", model.IsolationKVM: "kata-qemu"}

// agentSandbox builds the agent_sandbox block: the pinned release version,
// and the controller image and digest (the pins when unset).
func (b *builder) agentSandbox(ac *node) model.AgentSandboxRelease {
	r := model.AgentSandboxRelease{Src: ac.src(), Attrs: ac.attrs()}
	version, st := b.str(ac.attr(argVersion))
	example := fmt.Sprintf("version = %q", pinnedOr(pins.AgentSandbox, "v0.5.6"))
	if b.required(st, ac.attr(argVersion), ac.blockMeta, argVersion, "a pinned release version", example) == set {
		switch releases := pins.AgentSandboxReleases(); {
		case !versionRe.MatchString(version):
			b.errorf(ac.attr(argVersion).Expr.Range(), "Invalid agent_sandbox version",
				"%q is not a release version. Pin an exact release tag of the form vMAJOR.MINOR.PATCH, for example: %s", version, example)
		case len(releases) > 0 && !slices.Contains(releases, version):
			b.errorf(ac.attr(argVersion).Expr.Range(), "Unsupported agent_sandbox version",
				"Agent Sandbox %s is not a release this Paddock vendors: it installs only releases whose manifests it carries, pinned byte for byte (%s). Use one of them, for example: %s", version, vendoredList(releases), example)
		}
		r.Version = version
	}
	image, st := b.str(ac.attr(argImage))
	switch st {
	case set:
		if problem := imageProblem(image); problem != "" {
			b.errorf(ac.attr(argImage).Expr.Range(), "Invalid image", "The controller image %s %s Remove image to use the pinned release image.", clipValue(image), problem)
		}
		r.Image = image
	case unset:
		if r.Version != "" {
			r.Image = pins.AgentSandboxImageOf(r.Version)
		}
	}
	if d, st := b.str(ac.attr(argDigest)); st == set {
		if !digestRe.MatchString(d) {
			b.errorf(ac.attr(argDigest).Expr.Range(), "Invalid digest",
				"%q is not an image digest. Write \"sha256:\" and 64 lower case hex digits, as `crane digest` or `docker buildx imagetools inspect` print it.", d)
		}
		r.Digest = d
	}
	if d, st := b.duration(ac.attr(argRefillDelay), 0, maxRefillDelay, false); st == set {
		r.RefillDelay = d
	}
	if n, st := b.integer(ac.attr(argRefillPerMinute), 0, maxRefillPerMinute); st == set {
		r.RefillPerMinute = n
	}
	return r
}

// The refill shaping's bounds: a longer delay leaves pools empty for good
// after a burst; past a thousand a second the pacing does nothing.
const (
	maxRefillDelay     = 10 * time.Minute
	maxRefillPerMinute = 60000
)

// vendoredList names the vendored releases, the pinned one marked.
func vendoredList(releases []string) string {
	out := make([]string, len(releases))
	for i, v := range releases {
		out[i] = fmt.Sprintf("%q", v)
		if v == pins.AgentSandbox {
			out[i] += " (pinned)"
		} else if v == pins.AgentSandboxPrevious {
			out[i] += " (previous)"
		}
	}
	return strings.Join(out, ", ")
}

// pinnedOr is v, or fallback when no pin is set (for examples in messages).
func pinnedOr(v, fallback string) string {
	if v != "" {
		return v
	}
	return fallback
}

// runtimeClass builds a runtime_class block: the handler, its node pool and scheduling
// (node selector, tolerations) and overhead (a Kata handler's default when
// unset).
func (b *builder) runtimeClass(rc *node) model.RuntimeClass {
	out := model.RuntimeClass{Name: rc.Label, Src: rc.src(), Attrs: rc.attrs()}
	handler, st := b.str(rc.attr(argHandler))
	if b.required(st, rc.attr(argHandler), rc.blockMeta, argHandler, "the handler configured in the node's container runtime", `handler = "runsc"`) == set {
		if problem := dnsLabelProblem(handler); problem != "" {
			b.errorf(rc.attr(argHandler).Expr.Range(), "Invalid runtime handler",
				"%q %s A handler is the name of a runtime configured in containerd on the nodes (gVisor: \"runsc\", Kata: \"kata\"), a DNS-1123 label.", handler, problem)
		}
		out.Handler = handler
	}
	if entries, st := b.strMap(rc.attr(argNodeSelector)); st == set {
		b.markLabelKeys(entries)
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
	if over, ok := b.resourceMap(rc.attr(argOverhead), []string{resourceCPU, resourceMemory}); ok {
		if s, ok := over[resourceCPU]; ok {
			out.OverheadCPU = s.Value
		}
		if s, ok := over[resourceMemory]; ok {
			out.OverheadMemory = s.Value
		}
	}
	if rc.attr(argOverhead) == nil {
		// A Kata pod is a VM: its VMM and guest kernel are counted unless the
		// spec says otherwise.
		if cpu, mem, ok := model.DefaultKataOverhead(out.Handler); ok {
			out.OverheadCPU, out.OverheadMemory = cpu, mem
		}
	}
	if b.p.Target.Kind == model.TargetGKE {
		b.gkeRuntimeClass(rc, out)
	}
	if name, st := b.str(rc.attr(argNodePool)); st == set {
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
			b.errorf(rc.attr(argNodePool).Expr.Range(), "Unknown node pool",
				"No node_pool %q is declared.%s %s", name, didYouMeanSentence(name, names), hint)
		case out.Handler != "" && model.HandlerIsolation(out.Handler) != "" && model.HandlerIsolation(out.Handler) != pool.Isolation:
			b.errorf(rc.attr(argNodePool).Expr.Range(), "Runtime class and node pool disagree",
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
	h := rc.attr(argHandler)
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

// toleration builds a toleration block of a runtime class.
func (b *builder) toleration(tc *node) model.Toleration {
	var t model.Toleration
	t.Operator = "Equal"
	if op, st := b.str(tc.attr(argOperator)); st == set {
		if !slices.Contains(tolerationOperators, op) {
			b.errorf(tc.attr(argOperator).Expr.Range(), "Invalid toleration operator",
				"%q is not a toleration operator.%s Use \"Equal\" (the default) to match a taint's value, or \"Exists\" to match any value.",
				op, didYouMeanSentence(op, tolerationOperators))
		}
		t.Operator = op
	}
	key, kst := b.str(tc.attr(argKey))
	if kst == set {
		if problem := labelKeyProblem(key); problem != "" {
			b.errorf(tc.attr(argKey).Expr.Range(), "Invalid toleration key", "The taint key %q %s", key, problem)
		}
		t.Key = key
	}
	if kst == unset && t.Operator == "Equal" {
		b.required(kst, tc.attr(argKey), tc.blockMeta, argKey, "the key of the taint it tolerates", `key = "sandbox.gke.io/runtime"`)
	}
	if value, st := b.str(tc.attr(argValue)); st == set {
		switch {
		case t.Operator == "Exists" && value != "":
			b.errorf(tc.attr(argValue).Expr.Range(), "Invalid toleration value",
				"A toleration with operator \"Exists\" matches any value of the taint, so it must not set one. Remove value, or use operator \"Equal\".")
		default:
			if problem := labelValueProblem(value); problem != "" {
				b.errorf(tc.attr(argValue).Expr.Range(), "Invalid toleration value", "The taint value %q %s", value, problem)
			}
		}
		t.Value = value
	}
	if effect, st := b.str(tc.attr(argEffect)); st == set {
		if effect != "" && !slices.Contains(taintEffects, effect) {
			b.errorf(tc.attr(argEffect).Expr.Range(), "Invalid toleration effect",
				"%q is not a taint effect.%s Use one of %s, or leave effect out to tolerate every effect.",
				effect, didYouMeanSentence(effect, taintEffects), quotedList(taintEffects))
		}
		t.Effect = effect
	}
	return t
}
