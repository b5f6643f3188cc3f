// Package drift describes how a live platform differs from its stack, and
// finds what weakens it outside the stack. The engine fills a Report's
// Resources from a refresh-and-preview run (engine.Drift: each drifted
// resource with the changed field paths, declared and live values); Sweep
// adds the Unmanaged objects — ones that are in no stack, or changed in
// fields the stack does not hold, and weaken what Paddock guards (a binding
// that gives a tenant identity more than the spec does, a network policy
// that lets through traffic the spec does not, a guardrail that no longer
// applies to its tenant, a pod outside the sandbox runtime), each judged by
// its effect. Nothing here writes to the cluster or the state.
package drift

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/paddock-platform/paddock/internal/termtext"
)

// Change says how a resource of the stack differs from the live cluster.
type Change string

const (
	// Modified: the live object differs from the declared one in the fields listed.
	Modified Change = "modified"
	// Replaced: as Modified, but `up` has to delete and recreate the object.
	Replaced Change = "replaced"
	// Missing: the stack has the object but the cluster does not (deleted out of band).
	Missing Change = "missing"
	// NotApplied: the spec declares an object the stack does not have yet.
	NotApplied Change = "not-applied"
	// NoLongerDeclared: the stack has an object the spec no longer declares.
	NoLongerDeclared Change = "no-longer-declared"
)

// Cause says where a difference comes from.
type Cause string

const (
	// CauseCluster: someone or something changed the cluster out of band.
	CauseCluster Cause = "cluster"
	// CauseSpec: the spec changed since the last `up`, which has not been run.
	CauseSpec Cause = "spec"
)

// Field is one changed field of a resource.
type Field struct {
	// Path is the property path, as the engine names it
	// (metadata.labels["pod-security.kubernetes.io/enforce"], spec.replicas).
	Path string `json:"path"`
	// Declared is the value the stack declares; Live the value in the cluster.
	// A nil value means the field is absent; secrets read "[secret]".
	Declared any `json:"declared"`
	Live     any `json:"live"`
	// Cause is where the difference comes from.
	Cause Cause `json:"cause"`
	// Writers are who wrote the live value, from the object's managedFields:
	// other managers first, newest first, then Paddock's own. Empty where
	// nobody owns the live value (a field removed, or one only the server set).
	Writers []Writer `json:"writers,omitempty"`
	// AddedBy are the mutating admission objects that could have added the
	// live value ("mutatingwebhookconfiguration/inject-keys"): the API
	// server stores it whenever Paddock writes the object, and no defaulting
	// explains it. Admission says what they rewrite.
	AddedBy   []string `json:"addedBy,omitempty"`
	Admission string   `json:"admission,omitempty"`
}

// AdmissionText is "added by admission (mutatingwebhookconfiguration/x can
// rewrite sandboxtemplates.agents.x-k8s.io in agents-a)", or "".
func (f Field) AdmissionText() string {
	if f.Admission == "" {
		return ""
	}
	return "added by admission (" + f.Admission + ")"
}

// By is "kubectl-edit (update at 2026-12-02T06:00:00Z)", the writers that
// are not Paddock's, or "".
func (f Field) By() string {
	var parts []string
	for _, w := range f.Writers {
		if isPaddockManager(w.Manager) {
			continue
		}
		parts = append(parts, w.String())
	}
	return strings.Join(parts, ", ")
}

// Resource is one resource of the stack that differs from the cluster.
type Resource struct {
	URN string `json:"urn"`
	// Type is the Pulumi type token (kubernetes:core/v1:Namespace).
	Type string `json:"type"`
	// Kind and Name name the Kubernetes object ("Namespace", "agents-team-a"; namespaced: "ns/name").
	Kind   string  `json:"kind"`
	Name   string  `json:"name"`
	Change Change  `json:"change"`
	Cause  Cause   `json:"cause"`
	Fields []Field `json:"fields,omitempty"`
	// Repair says what `paddock up` does about it.
	Repair string `json:"repair"`
}

// Title is "Kind name".
func (r Resource) Title() string { return r.Kind + " " + r.Name }

// Finding is an object outside the stack that weakens the platform.
type Finding struct {
	// Rule is the sweep rule's ID (S01...) and Title its short text.
	Rule  string `json:"rule"`
	Title string `json:"title"`
	// Kind, Namespace and Name name the object.
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Tenant is the tenant whose boundary it weakens ("" for the whole platform).
	Tenant string `json:"tenant,omitempty"`
	Reason string `json:"reason"`
	// Fix is what to do: `paddock up` does not touch objects outside its stack.
	Fix string `json:"fix"`
}

