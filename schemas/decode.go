package schemas

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/paddock-platform/paddock/internal/model"
)

// This file is step 2 of a load: parsed bodies become nodes that hold labels,
// attribute expressions and source ranges, and nothing evaluated. The decoder
// is driven by the language tree of schema.go. Only checks that need no
// evaluation happen here: unknown blocks and arguments, labels and names,
// duplicates, blocks that must appear exactly once.

// blockMeta is what every decoded block knows about itself.
type blockMeta struct {
	Type string
	// Label is the block's first label ("" for unlabelled blocks).
	Label string
	// DefRange is the block header ("tenant \"team-a\""); diagnostics about the
	// block as a whole point here.
	DefRange hcl.Range
	// LabelRange is the range of Label, or DefRange for unlabelled blocks.
	LabelRange hcl.Range
	// Misspelt holds the arguments HCL suggested for unsupported ones in the
	// block ("nmae" -> "name"), so no "missing name" error repeats the typo's.
	Misspelt map[string]bool
}

// src is the model form of the block's definition range.
func (m blockMeta) src() model.Range { return modelRange(m.DefRange) }

// modelRange is the model form of r's start.
func modelRange(r hcl.Range) model.Range {
	return model.Range{Filename: r.Filename, Line: r.Start.Line, Column: r.Start.Column}
}

// what names the block in messages: `tenant "team-a"`, `platform`.
func (m blockMeta) what() string {
	if m.Label == "" {
		return m.Type
	}
	return fmt.Sprintf("%s %q", m.Type, m.Label)
}

func newMeta(b *hcl.Block) blockMeta {
	m := blockMeta{Type: b.Type, DefRange: b.DefRange, LabelRange: b.DefRange}
	if len(b.Labels) > 0 {
		m.Label = b.Labels[0]
		if len(b.LabelRanges) > 0 {
			m.LabelRange = b.LabelRanges[0]
		}
	}
	return m
}

// node is one decoded block: its arguments, unevaluated, and its nested
// blocks in source order.
type node struct {
	blockMeta
	Attrs  hcl.Attributes
	Blocks []*node
}

// attr is argument name, or nil when absent (n may be nil).
func (n *node) attr(name string) *hcl.Attribute {
	if n == nil {
		return nil
	}
	return n.Attrs[name]
}

// all are the nested blocks of type typ.
func (n *node) all(typ string) []*node {
	if n == nil {
		return nil
	}
	var out []*node
	for _, b := range n.Blocks {
		if b.Type == typ {
			out = append(out, b)
		}
	}
	return out
}

// one is the nested block of type typ, or nil.
func (n *node) one(typ string) *node {
	if n == nil {
		return nil
	}
	for _, b := range n.Blocks {
		if b.Type == typ {
			return b
		}
	}
	return nil
}

// attrs are the source ranges of the block's arguments, for the model.
func (n *node) attrs() model.Attrs {
	if n == nil || len(n.Attrs) == 0 {
		return nil
	}
	out := make(model.Attrs, len(n.Attrs))
	for name, a := range n.Attrs {
		out[name] = modelRange(a.Range)
	}
	return out
}

// config is the whole spec, merged across files, before evaluation.
type config struct {
	Variables []*node
	// Locals are the arguments of every locals block, by name, and their order.
	Locals     map[string]*hcl.Attribute
	LocalOrder []string

	Platform, Target, Cluster, AgentSandbox, Observability *node

	NodePools, RuntimeClasses, Tenants, AuditSinks, Waivers, TrustAdmission []*node
}

// decoder accumulates diagnostics while decoding.
type decoder struct {
	diags hcl.Diagnostics
}

// scopeAllFiles is the uniqueness scope of top-level names.
const scopeAllFiles = "across all files of the spec"

