// Package policy checks a platform model against Paddock's hardening rules:
// every item of the hardening checklist and of the launch checklist (see
// checklist.go) is traced to one or more rules, each with a stable ID, a
// severity, the control it protects and a fix hint.
//
// Rules are small units, one file each (pdkNNN_*.go), registered in init. A
// rule of kind Static checks the model; Live rules are verified against the
// running cluster (by `paddock verify`), Process rules are organisational
// controls a tool cannot check. Both are listed so the checklists are covered
// honestly, and never produce findings here.
//
// Hardened values are the model's defaults, so a static rule fires only on
// something the spec loosened explicitly. A waiver in the spec (rule, reason,
// optional expiry and scope) moves the findings of its rule into
// Report.Waived; every waiver shows in every report, and an expired or
// misdirected waiver is itself an error finding.
//
// The package knows nothing of HCL or Pulumi: it reads the model only.
package policy

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/paddock-platform/paddock/internal/model"
)

// Severity of a rule and its findings. The names are SARIF's levels.
type Severity string

const (
	// Error findings block `paddock up` unless waived.
	Error Severity = "error"
	// Warning findings are reported, never blocking.
	Warning Severity = "warning"
	// Note findings are advice.
	Note Severity = "note"
)

// Kind says how a rule is checked.
type Kind string

const (
	// Static rules are checked from the spec by Check.
	Static Kind = "static"
	// Live rules are verified against the running cluster (`paddock verify`).
	Live Kind = "live"
	// Process rules are organisational controls no tool can check: they are
	// listed so every checklist item is accounted for.
	Process Kind = "process"
	// Validity rules are the GCP layer's rules (GCP-001..., package
	// internal/gcpinputs/rules), checked from the spec of target "gke" like
	// static rules: a configuration GKE would refuse, or one that would not
	// do what it says. They are errors no waiver can silence.
	Validity Kind = "validity"
)

// Rule is one policy rule.
type Rule struct {
	// ID is stable: PDK-0xx waivers, 1xx namespace and resources, 2xx
	// identity, 3xx kernel and pod, 4xx lifecycle, 5xx network, 6xx secrets
	// and audit, 7xx cluster, 8xx launch process; GCP-xxx the GCP layer's
	// validity rules.
	ID       string
	Title    string
	Severity Severity
	Kind     Kind
	// Control is what the rule protects.
	Control string
	// Checklist are the IDs of the checklist items the rule traces to ("H9",
	// "L3"; see ChecklistItems).
	Checklist []string
	// Fix says how to resolve a finding.
	Fix string
	// Language is set on static rules the spec language already refuses to
	// express (the decoder reports them); policy still checks the model, which
	// other producers than the decoder may build.
	Language bool
	// Meta rules are about waivers themselves and cannot be waived.
	Meta bool
	// Unwaivable static rules guard what no reason can excuse (a secret
	// shown in every listing of the cluster's objects): their findings block
	// `paddock up` whatever the spec says, and a waiver that names one is
	// invalid (PDK-002).
	Unwaivable bool
	// SupersededBy are the rules (GCP validity rules) that say the same about
	// the same spec argument, and more strongly: a finding of this rule at
	// the same place as one of theirs is dropped from the report. The GCP
	// finding is an error no waiver silences (the GCP layer refuses the spec
	// at `up` whatever the report says), so also showing the waivable finding
	// would suggest a waiver that cannot work. Only unwaived findings are
	// superseded, so a waiver of this rule still shows as active.
	SupersededBy []string
	// Verify are the IDs of the `paddock verify` checks that prove a live
	// rule on the running cluster ("V09"); every live rule names at least
	// one, and a test in package verify fails when a named check does not
	// exist.
	Verify []string

	check func(c *checker)
}

// Waivable reports whether a waiver may name the rule.
func (r *Rule) Waivable() bool { return r.Kind == Static && !r.Meta && !r.Unwaivable }

var registry = map[string]*Rule{}

