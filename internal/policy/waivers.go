package policy

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/agext/levenshtein"

	"github.com/paddock-platform/paddock/internal/model"
)

// Waivers are judged here; the meta rules PDK-001..004 are their findings.
// They cannot be waived themselves.

const (
	ruleWaiverExpired     = "PDK-001"
	ruleWaiverInvalid     = "PDK-002"
	ruleWaiverUnused      = "PDK-003"
	ruleWaiverExpiresSoon = "PDK-004"
)

// expiresSoon is how far ahead PDK-004 warns of an expiry.
const expiresSoon = 14 * 24 * time.Hour

// metaCheck is the check of meta rules: they are reported by applyWaivers.
func metaCheck(*checker) {}

func init() {
	register(Rule{
		ID: ruleWaiverExpired, Title: "Waiver expired", Severity: Error, Kind: Static, Meta: true,
		Control: "Exceptions to the hardening rules are reasoned and time-boxed",
		Fix:     "Fix what the waiver excused, or renew it with a new expires date and a current reason.",
		check:   metaCheck,
	})
	register(Rule{
		ID: ruleWaiverInvalid, Title: "Waiver names no waivable rule", Severity: Error, Kind: Static, Meta: true,
		Control: "Exceptions to the hardening rules are reasoned and time-boxed",
		Fix:     "Set rule to the ID of a static rule as printed with its finding (`paddock validate --rules` lists them).",
		check:   metaCheck,
	})
	register(Rule{
		ID: ruleWaiverUnused, Title: "Waiver silences nothing", Severity: Warning, Kind: Static, Meta: true,
		Control: "Exceptions to the hardening rules are reasoned and time-boxed",
		Fix:     "Remove the waiver: nothing it names is loosened any more (or fix its scope).",
		check:   metaCheck,
	})
	register(Rule{
		ID: ruleWaiverExpiresSoon, Title: "Waiver expires soon", Severity: Note, Kind: Static, Meta: true,
		Control: "Exceptions to the hardening rules are reasoned and time-boxed",
		Fix:     "Fix what the waiver excuses before it expires, or renew it with a reason.",
		check:   metaCheck,
	})
}

