package policy

import (
	"strings"
	"unicode"

	"github.com/paddock-platform/paddock/gcpinputs/frommodel"
	"github.com/paddock-platform/paddock/gcpinputs/rules"
	"github.com/paddock-platform/paddock/model"
)

// The GCP layer's validity rules (gcpinputs/rules, GCP-001...) run here,
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
			Control:  "The GCP layer can create what the spec declares, and it does what the spec says (package gcpinputs/rules)",
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

// supersededBy lists, for each cluster rule, the GCP rules that say the same
// about the same argument, and more strongly.
//
// Where a GCP validity finding and one of the cluster hardening rules
// PDK-701..705 point at the very same argument, the GCP finding wins and the
// PDK one is dropped from the report: the GCP finding is an error no waiver
// silences (the GCP layer refuses the spec at `up` whatever the report
// says), so also showing the waivable PDK finding would suggest a waiver that
// cannot work. The overlaps:
//
//   - PDK-703 (control plane open to the internet) and GCP-003 on
//     authorized_networks: for 0.0.0.0/0 the GCP layer refuses outright.
//     Narrower internet-wide ranges (/1../7) stay PDK-703 warnings.
//   - PDK-704 (no Dataplane V2) and GCP-004 (FQDN allow-lists need Dataplane
//     V2) on dataplane_v2.
//
// The others do not overlap: PDK-705 points at workload_identity = false
// while GCP-005 points at each workload_identity block that needs the pool
// (both are shown: they say different things); PDK-701 concerns KVM pools
// with dedicated = false, which the GCP layer accepts, while GCP-007 refuses
// dedicated = false on a gVisor pool; PDK-702 has no GCP counterpart.
// Only unwaived findings are superseded, so a waiver of the PDK rule still
// shows as active.
var supersededBy = map[string][]string{
	"PDK-703": {"GCP-003"},
	"PDK-704": {"GCP-004"},
}

// supersede drops the findings superseded by a GCP finding at the same place.
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
		for _, g := range supersededBy[f.RuleID] {
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