// register adds a rule; it panics on a duplicate or incomplete rule, so a bad
// rule file fails every test.
func register(r Rule) {
	switch {
	case !ruleIDRe(r.ID):
		panic("policy: bad rule ID " + r.ID)
	case registry[r.ID] != nil:
		panic("policy: duplicate rule " + r.ID)
	case r.Title == "" || r.Control == "" || r.Fix == "":
		panic("policy: rule " + r.ID + " lacks a title, control or fix")
	case r.Severity != Error && r.Severity != Warning && r.Severity != Note:
		panic("policy: rule " + r.ID + " has no severity")
	case (r.Kind == Static) != (r.check != nil):
		panic("policy: rule " + r.ID + ": static rules, and only they, have a check")
	case (r.Kind == Live) != (len(r.Verify) > 0):
		panic("policy: rule " + r.ID + ": live rules, and only they, name the verify checks that prove them")
	case r.Unwaivable && (r.Kind != Static || r.Meta):
		panic("policy: rule " + r.ID + ": only static rules that are not meta rules are marked unwaivable (the others never are)")
	}
	registry[r.ID] = &r
}

func ruleIDRe(id string) bool {
	if len(id) != 7 || !strings.HasPrefix(id, "PDK-") && !strings.HasPrefix(id, "GCP-") {
		return false
	}
	for _, c := range id[4:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Rules returns every rule, by ID.
func Rules() []*Rule {
	out := make([]*Rule, 0, len(registry))
	for _, r := range registry {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Lookup returns the rule with the given ID.
func Lookup(id string) (*Rule, bool) {
	r, ok := registry[id]
	return r, ok
}

// Finding is one violation of a rule, at one object of the spec.
type Finding struct {
	RuleID   string   `json:"rule"`
	Title    string   `json:"title"`
	Severity Severity `json:"severity"`
	// Object is the address of what the finding is about:
	// "tenant.team-a.template.python", "cluster", "waiver[2]".
	Object  string `json:"object"`
	Message string `json:"message"`
	Fix     string `json:"fix"`
	// Src is where the spec sets it: the argument that loosens the control,
	// or the block that holds the default.
	Src model.Range `json:"-"`
	// Waiver silences the finding (findings in Report.Waived only).
	Waiver *model.Waiver `json:"-"`
}

// Rule is the finding's rule.
func (f Finding) Rule() *Rule { return registry[f.RuleID] }

// WaiverState is what became of a waiver.
type WaiverState string

const (
	// WaiverActive: the waiver silences at least one finding.
	WaiverActive WaiverState = "active"
	// WaiverUnused: nothing to silence (PDK-003).
	WaiverUnused WaiverState = "unused"
	// WaiverExpired: past its expiry; it silences nothing (PDK-001).
	WaiverExpired WaiverState = "expired"
	// WaiverInvalid: names no waivable rule (PDK-002).
	WaiverInvalid WaiverState = "invalid"
)

// WaiverStatus is one waiver of the spec and what it did.
type WaiverStatus struct {
	model.Waiver
	State WaiverState
	// Silenced counts the findings it moved to Report.Waived.
	Silenced int
}

// Report is the outcome of Check.
type Report struct {
	Platform string
	// Checked is the time the waivers' expiry was judged against.
	Checked time.Time
	// Findings are the findings no waiver silences, by source position.
	Findings []Finding
	// Waived are the findings a waiver silences.
	Waived []Finding
	// Waivers are every waiver of the spec, in spec order.
	Waivers []WaiverStatus
	// Trusted are the mutating admission objects the spec trusts
	// (trust_admission), in spec order: shown like waivers. What they can
	// rewrite is the cluster's, which drift and verify show.
	Trusted []model.TrustedAdmission
}

// Blocking reports whether an unwaived error finding must stop `up`.
func (r *Report) Blocking() bool {
	for _, f := range r.Findings {
		if f.Severity == Error {
			return true
		}
	}
	return false
}

// Count returns how many unwaived findings have severity s.
func (r *Report) Count(s Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == s {
			n++
		}
	}
	return n
}

// Check runs every static rule over p and applies its waivers. now decides
// which waivers have expired (a waiver holds through its expiry day, UTC).
func Check(p *model.Platform, now time.Time) *Report {
	c := &checker{p: p}
	for _, r := range Rules() {
		if r.Kind == Static && !r.Meta {
			c.rule = r
			r.check(c)
		}
	}
	c.checkGCP()
	rep := &Report{Platform: p.Redact(p.Name), Checked: now, Trusted: p.TrustedAdmission}
	applyWaivers(rep, p, c.findings, now)
	rep.Findings = supersede(rep.Findings)
	sortFindings(rep.Findings)
	sortFindings(rep.Waived)
	return rep
}

// checker is what a rule's check sees.
type checker struct {
	p        *model.Platform
	rule     *Rule
	findings []Finding
	// egressCache holds each tenant's rendered egress (egress.go).
	egressCache map[*model.Tenant]*tenantEgress
}

// report records a finding of the current rule. The message passes through
// the platform's redaction: a sensitive value never reaches a report.
func (c *checker) report(object string, src model.Range, format string, args ...any) {
	c.findings = append(c.findings, Finding{
		RuleID:   c.rule.ID,
		Title:    c.rule.Title,
		Severity: c.rule.Severity,
		Object:   object,
		Message:  c.p.Redact(fmt.Sprintf(format, args...)),
		Fix:      c.rule.Fix,
		Src:      src,
	})
}

func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i].Src, fs[j].Src
		switch {
		case a.Filename != b.Filename:
			return a.Filename < b.Filename
		case a.Line != b.Line:
			return a.Line < b.Line
		case a.Column != b.Column:
			return a.Column < b.Column
		}
		return fs[i].RuleID < fs[j].RuleID
	})
}

