package policy

import (
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/paddock-platform/paddock/internal/model"
)

// SpecDiagnostic is a problem of the spec itself (the decoder's diagnostics),
// carried into the machine-readable reports as rule PDK-000.
type SpecDiagnostic struct {
	Severity Severity
	Summary  string
	Detail   string
	// Src is unknown for problems of the inputs themselves (no such directory).
	Src model.Range
}

const ruleSpec = "PDK-000"

func init() {
	register(Rule{
		ID: ruleSpec, Title: "Spec does not load", Severity: Error, Kind: Static, Meta: true,
		Control: "The spec means what it says: it parses, every reference resolves, every value is valid",
		Fix:     "Fix the spec as the diagnostic says.",
		check:   metaCheck,
	})
}

type jsonLocation struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
}

func location(r model.Range) *jsonLocation {
	if !r.Known() {
		return nil
	}
	return &jsonLocation{File: r.Filename, Line: r.Line, Column: r.Column}
}

type jsonWaiver struct {
	Rule     string        `json:"rule"`
	Reason   string        `json:"reason"`
	Expires  string        `json:"expires,omitempty"`
	Scope    string        `json:"scope,omitempty"`
	State    WaiverState   `json:"state,omitempty"`
	Silenced *int          `json:"silenced,omitempty"`
	Location *jsonLocation `json:"location,omitempty"`
}

type jsonFinding struct {
	Finding
	Location *jsonLocation `json:"location,omitempty"`
	Waiver   *jsonWaiver   `json:"waiver,omitempty"`
}

type jsonDiagnostic struct {
	Severity Severity      `json:"severity"`
	Summary  string        `json:"summary"`
	Detail   string        `json:"detail,omitempty"`
	Location *jsonLocation `json:"location,omitempty"`
}

type jsonReport struct {
	Platform string `json:"platform,omitempty"`
	// Valid: the spec loads and nothing blocks `up`.
	Valid       bool             `json:"valid"`
	Blocking    bool             `json:"blocking"`
	Summary     map[string]int   `json:"summary"`
	Diagnostics []jsonDiagnostic `json:"diagnostics"`
	Findings    []jsonFinding    `json:"findings"`
	Waived      []jsonFinding    `json:"waived"`
	Waivers     []jsonWaiver     `json:"waivers"`
	Trusted     []jsonTrust      `json:"trustedAdmission,omitempty"`
}

// jsonTrust is one trust_admission block.
type jsonTrust struct {
	Kind     string        `json:"kind"`
	Name     string        `json:"name"`
	Reason   string        `json:"reason"`
	Location *jsonLocation `json:"location,omitempty"`
}