// Object is "Kind namespace/name".
func (f Finding) Object() string {
	if f.Namespace != "" {
		return f.Kind + " " + f.Namespace + "/" + f.Name
	}
	return f.Kind + " " + f.Name
}

// Report is one drift check of a platform's stack.
type Report struct {
	Platform string `json:"platform"`
	Stack    string `json:"stack"`
	Target   string `json:"target"`
	// Resources are the stack's resources that differ from the cluster.
	Resources []Resource `json:"resources"`
	// Unmanaged are objects outside the stack that weaken the platform.
	Unmanaged []Finding `json:"unmanaged"`
	// Trusted are the spec's trust_admission blocks, as the cluster has
	// them: shown in every report, like waivers.
	Trusted []TrustedAdmission `json:"trustedAdmission,omitempty"`
	// Checked is how many resources of the stack were compared.
	Checked int `json:"checkedResources"`
	// Partial says why only the fields the spec declares were compared
	// (the whole-object comparison could not run); "" when it ran. Such a
	// report is not clean however empty it is: `drift --strict` fails it.
	Partial string `json:"partial,omitempty"`
	// Duration is the whole check; Compare the refresh-and-preview part, Sweep the sweep.
	Duration time.Duration `json:"durationNanos"`
	Compare  time.Duration `json:"compareNanos"`
	Sweep    time.Duration `json:"sweepNanos"`
}

// Drifted reports whether anything differs or weakens the platform.
func (r *Report) Drifted() bool { return len(r.Resources) > 0 || len(r.Unmanaged) > 0 }

// Sort orders resources and findings so reports compare run to run.
func (r *Report) Sort() {
	sort.SliceStable(r.Resources, func(i, j int) bool {
		a, b := r.Resources[i], r.Resources[j]
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.URN < b.URN
	})
	for i := range r.Resources {
		f := r.Resources[i].Fields
		sort.SliceStable(f, func(a, b int) bool { return f[a].Path < f[b].Path })
	}
	sort.SliceStable(r.Unmanaged, func(i, j int) bool {
		a, b := r.Unmanaged[i], r.Unmanaged[j]
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		return a.Object() < b.Object()
	})
}

// Summary is one line: "2 drifted resources, 1 unmanaged object".
func (r *Report) Summary() string {
	if !r.Drifted() {
		return fmt.Sprintf("no drift: %d resources match the cluster, nothing outside the stack weakens the platform", r.Checked)
	}
	return fmt.Sprintf("%s, %s", plural(len(r.Resources), "drifted resource"), plural(len(r.Unmanaged), "object outside the stack weakens the platform", "objects outside the stack weaken the platform"))
}

func plural(n int, one string, many ...string) string {
	if n == 1 {
		return "1 " + one
	}
	if len(many) > 0 {
		return fmt.Sprintf("%d %s", n, many[0])
	}
	return fmt.Sprintf("%d %ss", n, one)
}