// decode matches every file's body against the language tree. files must be
// non-empty and in load order; blocks keep that order.
func decode(files []*hcl.File) (*config, hcl.Diagnostics) {
	d := &decoder{}
	cfg := &config{Locals: map[string]*hcl.Attribute{}}
	seen := map[string]map[string]hcl.Range{}
	unique := func(n *node) bool {
		if seen[n.Type] == nil {
			seen[n.Type] = map[string]hcl.Range{}
		}
		return d.unique(seen[n.Type], n.blockMeta, scopeAllFiles)
	}
	singleton := func(slot **node, n *node) {
		if *slot != nil {
			d.duplicateSingleton(n.blockMeta, (*slot).blockMeta)
			return
		}
		*slot = n
	}

	for _, f := range files {
		content := d.content(f.Body, rootSpec.bodySchema(), nil)
		for _, blk := range content.Blocks {
			spec := rootSpec.child(blk.Type)
			n := d.block(blk, spec)
			switch blk.Type {
			case blockVariable:
				if unique(n) {
					cfg.Variables = append(cfg.Variables, n)
				}
			case blockLocals:
				d.locals(cfg, n)
			case blockPlatform:
				singleton(&cfg.Platform, n)
			case blockTarget:
				singleton(&cfg.Target, n)
			case blockCluster:
				singleton(&cfg.Cluster, n)
			case blockAgentSandbox:
				singleton(&cfg.AgentSandbox, n)
			case blockObservability:
				singleton(&cfg.Observability, n)
			case blockNodePool:
				if unique(n) {
					cfg.NodePools = append(cfg.NodePools, n)
				}
			case blockRuntimeClass:
				if unique(n) {
					cfg.RuntimeClasses = append(cfg.RuntimeClasses, n)
				}
			case blockTenant:
				if unique(n) {
					cfg.Tenants = append(cfg.Tenants, n)
				}
			case blockAuditSink:
				if unique(n) {
					cfg.AuditSinks = append(cfg.AuditSinks, n)
				}
			case blockWaiver:
				cfg.Waivers = append(cfg.Waivers, n)
			case blockTrustAdmission:
				// Unique by kind and name, which only the builder knows.
				cfg.TrustAdmission = append(cfg.TrustAdmission, n)
			}
		}
	}

	// Blocks that must appear exactly once. The diagnostic points at the start
	// of the first file: there is no better place for something absent.
	start := files[0].Body.MissingItemRange()
	if cfg.Platform == nil {
		d.missingBlock(start, blockPlatform, `platform { name = "my-platform" }`)
	}
	if cfg.Target == nil {
		d.missingBlock(start, blockTarget, `target "local" {} (the embedded local cluster), target "kubeconfig" { context = "my-cluster" } or target "gke" { project = "my-project", location = "europe-west1" }`)
	}
	if cfg.AgentSandbox == nil {
		d.missingBlock(start, blockAgentSandbox, `agent_sandbox { version = "v0.5.6" }`)
	}
	return cfg, d.diags
}

// block decodes blk, whose spec is spec, and its nested blocks.
func (d *decoder) block(blk *hcl.Block, spec *blockSpec) *node {
	n := &node{blockMeta: newMeta(blk), Attrs: hcl.Attributes{}}
	d.checkLabel(n.blockMeta, spec)

	body := spec
	if spec.Variants != nil {
		v, ok := spec.Variants[n.Label]
		if !ok {
			detail := fmt.Sprintf("Target kind %q is not supported.%s Use target %q {} for the embedded local cluster, target %q { path = \"...\", context = \"...\" } for an existing cluster, or target %q { project = \"...\", location = \"...\" } for a GKE cluster Paddock creates.",
				n.Label, didYouMeanSentence(n.Label, targetKinds), targetLocal, targetKubeconfig, targetGKE)
			d.errorf(n.LabelRange, "Unsupported target kind", "%s", detail)
			// Keep the block so no "missing target" error follows; its body is
			// not checked, since which arguments it may hold depends on the kind.
			return n
		}
		body = v
	}
	if spec.AnyAttrs {
		attrs, diags := blk.Body.JustAttributes()
		d.diags = append(d.diags, diags...)
		if attrs != nil {
			n.Attrs = attrs
		}
		return n
	}

	c := d.content(blk.Body, body.bodySchema(), &n.blockMeta)
	n.Attrs = c.Attributes
	labels := map[string]map[string]hcl.Range{}
	singles := map[string]*node{}
	for _, cb := range c.Blocks {
		cs := body.child(cb.Type)
		child := d.block(cb, cs)
		switch {
		case cs.Label != "":
			if labels[cb.Type] == nil {
				labels[cb.Type] = map[string]hcl.Range{}
			}
			if !d.unique(labels[cb.Type], child.blockMeta, "within "+n.what()) {
				continue
			}
		case !cs.Repeat:
			if first := singles[cb.Type]; first != nil {
				d.errorf(child.DefRange, fmt.Sprintf("Duplicate %s block", cb.Type),
					"A %s block was already declared for %s at %s. Merge both into one %s block.",
					cb.Type, n.what(), pos(first.DefRange), cb.Type)
				continue
			}
			singles[cb.Type] = child
		}
		n.Blocks = append(n.Blocks, child)
	}
	return n
}

// locals merges the arguments of a locals block into cfg.
func (d *decoder) locals(cfg *config, n *node) {
	names := make([]string, 0, len(n.Attrs))
	for name := range n.Attrs {
		names = append(names, name)
	}
	// Source order, so diagnostics and evaluation are deterministic.
	sortByStart(names, n.Attrs)
	for _, name := range names {
		a := n.Attrs[name]
		if first, dup := cfg.Locals[name]; dup {
			d.errorf(a.NameRange, "Duplicate local value",
				"A local value named %q was already declared at %s. Names must be unique %s: rename or remove one of them.",
				name, pos(first.NameRange), scopeAllFiles)
			continue
		}
		cfg.Locals[name] = a
		cfg.LocalOrder = append(cfg.LocalOrder, name)
	}
}

