package schemas

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/paddock-platform/paddock/model"
)

// This file is step 2 of a load: parsed bodies become config structs that hold
// labels, attribute expressions and source ranges, and nothing evaluated. Only
// checks that need no evaluation happen here.

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
func (m blockMeta) src() model.Range {
	return model.Range{
		Filename: m.DefRange.Filename,
		Line:     m.DefRange.Start.Line,
		Column:   m.DefRange.Start.Column,
	}
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

type platformConfig struct {
	blockMeta
	Name *hcl.Attribute
}

type targetConfig struct {
	blockMeta
	Path, Context *hcl.Attribute
}

type agentSandboxConfig struct {
	blockMeta
	Version, Image *hcl.Attribute
}

type runtimeClassConfig struct {
	blockMeta
	Handler, NodeSelector *hcl.Attribute
	Tolerations           []*tolerationConfig
}

type tolerationConfig struct {
	blockMeta
	Key, Operator, Value, Effect *hcl.Attribute
}

type tenantConfig struct {
	blockMeta
	Namespace *hcl.Attribute
	Templates []*templateConfig
	WarmPools []*warmPoolConfig
}

type templateConfig struct {
	blockMeta
	Image, Command, Args, RuntimeClass, RunAsUser, TmpSize *hcl.Attribute
	Resources                                              *resourcesConfig
}

type resourcesConfig struct {
	blockMeta
	Requests, Limits *hcl.Attribute
}

type warmPoolConfig struct {
	blockMeta
	Template, Replicas *hcl.Attribute
}

type waiverConfig struct {
	blockMeta
	Rule, Reason, Expires *hcl.Attribute
}

// config is the whole spec, merged across files, before evaluation.
type config struct {
	Platform       *platformConfig
	Target         *targetConfig
	AgentSandbox   *agentSandboxConfig
	RuntimeClasses []*runtimeClassConfig
	Tenants        []*tenantConfig
	Waivers        []*waiverConfig
}

// decoder accumulates diagnostics while decoding.
type decoder struct {
	diags hcl.Diagnostics
}

// decode matches every file's body against the spec schemas. files must be
// non-empty and in load order; blocks keep that order.
func decode(files []*hcl.File) (*config, hcl.Diagnostics) {
	d := &decoder{}
	cfg := &config{}
	tenants := map[string]hcl.Range{}
	runtimeClasses := map[string]hcl.Range{}

	for _, f := range files {
		content := d.content(f.Body, rootSchema, nil)
		for _, blk := range content.Blocks {
			switch blk.Type {
			case blockPlatform:
				pc := &platformConfig{blockMeta: newMeta(blk)}
				c := d.content(blk.Body, platformSchema, &pc.blockMeta)
				pc.Name = c.Attributes["name"]
				if cfg.Platform != nil {
					d.duplicateSingleton(pc.blockMeta, cfg.Platform.blockMeta)
					continue
				}
				cfg.Platform = pc

			case blockTarget:
				if tc := d.target(blk); tc != nil {
					if cfg.Target != nil {
						d.duplicateSingleton(tc.blockMeta, cfg.Target.blockMeta)
						continue
					}
					cfg.Target = tc
				}

			case blockAgentSandbox:
				ac := &agentSandboxConfig{blockMeta: newMeta(blk)}
				c := d.content(blk.Body, agentSandboxSchema, &ac.blockMeta)
				ac.Version, ac.Image = c.Attributes["version"], c.Attributes["image"]
				if cfg.AgentSandbox != nil {
					d.duplicateSingleton(ac.blockMeta, cfg.AgentSandbox.blockMeta)
					continue
				}
				cfg.AgentSandbox = ac

			case blockRuntimeClass:
				rc := d.runtimeClass(blk)
				if d.unique(runtimeClasses, rc.blockMeta, "across all files of the spec") {
					cfg.RuntimeClasses = append(cfg.RuntimeClasses, rc)
				}

			case blockTenant:
				tc := d.tenant(blk)
				if d.unique(tenants, tc.blockMeta, "across all files of the spec") {
					cfg.Tenants = append(cfg.Tenants, tc)
				}

			case blockWaiver:
				wc := &waiverConfig{blockMeta: newMeta(blk)}
				c := d.content(blk.Body, waiverSchema, &wc.blockMeta)
				wc.Rule, wc.Reason, wc.Expires = c.Attributes["rule"], c.Attributes["reason"], c.Attributes["expires"]
				cfg.Waivers = append(cfg.Waivers, wc)
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
		d.missingBlock(start, blockTarget, `target "local" {} (the embedded local cluster) or target "kubeconfig" { context = "my-cluster" }`)
	}
	if cfg.AgentSandbox == nil {
		d.missingBlock(start, blockAgentSandbox, `agent_sandbox { version = "v0.5.6" }`)
	}
	return cfg, d.diags
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
		c = &hcl.BodyContent{Attributes: hcl.Attributes{}}
	}
	return c
}

// misspeltRe matches HCL's message for an unsupported argument that is close
// to a supported one, capturing the supported one.
var misspeltRe = regexp.MustCompile(`^An argument named "[^"]*" is not expected here\. Did you mean "([^"]+)"\?$`)

func (d *decoder) target(blk *hcl.Block) *targetConfig {
	tc := &targetConfig{blockMeta: newMeta(blk)}
	schema, ok := targetSchemas[tc.Label]
	if !ok {
		detail := fmt.Sprintf("Target kind %q is not supported.%s Use target %q {} for the embedded local cluster, or target %q { path = \"...\", context = \"...\" } for an existing cluster.",
			tc.Label, didYouMeanSentence(tc.Label, targetKinds), targetLocal, targetKubeconfig)
		d.errorf(tc.LabelRange, "Unsupported target kind", "%s", detail)
		// Keep the block so no "missing target" error follows; its body is not
		// checked, since which arguments it may hold depends on the kind.
		return tc
	}
	c := d.content(blk.Body, schema, &tc.blockMeta)
	tc.Path, tc.Context = c.Attributes["path"], c.Attributes["context"]
	return tc
}

func (d *decoder) runtimeClass(blk *hcl.Block) *runtimeClassConfig {
	rc := &runtimeClassConfig{blockMeta: newMeta(blk)}
	d.checkName(rc.blockMeta, "runtime class")
	c := d.content(blk.Body, runtimeClassSchema, &rc.blockMeta)
	rc.Handler, rc.NodeSelector = c.Attributes["handler"], c.Attributes["node_selector"]
	for _, tb := range c.Blocks {
		tol := &tolerationConfig{blockMeta: newMeta(tb)}
		tc := d.content(tb.Body, tolerationSchema, &tol.blockMeta)
		tol.Key, tol.Operator = tc.Attributes["key"], tc.Attributes["operator"]
		tol.Value, tol.Effect = tc.Attributes["value"], tc.Attributes["effect"]
		rc.Tolerations = append(rc.Tolerations, tol)
	}
	return rc
}

func (d *decoder) tenant(blk *hcl.Block) *tenantConfig {
	tc := &tenantConfig{blockMeta: newMeta(blk)}
	d.checkName(tc.blockMeta, "tenant")
	c := d.content(blk.Body, tenantSchema, &tc.blockMeta)
	tc.Namespace = c.Attributes["namespace"]
	templates := map[string]hcl.Range{}
	pools := map[string]hcl.Range{}
	scope := fmt.Sprintf("within tenant %q", tc.Label)
	for _, b := range c.Blocks {
		switch b.Type {
		case blockTemplate:
			t := d.template(b)
			if d.unique(templates, t.blockMeta, scope) {
				tc.Templates = append(tc.Templates, t)
			}
		case blockWarmPool:
			wp := &warmPoolConfig{blockMeta: newMeta(b)}
			d.checkName(wp.blockMeta, "warm pool")
			wc := d.content(b.Body, warmPoolSchema, &wp.blockMeta)
			wp.Template, wp.Replicas = wc.Attributes["template"], wc.Attributes["replicas"]
			if d.unique(pools, wp.blockMeta, scope) {
				tc.WarmPools = append(tc.WarmPools, wp)
			}
		}
	}
	return tc
}

func (d *decoder) template(blk *hcl.Block) *templateConfig {
	t := &templateConfig{blockMeta: newMeta(blk)}
	d.checkName(t.blockMeta, "template")
	c := d.content(blk.Body, templateSchema, &t.blockMeta)
	a := c.Attributes
	t.Image, t.Command, t.Args = a["image"], a["command"], a["args"]
	t.RuntimeClass, t.RunAsUser, t.TmpSize = a["runtime_class"], a["run_as_user"], a["tmp_size"]
	for _, b := range c.Blocks {
		rc := &resourcesConfig{blockMeta: newMeta(b)}
		r := d.content(b.Body, resourcesSchema, &rc.blockMeta)
		rc.Requests, rc.Limits = r.Attributes["requests"], r.Attributes["limits"]
		if t.Resources != nil {
			d.errorf(rc.DefRange, "Duplicate resources block",
				"A resources block was already declared for %s at %s. Merge both into one resources block.",
				t.what(), pos(t.Resources.DefRange))
			continue
		}
		t.Resources = rc
	}
	return t
}

// checkName reports a block label that is not a DNS-1123 label: every name
// becomes part of a Kubernetes object name.
func (d *decoder) checkName(m blockMeta, what string) {
	if problem := dnsLabelProblem(m.Label); problem != "" {
		d.errorf(m.LabelRange, fmt.Sprintf("Invalid %s name", what),
			"%q %s It names Kubernetes objects, so it must be a DNS-1123 label.%s",
			m.Label, problem, suggestLabelSentence(m.Label))
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