// listSome names the first n of names, and how many more there are.
func listSome(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

var changeSymbol = map[Change]string{Modified: "~", Replaced: "+-", Missing: "+", NotApplied: "+", NoLongerDeclared: "-"}

var changeText = map[Change]string{
	Modified:         "changed in the cluster",
	Replaced:         "changed in the cluster; up must replace it",
	Missing:          "deleted from the cluster",
	NotApplied:       "declared, not applied yet",
	NoLongerDeclared: "no longer declared",
}

// Value renders a field value for people: JSON, "(absent)" for nil.
func Value(v any) string {
	if v == nil {
		return "(absent)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(b)
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

// WriteText renders the report for people, every line at most
// termtext.Width columns (details wrap onto indented lines).
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	const detail = "       "
	b.WriteString(termtext.Wrap(fmt.Sprintf("paddock drift: platform %q, stack %q, target %s", r.Platform, r.Stack, r.Target), "", "  "))
	if len(r.Resources) > 0 {
		fmt.Fprintf(&b, "\nResources of the stack that differ from the cluster (declared → live):\n")
		for _, res := range r.Resources {
			b.WriteString(termtext.Wrap(fmt.Sprintf("%-2s %s  (%s)", changeSymbol[res.Change], res.Title(), changeText[res.Change]), "  ", detail))
			for _, f := range res.Fields {
				line := fmt.Sprintf("%s: %s → %s", f.Path, Value(f.Declared), Value(f.Live))
				if f.Cause == CauseSpec {
					line += "  [spec changed]"
				}
				if by := f.By(); by != "" {
					line += "  by " + by
				}
				if a := f.AdmissionText(); a != "" {
					line += "  " + a
				}
				b.WriteString(termtext.Wrap(line, detail, detail+"  "))
			}
			b.WriteString(termtext.Wrap("repair: "+res.Repair, detail, detail+"  "))
		}
	}
	if len(r.Unmanaged) > 0 {
		fmt.Fprintf(&b, "\nObjects outside the stack that weaken the platform:\n")
		for _, f := range r.Unmanaged {
			b.WriteString(termtext.Wrap(fmt.Sprintf("!  %s  [%s %s]", f.Object(), f.Rule, f.Title), "  ", detail))
			b.WriteString(termtext.Wrap(f.Reason, detail, detail))
			b.WriteString(termtext.Wrap("fix: "+f.Fix, detail, detail+"  "))
		}
	}
	if len(r.Trusted) > 0 {
		fmt.Fprintf(&b, "\nMutating admission the spec trusts (trust_admission):\n")
		for _, t := range r.Trusted {
			b.WriteString(termtext.Wrap("*  "+t.Text(), "  ", detail))
		}
	}
	if r.Drifted() || len(r.Trusted) > 0 {
		b.WriteString("\n")
	}
	b.WriteString(termtext.Wrap(fmt.Sprintf("%s (%d resources compared in %.1fs, sweep %.1fs)", r.Summary(), r.Checked, r.Compare.Seconds(), r.Sweep.Seconds()), "", "  "))
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON renders the report for machines.
func (r *Report) WriteJSON(w io.Writer) error {
	if r.Resources == nil {
		r.Resources = []Resource{}
	}
	if r.Unmanaged == nil {
		r.Unmanaged = []Finding{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteMarkdown renders the report for a CI job summary or a PR comment.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	status := "✅ no drift"
	if r.Drifted() {
		status = "❌ drift"
	}
	fmt.Fprintf(&b, "## Paddock drift: %s — `%s` (stack `%s`)\n\n", status, r.Platform, r.Stack)
	fmt.Fprintf(&b, "%s. Target `%s`; %d resources compared in %.1fs, sweep %.1fs.\n", capitalize(r.Summary()), r.Target, r.Checked, r.Compare.Seconds(), r.Sweep.Seconds())
	if len(r.Resources) > 0 {
		b.WriteString("\n### Resources that differ from the cluster\n\n")
		b.WriteString("| Resource | Change | Field | Declared | Live | Written by |\n|---|---|---|---|---|---|\n")
		for _, res := range r.Resources {
			change := changeText[res.Change]
			if len(res.Fields) == 0 {
				fmt.Fprintf(&b, "| %s | %s | | | | |\n", mdCode(res.Title()), change)
				continue
			}
			for i, f := range res.Fields {
				title, ch := mdCode(res.Title()), change
				if i > 0 {
					title, ch = "", ""
				}
				if f.Cause == CauseSpec {
					ch = strings.TrimSpace(ch + " (spec changed)")
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", title, ch, mdCode(f.Path), mdCode(Value(f.Declared)), mdCode(Value(f.Live)), mdEscape(strings.TrimSpace(f.By()+" "+f.AdmissionText())))
			}
		}
		b.WriteString("\n`paddock up` puts each of these back to what the stack declares.\n")
	}
	if len(r.Unmanaged) > 0 {
		b.WriteString("\n### Objects outside the stack that weaken the platform\n\n")
		b.WriteString("| Rule | Object | Why | Fix |\n|---|---|---|---|\n")
		for _, f := range r.Unmanaged {
			fmt.Fprintf(&b, "| %s %s | %s | %s | %s |\n", f.Rule, mdEscape(f.Title), mdCode(f.Object()), mdEscape(f.Reason), mdEscape(f.Fix))
		}
		b.WriteString("\n`paddock up` does not touch objects outside its stack: remove or fix these by hand.\n")
	}
	if len(r.Trusted) > 0 {
		b.WriteString("\n### Mutating admission the spec trusts\n\n")
		for _, t := range r.Trusted {
			fmt.Fprintf(&b, "- %s\n", mdEscape(t.Text()))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// mdCode renders s as inline code safe inside a table cell.
func mdCode(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	s = strings.ReplaceAll(s, "\n", " ")
	if strings.Contains(s, "`") {
		return "``" + s + "``"
	}
	return "`" + s + "`"
}

func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.ReplaceAll(s, "\n", " ")
}