// content is body.Content with the diagnostics kept; it never returns nil.
// Arguments HCL suggests for misspelt ones are recorded in m.Misspelt.
func (d *decoder) content(body hcl.Body, schema *hcl.BodySchema, m *blockMeta) *hcl.BodyContent {
	c, diags := body.Content(schema)
	d.diags = append(d.diags, diags...)
	if m != nil {
		for _, diag := range diags {
			if sm := misspeltRe.FindStringSubmatch(diag.Detail); sm != nil {
				if m.Misspelt == nil {
					m.Misspelt = map[string]bool{}
				}
				m.Misspelt[sm[1]] = true
			}
		}
	}
	if c == nil {
		c = &hcl.BodyContent{}
	}
	if c.Attributes == nil {
		c.Attributes = hcl.Attributes{}
	}
	return c
}

// misspeltRe matches HCL's message for an unsupported argument that is close
// to a supported one, capturing the supported one.
var misspeltRe = regexp.MustCompile(`^An argument named "[^"]*" is not expected here\. Did you mean "([^"]+)"\?$`)

// envVarRe is a portable environment variable name.
var envVarRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// reservedVariableNames cannot name a variable: they would shadow language
// features or read as something else.
var reservedVariableNames = []string{"each", "count", "for_each", "local", "var", "self"}

// checkLabel reports a block label that breaks the block's naming rule.
func (d *decoder) checkLabel(m blockMeta, spec *blockSpec) {
	switch spec.Name {
	case nameDNSLabel:
		if problem := dnsLabelProblem(m.Label); problem != "" {
			d.errorf(m.LabelRange, fmt.Sprintf("Invalid %s name", spec.What),
				"%q %s It names Kubernetes objects, so it must be a DNS-1123 label.%s",
				m.Label, problem, suggestLabelSentence(m.Label))
		}
	case nameIdentifier:
		switch {
		case !hclsyntax.ValidIdentifier(m.Label):
			d.errorf(m.LabelRange, "Invalid variable name",
				"%q is not a valid name: it must start with a letter or '_' and hold only letters, digits, '_' and '-'.", m.Label)
		case contains(reservedVariableNames, m.Label):
			d.errorf(m.LabelRange, "Invalid variable name",
				"%q is reserved by the spec language. Choose another name.", m.Label)
		}
	case nameEnvVar:
		if !envVarRe.MatchString(m.Label) {
			d.errorf(m.LabelRange, "Invalid environment variable name",
				"%q is not a valid environment variable name: use letters, digits and '_', not starting with a digit, such as \"LLM_API_KEY\".", m.Label)
		}
	case nameEnum:
		if !contains(spec.Labels, m.Label) {
			hint := didYouMeanSentence(m.Label, spec.Labels)
			if hint == "" {
				// "agent-orchestrator" for "orchestrator": the longest label the
				// given one contains.
				best := ""
				for _, l := range spec.Labels {
					if strings.Contains(m.Label, l) && len(l) > len(best) {
						best = l
					}
				}
				if best != "" {
					hint = fmt.Sprintf(" Did you mean %q?", best)
				}
			}
			d.errorf(m.LabelRange, fmt.Sprintf("Invalid %s label", spec.What),
				"%q is not a valid label of a %s block.%s %s", m.Label, spec.Type, hint, spec.LabelHint)
		}
	}
}

// unique records m's label in seen and reports a duplicate, pointing at both
// declarations. It reports whether m is the first of its name.
func (d *decoder) unique(seen map[string]hcl.Range, m blockMeta, scope string) bool {
	if first, dup := seen[m.Label]; dup {
		d.errorf(m.LabelRange, fmt.Sprintf("Duplicate %s %q", m.Type, m.Label),
			"A %s named %q was already declared at %s. Names must be unique %s: rename or remove one of them.",
			m.Type, m.Label, pos(first), scope)
		return false
	}
	seen[m.Label] = m.DefRange
	return true
}

func (d *decoder) duplicateSingleton(dup, first blockMeta) {
	d.errorf(dup.DefRange, fmt.Sprintf("Duplicate %s block", dup.Type),
		"A %s block was already declared at %s. A spec has exactly one %s block across all of its files: remove one of them.",
		first.Type, pos(first.DefRange), dup.Type)
}

func (d *decoder) missingBlock(at hcl.Range, typ, example string) {
	d.errorf(at, fmt.Sprintf("Missing %s block", typ),
		"No %s block was found in the spec. Add exactly one, for example: %s", typ, example)
}

func (d *decoder) errorf(subject hcl.Range, summary, format string, args ...any) {
	d.diags = append(d.diags, errorDiag(subject, summary, format, args...))
}

// errorDiag builds an error diagnostic about subject.
func errorDiag(subject hcl.Range, summary, format string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   strings.TrimSpace(fmt.Sprintf(format, args...)),
		Subject:  subject.Ptr(),
	}
}

// pos renders the start of r as file:line:col.
func pos(r hcl.Range) string {
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