// WriteJSON writes the spec's diagnostics and the report (nil when the spec
// did not load) as one JSON document.
func WriteJSON(w io.Writer, r *Report, spec []SpecDiagnostic) error {
	out := jsonReport{Summary: map[string]int{}, Diagnostics: []jsonDiagnostic{}, Findings: []jsonFinding{}, Waived: []jsonFinding{}, Waivers: []jsonWaiver{}}
	specErrors := 0
	for _, d := range spec {
		if d.Severity == Error {
			specErrors++
		}
		out.Diagnostics = append(out.Diagnostics, jsonDiagnostic{Severity: d.Severity, Summary: d.Summary, Detail: d.Detail, Location: location(d.Src)})
	}
	out.Summary["spec_errors"] = specErrors
	if r != nil {
		out.Platform = r.Platform
		out.Blocking = r.Blocking()
		for _, f := range r.Findings {
			out.Findings = append(out.Findings, jsonFinding{Finding: f, Location: location(f.Src)})
		}
		for _, f := range r.Waived {
			out.Waived = append(out.Waived, jsonFinding{Finding: f, Location: location(f.Src), Waiver: waiverJSON(*f.Waiver, "", nil)})
		}
		for _, ws := range r.Waivers {
			n := ws.Silenced
			out.Waivers = append(out.Waivers, *waiverJSON(ws.Waiver, ws.State, &n))
		}
		out.Summary["errors"] = r.Count(Error)
		out.Summary["warnings"] = r.Count(Warning)
		out.Summary["notes"] = r.Count(Note)
		out.Summary["waived"] = len(r.Waived)
		out.Summary["waivers"] = len(r.Waivers)
		for _, t := range r.Trusted {
			out.Trusted = append(out.Trusted, jsonTrust{Kind: t.Kind, Name: t.Name, Reason: t.Reason, Location: location(t.Src)})
		}
	}
	out.Valid = r != nil && specErrors == 0 && !out.Blocking
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func waiverJSON(w model.Waiver, state WaiverState, silenced *int) *jsonWaiver {
	return &jsonWaiver{Rule: w.Rule, Reason: w.Reason, Expires: w.Expires, Scope: w.Scope, State: state, Silenced: silenced, Location: location(w.Src)}
}

// SARIF 2.1.0, the subset code scanning tools read.

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool       sarifTool     `json:"tool"`
	Results    []sarifResult `json:"results"`
	ColumnKind string        `json:"columnKind"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifText struct {
	Text string `json:"text"`
}

type sarifRule struct {
	ID                   string         `json:"id"`
	Name                 string         `json:"name"`
	ShortDescription     sarifText      `json:"shortDescription"`
	FullDescription      sarifText      `json:"fullDescription"`
	Help                 sarifText      `json:"help"`
	DefaultConfiguration sarifConfig    `json:"defaultConfiguration"`
	Properties           map[string]any `json:"properties"`
}

type sarifConfig struct {
	Level   string `json:"level"`
	Enabled bool   `json:"enabled"`
}

type sarifResult struct {
	RuleID       string             `json:"ruleId"`
	RuleIndex    int                `json:"ruleIndex"`
	Level        string             `json:"level"`
	Message      sarifText          `json:"message"`
	Locations    []sarifLocation    `json:"locations,omitempty"`
	Suppressions []sarifSuppression `json:"suppressions,omitempty"`
	Properties   map[string]any     `json:"properties,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           sarifRegion   `json:"region"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn"`
}

type sarifSuppression struct {
	Kind          string `json:"kind"`
	Status        string `json:"status"`
	Justification string `json:"justification"`
}

// securitySeverity is GitHub code scanning's 0-10 score of a level.
var securitySeverity = map[Severity]string{Error: "8.0", Warning: "5.0", Note: "2.0"}

// WriteSARIF writes the spec's diagnostics (as rule PDK-000) and the report
// (nil when the spec did not load) as a SARIF 2.1.0 log. Every rule is in the
// driver's rule list, live and process ones included; waived findings are
// results with an accepted in-source suppression carrying the reason.
func WriteSARIF(w io.Writer, r *Report, spec []SpecDiagnostic, toolVersion string) error {
	rules := Rules()
	index := map[string]int{}
	driver := sarifDriver{Name: "paddock", Version: toolVersion, InformationURI: "https://github.com/paddock-platform/paddock", Rules: []sarifRule{}}
	for i, rule := range rules {
		index[rule.ID] = i
		help := rule.Fix
		if len(rule.Checklist) > 0 {
			help += "\n\nChecklist: " + strings.Join(rule.Checklist, ", ")
		}
		driver.Rules = append(driver.Rules, sarifRule{
			ID: rule.ID, Name: pascal(rule.Title),
			ShortDescription:     sarifText{rule.Title},
			FullDescription:      sarifText{rule.Control},
			Help:                 sarifText{help},
			DefaultConfiguration: sarifConfig{Level: string(rule.Severity), Enabled: rule.Kind == Static || rule.Kind == Validity},
			Properties: map[string]any{
				"kind": string(rule.Kind), "checklist": append([]string{}, rule.Checklist...),
				"tags": []string{"security", "kubernetes", "ai-agents"}, "security-severity": securitySeverity[rule.Severity],
			},
		})
	}
	run := sarifRun{Tool: sarifTool{Driver: driver}, Results: []sarifResult{}, ColumnKind: "unicodeCodePoints"}
	result := func(ruleID string, level Severity, msg string, src model.Range) sarifResult {
		res := sarifResult{RuleID: ruleID, RuleIndex: index[ruleID], Level: string(level), Message: sarifText{msg}}
		if src.Known() {
			res.Locations = []sarifLocation{{PhysicalLocation: sarifPhysical{
				ArtifactLocation: sarifArtifact{URI: artifactURI(src.Filename)},
				Region:           sarifRegion{StartLine: src.Line, StartColumn: src.Column},
			}}}
		}
		return res
	}
	for _, d := range spec {
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		run.Results = append(run.Results, result(ruleSpec, d.Severity, msg, d.Src))
	}
	if r != nil {
		for _, f := range r.Findings {
			res := result(f.RuleID, f.Severity, f.Message+" Fix: "+f.Fix, f.Src)
			res.Properties = map[string]any{"object": f.Object}
			run.Results = append(run.Results, res)
		}
		for _, f := range r.Waived {
			res := result(f.RuleID, f.Severity, f.Message+" Fix: "+f.Fix, f.Src)
			res.Properties = map[string]any{"object": f.Object}
			just := f.Waiver.Reason
			if f.Waiver.Expires != "" {
				just += " (expires " + f.Waiver.Expires + ")"
			}
			res.Suppressions = []sarifSuppression{{Kind: "inSource", Status: "accepted", Justification: just}}
			run.Results = append(run.Results, res)
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(sarifLog{Schema: "https://json.schemastore.org/sarif-2.1.0.json", Version: "2.1.0", Runs: []sarifRun{run}})
}

// artifactURI is a relative URI (forward slashes) for a relative path, and a
// file URI for an absolute one.
func artifactURI(name string) string {
	p := filepath.ToSlash(name)
	if filepath.IsAbs(name) {
		return "file://" + p
	}
	return strings.TrimPrefix(p, "./")
}

// pascal turns a title into a SARIF rule name ("Writable root filesystem" ->
// "WritableRootFilesystem").
func pascal(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if up {
				r = unicode.ToUpper(r)
			}
			b.WriteRune(r)
			up = false
		default:
			up = true
		}
	}
	return b.String()
}