// applyWaivers splits findings into rep.Findings and rep.Waived and records
// every waiver's status, adding the meta findings.
func applyWaivers(rep *Report, p *model.Platform, findings []Finding, now time.Time) {
	today := now.UTC().Format(time.DateOnly)
	silencedBy := make([]int, len(findings)) // index+1 of the waiver, 0 for none
	waivers := make([]model.Waiver, len(p.Waivers))
	for i, w := range p.Waivers {
		// A report never shows a sensitive value, in a waiver neither.
		w.Reason, w.Scope, w.Rule = p.Redact(w.Reason), p.Redact(w.Scope), p.Redact(w.Rule)
		waivers[i] = w
	}
	for i, w := range waivers {
		st := WaiverStatus{Waiver: w, State: WaiverActive}
		object := fmt.Sprintf("waiver[%d]", i)
		meta := func(rule, format string, args ...any) {
			r := registry[rule]
			rep.Findings = append(rep.Findings, Finding{
				RuleID: rule, Title: r.Title, Severity: r.Severity, Object: object,
				Message: p.Redact(fmt.Sprintf(format, args...)), Fix: r.Fix, Src: w.Src,
			})
		}
		r, known := registry[w.Rule]
		switch {
		case !known:
			st.State = WaiverInvalid
			meta(ruleWaiverInvalid, "The waiver names rule %q, which does not exist.%s", w.Rule, suggestRule(w.Rule))
		case r.Unwaivable:
			st.State = WaiverInvalid
			meta(ruleWaiverInvalid, "The waiver names %s (%s), which no waiver can silence: fix what it reports.", r.ID, r.Title)
		case !r.Waivable():
			st.State = WaiverInvalid
			why := "is about waivers themselves"
			switch r.Kind {
			case Live:
				why = "is verified on the running cluster, not from the spec"
			case Process:
				why = "is an organisational control, not checked from the spec"
			case Validity:
				why = "checks what the GCP layer can create (GKE would refuse it, or it would not do what it says)"
			}
			meta(ruleWaiverInvalid, "The waiver names %s (%s), which %s: there is nothing to waive.", r.ID, r.Title, why)
		case w.Expires != "" && w.Expires < today:
			st.State = WaiverExpired
			meta(ruleWaiverExpired, "The waiver of %s (%s) expired on %s. Its reason was: %s", r.ID, r.Title, w.Expires, w.Reason)
		}
		if st.State == WaiverActive {
			var objects []string
			matched := 0
			for j := range findings {
				f := &findings[j]
				if f.RuleID != w.Rule {
					continue
				}
				objects = append(objects, f.Object)
				if !inScope(f.Object, w.Scope) {
					continue
				}
				matched++
				if silencedBy[j] != 0 {
					continue
				}
				silencedBy[j] = i + 1
				st.Silenced++
			}
			if st.Silenced == 0 {
				st.State = WaiverUnused
				switch {
				case matched > 0:
					meta(ruleWaiverUnused, "Every finding of %s it covers is already silenced by an earlier waiver.", r.ID)
				case w.Scope != "" && len(objects) > 0:
					meta(ruleWaiverUnused, "The waiver of %s is scoped to %q, where %s finds nothing.%s It does find: %s.",
						r.ID, w.Scope, r.ID, didYouMean(w.Scope, objects), strings.Join(dedupe(objects), ", "))
				default:
					meta(ruleWaiverUnused, "%s (%s) finds nothing in this spec, so the waiver silences nothing.", r.ID, r.Title)
				}
			} else if w.Expires != "" {
				if exp, err := time.Parse(time.DateOnly, w.Expires); err == nil && exp.Sub(now.UTC().Truncate(24*time.Hour)) <= expiresSoon {
					meta(ruleWaiverExpiresSoon, "The waiver of %s (%s) expires on %s; then its findings block `paddock up` again.", r.ID, r.Title, w.Expires)
				}
			}
		}
		rep.Waivers = append(rep.Waivers, st)
	}
	for j, f := range findings {
		if k := silencedBy[j]; k != 0 {
			w := waivers[k-1]
			f.Waiver = &w
			rep.Waived = append(rep.Waived, f)
			continue
		}
		rep.Findings = append(rep.Findings, f)
	}
}

// inScope reports whether object is scope or inside it ("" is everything).
func inScope(object, scope string) bool {
	return scope == "" || object == scope || strings.HasPrefix(object, scope+".")
}

// suggestRule is a " Did you mean ...?" sentence for an unknown rule ID.
func suggestRule(id string) string {
	var ids []string
	for _, r := range Rules() {
		if r.Waivable() {
			ids = append(ids, r.ID)
		}
	}
	norm := strings.ToUpper(strings.TrimSpace(id))
	if !strings.HasPrefix(norm, "PDK-") {
		norm = "PDK-" + strings.TrimPrefix(strings.TrimPrefix(norm, "PDK"), "-")
	}
	if r, ok := registry[norm]; ok && r.Waivable() {
		return fmt.Sprintf(" Did you mean %q (%s)?", norm, r.Title)
	}
	if s := didYouMean(id, ids); s != "" {
		return s
	}
	return " `paddock validate --rules` lists the rules."
}

// didYouMean is " Did you mean \"x\"?" for the closest candidate, or "".
func didYouMean(given string, candidates []string) string {
	sorted := dedupe(candidates)
	best, bestDist := "", 3
	for _, c := range sorted {
		if c == given {
			continue
		}
		if strings.EqualFold(c, given) {
			return fmt.Sprintf(" Did you mean %q?", c)
		}
		if d := levenshtein.Distance(given, c, nil); d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == "" {
		return ""
	}
	if r, ok := registry[best]; ok {
		return fmt.Sprintf(" Did you mean %q (%s)?", best, r.Title)
	}
	return fmt.Sprintf(" Did you mean %q?", best)
}

func dedupe(list []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}