// orSrc is r, or fallback when r is unknown (a block left out of the spec
// takes its defaults: the finding points at the enclosing block).
func orSrc(r, fallback model.Range) model.Range {
	if r.Known() {
		return r
	}
	return fallback
}

// Object addresses. Waiver scopes use the same form.
func tenantAddr(t *model.Tenant) string { return "tenant." + t.Name }
func templateAddr(t *model.Tenant, tpl *model.Template) string {
	return tenantAddr(t) + ".template." + tpl.Name
}
func warmPoolAddr(t *model.Tenant, wp *model.WarmPool) string {
	return tenantAddr(t) + ".warm_pool." + wp.Name
}
func runtimeClassAddr(rc *model.RuntimeClass) string { return "runtime_class." + rc.Name }
func nodePoolAddr(np *model.NodePool) string         { return "node_pool." + np.Name }
func auditSinkAddr(s *model.AuditSink) string        { return "audit_sink." + s.Name }

// Iteration helpers for rule checks.

func (c *checker) eachTenant(f func(t *model.Tenant)) {
	for i := range c.p.Tenants {
		f(&c.p.Tenants[i])
	}
}

func (c *checker) eachTemplate(f func(t *model.Tenant, tpl *model.Template)) {
	c.eachTenant(func(t *model.Tenant) {
		for i := range t.Templates {
			f(t, &t.Templates[i])
		}
	})
}

// runtimeClass is the declared runtime class named name, or nil.
func (c *checker) runtimeClass(name string) *model.RuntimeClass {
	for i := range c.p.RuntimeClasses {
		if c.p.RuntimeClasses[i].Name == name {
			return &c.p.RuntimeClasses[i]
		}
	}
	return nil
}

// nodePool is the node pool named name, or nil.
func (c *checker) nodePool(name string) *model.NodePool {
	for i := range c.p.NodePools {
		if c.p.NodePools[i].Name == name {
			return &c.p.NodePools[i]
		}
	}
	return nil
}

// usedRuntimeClasses are the runtime classes some template runs under, in
// declaration order.
func (c *checker) usedRuntimeClasses() []*model.RuntimeClass {
	used := map[string]bool{}
	c.eachTemplate(func(_ *model.Tenant, tpl *model.Template) { used[tpl.RuntimeClass] = true })
	var out []*model.RuntimeClass
	for i := range c.p.RuntimeClasses {
		if used[c.p.RuntimeClasses[i].Name] {
			out = append(out, &c.p.RuntimeClasses[i])
		}
	}
	return out
}

func (c *checker) gke() bool { return c.p.Target.Kind == model.TargetGKE }
