package policy

import (
	"strings"
	"unicode"

	"github.com/paddock-platform/paddock/internal/gcpinputs/frommodel"
	"github.com/paddock-platform/paddock/internal/gcpinputs/rules"
	"github.com/paddock-platform/paddock/internal/model"
)

// The GCP layer's validity rules (internal/gcpinputs/rules, GCP-001...) run here,
// before anything is applied, on the very inputs the program gives the GCP
// layer (frommodel.Args), each violation reported at the spec argument it is
// about (frommodel.Source). gcp.NewPlatform runs the same rules again and
// refuses what they refuse, so a spec that passes here passes there.
//
// Both packages are Pulumi-free: policy still knows nothing of Pulumi.

// gcpUnreachable are the GCP rules no spec can break: the spec language
// refuses the value first (release channels are an enum, label keys and
// values and taint effects are checked by the decoder), or has no argument
// for what they check (node image types, the system pool, disk sizes, alert
// policies). They are still run, for models built in Go.
var gcpUnreachable = map[string]bool{
	"GCP-002": true, // release_channel is an enum
	"GCP-008": true, // no image_type argument
	"GCP-011": true, // no image_type argument
	"GCP-012": true, // labels, taints and effects are checked by the decoder
	"GCP-017": true, // no alerts block
}

func init() {
	for _, r := range rules.All() {
		register(Rule{
			ID: r.ID, Title: r.Title, Severity: Error, Kind: Validity,
			Control:  "The GCP layer can create what the spec declares, and it does what the spec says (package internal/gcpinputs/rules)",
			Fix:      r.Hint,
			Language: gcpUnreachable[r.ID],
		})
	}
}

// checkGCP reports every violation of the GCP rules by a GKE platform.
func (c *checker) checkGCP() {
	if !c.gke() {
		return
	}
	for _, v := range rules.Validate(frommodel.Args(c.p)) {
		r := registry[v.Rule]
		if r == nil {
			continue // a rule registered after init: impossible, rules.All is static
		}
		object, src := frommodel.Source(c.p, v)
		fix := v.Hint
		if fix == "" {
			fix = r.Fix
		}
		c.findings = append(c.findings, Finding{
			RuleID: r.ID, Title: r.Title, Severity: r.Severity, Object: object,
			Message: c.p.Redact(sentence(v.Message)), Fix: fix, Src: src,
		})
	}
}

// supersede drops the findings of a rule at the place where a rule it names
// in Rule.SupersededBy also reports one (the overlaps are declared on the
// rules themselves: PDK-703 and PDK-704). The cluster rules that do not
// overlap: PDK-705 points at workload_identity = false while GCP-005 points
// at each workload_identity block that needs the pool (both are shown: they
// say different things); PDK-701 concerns KVM pools with dedicated = false,
// which the GCP layer accepts, while GCP-007 refuses dedicated = false on a
// gVisor pool; PDK-702 has no GCP counterpart.
func supersede(fs []Finding) []Finding {
	at := map[string]map[model.Range]bool{}
	for _, f := range fs {
		if at[f.RuleID] == nil {
			at[f.RuleID] = map[model.Range]bool{}
		}
		at[f.RuleID][f.Src] = true
	}
	out := fs[:0]
	for _, f := range fs {
		drop := false
		var by []string
		if r := registry[f.RuleID]; r != nil {
			by = r.SupersededBy
		}
		for _, g := range by {
			drop = drop || f.Src.Known() && at[g][f.Src]
		}
		if !drop {
			out = append(out, f)
		}
	}
	return out
}

// sentence makes a GCP rule's message, which reads as a continuation of the
// field it is about ("needs GKE Workload Identity ..."), a sentence: a
// leading lower-case word is capitalised (not a value such as a machine type,
// "e2-standard-8 cannot run Kata"), and it ends with a full stop.
func sentence(msg string) string {
	first, _, _ := strings.Cut(msg, " ")
	if first != "" && strings.IndexFunc(first, func(r rune) bool { return !unicode.IsLower(r) }) < 0 {
		msg = strings.ToUpper(msg[:1]) + msg[1:]
	}
	if !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	return msg
}
