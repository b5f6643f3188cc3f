package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/paddock-platform/paddock/internal/gen/reference/refdoc"
	"github.com/paddock-platform/paddock/internal/policy"
	"github.com/paddock-platform/paddock/schemas"
)

// kindText says how each kind of rule is checked, for the page's index.
var kindText = map[policy.Kind]string{
	policy.Static:   "checked from the spec by `paddock validate`, and before `preview` and `up`",
	policy.Live:     "verified on the running cluster by `paddock verify`",
	policy.Process:  "organisational controls no tool can check, listed so every checklist item is covered",
	policy.Validity: "the GCP layer's rules, checked from a target \"gke\" spec like static rules; errors no waiver silences",
}

var kindOrder = []policy.Kind{policy.Static, policy.Validity, policy.Live, policy.Process}

// renderRules renders rules.md.
func renderRules() ([]byte, error) {
	setBy, err := specArgumentsByRule()
	if err != nil {
		return nil, err
	}
	rules := policy.Rules()
	var w bytes.Buffer
	w.WriteString(refdoc.Header("Policy rules", "the rule registry (internal/policy, the list `paddock validate --rules` prints)"))
	fmt.Fprintf(&w, "%d rules. Every finding names its rule; a `waiver { rule, reason }` in the spec moves the findings of a waivable rule out of the way, and every report lists it.\n\n", len(rules))
	w.WriteString("| kind | how it is checked | rules |\n|---|---|---|\n")
	for _, k := range kindOrder {
		n := 0
		for _, r := range rules {
			if r.Kind == k {
				n++
			}
		}
		fmt.Fprintf(&w, "| %s | %s | %d |\n", k, kindText[k], n)
	}
	w.WriteString("\n## Index\n\n| rule | severity | kind | checks |\n|---|---|---|---|\n")
	for _, r := range rules {
		fmt.Fprintf(&w, "| [%s](#%s) | %s | %s | %s |\n", r.ID, strings.ToLower(r.ID), r.Severity, r.Kind, refdoc.Cell(refdoc.Escape(r.Title)))
	}
	w.WriteString("\nThe checklists the rules trace to are at the end: [hardening](#hardening-checklist), [launch](#launch-checklist).\n\n")

	for _, r := range rules {
		fmt.Fprintf(&w, "<a id=\"%s\"></a>\n\n## %s: %s\n\n", strings.ToLower(r.ID), r.ID, refdoc.Escape(r.Title))
		w.WriteString("| | |\n|---|---|\n")
		row := func(k, v string) { fmt.Fprintf(&w, "| %s | %s |\n", k, refdoc.Cell(v)) }
		row("Reports", refdoc.Escape(r.Title))
		row("Why", refdoc.Escape(r.Control))
		row("Severity", string(r.Severity)+severityNote(r))
		row("Kind", fmt.Sprintf("%s: %s", r.Kind, kindText[r.Kind]))
		if len(r.Checklist) > 0 {
			var items []string
			for _, id := range r.Checklist {
				it, ok := policy.LookupChecklistItem(id)
				if !ok {
					return nil, fmt.Errorf("rule %s traces to checklist item %s, which does not exist", r.ID, id)
				}
				items = append(items, fmt.Sprintf("[%s](#%s) %s", id, strings.ToLower(id), refdoc.Escape(it.Text)))
			}
			row("Checklist", strings.Join(items, "; "))
		}
		row("Fix", refdoc.Escape(r.Fix))
		row("Waiver", waiverText(r))
		if len(r.Verify) > 0 {
			row("Verified by", "`paddock verify` "+strings.Join(r.Verify, ", "))
		}
		if len(r.SupersededBy) > 0 {
			var l []string
			for _, id := range r.SupersededBy {
				l = append(l, fmt.Sprintf("[%s](#%s)", id, strings.ToLower(id)))
			}
			row("Superseded by", strings.Join(l, ", ")+" at the same argument")
		}
		if r.Language {
			row("Note", "the spec language already refuses what this rule catches; it still guards models built in Go")
		}
		if args := setBy[r.ID]; len(args) > 0 {
			row("Spec arguments", strings.Join(args, ", "))
		}
		w.WriteString("\n")
	}

	for _, list := range []struct{ name, title string }{{policy.Hardening, "Hardening checklist"}, {policy.Launch, "Launch checklist"}} {
		fmt.Fprintf(&w, "<a id=\"%s-checklist\"></a>\n\n## %s\n\n| item | section | text | rules |\n|---|---|---|---|\n", list.name, list.title)
		for _, it := range policy.ChecklistItems() {
			if it.Checklist != list.name {
				continue
			}
			var by []string
			for _, r := range rules {
				if contains(r.Checklist, it.ID) {
					by = append(by, fmt.Sprintf("[%s](#%s)", r.ID, strings.ToLower(r.ID)))
				}
			}
			fmt.Fprintf(&w, "| <a id=\"%s\"></a>%s | %s | %s | %s |\n", strings.ToLower(it.ID), it.ID, it.Section, refdoc.Cell(refdoc.Escape(it.Text)), strings.Join(by, ", "))
		}
		w.WriteString("\n")
	}
	return append(bytes.TrimRight(w.Bytes(), "\n"), '\n'), nil
}

func severityNote(r *policy.Rule) string {
	if r.Kind != policy.Static && r.Kind != policy.Validity {
		return " (reported, never a finding of `validate`)"
	}
	if r.Severity == policy.Error && r.Waivable() {
		return " (blocks `paddock up` unless waived)"
	}
	if r.Severity == policy.Error {
		return " (blocks `paddock up`; no waiver silences it)"
	}
	return " (reported, never blocking)"
}

func waiverText(r *policy.Rule) string {
	switch {
	case r.Waivable():
		return fmt.Sprintf("allowed: `waiver { rule = \"%s\", reason = \"...\" }`", r.ID)
	case r.Meta:
		return "none: a rule about the spec's waivers themselves"
	case r.Unwaivable:
		return "none: no reason excuses it"
	case r.Kind == policy.Validity:
		return "none: GKE would refuse the spec, or it would not do what it says"
	default:
		return "not applicable: not checked from the spec"
	}
}

// specArgumentsByRule links each rule to the spec arguments and blocks
// whose schema names it, as links into spec.md.
func specArgumentsByRule() (map[string][]string, error) {
	raw, err := schemas.JSONSchema(nil)
	if err != nil {
		return nil, err
	}
	var root object
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, err
	}
	out := map[string][]string{}
	var walk func(b *block)
	walk = func(b *block) {
		for _, id := range b.rules {
			out[id] = append(out[id], fmt.Sprintf("[%s](spec.md#%s)", b.title(), b.anchor()))
		}
		for _, a := range b.attrs {
			for _, id := range a.rules {
				out[id] = append(out[id], fmt.Sprintf("[%s.%s](spec.md#%s-%s)", b.title(), a.name, b.anchor(), a.name))
			}
		}
		for _, v := range b.variants {
			walk(v)
		}
		for _, c := range b.blocks {
			walk(c)
		}
	}
	for _, b := range parseBody(nil, nil, root).blocks {
		walk(b)
	}
	return out, nil
}
